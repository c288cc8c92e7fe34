import Crypto
import Glibc
import Foundation
import NIOCore
import NIOPosix
import Synchronization

/// Where and how presence is sent.
public struct NearbyConfiguration: Sendable {
    public var group: String
    public var port: Int
    /// Interface names to use; nil means every interface that is up and can multicast.
    public var interfaces: [String]?
    public var timing: PresenceTiming

    public static let defaultGroup = "239.255.77.77"
    public static let defaultPort = 47_777

    public init(group: String = defaultGroup, port: Int = defaultPort, interfaces: [String]? = nil,
                timing: PresenceTiming = PresenceTiming()) {
        self.group = group
        self.port = port
        self.interfaces = interfaces
        self.timing = timing
    }
}

public enum NearbyError: Error, CustomStringConvertible {
    case noInterface([String]?, reason: String?)
    case socket(String)

    public var description: String {
        switch self {
        case .noInterface(let names?, let reason):
            return "no usable multicast interface among: \(names.joined(separator: ", "))" + (reason.map { " (\($0))" } ?? "")
        case .noInterface(nil, let reason):
            return "no network interface is up and able to multicast" + (reason.map { " (\($0))" } ?? "")
        case .socket(let why): return "cannot open the nearby socket: \(why)"
        }
    }
}

/// Counts of what came and went, for `nearby --stats` and the benchmarks.
public struct NearbyStatistics: Sendable, Equatable {
    public var sent = 0
    public var sentBytes = 0
    public var received = 0
    public var dropped: [String: Int] = [:]
}

/// Presence on the local network: announces this profile over UDP multicast (TTL 1), keeps the
/// table of peers, says goodbye on stop, and trades image avatars by unicast on request.
/// All network work runs on one event loop; the shell reads snapshots.
public final class NearbyService: Sendable {
    private struct State {
        var table: PresenceTable
        var schedule: AnnounceSchedule
        var announcement: Announcement
        var sequence: UInt32 = 0
        var multicast: Channel?
        var unicast: Channel?
        var devices: [NIONetworkDevice] = []
        var statistics = NearbyStatistics()
        var avatars: [Data: Data] = [:]
        /// Avatar hashes asked for, and when.
        var requested: [Data: Double] = [:]
        /// Whether our "who is there?" went out (once, right after the first announcement).
        var queried = false
        /// An answer to someone's query is scheduled; when we last announced.
        var answerPending = false
        var lastAnnounced = -Double.infinity
        /// When each peer was last sent our avatar: one answer per key per `avatarAnswerGap`.
        var avatarAnswered: [Data: Double] = [:]
        var random = SystemRandomNumberGenerator()
    }

    public let configuration: NearbyConfiguration
    private let signer: Curve25519.Signing.PrivateKey
    private let ownAvatar: Data?
    private let clock: @Sendable () -> Double
    private let onEvent: @Sendable (PresenceEvent) -> Void
    /// Direct traffic (messages, acknowledgements, read receipts) and the periodic tick, for the
    /// delivery layer above; set before `start`.
    private let hooks = Mutex<DirectHooks>(DirectHooks())

    public struct DirectHooks: Sendable {
        public var packet: (@Sendable (Packet, String) -> Void)?
        public var tick: (@Sendable (Double) -> Void)?
        public init(packet: (@Sendable (Packet, String) -> Void)? = nil, tick: (@Sendable (Double) -> Void)? = nil) {
            self.packet = packet
            self.tick = tick
        }
    }

    public func setDirectHooks(_ hooks: DirectHooks) { self.hooks.withLock { $0 = hooks } }

    /// Sends a direct packet to a peer's unicast address. Safe from any thread.
    public func sendDirect(_ payload: Payload, host: String, port: UInt16) {
        guard let address = try? SocketAddress(ipAddress: host, port: Int(port)) else { return }
        send(payload, to: address)
    }

    /// This shell's signing key, as peers see it.
    public var publicKey: Data { signer.publicKey.rawRepresentation }
    private let group = MultiThreadedEventLoopGroup(numberOfThreads: 1)
    private let state: Mutex<State>
    /// Where packets are handled, timers run and events are told: never the socket's thread.
    public let engine: Engine
    /// The presence tick, on the engine. Set and cancelled by `start` and `stop` only (the
    /// shell's thread), never touched elsewhere.
    nonisolated(unsafe) private var timer: DispatchSourceTimer?

    /// - Parameters:
    ///   - ownAvatarPixels: the 16x16 RGBA avatar to hand out when asked, if it is an image.
    ///   - onEvent: called on the event loop for every arrival, change and departure.
    public init(configuration: NearbyConfiguration, signer: Curve25519.Signing.PrivateKey, announcement: Announcement,
                ownAvatarPixels: Data? = nil, engine: Engine = Engine(),
                clock: @escaping @Sendable () -> Double = { Date().timeIntervalSince1970 },
                onEvent: @escaping @Sendable (PresenceEvent) -> Void) {
        self.engine = engine
        self.configuration = configuration
        self.signer = signer
        self.ownAvatar = ownAvatarPixels
        self.clock = clock
        self.onEvent = onEvent
        var first = announcement
        first.intervalMilliseconds = UInt32(configuration.timing.interval * 1000)
        state = Mutex(State(table: PresenceTable(timing: configuration.timing),
                            schedule: AnnounceSchedule(timing: configuration.timing, now: clock()),
                            announcement: first))
    }

    /// Opens the sockets, joins the group on each interface and starts announcing.
    public func start() throws {
        do {
            var attempt = 0
            var opened: (Channel, [NIONetworkDevice])?
            while opened == nil {
                attempt += 1
                do {
                    opened = try openMulticast()
                } catch NearbyError.noInterface(_, _) where attempt < 3 {
                    // Seen under load: a socket on which every join fails. A fresh one joins.
                    usleep(50_000)
                }
            }
            let (multicast, joined) = opened!
            let unicast = try DatagramBootstrap(group: group)
                .channelInitializer { channel in channel.eventLoop.makeCompletedFuture {
                    try channel.pipeline.syncOperations.addHandler(Receiver(service: self))
                } }
                .bind(host: "0.0.0.0", port: 0).wait()
            // Direct packets are for the local segment only, like the multicast ones: a forged
            // source address elsewhere on the internet is never answered.
            try unicast.setOption(ChannelOptions.ipOption(NIOBSDSocket.Option(rawValue: IP_TTL)), value: 1).wait()
            let port = UInt16(unicast.localAddress?.port ?? 0)
            state.withLock {
                $0.multicast = multicast
                $0.unicast = unicast
                $0.devices = joined
                $0.announcement.unicastPort = port
            }
        } catch let error as NearbyError {
            throw error
        } catch {
            throw NearbyError.socket("\(error)")
        }
        let timer = DispatchSource.makeTimerSource(queue: engine.queue)
        timer.schedule(deadline: .now(), repeating: .milliseconds(50), leeway: .milliseconds(5))
        timer.setEventHandler { [weak self] in self?.tick() }
        self.timer = timer
        timer.resume()
    }

    /// Binds the group's port and joins the group on every usable interface (listing and
    /// joining again a few times: interfaces come and go, and listing them while they change can
    /// come back short). An interface that cannot join is skipped; none at all is an error.
    private func openMulticast() throws -> (Channel, [NIONetworkDevice]) {
        let multicast = try DatagramBootstrap(group: group)
            .channelOption(.socketOption(.so_reuseaddr), value: 1)
            .channelOption(ChannelOptions.socketOption(NIOBSDSocket.Option(rawValue: SO_REUSEPORT)), value: 1)
            .channelInitializer { channel in channel.eventLoop.makeCompletedFuture {
                try channel.pipeline.syncOperations.addHandler(Receiver(service: self))
            } }
            .bind(host: "0.0.0.0", port: configuration.port).wait()
        try multicast.setOption(ChannelOptions.ipOption(.ip_multicast_ttl), value: 1).wait()
        try multicast.setOption(ChannelOptions.ipOption(.ip_multicast_loop), value: 1).wait()
        guard let options = multicast as? SocketOptionProvider else { throw NearbyError.socket("multicast unsupported") }
        var group4 = in_addr()
        guard inet_pton(AF_INET, configuration.group, &group4) == 1 else { throw NearbyError.socket("bad group address") }
        var joined: [NIONetworkDevice] = []
        var lastFailure: String?
        for attempt in 0..<5 where joined.isEmpty {
            if attempt > 0 { usleep(50_000) }
            do {
                let devices = try Self.devices(named: configuration.interfaces)
                if devices.isEmpty { lastFailure = "none listed" }
                for device in devices {
                    guard case .v4(let interface)? = device.address else { continue }
                    // IP_ADD_MEMBERSHIP directly: NIO's joinGroup checks the channel's cached
                    // local address first, which under load was seen to refuse a good socket.
                    let request = ip_mreq(imr_multiaddr: group4, imr_interface: interface.address.sin_addr)
                    do {
                        try options.unsafeSetSocketOption(level: .init(rawValue: CInt(IPPROTO_IP)),
                                                          name: .init(rawValue: IP_ADD_MEMBERSHIP), value: request).wait()
                        joined.append(device)
                    } catch {
                        lastFailure = "\(device.name): \(error)"
                    }
                }
            } catch {
                lastFailure = "listing interfaces: \(error)"
            }
        }
        guard !joined.isEmpty else {
            try? multicast.close().wait()
            throw NearbyError.noInterface(configuration.interfaces, reason: lastFailure)
        }
        return (multicast, joined)
    }

    /// Says goodbye and closes everything. Safe to call twice.
    public func stop() {
        let (multicast, unicast) = state.withLock { ($0.multicast, $0.unicast) }
        guard multicast != nil || unicast != nil else { return }
        timer?.cancel()
        timer = nil
        if let multicast { try? multicast.eventLoop.submit { self.send(.goodbye) }.wait() }
        try? multicast?.close().wait()
        try? unicast?.close().wait()
        state.withLock { $0.multicast = nil; $0.unicast = nil }
        try? group.syncShutdownGracefully()
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
    }

    // MARK: On the engine

    private func tick() {
        let now = clock()
        let (due, events) = state.withLock { state -> (Bool, [PresenceEvent]) in
            (state.schedule.isDue(now: now, using: &state.random), state.table.expire(now: now))
        }
        if due { announce(now: now) }
        // A newcomer asks who is there right after saying who it is: everyone in range answers
        // within a fraction of a second instead of at their next refresh.
        if due, state.withLock({ state in defer { state.queried = true }; return !state.queried }) { send(.query) }
        events.forEach(onEvent)
        hooks.withLock { $0.tick }?(now)
    }

    private func announce(now: Double) {
        let announcement = state.withLock { state in
            state.lastAnnounced = now
            return state.announcement
        }
        send(.announce(announcement))
    }

    /// The query's answer range, and the least time between two of our answers: many queries
    /// at once (a crowd arriving, or a flood) cost one announcement each quarter second.
    static let answerDelay = 0.02...0.12
    static let answerGap = 0.25

    /// Someone asked who is there: announce after a random 20–120 ms (so a crowd does not
    /// answer at once), unless an answer is already on its way.
    private func answerQuery(now: Double) {
        let delay = state.withLock { state -> Double? in
            guard !state.answerPending else { return nil }
            state.answerPending = true
            let earliest = state.lastAnnounced + Self.answerGap - now
            return max(Double.random(in: Self.answerDelay, using: &state.random), earliest)
        }
        guard let delay else { return }
        engine.after(delay) {
            self.state.withLock { $0.answerPending = false }
            self.announce(now: self.clock())
        }
    }

    /// Sends to the group on every interface (or once, unicast, to `target`).
    private func send(_ payload: Payload, to target: SocketAddress? = nil) {
        let timestamp = UInt64(clock() * 1000)
        let (sequence, multicast, unicast, devices) = state.withLock { state in
            state.sequence &+= 1
            return (state.sequence, state.multicast, state.unicast, state.devices)
        }
        guard let bytes = try? Packet.encode(payload, signer: signer, timestamp: timestamp, sequence: sequence),
              let multicast, let groupAddress = try? SocketAddress(ipAddress: configuration.group, port: configuration.port) else { return }
        if let target, let unicast {
            write(bytes, to: target, on: unicast)
            return
        }
        for device in devices {
            if case .v4(let address)? = device.address {
                // The kernel reads the first four bytes as the interface's in_addr.
                let interfaceAddress = Int(address.address.sin_addr.s_addr)
                _ = multicast.setOption(ChannelOptions.ipOption(.ip_multicast_if), value: interfaceAddress)
            }
            write(bytes, to: groupAddress, on: multicast)
        }
    }

    private func write(_ bytes: [UInt8], to address: SocketAddress, on channel: Channel) {
        let buffer = channel.allocator.buffer(bytes: bytes)
        channel.writeAndFlush(AddressedEnvelope(remoteAddress: address, data: buffer), promise: nil)
        state.withLock { $0.statistics.sent += 1; $0.statistics.sentBytes += bytes.count }
    }

    /// On the socket's thread: only the checks of the frame and its signature, then the packet
    /// goes to the engine.
    fileprivate func receive(_ bytes: [UInt8], from address: SocketAddress) {
        let packet: Packet
        do {
            packet = try Packet.decode(bytes)
        } catch {
            state.withLock { $0.statistics.dropped[error.counterName, default: 0] += 1 }
            return
        }
        guard packet.sender != signer.publicKey.rawRepresentation else { return }  // Our own, looped back.
        let host = address.ipAddress ?? "?"
        engine.async { self.handle(packet, from: host) }
    }

    /// On the engine: what a verified packet changes.
    private func handle(_ packet: Packet, from host: String) {
        let now = clock()
        switch packet.payload {
        case .avatarRequest(let hash):
            answerAvatarRequest(from: packet.sender, hash: hash, now: now)
        case .avatar(let hash, let pixels):
            state.withLock { state in
                if state.requested[hash] != nil { state.avatars[hash] = pixels }
            }
        case .message, .ack, .read:
            hooks.withLock { $0.packet }?(packet, host)
        case .query:
            state.withLock { $0.statistics.received += 1 }
            answerQuery(now: now)
        case .announce, .goodbye:
            let events = state.withLock { state -> [PresenceEvent] in
                state.statistics.received += 1
                return state.table.receive(packet, from: host, now: now)
            }
            // Every announcement may prompt the avatar request again: the first can be refused
            // when it reaches the peer before our own announcement did.
            if case .announce = packet.payload, let peer = self.peer(packet.sender) { fetchAvatar(of: peer, now: now) }
            events.forEach(onEvent)
        }
    }

    static let avatarAnswerGap = 10.0

    /// Our avatar goes only to a peer that announced itself, at the address it announced (not
    /// to the request's source, which can be forged), at most once per `avatarAnswerGap`.
    private func answerAvatarRequest(from key: Data, hash: Data, now: Double) {
        guard let ownAvatar, Data(SHA256.hash(data: ownAvatar)) == hash else { return }
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
        guard let peer, let address = try? SocketAddress(ipAddress: peer.host, port: Int(peer.announcement.unicastPort)) else { return }
        send(.avatar(hash: hash, pixels: ownAvatar), to: address)
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
        if ask, let address = try? SocketAddress(ipAddress: peer.host, port: Int(peer.announcement.unicastPort)) {
            send(.avatarRequest(hash: hash), to: address)
        }
    }

    /// Up, multicast-capable IPv4 interfaces, optionally only those named.
    static func devices(named names: [String]?) throws -> [NIONetworkDevice] {
        let all = try System.enumerateDevices().filter { device in
            guard case .v4? = device.address else { return false }
            return device.multicastSupported
        }
        guard let names else { return all }
        return all.filter { names.contains($0.name) }
    }
}

private final class Receiver: ChannelInboundHandler {
    typealias InboundIn = AddressedEnvelope<ByteBuffer>
    let service: NearbyService

    init(service: NearbyService) { self.service = service }

    func channelRead(context: ChannelHandlerContext, data: NIOAny) {
        let envelope = unwrapInboundIn(data)
        var buffer = envelope.data
        let bytes = buffer.readBytes(length: buffer.readableBytes) ?? []
        service.receive(bytes, from: envelope.remoteAddress)
    }
}
