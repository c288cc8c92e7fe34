import Crypto
import Glibc
import Foundation
import Synchronization

/// Counts of what came and went, for `nearby --stats` and the benchmarks.
public struct NearbyStatistics: Sendable, Equatable {
    public var sent = 0
    public var sentBytes = 0
    public var received = 0
    public var dropped: [String: Int] = [:]
    /// Answers to a query from peers heard already, left unread: nothing was wrong with them.
    public var redundant = 0
}

/// Presence over a transport: announces this profile, keeps the table of peers, asks newcomers'
/// questions and answers others', says goodbye on stop, trades image avatars on request, and
/// hands every other kind of packet to whoever registered it (`handle`). The transport's thread
/// only checks frames; everything else runs on the engine. The shell reads snapshots.
public final class NearbyService: Sendable {
    private struct State {
        var table: PresenceTable
        var schedule: AnnounceSchedule
        var announcement: Announcement
        var sequence: UInt32 = 0
        var running = false
        var statistics = NearbyStatistics()
        var avatars: [Data: Data] = [:]
        /// Avatar hashes asked for, and when.
        var requested: [Data: Double] = [:]
        /// Whether our "who is there?" went out (once, right after the first announcement).
        var queried = false
        /// An answer to someone's query is scheduled; when the last one went.
        var answerPending = false
        var lastAnswered = -Double.infinity
        /// When each peer was last sent our avatar: one answer per key per `avatarAnswerGap`.
        var avatarAnswered: [Data: Double] = [:]
        var random: SeededRandom
        /// Every broadcast we made online, as its sequence and timestamp (`OwnBroadcasts`), and
        /// since when (ms): what in our name we did not send is another seance's.
        var ownBroadcasts = OwnBroadcasts()
        var onlineSince: UInt64 = 0
        var alsoOnlineElsewhere = false
    }

    /// Every transport this shell is online on, the preferred first (the LAN before a broker).
    public let transports: [Transport]
    public let timing: PresenceTiming
    private let signer: Curve25519.Signing.PrivateKey
    /// The signer's public key, raw: every datagram received is compared with it.
    private let myKey: Data
    private let ownAvatar: Data?
    /// Its hash, computed once: every request (a stranger can send many) is compared with it.
    private let ownAvatarHash: Data?
    private let clock: @Sendable () -> Double
    private let onEvent: @Sendable (PresenceEvent) -> Void
    /// Direct traffic (messages, acknowledgements, read receipts) and the periodic tick, for the
    /// delivery layer above; set before `start`.
    private let hooks = Mutex<DirectHooks>(DirectHooks())

    public struct DirectHooks: Sendable {
        public var packet: (@Sendable (Packet, Route) -> Void)?
        public var tick: (@Sendable (Double) -> Void)?
        /// When the layer above next has something to do (a retransmission), if ever.
        public var deadline: (@Sendable () -> Double?)?
        public init(packet: (@Sendable (Packet, Route) -> Void)? = nil, tick: (@Sendable (Double) -> Void)? = nil,
                    deadline: (@Sendable () -> Double?)? = nil) {
            self.packet = packet
            self.tick = tick
            self.deadline = deadline
        }
    }

    public func setDirectHooks(_ hooks: DirectHooks) { self.hooks.withLock { $0 = hooks } }

    /// Sends a direct packet to a peer, by its preferred live route (the first transport in
    /// `transports` that still hears it). `everyRoute` sends it by each live route instead: for
    /// a packet sent again, whose first copy may have gone by a route that no longer works.
    /// `reply` is the route a packet being answered came by: used when it is one of the peer's
    /// own direct routes (an answer goes back the way that worked). Safe from any thread.
    public func sendDirect(_ payload: Payload, to peer: Peer, everyRoute: Bool = false, reply: Route? = nil) {
        let routes = directRoutes(of: peer)
        if let reply, routes.contains(reply) { return send(payload, to: [reply]) }
        send(payload, to: everyRoute ? routes : Array(routes.prefix(1)))
    }

    /// The peer's direct routes, the preferred first.
    public func directRoutes(of peer: Peer) -> [Route] {
        let lifetime = timing.lifetime(ofInterval: PresenceTable.interval(of: peer.announcement))
        return peer.liveRoutes(now: clock(), lifetime: lifetime, preference: transports.map(\.name)).compactMap { route in
            transports.first { $0.name == route.transport }?.directRoute(
                from: route.source, port: peer.announcement.unicastPort, signingKey: peer.signingKey)
        }
    }

    /// The names of the transports a peer is heard on, the preferred first (for `nearby`).
    public func routeNames(of peer: Peer) -> [String] { directRoutes(of: peer).map(\.transport) }

    /// Handlers of the kinds features added, by kind number.
    private let handlers = Mutex<[UInt8: @Sendable (Packet, [UInt8]) -> Void]>([:])

    /// A feature's packet kind: `handler` gets each one that arrives (on the engine), with its
    /// sender if that is a present peer. One registration is all a new kind needs here.
    public func handle<Kind: PacketKind>(_ kind: Kind.Type, _ handler: @escaping @Sendable (Kind, _ sender: Data, Peer?) -> Void) {
        handlers.withLock {
            $0[Kind.code] = { [weak self] packet, body in
                var reader = ByteReader(body[...])
                guard let self else { return }
                guard let value = try? Kind(reading: &reader) else {
                    return self.drop("malformed")
                }
                handler(value, packet.sender, self.peer(packet.sender))
            }
        }
    }

    /// Sends a feature's packet to everyone in range (`kind` tells a broker which topic).
    public func broadcast<Kind: PacketKind>(_ packet: Kind, as kind: BroadcastKind = .other) { send(Self.payload(packet), as: kind) }

    /// Room beacons wanted, or no longer, on every transport.
    public func watchRooms(_ watching: Bool) { transports.forEach { $0.watchRooms(watching) } }

    /// Sends a feature's packet to one peer.
    public func send<Kind: PacketKind>(_ packet: Kind, to peer: Peer) { sendDirect(Self.payload(packet), to: peer) }

    private static func payload<Kind: PacketKind>(_ packet: Kind) -> Payload {
        var body: [UInt8] = []
        packet.write(to: &body)
        return .other(code: Kind.code, body: body)
    }

    /// This shell's signing key, as peers see it.
    public var publicKey: Data { myKey }
    private let state: Mutex<State>
    /// Where packets are handled, timers run and events are told: never the socket's thread.
    public let engine: Engine
    /// The one timer of presence and delivery, armed for the next deadline (an announcement, a
    /// peer's expiry, a retransmission) rather than ticking: nothing waits for a tick, and an
    /// idle shell wakes once a second at most. `generation` tells a timer replaced by an
    /// earlier one that it is stale.
    private struct Alarm {
        var running = false
        var at = Double.infinity
        var timer: Cancellable?
        var generation = 0
    }
    private let alarm = Mutex(Alarm())
    /// The longest the engine sleeps: a backstop, should a deadline be missed.
    static let longestSleep = 1.0

    /// - Parameters:
    ///   - ownAvatarPixels: the 16x16 RGBA avatar to hand out when asked, if it is an image.
    ///   - onEvent: called on the event loop for every arrival, change and departure.
    public convenience init(transport: Transport, timing: PresenceTiming, signer: Curve25519.Signing.PrivateKey, announcement: Announcement,
                            ownAvatarPixels: Data? = nil, engine: Engine = Engine(), random: SeededRandom = SeededRandom(),
                            onEvent: @escaping @Sendable (PresenceEvent) -> Void) {
        self.init(transports: [transport], timing: timing, signer: signer, announcement: announcement,
                  ownAvatarPixels: ownAvatarPixels, engine: engine, random: random, onEvent: onEvent)
    }

    /// - Parameters:
    ///   - transports: the preferred first; the same frames go out on each.
    public init(transports: [Transport], timing: PresenceTiming, signer: Curve25519.Signing.PrivateKey, announcement: Announcement,
                ownAvatarPixels: Data? = nil, engine: Engine = Engine(), random: SeededRandom = SeededRandom(),
                onEvent: @escaping @Sendable (PresenceEvent) -> Void) {
        let clock: @Sendable () -> Double = { engine.now }
        self.engine = engine
        precondition(!transports.isEmpty, "presence needs a transport")
        self.transports = transports
        self.timing = timing
        self.signer = signer
        myKey = signer.publicKey.rawRepresentation
        self.ownAvatar = ownAvatarPixels
        ownAvatarHash = ownAvatarPixels.map { Data(SHA256.hash(data: $0)) }
        self.clock = clock
        self.onEvent = onEvent
        var first = announcement
        first.intervalMilliseconds = UInt32(timing.interval * 1000)
        state = Mutex(State(table: PresenceTable(timing: timing), schedule: AnnounceSchedule(timing: timing, now: clock()),
                            announcement: first, random: random))
    }

    /// Starts every transport and announcing. When one cannot start, those already started
    /// are stopped again and the error is thrown.
    public func start() throws {
        let now = clock()
        // Before any transport can deliver: what in our name predates this is not another seance's.
        state.withLock { $0.onlineSince = UInt64(now * 1000) }
        var started: [Transport] = []
        do {
            for transport in transports {
                let name = transport.name
                try transport.start(deliver: { [weak self] bytes, route in self?.receive(bytes, from: route) },
                                    report: { [weak self] state in
                                        guard let self else { return }
                                        self.engine.async { self.onEvent(.transport(name, state)) }
                                    })
                started.append(transport)
            }
        } catch {
            started.forEach { $0.stop() }
            throw error
        }
        // The LAN's unicast port is the one announced (a broker needs none).
        let port = transports.lazy.map(\.directPort).first { $0 != 0 } ?? 0
        state.withLock {
            $0.running = true
            $0.announcement.unicastPort = port
        }
        alarm.withLock { $0.running = true }
        wake(at: now)
    }

    /// Makes sure the engine works at `deadline` (or sooner); safe from any thread. The layer
    /// above calls it when it has queued something to do.
    public func wake(at deadline: Double) {
        alarm.withLock { alarm in
            guard alarm.running else { return }
            let now = clock()
            let target = min(max(deadline, now), now + Self.longestSleep)
            guard target < alarm.at else { return }
            alarm.timer?.cancel()
            alarm.generation += 1
            let generation = alarm.generation
            alarm.at = target
            alarm.timer = engine.after(target - now) { [weak self] in self?.alarmRang(generation) }
        }
    }

    private func alarmRang(_ generation: Int) {
        let current = alarm.withLock { alarm -> Bool in
            guard alarm.generation == generation else { return false }
            alarm.at = .infinity
            alarm.timer = nil
            return true
        }
        guard current else { return }
        tick()
        // At least a millisecond on: a deadline met only strictly after it (an expiry) must not
        // ring again at the same instant.
        wake(at: max(nextDeadline(), clock() + 0.001))
    }

    /// The earliest of the next announcement, the next expiry and the next retransmission.
    private func nextDeadline() -> Double {
        let own = state.withLock { min($0.schedule.nextAt, $0.table.nextExpiry) }
        return min(own, hooks.withLock { $0.deadline }?() ?? .infinity)
    }

    /// Says goodbye and stops the transports. Safe to call twice.
    public func stop() {
        guard state.withLock({ $0.running }) else { return }
        let timer = alarm.withLock { alarm -> Cancellable? in
            defer { alarm = Alarm() }
            return alarm.timer
        }
        timer?.cancel()
        send(.goodbye)
        state.withLock { $0.running = false }
        transports.forEach { $0.stop() }
    }

    /// The present peer with this signing key: a lookup, whatever the size of the table.
    public func peer(_ key: Data) -> Peer? { state.withLock { $0.table.peer(key) } }

    /// The peers heard from, newest state.
    public func peers() -> [Peer] {
        state.withLock { Array($0.table.peers.values) }.sorted { ($0.name.lowercased(), $0.fingerprint) < ($1.name.lowercased(), $1.fingerprint) }
    }

    public var statistics: NearbyStatistics { state.withLock { $0.statistics } }

    /// The avatar thumbnail of `hash`, once fetched.
    public func avatarPixels(_ hash: Data) -> Data? { state.withLock { $0.avatars[hash] } }

    /// A new plane is announced at once.
    public func setPlane(_ plane: UInt8) {
        let now = clock()
        state.withLock {
            guard $0.announcement.plane != plane else { return }
            $0.announcement.plane = plane
            $0.schedule.announceSoon(now: now)
        }
        wake(at: now)
    }

    // MARK: On the engine

    private func tick() {
        let now = clock()
        let (due, events) = state.withLock { state -> (Bool, [PresenceEvent]) in
            (state.schedule.isDue(now: now, using: &state.random), state.table.expire(now: now))
        }
        if due { announce() }
        // A newcomer asks who is there right after saying who it is: everyone in range answers
        // within a fraction of a second instead of at their next refresh.
        if due, state.withLock({ state in defer { state.queried = true }; return !state.queried }) { send(.query) }
        events.forEach(onEvent)
        hooks.withLock { $0.tick }?(now)
    }

    private func announce(as flags: FrameFlags = []) {
        send(.announce(state.withLock { $0.announcement }), flags: flags)
    }

    /// The query's answer range, and the least time between two of our answers: many queries
    /// at once (a crowd arriving, or a flood) cost one announcement each quarter second.
    static let answerDelay = 0.02...0.12
    static let answerGap = 0.25

    /// Someone asked who is there: announce after a random 20–120 ms (so a crowd does not
    /// answer at once), unless an answer is already on its way. The gap runs from our last
    /// answer only: a refresh just sent went before the newcomer listened (it asked since), so
    /// holding the answer back for it made one peer in a crowd of 50 answer up to 250 ms late.
    private func answerQuery(now: Double) {
        let delay = state.withLock { state -> Double? in
            guard !state.answerPending else { return nil }
            state.answerPending = true
            let earliest = state.lastAnswered + Self.answerGap - now
            return max(Double.random(in: Self.answerDelay, using: &state.random), earliest)
        }
        guard let delay else { return }
        engine.after(delay) {
            self.state.withLock { state in
                state.answerPending = false
                state.lastAnswered = self.clock()
            }
            self.announce(as: .answer)
        }
    }

    /// Sends to everyone in range on every transport.
    private func send(_ payload: Payload, as given: BroadcastKind = .other, flags: FrameFlags = []) {
        guard let bytes = frame(payload, flags: flags, ours: true) else { return }
        let kind: BroadcastKind = switch payload {
        case .announce: .presence
        case .goodbye: .farewell
        case .query: .question
        default: given
        }
        for transport in transports { transport.broadcast(bytes, as: kind) }
        count(bytes, copies: transports.count)
    }

    /// Sends one frame by each of `routes`.
    private func send(_ payload: Payload, to routes: [Route]) {
        guard !routes.isEmpty, let bytes = frame(payload) else { return }
        for route in routes { transports.first { $0.name == route.transport }?.send(bytes, to: route) }
        count(bytes, copies: routes.count)
    }

    /// The payload signed, with the next sequence number; nil once stopped. A broadcast is
    /// remembered as `ours`: it comes back (multicast loopback, a broker's echo).
    private func frame(_ payload: Payload, flags: FrameFlags = [], ours broadcast: Bool = false) -> [UInt8]? {
        let timestamp = UInt64(clock() * 1000)
        let sequence = state.withLock { state -> UInt32? in
            guard state.running else { return nil }
            state.sequence &+= 1
            if broadcast { state.ownBroadcasts.insert(sequence: state.sequence, timestamp: timestamp) }
            return state.sequence
        }
        guard let sequence else { return nil }
        return try? Packet.encode(payload, signer: signer, timestamp: timestamp, sequence: sequence, flags: flags)
    }

    private func count(_ bytes: [UInt8], copies: Int) {
        state.withLock { $0.statistics.sent += copies; $0.statistics.sentBytes += bytes.count * copies }
    }

    /// On the socket's thread: only the checks of the frame and its signature, then the packet
    /// goes to the engine. Two kinds of datagram are dropped before their signature is checked
    /// (some 80 µs of CPU each; dropping is all a forged header can get): our own, looped back
    /// by multicast, and answers to someone else's query from peers we hear anyway — in a crowd
    /// of *n* every arrival brings each of the others *n* of them.
    private func receive(_ bytes: [UInt8], from route: Route) {
        if let header = UncheckedHeader(bytes) {
            if header.sender.elementsEqual(myKey) { return receiveInOurName(header, bytes, from: route) }
            if header.flags.contains(.answer), header.type == PacketType.announce.rawValue {
                let now = clock()
                let redundant = state.withLock { state in
                    guard state.table.hears(Data(header.sender), on: route.transport, now: now) else { return false }
                    state.statistics.redundant += 1
                    return true
                }
                if redundant { return }
            }
        }
        let packet: Packet
        do {
            packet = try Packet.decode(bytes)
        } catch {
            drop(error.counterName)
            return
        }
        engine.async { self.handle(packet, from: route) }
    }

    /// A datagram in our own name: our own broadcast, looped back by multicast or by a broker
    /// (its retained presence, after a reconnection; a replay), a forgery — or this profile
    /// online in another seance, from a copy of its data (the lock file sees one machine only).
    /// Only a datagram we did not send, made since we came online, is worth its signature check;
    /// a valid one is the other seance's.
    private func receiveInOurName(_ header: UncheckedHeader, _ bytes: [UInt8], from route: Route) {
        let unknown = state.withLock { state in
            !state.alsoOnlineElsewhere && header.timestamp >= state.onlineSince
                && !state.ownBroadcasts.contains(sequence: header.sequence, timestamp: header.timestamp)
        }
        guard unknown else { return }
        do {
            _ = try Packet.decode(bytes)
        } catch {
            return drop(error.counterName)
        }
        guard state.withLock({ state in defer { state.alsoOnlineElsewhere = true }; return !state.alsoOnlineElsewhere }) else { return }
        engine.async { self.onEvent(.alsoOnlineElsewhere(transport: route.transport)) }
    }

    /// On the engine: what a verified packet changes.
    private func handle(_ packet: Packet, from route: Route) {
        let now = clock()
        // A feature's kind, or a later version's: read by the feature that registered it; one
        // that nobody here knows is dropped. Every other packet that passed its checks counts
        // as received, whatever it carries.
        var feature: (@Sendable (Packet, [UInt8]) -> Void)?
        if case .other(let code, _) = packet.payload {
            feature = handlers.withLock { $0[code] }
            if feature == nil { return drop("type") }
        }
        state.withLock { $0.statistics.received += 1 }
        switch packet.payload {
        case .avatarRequest(let hash):
            answerAvatarRequest(from: packet.sender, hash: hash, now: now)
        case .avatar(let hash, let pixels):
            state.withLock { state in
                if state.requested[hash] != nil { state.avatars[hash] = pixels }
            }
        case .message, .messages, .ack, .read:
            // Named as the sender's direct route on that transport (a broker's inbox does not say
            // who wrote to it; the signature does), so an answer can go back the same way.
            let port = peer(packet.sender)?.announcement.unicastPort ?? 0
            let back = transports.first { $0.name == route.transport }?.directRoute(from: route, port: port, signingKey: packet.sender) ?? route
            hooks.withLock { $0.packet }?(packet, back)
        case .query:
            answerQuery(now: now)
        case .other(_, let body):
            feature?(packet, body)
        case .announce, .goodbye:
            let events = state.withLock { $0.table.receive(packet, from: route, now: now) }
            // Every announcement may prompt the avatar request again: the first can be refused
            // when it reaches the peer before our own announcement did.
            if case .announce = packet.payload, let peer = self.peer(packet.sender) { fetchAvatar(of: peer, now: now) }
            // A newcomer may expire before anything else is due.
            wake(at: state.withLock { $0.table.nextExpiry })
            events.forEach(onEvent)
        }
    }

    /// Counts a packet dropped, by reason.
    private func drop(_ reason: String) { state.withLock { $0.statistics.dropped[reason, default: 0] += 1 } }

    static let avatarAnswerGap = 10.0

    /// Our avatar goes only to a peer that announced itself, at the address it announced (not
    /// to the request's source, which can be forged), at most once per `avatarAnswerGap`.
    private func answerAvatarRequest(from key: Data, hash: Data, now: Double) {
        guard let ownAvatar, ownAvatarHash == hash else { return }
        let peer = state.withLock { state -> Peer? in
            guard let peer = state.table.peer(key) else {
                state.statistics.dropped["avatar request", default: 0] += 1
                return nil
            }
            if let last = state.avatarAnswered[key], now - last < Self.avatarAnswerGap {
                state.statistics.dropped["avatar request", default: 0] += 1
                return nil
            }
            if state.avatarAnswered.count >= state.table.capacity * 2 {
                state.avatarAnswered = state.avatarAnswered.filter { now - $0.value < Self.avatarAnswerGap }
            }
            state.avatarAnswered[key] = now
            return peer
        }
        guard let peer else { return }
        sendDirect(.avatar(hash: hash, pixels: ownAvatar), to: peer)
    }

    static let avatarRetryGap = 1.0

    /// Asks a peer for its image avatar, until it comes, at most once per `avatarRetryGap`.
    private func fetchAvatar(of peer: Peer, now: Double) {
        guard case .image(let hash) = peer.announcement.avatar else { return }
        let ask = state.withLock { state -> Bool in
            guard state.avatars[hash] == nil else { return false }
            if let asked = state.requested[hash], now - asked < Self.avatarRetryGap { return false }
            if state.requested.count >= state.table.capacity * 2 {
                // Keys come and go: keep only the pictures of peers still here.
                let present = Set(state.table.peers.values.compactMap { peer -> Data? in
                    if case .image(let hash) = peer.announcement.avatar { return hash }
                    return nil
                })
                state.requested = state.requested.filter { present.contains($0.key) }
                state.avatars = state.avatars.filter { present.contains($0.key) }
            }
            state.requested[hash] = now
            return true
        }
        if ask { sendDirect(.avatarRequest(hash: hash), to: peer) }
    }
}

/// The sequence and timestamp of each broadcast made while online: to know our own packets when
/// they come back. One per refresh (every 5 s), answer, and room beacon (every second while
/// hosting), some 20 bytes each; past `capacity` (2.6 MB) the older half goes, and a replay of
/// one of those could then be taken for another seance's — after a day and a half hosting a
/// room, or a week online otherwise, and only with someone replaying it.
struct OwnBroadcasts: Sendable {
    private var sent = Set<UInt64>()
    private var order: [UInt64] = []
    let capacity: Int

    init(capacity: Int = 131_072) { self.capacity = capacity }

    /// Sequence numbers are 32 bits and the low 32 of a millisecond timestamp recur every 49
    /// days: together they name one packet of ours.
    private static func key(_ sequence: UInt32, _ timestamp: UInt64) -> UInt64 { UInt64(sequence) << 32 | (timestamp & 0xFFFF_FFFF) }

    mutating func insert(sequence: UInt32, timestamp: UInt64) {
        let key = Self.key(sequence, timestamp)
        guard sent.insert(key).inserted else { return }
        order.append(key)
        if order.count > capacity {
            let old = order.prefix(capacity / 2)
            sent.subtract(old)
            order.removeFirst(old.count)
        }
    }

    func contains(sequence: UInt32, timestamp: UInt64) -> Bool { sent.contains(Self.key(sequence, timestamp)) }

    var count: Int { sent.count }
}
