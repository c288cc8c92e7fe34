import Wire

/// The topics a broker client listens on for direct frames and mail (`BrokerTopics`, relative to
/// the prefix): what to subscribe to and unsubscribe from as the router changes them, now when
/// connected, else once connected (its session may have outlived an earlier run). A
/// subscription the broker refuses (a NATS node whose JetStream cannot make the subscription's
/// consumer yet, as while it elects leaders after a node's death) is asked again: 1 s after it
/// was refused, doubling, at most 30 s apart, for as long as it is wanted. Without that, what
/// is mailed to it is never held for us.
struct InboxSubscriptions {
    private(set) var topics: Set<String> = []
    /// To unsubscribe from at the next connection.
    private var forgetting: Set<String> = []
    /// Subscriptions asked and not yet answered, by their message IDs.
    private var asked: [Int32: String] = [:]
    /// Subscriptions refused: when each is asked again, and how long it waited last.
    private var refused: [String: (due: Double, delay: Double)] = [:]
    /// Answers that came before their subscription's ID was recorded (asked from another
    /// thread than the client's loop), kept until it is.
    private var answeredEarly: [Int32: Bool] = [:]
    /// Refusals so far (`nearby stats`, and tests: the counter that proves one came).
    private(set) var refusals = 0
    static let retryDelay = 1.0
    static let retryDelayMaximum = 30.0

    /// `wanted` from now on, and none of `forgotten`: what to subscribe to and unsubscribe from
    /// now (nothing while not connected: it waits for the connection).
    mutating func set(_ wanted: Set<String>, forgetting forgotten: Set<String>, connected: Bool) -> (added: Set<String>, removed: Set<String>) {
        let added = wanted.subtracting(topics), removed = forgotten.union(topics.subtracting(wanted))
        topics = wanted
        refused = refused.filter { wanted.contains($0.key) }
        guard connected else {
            forgetting.formUnion(removed)
            forgetting.subtract(wanted)
            return ([], [])
        }
        return (added, removed)
    }

    /// On connecting: every topic to subscribe to, and what to unsubscribe from first.
    mutating func connecting() -> (subscribe: Set<String>, unsubscribe: Set<String>) {
        defer {
            forgetting = []
            (asked, refused, answeredEarly) = ([:], [:], [:])
        }
        return (topics, forgetting)
    }

    /// How they stand: wanted, not yet taken by the broker, refused so far.
    var status: InboxStatus {
        InboxStatus(topics: topics.count, waiting: Set(asked.values).union(refused.keys).intersection(topics).count, refusals: refusals)
    }

    /// The subscription to `topic` was asked, as message `id`.
    mutating func asked(_ id: Int32, _ topic: String, now: Double) {
        asked[id] = topic
        if let granted = answeredEarly.removeValue(forKey: id) { answered(id, granted: granted, now: now) }
    }

    /// The broker answered message `id`: granted, or refused (asked again when due).
    mutating func answered(_ id: Int32, granted: Bool, now: Double) {
        guard let topic = asked.removeValue(forKey: id) else {
            // Another subscription's (a broadcast topic's), or one whose ID is being recorded.
            if answeredEarly.count >= 64 { answeredEarly = [:] }
            answeredEarly[id] = granted
            return
        }
        guard !granted else {
            refused[topic] = nil
            return
        }
        refusals += 1
        guard topics.contains(topic) else { return }
        let delay = refused[topic].map { min($0.delay * 2, Self.retryDelayMaximum) } ?? Self.retryDelay
        refused[topic] = (now + delay, delay)
    }

    /// The refused subscriptions to ask again now (each then waits for its answer).
    mutating func due(now: Double) -> [String] {
        let due = refused.filter { $0.value.due <= now }.map(\.key).sorted()
        for topic in due { refused[topic]!.due = .infinity }
        return due
    }
}
