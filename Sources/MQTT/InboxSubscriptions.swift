/// The topics a broker client listens on for direct frames and mail (`BrokerTopics`, relative to
/// the prefix): what to subscribe to and unsubscribe from as the router changes them, now when
/// connected, else once connected (its session may have outlived an earlier run).
struct InboxSubscriptions {
    private(set) var topics: Set<String> = []
    /// To unsubscribe from at the next connection.
    private var forgetting: Set<String> = []

    /// `wanted` from now on, and none of `forgotten`: what to subscribe to and unsubscribe from
    /// now (nothing while not connected: it waits for the connection).
    mutating func set(_ wanted: Set<String>, forgetting forgotten: Set<String>, connected: Bool) -> (added: Set<String>, removed: Set<String>) {
        let added = wanted.subtracting(topics), removed = forgotten.union(topics.subtracting(wanted))
        topics = wanted
        guard connected else {
            forgetting.formUnion(removed)
            forgetting.subtract(wanted)
            return ([], [])
        }
        return (added, removed)
    }

    /// On connecting: every topic to subscribe to, and what to unsubscribe from first.
    mutating func connecting() -> (subscribe: Set<String>, unsubscribe: Set<String>) {
        defer { forgetting = [] }
        return (topics, forgetting)
    }
}
