import Crypto
import Foundation

/// Counts of what came and went, for `nearby stats` and the benchmarks.
package struct NearbyStatistics: Sendable {
    package var sent = 0
    package var sentBytes = 0
    package var received = 0
    package var dropped: [String: Int] = [:]
    /// Answers to a query from peers heard already, left unread: nothing was wrong with them.
    package var redundant = 0
    /// Refreshes of known keys left unread: a repeat of one read already, or the same
    /// announcement again well before its interval (the start-up's second one, a replay).
    package var repeats = 0
    /// Refreshes proved by a link of the sender's hash chain, no signature checked.
    package var proved = 0
    /// The hosts the flood limits dropped most from, most first (at most three).
    package var flooders: [(source: String, dropped: Int)] = []
    package var sessions = SessionStatistics()
}

/// Presence over every transport: announces this profile, keeps the table of peers, asks
/// newcomers' questions and answers others', says goodbye on stop, trades image avatars on
/// request, and hands every other kind of packet to whoever registered it (`handle`). The
/// transports' threads only check frames (`ArrivalGate`); everything else is engine state.
package final class NearbyService: Sendable {
    struct State {
        var table: PresenceTable
        var schedule: AnnounceSchedule
        var announcement: Announcement
        var sequence: UInt32 = 0
        var running = false
        var statistics = NearbyStatistics()
        /// Readers of every kind, by kind number (`handle`).
        var handlers: [UInt8: @Sendable (Packet, Route) -> Void] = [:]
        /// What the layer above adds to the alarm (delivery's retransmissions).
        var hooks = AlarmHooks()
        var alarm = Alarm()
        var avatars: [Data: Data] = [:]
        /// Avatar hashes asked for, and when.
        var requested: [Data: Double] = [:]
        /// When each peer was last sent our avatar: one answer per key per `avatarAnswerGap`.
        var avatarAnswered: [Data: Double] = [:]
        /// Whether our "who is there?" went out (once, right after the first announcement).
        var queried = false
        /// The answer to queries scheduled, if any (to whom); when the last one went.
        var answer: PendingAnswer?
        var lastAnswered = -Double.infinity
        var random: SeededRandom
        /// Every session with a peer, and what waits for one (`Sessions.swift`).
        var sessions: SessionTable
        /// Peers told of once as running an older seance, which makes no sessions.
        var toldOlder: Set<Data> = []
        /// What the transports that keep presence (a broker) hold of us.
        var kept = KeptPresence()
        /// Whether the user was told that a clock is off (`PresenceEvent.clockOff`).
        var toldClock = false
        /// Our refresh chain (`RefreshChain`), and the announcement as last signed on the
        /// transports that refresh presence: while it stands, a refresh is the next link.
        var chain: RefreshChain
        var lastSigned: Announcement?
        /// Proofs sent since our last signed announcement (`refresh`).
        var proofsSinceSigned = 0
        /// Questions to peers whose refresh proofs we cannot check (we lost track of them):
        /// a few a minute, whoever sends proofs, none in our first seconds online.
        var askingLost: TokenBucket
        /// In our first seconds online, the senders of proofs we could not check and where to
        /// ask them (`askUnknownProvers`, when those seconds end); nil once they are over.
        var unknownProvers: [Data: Route]? = [:]
    }

    /// The one timer of presence and delivery, armed for the next deadline (an announcement, a
    /// peer's expiry, a retransmission) rather than ticking: nothing waits for a tick, and an
    /// idle shell wakes once a second at most. `generation` tells a timer replaced by an
    /// earlier one that it is stale.
    struct Alarm {
        var running = false
        var at = Double.infinity
        var timer: Cancellable?
        var generation = 0
    }

    /// What delivery adds to the engine's one alarm: its work at each ring, and when it next
    /// has some (a retransmission), if ever.
    package struct AlarmHooks: Sendable {
        package var tick: (@Sendable (Double) -> Void)?
        package var deadline: (@Sendable () -> Double?)?
        package init(tick: (@Sendable (Double) -> Void)? = nil, deadline: (@Sendable () -> Double?)? = nil) {
            self.tick = tick
            self.deadline = deadline
        }
    }

    /// Every transport this shell is online on, the preferred first (the LAN before a broker).
    package let transports: [Transport]
    /// Those presence is refreshed on (the LAN), and those that keep it (a broker).
    let refreshing: [Transport], keeping: [Transport]
    package let timing: PresenceTiming
    let signer: Curve25519.Signing.PrivateKey
    /// The signer's public key, raw: every datagram received is compared with it.
    let myKey: Data
    let ownAvatar: Data?
    /// Its hash, computed once: every request (a stranger can send many) is compared with it.
    let ownAvatarHash: Data?
    let onEvent: @Sendable (PresenceEvent) -> Void
    /// Where packets are handled, timers run and events are told: never a socket's thread.
    package let engine: Engine
    let state: EngineBound<State>
    /// What the transports' threads check before a signature.
    let gate: ArrivalGate
    /// The longest the engine sleeps: a backstop, should a deadline be missed.
    static let longestSleep = 1.0
    /// How long a newcomer waits after its first announcement before it asks who is there.
    package static let queryDelay = 0.02...0.05
    /// Peers whose refresh proofs we cannot check are asked who they are one every 5 s (4 at
    /// once), and not in our first seconds online, while the crowd's answers to our query come:
    /// in a crowd of 250 on one bridge, newcomers asking 2 a second each (and the address
    /// resolutions each question to a new host broadcast) overflowed the hosts' links, and
    /// the proofs lost made everyone ask more.
    static let lostAskRate = 0.2, lostAskBurst = 4.0
    static let firstAskAfter = 3.0

    /// - Parameters:
    ///   - ownAvatarPixels: the 16x16 RGBA avatar to hand out when asked, if it is an image.
    ///   - onEvent: called on the engine for every arrival, change and departure.
    package convenience init(transport: Transport, timing: PresenceTiming, signer: Curve25519.Signing.PrivateKey,
                            agreement: Curve25519.KeyAgreement.PrivateKey = .init(), announcement: Announcement,
                            ownAvatarPixels: Data? = nil, engine: Engine = Engine(), random: SeededRandom = SeededRandom(),
                            sessionTiming: SessionTiming = SessionTiming(), onEvent: @escaping @Sendable (PresenceEvent) -> Void) {
        self.init(transports: [transport], timing: timing, signer: signer, agreement: agreement, announcement: announcement,
                  ownAvatarPixels: ownAvatarPixels, engine: engine, random: random, sessionTiming: sessionTiming, onEvent: onEvent)
    }

    /// - Parameters:
    ///   - transports: the preferred first; the same frames go out on each.
    ///   - agreement: the X25519 key sessions are made with; the announcement carries its public half.
    package init(transports: [Transport], timing: PresenceTiming, signer: Curve25519.Signing.PrivateKey,
                agreement: Curve25519.KeyAgreement.PrivateKey = .init(), announcement: Announcement,
                ownAvatarPixels: Data? = nil, engine: Engine = Engine(), random: SeededRandom = SeededRandom(),
                sessionTiming: SessionTiming = SessionTiming(), floodLimits: FloodLimits.Settings = FloodLimits.Settings(),
                onEvent: @escaping @Sendable (PresenceEvent) -> Void) {
        self.engine = engine
        precondition(!transports.isEmpty, "presence needs a transport")
        self.transports = transports
        refreshing = transports.filter { !$0.keepsPresence }
        keeping = transports.filter(\.keepsPresence)
        self.timing = timing
        self.signer = signer
        myKey = signer.publicKey.rawRepresentation
        self.ownAvatar = ownAvatarPixels
        ownAvatarHash = ownAvatarPixels.map { Data(SHA256.hash(data: $0)) }
        self.onEvent = onEvent
        gate = ArrivalGate(limits: floodLimits, now: engine.now)
        var first = announcement
        first.intervalMilliseconds = UInt32(timing.interval * 1000)
        first.agreementKey = agreement.publicKey.rawRepresentation
        first.sessionVersion = SessionWire.version
        state = EngineBound(State(table: PresenceTable(timing: timing), schedule: AnnounceSchedule(timing: timing, now: engine.now),
                                  announcement: first, random: random,
                                  sessions: SessionTable(identity: Identity(signing: signer, agreement: agreement), timing: sessionTiming),
                                  chain: RefreshChain(), askingLost: TokenBucket(rate: Self.lostAskRate, burst: Self.lostAskBurst, now: engine.now)),
                            engine: engine)
        registerPresenceKinds()
    }

    /// This shell's signing key, as peers see it.
    package var publicKey: Data { myKey }

    /// Starts every transport and announcing. When one cannot start, those already started
    /// are stopped again and the error is thrown.
    package func start() throws {
        let now = engine.now
        // Before any transport can deliver: what in our name predates this is not another seance's.
        gate.cameOnline(at: UInt64(now * 1000))
        var started: [Transport] = []
        do {
            for transport in transports {
                let name = transport.name
                try transport.start(deliver: { [weak self] bytes, route in self?.receive(bytes, from: route) },
                                    report: { [weak self] state in
                                        guard let self else { return }
                                        self.engine.async { self.transportChanged(name, state) }
                                    })
                started.append(transport)
            }
        } catch {
            started.forEach { $0.stop() }
            throw error
        }
        // The LAN's unicast port is the one announced (a broker needs none).
        let port = transports.lazy.map(\.directPort).first { $0 != 0 } ?? 0
        engine.sync {
            state.value.running = true
            state.value.announcement.unicastPort = port
            state.value.unknownProvers = [:]
            state.value.alarm.running = true
            wake(at: now)
            engine.after(Self.firstAskAfter) { [weak self] in self?.askUnknownProvers() }
        }
    }

    /// Says goodbye and stops the transports. Safe to call twice.
    package func stop() {
        let running = engine.sync { () -> Bool in
            guard state.value.running else { return false }
            state.value.alarm.timer?.cancel()
            state.value.alarm = Alarm()
            send(Goodbye())
            state.value.running = false
            return true
        }
        if running { transports.forEach { $0.stop() } }
    }

    // MARK: Asked from any thread

    /// The present peer with this signing key: a lookup, whatever the size of the table.
    package func peer(_ key: Data) -> Peer? { engine.sync { state.value.table.peer(key) } }

    /// The peers heard from, newest state.
    package func peers() -> [Peer] {
        engine.sync { Array(state.value.table.peers.values) }
            .sorted { ($0.name.lowercased(), $0.fingerprint) < ($1.name.lowercased(), $1.fingerprint) }
    }

    package var statistics: NearbyStatistics {
        var statistics = engine.sync {
            var statistics = state.value.statistics
            statistics.sessions = state.value.sessions.statistics
            return statistics
        }
        gate.add(to: &statistics)
        return statistics
    }

    /// The avatar thumbnail of `hash`, once fetched.
    package func avatarPixels(_ hash: Data) -> Data? { engine.sync { state.value.avatars[hash] } }

    /// A new plane is announced at once.
    package func setPlane(_ plane: UInt8) {
        engine.sync {
            guard state.value.announcement.plane != plane else { return }
            state.value.announcement.plane = plane
            state.value.schedule.announceSoon(now: engine.now)
            wake(at: engine.now)
        }
    }

    /// The names of the transports a peer is heard on, the preferred first (from any thread).
    package func routeNames(of peer: Peer) -> [String] { engine.sync { routesByPreference(of: peer) } }

    /// The same, on the engine (`nearby` asks for a whole crowd in one visit).
    package func routesByPreference(of peer: Peer) -> [String] { directRoutes(of: peer).map(\.transport) }

    /// Broadcasts on `topic` wanted, or no longer, on every transport (a broker subscribes to
    /// it only then; the LAN hears everything anyway).
    package func subscribe(topic: String, _ wanted: Bool) {
        transports.forEach { wanted ? $0.subscribe(topic: topic) : $0.unsubscribe(topic: topic) }
    }

    // MARK: Kinds

    /// A kind of packet: `handler` gets each one that arrives (on the engine), read (extension
    /// fields skipped), with its sender if that is a present peer. One registration is all a
    /// new kind needs here; one that does not read is counted and dropped.
    package func handle<Kind: PacketKind>(_ kind: Kind.Type, _ handler: @escaping @Sendable (Kind, _ sender: Data, Peer?) -> Void) {
        handlePacket(kind) { [unowned self] value, packet, _ in handler(value, packet.sender, state.value.table.peer(packet.sender)) }
    }

    /// As `handle`, with the packet and the route an answer goes back by: the sender's direct
    /// route on the transport it came by (a broker's inbox does not say who wrote to it; the
    /// signature does).
    package func handlePacket<Kind: PacketKind>(_ kind: Kind.Type, _ handler: @escaping @Sendable (Kind, Packet, _ reply: Route) -> Void) {
        engine.sync {
            state.value.handlers[Kind.code] = { [unowned self] packet, route in
                // Direct kinds come only out of a session, broadcasts only signed.
                guard packet.isSealed != KindTable.broadcasts.contains(Kind.code) || KindTable.experimental.contains(Kind.code) else {
                    return drop(packet.isSealed ? "malformed" : "unsealed")
                }
                // A broadcast is of its moment (announcements, which a broker keeps, are read
                // against their own expiry where they are heard).
                if !packet.isSealed, Kind.code != KindTable.announce {
                    let age = engine.now - Double(packet.timestamp) / 1000
                    guard abs(age) <= FrameTime.allowance else { return drop(age < 0 ? "from the future" : "stale") }
                }
                guard let value = try? packet.read(Kind.self) else { return drop("malformed") }
                let port = state.value.table.peer(packet.sender)?.announcement.unicastPort ?? 0
                let back = transports.first { $0.name == route.transport }?.directRoute(from: route, port: port, signingKey: packet.sender)
                handler(value, packet, back ?? route)
            }
        }
    }

    /// What the layer above adds to the one alarm (delivery's retransmissions).
    package func setAlarmHooks(_ hooks: AlarmHooks) { engine.sync { state.value.hooks = hooks } }

    /// On the engine: what a verified packet changes. A kind nobody here reads (a later
    /// version's) is counted and dropped; every other packet that passed its checks counts as
    /// received, whatever it carries.
    func handle(_ packet: Packet, from route: Route) {
        guard let handler = state.value.handlers[packet.kind] else { return drop("type") }
        state.value.statistics.received += 1
        handler(packet, route)
    }

    /// Counts a packet dropped, by reason (on the engine).
    func drop(_ reason: String) { state.value.statistics.dropped[reason, default: 0] += 1 }

    /// A feature's handler dropped a packet it read (a replay, one meant for someone else, one
    /// from a stranger): counted in `nearby stats` under `reason` (on the engine).
    package func dropped(_ reason: String) { drop(reason) }

    // MARK: Sending (on the engine)

    /// Sends a packet to everyone in range on every transport (`kind` tells a broker where).
    package func broadcast<Kind: PacketKind>(_ packet: Kind, as kind: BroadcastKind = .other) {
        engine.sync { send(packet, as: kind) }
    }

    /// Sends a packet to one peer, by its preferred live route (the first transport in
    /// `transports` that still hears it). `everyRoute` sends it by each live route instead: for
    /// a packet sent again, whose first copy may have gone by a route that no longer works.
    /// `reply` is the route a packet being answered came by: used when it is one of the peer's
    /// own direct routes (an answer goes back the way that worked). True when a transport
    /// carried it out of this machine.
    @discardableResult
    package func send<Kind: PacketKind>(_ packet: Kind, to peer: Peer, everyRoute: Bool = false, reply: Route? = nil) -> Bool {
        engine.sync {
            guard let body = try? packet.encoded() else { return false }
            let routes = directRoutes(of: peer)
            if let reply, routes.contains(reply) { return sendSealed([Kind.code] + body, to: peer, by: [reply]) }
            return sendSealed([Kind.code] + body, to: peer, by: everyRoute ? routes : Array(routes.prefix(1)))
        }
    }

    /// Sends a payload of kind `code` as it is, sealed in the peer's session: for harnesses that
    /// speak the protocol byte by byte (the fuzzer's, whose payloads no kind would write).
    @discardableResult
    package func sendRaw(kind code: UInt8, body: [UInt8], to peer: Peer) -> Bool {
        engine.sync { sendSealed([code] + body, to: peer, by: Array(directRoutes(of: peer).prefix(1))) }
    }

    /// The peer's direct routes, the preferred first.
    func directRoutes(of peer: Peer) -> [Route] {
        peer.liveRoutes(now: engine.now, timing: timing, preference: transports.map(\.name)).compactMap { route in
            transports.first { $0.name == route.transport }?.directRoute(
                from: route.source, port: peer.announcement.unicastPort, signingKey: peer.signingKey)
        }
    }

    /// Sends to everyone in range on every transport, or on `only` those.
    func send<Kind: PacketKind>(_ packet: Kind, as given: BroadcastKind = .other, flags: FrameFlags = [], on only: [Transport]? = nil) {
        let targets = only ?? transports
        guard !targets.isEmpty, let bytes = frame(packet, flags: flags, ours: true) else { return }
        let kind: BroadcastKind = switch Kind.code {
        case KindTable.announce: .presence
        case KindTable.goodbye: .farewell
        case KindTable.query: .question
        default: given
        }
        broadcastFrame(bytes, as: kind, on: targets)
    }

    /// Sends one frame, made already, to everyone in range on `targets`.
    func broadcastFrame(_ bytes: [UInt8], as kind: BroadcastKind, on targets: [Transport]) {
        for transport in targets { transport.broadcast(bytes, as: kind) }
        count(bytes, copies: targets.count)
    }

    /// Sends one frame by each of `routes`; true when any carried it.
    func send(_ bytes: [UInt8], by routes: [Route]) -> Bool {
        guard !routes.isEmpty else { return false }
        var carried = false
        for route in routes where transports.first(where: { $0.name == route.transport })?.send(bytes, to: route) == true { carried = true }
        count(bytes, copies: routes.count)
        return carried
    }

    /// The packet signed, with the next sequence number; nil once stopped. A broadcast is
    /// remembered as `ours`: it comes back (multicast loopback, a broker's echo).
    func frame<Kind: PacketKind>(_ packet: Kind, flags: FrameFlags = [], ours broadcast: Bool = false) -> [UInt8]? {
        guard state.value.running else { return nil }
        let timestamp = UInt64(engine.now * 1000)
        state.value.sequence &+= 1
        let sequence = state.value.sequence
        if broadcast { gate.sent(sequence: sequence, timestamp: timestamp) }
        return try? Packet.encode(packet, signer: signer, timestamp: timestamp, sequence: sequence, flags: flags)
    }

    private func count(_ bytes: [UInt8], copies: Int) {
        state.value.statistics.sent += copies
        state.value.statistics.sentBytes += bytes.count * copies
    }

    // MARK: The alarm (on the engine)

    /// Makes sure the engine works at `deadline` (or sooner). The layer above calls it when it
    /// has queued something to do.
    package func wake(at deadline: Double) {
        engine.sync {
            guard state.value.alarm.running else { return }
            let now = engine.now
            let target = min(max(deadline, now), now + Self.longestSleep)
            guard target < state.value.alarm.at else { return }
            state.value.alarm.timer?.cancel()
            state.value.alarm.generation += 1
            let generation = state.value.alarm.generation
            state.value.alarm.at = target
            state.value.alarm.timer = engine.after(target - now) { [weak self] in self?.alarmRang(generation) }
        }
    }

    private func alarmRang(_ generation: Int) {
        guard state.value.alarm.generation == generation else { return }
        state.value.alarm.at = .infinity
        state.value.alarm.timer = nil
        tick()
        // At least a millisecond on: a deadline met only strictly after it (an expiry) must not
        // ring again at the same instant.
        wake(at: max(nextDeadline(), engine.now + 0.001))
    }

    /// The earliest of the next announcement (refreshed, or kept by a broker), the next expiry,
    /// the next retransmission and the next handshake to send again.
    private func nextDeadline() -> Double {
        min(state.value.schedule.nextAt, state.value.kept.nextDue(keeping.isEmpty), state.value.table.nextExpiry,
            state.value.hooks.deadline?() ?? .infinity, state.value.sessions.nextDue)
    }

    private func tick() {
        let now = engine.now
        // The interval grows with the crowd the LAN carries; the announcement says which, and
        // peers expire us by it (the next one comes that long after this one, jitter aside).
        let interval = timing.interval(amongPeers: state.value.table.refreshedCount)
        let due = state.update { $0.schedule.isDue(now: now, interval: interval, using: &$0.random) }
        if due { state.value.announcement.intervalMilliseconds = UInt32(interval * 1000) }
        let events = state.value.table.expire(now: now)
        if due { refresh() }
        publishKept(now: now)
        // A newcomer asks who is there just after saying who it is: everyone in range answers
        // within a fraction of a second instead of at their next refresh, at the address the
        // announcement gave. The question waits a random 20–50 ms (RFC 6762 §5.2 has a newcomer
        // wait too), so that newcomers starting together do not ask at once, and the
        // announcement is in everywhere first: back to back, on a bridge of 500 hosts the two
        // were a thousand frames at once, over what the kernel queues, and some asked without
        // having been heard.
        if due, !state.value.queried {
            state.value.queried = true
            let delay = state.update { Double.random(in: Self.queryDelay, using: &$0.random) }
            engine.after(delay) { [weak self] in self?.send(Query()) }
        }
        for event in events { left(event) }
        events.forEach(onEvent)
        dispatch(state.value.sessions.tick(now: now))
        state.value.hooks.tick?(now)
    }
}
