import CMosquitto
import Dispatch
import Foundation
import Synchronization
import Runtime
import Wire

/// A broker as a transport, through libmosquitto (MQTT 3.1.1). Topics, under a prefix:
/// `presence/ID` carries every broadcast frame, the latest announcement retained (so a newcomer
/// hears everyone at once) and cleared by a goodbye or, when the process dies, by the will (ID
/// is the signing key's long fingerprint); `t/…` (`BrokerTopics`) carry direct frames and mail
/// at QoS 1, padded (`BrokerPadding`), on topics that name nobody. The broker, and anyone
/// subscribed to everything, sees only signed presence, ciphertext and a few sizes.
///
/// A client has one of two roles (`BrokerTransport` runs one of each): presence (a clean
/// session under a new random client ID each time, with the will, publishing presence and
/// broadcasts) and the mailbox (a persistent session under the same client ID each time, which
/// names no key, publishing direct frames and subscribed to the topics that are ours: what
/// comes to them while we are away is held by the broker and handed over when we connect
/// again). Apart, a copy of this profile online elsewhere takes only the mailbox from us now
/// and then, never our presence.
///
/// One thread of the transport's own runs libmosquitto's loop: it connects (looking the host up
/// there, never on the caller's thread), reconnects after a loss with a capped backoff, and
/// starts over after what libmosquitto gives up on (a TLS or protocol failure). Its callbacks
/// only hand frames on (the threading contract).
package final class MQTTTransport: Transport, Sendable {
    package enum Role: Sendable {
        /// Presence and broadcasts (and direct frames and the inbox too, for a client alone).
        case presence
        /// Direct frames and the inbox, in a persistent session that the broker keeps while we
        /// are away.
        case mailbox
    }

    /// How to reach the broker (`BrokerConfiguration`), and what went wrong making a client.
    package typealias Configuration = BrokerConfiguration
    package typealias Failure = BrokerClientFailure

    /// Frames larger than this are not the program's: dropped before anything reads them.
    static let maximumFrame = 65_536
    /// Reconnection: after 1 s, doubling, at most 30 s apart.
    static let reconnectDelay: UInt32 = 1
    static let reconnectDelayMaximum: UInt32 = 30

    private struct State {
        var client: ClientHandle?
        var deliver: (@Sendable ([UInt8], Route) -> Void)?
        var report: (@Sendable (TransportState) -> Void)?
        var connected = false
        /// The broker accepted the connection being run (the backoff then starts again at 1 s).
        var accepted = false
        /// What `report` was last told: nil for up (starting counts as up: no news is good
        /// news), else the reason it is down.
        var reportedDown: String?
        var stopping = false
        /// Our latest announcement, published again on every (re)connection: a broker that
        /// restarted without persistence has lost it.
        var presence: [UInt8]?
        /// The topic filters broadcasts are wanted on (subscribed to again on reconnecting),
        /// relative to the prefix.
        var topics: Set<String> = []
        var inbox = InboxSubscriptions()
        /// QoS 1 publishes the broker has not acknowledged yet (their message IDs), and the
        /// latest IDs told published that were not among them: a QoS 0 publish's (told once
        /// sent), or an acknowledgement that came before its publish call returned.
        var unacknowledged: Set<Int32> = []
        var acknowledgedEarly: [Int32] = []
    }

    package let name = "broker"
    package let configuration: Configuration
    package let role: Role
    /// Whether this client reads the inbox (a presence client that works with no mailbox beside
    /// it does too).
    let readsInbox: Bool
    /// Our presence topic's ID.
    let ownID: String
    /// The mailbox's client ID, the same at every connection and derived from a secret: it
    /// names the session the broker keeps for us, and no key.
    let mailboxID: String
    private let state = Mutex(State())
    /// Wakes the loop thread from its backoff when stopping; signalled by the thread as it ends.
    private let wake = InterruptibleWait()
    private let ended = DispatchSemaphore(value: 0)

    package init(configuration: Configuration, signingKey: Data, role: Role = .presence, readsInbox: Bool = true, mailboxID: String = "") {
        self.configuration = configuration
        self.role = role
        self.readsInbox = role == .mailbox || readsInbox
        ownID = PeerIdentity.longFingerprint(of: signingKey)
        self.mailboxID = mailboxID
    }

    deinit { stop() }

    package var description: String { "\(name) \(configuration.address)" }
    package var directPort: UInt16 { 0 }
    /// The broker keeps our announcement (retained) and withdraws it by our will.
    package var keepsPresence: Bool { true }

    /// 23 characters at most, as MQTT 3.1.1 promises every broker takes. The mailbox's is the
    /// same at every connection (it names the session the broker keeps for us); presence's is
    /// new each time, random.
    var clientID: String {
        switch role {
        case .mailbox: mailboxID
        case .presence: "seance-" + (0..<4).map { _ in String(format: "%04x", UInt16.random(in: .min ... .max)) }.joined()
        }
    }
    var presenceTopic: String { configuration.prefix + "presence/" + ownID }

    /// A broker's routes are its topics, which the router derives (`BrokerTopics`): none from here.
    package func directRoute(from source: Route, port: UInt16, signingKey: Data) -> Route { Route(transport: name, address: "") }

    /// Loaded and initialised on first use; nil when that worked, else why not.
    private static let libraryProblem: String? = {
        guard seance_mosquitto_load() else { return String(cString: seance_mosquitto_error()) }
        return seance_mosquitto_lib_init() == MOSQ_ERR_SUCCESS.rawValue ? nil : "libmosquitto did not initialise"
    }()

    package func start(deliver: @escaping @Sendable ([UInt8], Route) -> Void, report: @escaping @Sendable (TransportState) -> Void) throws {
        if let problem = Self.libraryProblem { throw Failure.client(problem + " (install libmosquitto1)") }
        guard let client = seance_mosquitto_new(clientID, role == .presence, Unmanaged.passUnretained(self).toOpaque()) else {
            throw Failure.client(String(cString: strerror(errno)))
        }
        do {
            try configure(client)
        } catch {
            seance_mosquitto_destroy(client)
            throw error
        }
        let handle = ClientHandle(pointer: client)
        let fresh = State(client: handle, deliver: deliver, report: report)
        state.withLock { $0 = fresh }
        seance_mosquitto_threaded_set(client, true)
        Thread.start(named: "seance-mqtt") { self.run(handle) }
    }

    /// The loop thread: connect, run libmosquitto's loop until the connection ends, and then say
    /// why (a lost connection said so as it went) and connect again after the backoff.
    private func run(_ handle: ClientHandle) {
        defer { ended.signal() }
        let address = configuration.address
        var delay = Self.reconnectDelay
        var first = true
        while state.withLock({ !$0.stopping }) {
            let result = first
                ? seance_mosquitto_connect_async(handle.pointer, address.host, Int32(address.port), configuration.keepalive)
                : seance_mosquitto_reconnect_async(handle.pointer)
            first = first && result != MOSQ_ERR_SUCCESS.rawValue && result != MOSQ_ERR_ERRNO.rawValue
            var failure = result
            if result == MOSQ_ERR_SUCCESS.rawValue {
                state.withLock { $0.accepted = false }
                failure = loop(handle)
                // Only a connection the broker took starts the backoff again: one that refuses
                // us, or never answers, is tried less and less often.
                if state.withLock({ $0.accepted }) { delay = Self.reconnectDelay }
            }
            guard state.withLock({ !$0.stopping }) else { break }
            // A connection lost was told as it went (`disconnected`).
            if failure != MOSQ_ERR_CONN_LOST.rawValue && failure != MOSQ_ERR_NO_CONN.rawValue {
                changed(up: false, why: MosquittoCodes.failure(failure, broker: address.description))
            }
            // Interrupted by `stop`.
            if wake.wait(Double(delay)) { break }
            delay = min(delay * 2, Self.reconnectDelayMaximum)
        }
    }

    /// libmosquitto's loop, a pass at a time, until the connection ends (lost, or closed after
    /// our disconnect) or `stopDeadline` seconds after `stop` asked: its own `loop_forever` waits
    /// for the server to close, and a server that stalls a connection (a NATS node waiting on
    /// JetStream for a persistent session) never does, so quitting would wait for ever.
    private func loop(_ handle: ClientHandle) -> Int32 {
        var stopAt: DispatchTime?
        while true {
            let result = seance_mosquitto_loop(handle.pointer, 1_000, 1)
            guard result == MOSQ_ERR_SUCCESS.rawValue else { return result }
            let refused = readsInbox ? state.withLock { $0.connected ? $0.inbox.due(now: Self.uptime) : [] } : []
            if !refused.isEmpty { subscribeInbox(handle.pointer, refused) }
            if stopAt == nil, state.withLock({ $0.stopping }) { stopAt = .now() + Self.stopDeadline }
            if let stopAt, DispatchTime.now() >= stopAt { return result }
        }
    }

    /// How long `stop` lets what is queued (a farewell, the disconnect) go before it gives up.
    static let stopDeadline = 2.0

    private func configure(_ client: OpaquePointer) throws {
        seance_mosquitto_int_option(client, MOSQ_OPT_PROTOCOL_VERSION, MQTT_PROTOCOL_V311)
        seance_mosquitto_int_option(client, MOSQ_OPT_TCP_NODELAY, 1)
        let address = configuration.address
        if let user = address.user, seance_mosquitto_username_pw_set(client, user, address.password) != MOSQ_ERR_SUCCESS.rawValue {
            throw Failure.client("the user name or password cannot be used")
        }
        if address.tls {
            let caFile = configuration.caFile ?? Configuration.caFileSystem
            guard access(caFile, R_OK) == 0 else {
                throw Failure.tls(broker: address.description, reason: "cannot read the CA file \(caFile): \(String(cString: strerror(errno)))")
            }
            let result = seance_mosquitto_tls_set(client, caFile, nil, nil, nil, nil)
            if result != MOSQ_ERR_SUCCESS.rawValue { throw Failure.tls(broker: address.description, reason: MosquittoCodes.describe(result)) }
        }
        // If this process dies, the broker clears our retained presence for us.
        if role == .presence { seance_mosquitto_will_set(client, presenceTopic, 0, nil, 1, true) }
        MosquittoCallbacks.install(on: client)
    }

    // MARK: On libmosquitto's thread

    func connected(code: Int32) {
        guard code == 0 else {
            // Refused: wrong credentials, not authorised, …: tried again after the backoff.
            let reason = String(cString: seance_mosquitto_connack_string(code))
            changed(up: false, why: "the broker \(configuration.address) refused the connection: \(reason)")
            return
        }
        let (handle, presence, topics) = state.withLock { state -> (ClientHandle?, [UInt8]?, Set<String>) in
            state.connected = true
            state.accepted = true
            return (state.client, state.presence, state.topics)
        }
        guard let client = handle?.pointer else { return }
        // Presence at QoS 0 (it is refreshed anyway), the inbox at QoS 1; what reaches the
        // recipient is still confirmed end to end by seance's own acknowledgements.
        if readsInbox {
            let (subscribe, unsubscribe) = state.withLock { $0.inbox.connecting() }
            for topic in unsubscribe { seance_mosquitto_unsubscribe(client, nil, configuration.prefix + topic) }
            subscribeInbox(client, subscribe.sorted())
        }
        guard role == .presence else { return changed(up: true, why: "") }
        seance_mosquitto_subscribe(client, nil, configuration.prefix + "presence/+", 0)
        for topic in topics.sorted() { seance_mosquitto_subscribe(client, nil, configuration.prefix + topic, 0) }
        if let presence { publish(presence, to: presenceTopic, retain: true, qos: 1) }
        changed(up: true, why: "")
    }

    func disconnected(code: Int32) {
        let (stopping, wasConnected) = state.withLock { state -> (Bool, Bool) in
            defer { state.connected = false }
            return (state.stopping, state.connected)
        }
        guard !stopping else { return }
        let broker = configuration.address, reason = MosquittoCodes.describe(code)
        changed(up: false, why: wasConnected ? "lost the broker \(broker) (\(reason)); reconnecting"
                                             : "cannot reach the broker \(broker) (\(reason)); trying again")
    }

    func received(_ message: mosquitto_message) {
        guard message.payloadlen >= 0, message.payloadlen <= Self.maximumFrame, let topic = message.topic.map({ String(cString: $0) }) else { return }
        let bytes = message.payload.map { Array(UnsafeRawBufferPointer(start: $0, count: Int(message.payloadlen))) } ?? []
        guard let (frame, route) = configuration.arrival(bytes, on: topic, transport: name) else { return }
        state.withLock { $0.deliver }?(frame, route)
    }

    /// Tells the engine when the broker starts or stops carrying, and when the reason it does
    /// not changes (refused, then unreachable, …); never the same thing twice in a row.
    private func changed(up: Bool, why: String) {
        let report = state.withLock { state -> (@Sendable (TransportState) -> Void)? in
            let now: String? = up ? nil : why
            guard !state.stopping, state.reportedDown != now else { return nil }
            state.reportedDown = now
            return state.report
        }
        report?(up ? .up : .down(why))
    }

    // MARK: Sending (from the engine)

    package func broadcast(_ bytes: [UInt8], as kind: BroadcastKind) {
        switch kind {
        case .presence:
            // Given only when what it says changed (never refreshed: the broker keeps it for late
            // comers, and the will withdraws it), and kept to publish again on reconnecting.
            state.withLock { $0.presence = bytes }
            publish(bytes, to: presenceTopic, retain: true, qos: 1)
        case .farewell:
            // Said to whoever listens now; then the retained announcement is withdrawn.
            state.withLock { $0.presence = nil }
            publish(bytes, to: presenceTopic, retain: false, qos: 0)
            publish([], to: presenceTopic, retain: true, qos: 1)
        case .question:
            // Newcomers get every retained announcement when they subscribe: nobody need ask.
            break
        case .topic(let topic):
            // Frequent (a room's beacon comes every second): QoS 0, never retained (a retained
            // one would outlive what it says).
            publish(bytes, to: configuration.prefix + topic, retain: false, qos: 0)
        case .other:
            publish(bytes, to: presenceTopic, retain: false, qos: 0)
        }
    }

    package func subscribe(topic: String) { changeSubscription(topic, wanted: true) }
    package func unsubscribe(topic: String) { changeSubscription(topic, wanted: false) }

    private func changeSubscription(_ topic: String, wanted: Bool) {
        let client = state.withLock { state -> ClientHandle? in
            guard wanted ? state.topics.insert(topic).inserted : state.topics.remove(topic) != nil else { return nil }
            return state.connected && !state.stopping ? state.client : nil
        }
        guard let pointer = client?.pointer else { return }
        if wanted {
            seance_mosquitto_subscribe(pointer, nil, configuration.prefix + topic, 0)
        } else {
            seance_mosquitto_unsubscribe(pointer, nil, configuration.prefix + topic)
        }
    }

    package func setInbox(topics: Set<String>, forgetting: Set<String>) {
        let (client, added, removed) = state.withLock { state -> (ClientHandle?, Set<String>, Set<String>) in
            let connected = state.connected && !state.stopping
            let (added, removed) = state.inbox.set(topics, forgetting: forgetting, connected: connected)
            return (connected ? state.client : nil, added, removed)
        }
        guard let pointer = client?.pointer else { return }
        for topic in removed.sorted() { seance_mosquitto_unsubscribe(pointer, nil, configuration.prefix + topic) }
        subscribeInbox(pointer, added.sorted())
    }

    /// Subscribes to inbox topics at QoS 1, each remembered until the broker answers (one it
    /// refuses is asked again: `InboxSubscriptions`).
    private func subscribeInbox(_ client: OpaquePointer, _ topics: [String]) {
        for topic in topics {
            var id: Int32 = 0
            guard seance_mosquitto_subscribe(client, &id, configuration.prefix + topic, 1) == MOSQ_ERR_SUCCESS.rawValue else { continue }
            state.withLock { $0.inbox.asked(id, topic, now: Self.uptime) }
        }
    }

    /// The broker answered subscription `id`.
    func subscribed(_ id: Int32, granted: Bool) { state.withLock { $0.inbox.answered(id, granted: granted, now: Self.uptime) } }

    static var uptime: Double { Double(DispatchTime.now().uptimeNanoseconds) / 1e9 }

    package var inboxStatus: InboxStatus? { readsInbox ? state.withLock { $0.inbox.status } : nil }

    /// A direct frame or mail, to one of the broker's topics (`BrokerTopics`), padded.
    @discardableResult
    package func send(_ bytes: [UInt8], to route: Route) -> Bool {
        guard route.transport == name, BrokerTopics.isTopic(route.address), let padded = BrokerPadding.pad(bytes) else { return false }
        return publish(padded, to: configuration.prefix + route.address, retain: false, qos: 1)
    }

    /// Presence and broadcasts at QoS 0 (refreshed anyway; a clustered broker then need not
    /// store them), what stays and what is direct at QoS 1.
    /// True when libmosquitto took it (connected).
    @discardableResult
    private func publish(_ bytes: [UInt8], to topic: String, retain: Bool, qos: Int32) -> Bool {
        // Only once the broker has accepted us: libmosquitto 2.0.11 would otherwise write a
        // publish issued while it connects ahead of the CONNECT, and a clustered broker (NATS)
        // hangs up on that (the reconnection that followed once stalled a burst for good).
        // Dropped instead: presence is published again on connecting, and seance's own
        // acknowledgements have direct frames sent again.
        guard let client = state.withLock({ $0.stopping || !$0.connected ? nil : $0.client })?.pointer else { return false }
        var id: Int32 = 0
        let taken = bytes.withUnsafeBytes { buffer in
            seance_mosquitto_publish(client, &id, topic, Int32(buffer.count), buffer.baseAddress, qos, retain) == MOSQ_ERR_SUCCESS.rawValue
        }
        if taken && qos > 0 {
            state.withLock { if let early = $0.acknowledgedEarly.lastIndex(of: id) { $0.acknowledgedEarly.remove(at: early) } else { $0.unacknowledged.insert(id) } }
        }
        return taken
    }

    /// The broker acknowledged publish `id` (QoS 1), or libmosquitto sent it (QoS 0).
    func published(_ id: Int32) {
        state.withLock { state in
            guard state.unacknowledged.remove(id) == nil else { return }
            state.acknowledgedEarly = state.acknowledgedEarly.suffix(63) + [id]
        }
    }

    /// Disconnects (cleanly: the will is not sent; a farewell has withdrawn our presence) and
    /// releases the client and its thread. Safe to call twice.
    package func stop() {
        // What the broker has not acknowledged yet (mail above all: "mailed" is what the writer
        // was told) gets the stop deadline to be: libmosquitto keeps nothing once we are gone.
        let deadline = DispatchTime.now() + Self.stopDeadline
        // So does a subscription the broker has not taken yet: what is mailed to it meanwhile
        // is not held.
        while state.withLock({ $0.connected && !$0.stopping && (!$0.unacknowledged.isEmpty || $0.inbox.status.waiting > 0) }),
              DispatchTime.now() < deadline {
            usleep(5_000)
        }
        guard let handle = state.withLock({ state -> ClientHandle? in
            defer { state.client = nil; state.stopping = true; state.deliver = nil; state.report = nil }
            return state.client
        }) else { return }
        seance_mosquitto_disconnect(handle.pointer)
        wake.wake()
        // The loop returns once what was queued (the farewell) and the disconnect have gone, or
        // at once when not connected; the thread then ends.
        ended.wait()
        seance_mosquitto_destroy(handle.pointer)
    }

    /// The client, to hand to the loop thread (libmosquitto's calls are thread-safe).
    // Safe to send: libmosquitto's calls on a client are thread-safe (threaded mode is set),
    // and the pointer is destroyed only in `stop`, after the loop thread has ended.
    private struct ClientHandle: @unchecked Sendable { let pointer: OpaquePointer }
}
