import Crypto
import Foundation

/// What the network hears that is no packet of a kind: presence's to handle (`Router.listen`).
package enum NetworkNews: Sendable {
    /// An unchanged refresh proved by a link of its sender's chain, not yet checked.
    case proof(RefreshProof, Route)
    /// A transport that keeps presence (a broker) withdrew what stood on this route: a goodbye,
    /// or a will.
    case withdrawn(Route)
    /// A signed frame in our own name that we did not send: this profile is online elsewhere.
    case oursElsewhere(transport: String)
    /// A transport stopped carrying anything, or carries again.
    case transport(String, TransportState)
}

/// The network layer's switchboard: every kind registers its handler here (`handle`), every
/// packet goes out from here (`broadcast`, `send`), sealed in a session when it is direct, by
/// the routes presence knows. What the transports' threads let through (`Gate`) is handed to it
/// on the engine, and it counts what came and went.
///
/// Engine state: every method but `startTransports` and `stopTransports` runs on the engine.
package final class Router: Sendable {
    struct State {
        /// Readers of every kind, by kind number (`handle`).
        var handlers: [UInt8: @Sendable (Packet, Route) -> Void] = [:]
        /// Who hears what is no kind (presence).
        var listeners: [@Sendable (NetworkNews) -> Void] = []
        var open = false
        var sequence: UInt32 = 0
        var statistics = NearbyStatistics()
        /// Our announcement as it stands (presence's), which mail carries.
        var announcement: (@Sendable () -> Announcement)?
    }

    package let engine: Engine
    /// Every transport this shell is online on, the preferred first (the LAN before a broker).
    package let transports: [Transport]
    /// Those presence is refreshed on (the LAN), and those that keep it (a broker).
    package let refreshing: [Transport], keeping: [Transport]
    package let timing: PresenceTiming
    let signer: Curve25519.Signing.PrivateKey
    /// The signer's public key, raw: every datagram received is compared with it.
    package let myKey: Data
    let directory: PeerDirectory
    let deadlines: Deadlines
    /// What the transports' threads check before a signature.
    let gate: Gate
    let sessions: SessionLayer
    /// Each peer's round trip, by which whatever waits for its acknowledgement goes again.
    package let peerTiming: PeerTiming
    /// Topics and envelopes: what a broker carries for us, naming nobody.
    package let post: BrokerPost
    /// Where each peer is reached.
    package let reach: PeerReach
    let onEvent: @Sendable (PresenceEvent) -> Void
    private let state: EngineBound<State>

    /// - Parameters:
    ///   - transports: the preferred first; the same frames go out on each.
    ///   - firstSequence: where the frames' sequence numbers start (random in a shell: two copies
    ///     of one profile started in the same millisecond would sign the same first frames, each
    ///     taking the other's for its own, looped back).
    ///   - onEvent: told (on the engine) of a flood stopped and of a peer that speaks no sessions.
    package init(transports: [Transport], timing: PresenceTiming, identity: Identity, directory: PeerDirectory, deadlines: Deadlines,
                 sessionTiming: SessionTiming = SessionTiming(), floodLimits: FloodLimits.Settings = FloodLimits.Settings(),
                 firstSequence: UInt32 = 0, onEvent: @escaping @Sendable (PresenceEvent) -> Void) {
        precondition(!transports.isEmpty, "the network needs a transport")
        engine = deadlines.engine
        self.transports = transports
        refreshing = transports.filter { !$0.keepsPresence }
        keeping = transports.filter(\.keepsPresence)
        self.timing = timing
        signer = identity.signing
        myKey = identity.signingPublicKey
        self.directory = directory
        self.deadlines = deadlines
        self.onEvent = onEvent
        gate = Gate(myKey: myKey, brokers: Set(keeping.map(\.name)), limits: floodLimits, now: engine.now)
        sessions = SessionLayer(identity: identity, timing: sessionTiming, directory: directory, engine: engine)
        peerTiming = PeerTiming(engine: engine)
        post = BrokerPost(identity: identity, keeping: keeping, directory: directory, engine: engine)
        reach = PeerReach(transports: transports, timing: timing, post: post, engine: engine)
        state = EngineBound(State(sequence: firstSequence), engine: engine)
        deadlines.add("sessions", next: { [unowned self] in sessions.nextDue }) { [unowned self] now in dispatch(sessions.tick(now: now)) }
        deadlines.add("broker topics", next: { [unowned self] in post.nextDue }) { [unowned self] now in post.check(now: now) }
    }

    // MARK: Life (the transports off the engine, the rest on it)

    /// Starts every transport, the preferred first; when one cannot start, those started are
    /// stopped again and the error is thrown. Off the engine: a transport's start does I/O.
    package func startTransports() throws {
        // Before any transport can deliver: what in our name predates this is not another seance's.
        gate.cameOnline(at: UInt64(engine.now * 1000))
        var started: [Transport] = []
        do {
            for transport in transports {
                let name = transport.name
                try transport.start(deliver: { [weak self] bytes, route in
                    guard let self, let arrival = gate.receive(bytes, from: route, now: engine.now) else { return }
                    engine.async { [self] in arrived(arrival) }
                }, report: { [weak self] change in
                    guard let self else { return }
                    engine.async { [self] in tell(.transport(name, change)) }
                })
                started.append(transport)
            }
        } catch {
            started.forEach { $0.stop() }
            throw error
        }
    }

    /// Stops every transport (off the engine, once `close` has run).
    package func stopTransports() { transports.forEach { $0.stop() } }

    /// From now on frames are made and sent (until `close`).
    package func open() { state.value.open = true }
    package func close() { state.value.open = false }
    /// Lets go of every reader (they hold the features that hold this): gone offline.
    func release() {
        state.value.handlers = [:]
        state.value.listeners = []
        state.value.announcement = nil
        post.release()
    }
    package var isOpen: Bool { state.value.open }

    /// The LAN's unicast port, announced (a broker needs none).
    package var directPort: UInt16 { transports.lazy.map(\.directPort).first { $0 != 0 } ?? 0 }

    // MARK: Kinds

    /// A kind of packet: `handler` gets each one that arrives (on the engine), read (extension
    /// fields skipped), with its sender if that is a present peer. One registration is all a
    /// new kind needs here; one that does not read is counted and dropped.
    package func handle<Kind: PacketKind>(_ kind: Kind.Type, _ handler: @escaping @Sendable (Kind, _ sender: Data, Peer?) -> Void) {
        handlePacket(kind) { [unowned self] value, packet, _ in handler(value, packet.sender, directory.peer(packet.sender)) }
    }

    /// As `handle`, with the packet and the route an answer goes back by: the sender's direct
    /// route on the transport it came by (a broker's inbox does not say who wrote to it; the
    /// signature does).
    package func handlePacket<Kind: PacketKind>(_ kind: Kind.Type, _ handler: @escaping @Sendable (Kind, Packet, _ reply: Route) -> Void) {
        state.value.handlers[Kind.code] = { [unowned self] packet, route in
            // Direct kinds come only out of a session, broadcasts and mail only signed.
            let signed = KindTable.broadcasts.contains(Kind.code) || KindTable.signedDirect.contains(Kind.code)
            guard packet.isSealed != signed || KindTable.experimental.contains(Kind.code) else {
                return drop(packet.isSealed ? "malformed" : "unsealed")
            }
            // A broadcast is of its moment (announcements, which a broker keeps, are read
            // against their own expiry where they are heard; mail, which a broker held, against
            // its week, by delivery).
            if !packet.isSealed, Kind.code != KindTable.announce, !KindTable.signedDirect.contains(Kind.code) {
                let age = engine.now - Double(packet.timestamp) / 1000
                guard abs(age) <= FrameTime.allowance else { return drop(age < 0 ? "from the future" : "stale") }
            }
            guard let value = try? packet.read(Kind.self) else { return drop("malformed") }
            // A broker's route is the pair's topic, derived (a key agreement, the first time) only
            // when something is sent: a thousand announcements at once derive nothing.
            let back = reach.isBroker(route) ? nil : directory.peer(packet.sender).flatMap { reach.route(of: $0, from: route) }
            handler(value, packet, back ?? route)
        }
    }

    /// Where mail finds our announcement as it stands (presence's).
    func announcing(_ current: @escaping @Sendable () -> Announcement) { state.value.announcement = current }
    var announcement: Announcement? { state.value.announcement?() }

    /// `listener` hears what is no kind (`NetworkNews`): presence registers it.
    package func listen(_ listener: @escaping @Sendable (NetworkNews) -> Void) { state.value.listeners.append(listener) }

    private func tell(_ news: NetworkNews) { for listener in state.value.listeners { listener(news) } }

    /// What the gate let through, on the engine.
    private func arrived(_ arrival: Gate.Arrival) {
        switch arrival {
        case .packet(let packet, let route): handle(packet, from: route)
        case .session(let bytes, let route): receiveSession(bytes, from: route)
        case .older(let sender):
            drop("older seance")
            if let peer = directory.peer(sender) { tellOlder(peer) }
        case .flooded(let source): onEvent(.flooded(source: source))
        case .news(let news): tell(news)
        case .envelope(let bytes, let route):
            // Sealed to us through a broker: what it holds passes the gate as if it came bare.
            guard let inner = post.open(bytes) else { return drop("envelope that does not open") }
            if let arrival = gate.receive(inner, from: route, now: engine.now, prepaid: true) { arrived(arrival) }
        }
    }

    /// What a verified packet changes. A kind nobody here reads (a later version's) is counted
    /// and dropped; every other packet that passed its checks counts as received.
    private func handle(_ packet: Packet, from route: Route) {
        guard let handler = state.value.handlers[packet.kind] else { return drop("type") }
        state.value.statistics.received += 1
        handler(packet, route)
    }

    /// A frame of version 3: a handshake answered, or a sealed frame opened and handled.
    private func receiveSession(_ bytes: [UInt8], from route: Route) {
        // Through a broker: whoever wrote listens for us on the pair's topics.
        let kept = reach.isBroker(route)
        if kept, bytes[5] == KindTable.handshake, bytes.count >= 40 { post.heard(from: Data(bytes[8..<40])) }
        switch sessions.receive(bytes, from: route, now: engine.now) {
        case .answer(let outputs): dispatch(outputs, answering: route)
        case .packet(let packet):
            if kept { post.heard(from: packet.sender) }
            handle(packet, from: route)
        case .nothing: break
        case .dropped(let reason): drop(reason)
        }
    }

    /// Counts a packet dropped, by reason: the network's own checks, and a feature's handler
    /// that dropped a packet it read (a replay, one meant for someone else, one from a stranger).
    package func drop(_ reason: String) { state.value.statistics.dropped[reason, default: 0] += 1 }

    /// The next sequence number of a frame of ours.
    func nextSequence() -> UInt32 {
        state.value.sequence &+= 1
        return state.value.sequence
    }

    /// Counts `copies` of a frame sent.
    func count(_ bytes: [UInt8], copies: Int) {
        state.value.statistics.sent += copies
        state.value.statistics.sentBytes += bytes.count * copies
    }

    /// A refresh proved by its chain: received, and counted apart.
    func countProved() {
        state.value.statistics.received += 1
        state.value.statistics.proved += 1
    }

    /// What came and went, with the gate's and the sessions' counts.
    package var statistics: NearbyStatistics {
        var statistics = state.value.statistics
        statistics.sessions = sessions.statistics
        statistics.inbox = transports.compactMap(\.inboxStatus).reduce(nil) { ($0 ?? InboxStatus()) + $1 }
        gate.add(to: &statistics)
        return statistics
    }

    /// Room beacons dropped so far because their signer is blocked.
    package var blockedBeacons: Int { gate.blockedBeacons }

    /// The keys the user blocked: from now on every frame in their name is dropped on the
    /// transports' threads before any check.
    func block(_ keys: Set<Data>) { gate.block(keys) }

    /// A peer left: the gate forgets what it knew of it, and back, it will be a new process,
    /// perhaps: a fresh handshake.
    func forget(_ key: Data) {
        gate.forget(key)
        sessions.forget(key)
        post.forget(key)
    }

    /// Broadcasts on `topic` wanted, or no longer, on every transport (a broker subscribes to
    /// it only then; the LAN hears everything anyway).
    package func subscribe(topic: String, _ wanted: Bool) {
        transports.forEach { wanted ? $0.subscribe(topic: topic) : $0.unsubscribe(topic: topic) }
    }
}
