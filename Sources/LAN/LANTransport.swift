import Foundation
import Glibc
import NIOCore
import NIOPosix
import Synchronization
import Wire

/// The local network as a `Transport`: UDP multicast to a group (TTL 1) on every usable
/// interface, and a unicast socket for direct packets. It moves bytes only: each socket has a
/// thread of its own that hands what it reads to `deliver` (`DatagramReader`); swift-nio's
/// thread joins the group, sends the broadcasts, and sends the direct packets a socket could not
/// take at once.
package final class LANTransport: Transport {
    package struct Configuration: Sendable, Equatable {
        package var group: String
        package var port: Int
        /// Interface names to use; nil means every interface that is up and can multicast.
        package var interfaces: [String]?

        package static let defaultGroup = "239.255.77.77"
        package static let defaultPort = 47_777

        package init(group: String = defaultGroup, port: Int = defaultPort, interfaces: [String]? = nil) {
            self.group = group
            self.port = port
            self.interfaces = interfaces
        }
    }

    package enum Failure: Error, CustomStringConvertible {
        case noInterface([String]?, reason: String?)
        case socket(String)

        package var description: String {
            switch self {
            case .noInterface(let names?, let reason):
                return "no usable multicast interface among: \(names.joined(separator: ", "))" + (reason.map { " (\($0))" } ?? "")
            case .noInterface(nil, let reason):
                return "no network interface is up and able to multicast" + (reason.map { " (\($0))" } ?? "")
            case .socket(let why): return "cannot open the nearby socket: \(why)"
            }
        }
    }

    private struct Sockets {
        var multicast: Channel?
        var unicast: Channel?
        /// The unicast socket again, for sending from the caller's thread (`send`).
        var direct: DirectSocket?
        /// Each socket again, read on a thread of its own.
        var readers: [DatagramReader] = []
        var devices: [NIONetworkDevice] = []
        var port: UInt16 = 0
        /// What `report` was last told.
        var reportedUp = true
    }

    package let name = "lan"
    package let configuration: Configuration
    /// One thread, the loop of both sockets (internal: tests hold it up).
    let group = MultiThreadedEventLoopGroup(numberOfThreads: 1)
    private let sockets = Mutex(Sockets())

    /// Addresses worked out once each: routes' addresses as the socket takes them, and the
    /// direct route of a peer heard at an address. Parsing them again for every packet (an
    /// acknowledgement derives its route, then its address) was a twentieth of a lone
    /// message's instructions. Forgotten all at once past `remembered` of either (a crowd, or
    /// packets from forged addresses).
    private struct Addresses {
        var socket: [String: SocketAddress] = [:]
        var direct: [DirectKey: Route] = [:]
    }

    private struct DirectKey: Hashable {
        var source: String
        var port: UInt16
    }

    static let remembered = 1024
    private let addresses = Mutex(Addresses())

    package init(configuration: Configuration) { self.configuration = configuration }

    package var directPort: UInt16 { sockets.withLock { $0.port } }
    /// Multicast keeps nothing: presence is refreshed there.
    package var keepsPresence: Bool { false }

    package var description: String { "\(name) \(configuration.group):\(configuration.port)" }

    /// A LAN peer's host: its file streams connect there (`FileStream`).
    package func streamHost(of route: Route) -> String? { route.hostAndPort.map { String($0.host) } }

    package func directRoute(from source: Route, port: UInt16, signingKey: Data) -> Route {
        let key = DirectKey(source: source.address, port: port)
        if let known = addresses.withLock({ $0.direct[key] }) { return known }
        let host = source.host
        let route = Route(transport: name, address: "\(host):\(port)")
        addresses.withLock { addresses in
            if addresses.direct.count >= Self.remembered { addresses.direct.removeAll() }
            addresses.direct[key] = route
        }
        return route
    }

    /// A route's address (`host:port`) as the socket takes it; nil when it is not one.
    private func socketAddress(_ route: Route) -> SocketAddress? {
        if let known = addresses.withLock({ $0.socket[route.address] }) { return known }
        guard let (host, port) = route.hostAndPort, let parsed = try? SocketAddress(ipAddress: String(host), port: Int(port)) else { return nil }
        addresses.withLock { addresses in
            if addresses.socket.count >= Self.remembered { addresses.socket.removeAll() }
            addresses.socket[route.address] = parsed
        }
        return parsed
    }

    /// An address as routes name it: an IPv4 address a dual-stack socket reports in its IPv6
    /// form (`::ffff:127.0.0.1`) as plain IPv4, and the unspecified address (a packet looped
    /// back) as 127.0.0.1.
    static func hostName(_ ip: String) -> String {
        var host = ip
        if host.lowercased().hasPrefix("::ffff:"), host.contains(".") { host = String(host.dropFirst(7)) }
        return host == "0.0.0.0" ? "127.0.0.1" : host
    }

    /// Opens the sockets and joins the group on each interface, without waiting: an interface
    /// that cannot join yet is tried again from the event loop (every `rejoinGap` at first, then
    /// every `rescanGap`, which also picks up interfaces that come up later). Only when no
    /// interface at all is up (or none of those named) does it fail. Whatever fails releases what
    /// was opened before it.
    package func start(deliver: @escaping @Sendable ([UInt8], Route) -> Void,
                      report: @escaping @Sendable (TransportState) -> Void) throws {
        do {
            let devices = try Self.devices(named: configuration.interfaces)
            guard !devices.isEmpty else { throw Failure.noInterface(configuration.interfaces, reason: nil) }
            let (multicast, groupReader) = try openMulticast(deliver)
            let unicast: Channel, direct: DirectSocket, reader: DatagramReader
            do {
                (unicast, direct, reader) = try openUnicast(deliver)
            } catch {
                groupReader.stop()
                try? multicast.close().wait()
                throw error
            }
            sockets.withLock {
                $0.multicast = multicast
                $0.unicast = unicast
                $0.direct = direct
                $0.readers = [groupReader, reader]
                $0.port = UInt16(unicast.localAddress?.port ?? 0)
            }
            // The first joins happen on the loop before this returns (the first announcement
            // goes out next, on the interfaces joined); retries and rescans are scheduled there,
            // and no caller ever waits for one.
            try multicast.eventLoop.submit { self.rescan(attempt: 0, report: report) }.wait()
        } catch let error as Failure {
            abandon()
            throw error
        } catch {
            abandon()
            throw Failure.socket("\(error)")
        }
    }

    /// What a start that failed had opened, released: the reading threads ended, then the loop
    /// (which closes its channels), and the descriptor kept for sending let go.
    private func abandon() {
        sockets.withLock { state in
            defer { state = Sockets() }
            return state.readers
        }.forEach { $0.stop() }
        try? group.syncShutdownGracefully()
    }

    /// Retry gaps: quick while nothing is joined yet (interfaces being set up), then slow.
    static let rejoinGap = TimeAmount.milliseconds(50)
    static let quickRejoins = 40
    static let rescanGap = TimeAmount.seconds(5)

    /// On the event loop: joins the group on every usable interface not joined yet, forgets the
    /// ones that went away, says when the LAN became usable or stopped being, and comes back.
    private func rescan(attempt: Int, report: @escaping @Sendable (TransportState) -> Void) {
        guard let multicast = sockets.withLock({ $0.multicast }), multicast.isActive else { return }
        let listed = (try? Self.devices(named: configuration.interfaces)) ?? []
        let (joinedBefore, wasUp) = sockets.withLock { ($0.devices, $0.reportedUp) }
        var joined = joinedBefore.filter { old in listed.contains { $0.name == old.name && $0.address == old.address } }
        var lastFailure: String?
        for device in listed where !joined.contains(where: { $0.name == device.name && $0.address == device.address }) {
            do {
                try join(device, on: multicast)
                joined.append(device)
            } catch {
                lastFailure = "\(device.name): \(error)"
            }
        }
        sockets.withLock {
            $0.devices = joined
            $0.reportedUp = !joined.isEmpty
        }
        // Said only when it changes (starting counts as up: no news is good news).
        if wasUp, joined.isEmpty {
            report(.down(Failure.noInterface(configuration.interfaces, reason: lastFailure ?? "none listed").description + "; trying again"))
        } else if !wasUp, !joined.isEmpty {
            report(.up)
        }
        let gap = joined.isEmpty && attempt < Self.quickRejoins ? Self.rejoinGap : Self.rescanGap
        multicast.eventLoop.scheduleTask(in: gap) { self.rescan(attempt: attempt + 1, report: report) }
    }

    /// IP_ADD_MEMBERSHIP directly: NIO's joinGroup checks the channel's cached local address
    /// first, which under load was seen to refuse a good socket.
    private func join(_ device: NIONetworkDevice, on multicast: Channel) throws {
        guard case .v4(let interface)? = device.address, let options = multicast as? SocketOptionProvider else {
            throw Failure.socket("not an IPv4 interface")
        }
        var group4 = in_addr()
        guard inet_pton(AF_INET, configuration.group, &group4) == 1 else { throw Failure.socket("bad group address") }
        let request = ip_mreq(imr_multiaddr: group4, imr_interface: interface.address.sin_addr)
        // On the channel's own loop the option is set at once and the future is already complete:
        // read its result without waiting (waiting on the loop would deadlock it).
        let outcome = NIOLoopBoundBox<Result<Void, Error>>(.failure(Failure.socket("the socket option was not set")),
                                                            eventLoop: multicast.eventLoop)
        options.unsafeSetSocketOption(level: .init(rawValue: CInt(IPPROTO_IP)), name: .init(rawValue: IP_ADD_MEMBERSHIP),
                                      value: request).whenComplete { outcome.value = $0 }
        try outcome.value.get()
    }

    /// What each socket may hold unread (the kernel caps it at net.core.rmem_max, 208 KiB by
    /// default): a crowd of 500 answering a newcomer within half a second is some 500 datagrams
    /// of about 1 KiB each as the kernel counts them, while the checks of the first are still
    /// running.
    static let receiveBuffer: Int32 = 1 << 20

    /// Binds the group's port, multicast to this segment only, our own packets looped back (two
    /// shells on one host hear each other). Read by a `DatagramReader`, as direct packets are:
    /// through swift-nio's loop every broadcast received cost some 5,000 instructions more (its
    /// pipeline, and the sender's address spelled out), a crowd's and a flood's alike.
    private func openMulticast(_ deliver: @escaping @Sendable ([UInt8], Route) -> Void) throws -> (Channel, DatagramReader) {
        let fd = try Self.boundSocket(port: UInt16(configuration.port), options: [
            (SOL_SOCKET, SO_REUSEADDR, 1), (SOL_SOCKET, SO_REUSEPORT, 1), (SOL_SOCKET, SO_RCVBUF, Self.receiveBuffer),
            (Int32(IPPROTO_IP), IP_MULTICAST_TTL, 1), (Int32(IPPROTO_IP), IP_MULTICAST_LOOP, 1),
        ])
        return try adopt(fd, readBy: "seance-lan-grp", deliver: deliver)
    }

    /// The socket of direct packets, on an ephemeral port: a second descriptor of it is kept
    /// for `send`. Direct packets are for the local segment only, like the multicast ones: a
    /// forged source address elsewhere on the internet is never answered.
    private func openUnicast(_ deliver: @escaping @Sendable ([UInt8], Route) -> Void) throws -> (Channel, DirectSocket, DatagramReader) {
        let fd = try Self.boundSocket(port: 0, options: [(Int32(IPPROTO_IP), IP_TTL, 1), (SOL_SOCKET, SO_RCVBUF, Self.receiveBuffer)])
        let direct = DirectSocket(try Self.duplicate(fd))
        let (channel, reader) = try adopt(fd, readBy: "seance-lan-read", deliver: deliver)
        return (channel, direct, reader)
    }

    /// A non-blocking IPv4 UDP socket with `options` (level, name, value), bound to `port` on
    /// every address (0: one the system picks).
    private static func boundSocket(port: UInt16, options: [(Int32, Int32, Int32)]) throws -> Int32 {
        let fd = socket(AF_INET, Int32(SOCK_DGRAM.rawValue) | Int32(SOCK_CLOEXEC.rawValue), 0)
        guard fd >= 0 else { throw Failure.socket(String(cString: strerror(errno))) }
        for (level, name, value) in options {
            var value = value
            guard setsockopt(fd, level, name, &value, socklen_t(MemoryLayout<Int32>.size)) == 0 else { throw failure(closing: fd) }
        }
        var any = sockaddr_in()
        any.sin_family = sa_family_t(AF_INET)
        any.sin_port = port.bigEndian
        let bound = withUnsafePointer(to: &any) {
            $0.withMemoryRebound(to: sockaddr.self, capacity: 1) { bind(fd, $0, socklen_t(MemoryLayout<sockaddr_in>.size)) }
        }
        // Non-blocking for every descriptor of it (they share it): a send never waits.
        guard bound == 0, fcntl(fd, F_SETFL, fcntl(fd, F_GETFL) | O_NONBLOCK) == 0 else { throw failure(closing: fd) }
        return fd
    }

    /// Another descriptor of `fd`'s socket; when there can be none, `fd` is closed and why is
    /// thrown.
    private static func duplicate(_ fd: Int32) throws(Failure) -> Int32 {
        let copy = fcntl(fd, F_DUPFD_CLOEXEC, 0)
        guard copy >= 0 else { throw failure(closing: fd) }
        return copy
    }

    /// Why the last system call failed (its `errno`, read before `fd` is closed), with `fd`
    /// closed.
    static func failure(closing fd: Int32) -> Failure {
        defer { close(fd) }
        return Failure.socket(String(cString: strerror(errno)))
    }

    /// Hands `fd` to swift-nio, which sends on it (what `send` could not at once, and the
    /// broadcasts) and reads nothing, while a second descriptor of it is read on a thread named
    /// `name`. Should this fail before NIO has `fd`, it is closed here.
    private func adopt(_ fd: Int32, readBy name: String,
                       deliver: @escaping @Sendable ([UInt8], Route) -> Void) throws -> (Channel, DatagramReader) {
        let read = try Self.duplicate(fd)
        let reader: DatagramReader
        do {
            reader = try DatagramReader(socket: read, name: name, deliver: deliver)
        } catch {
            close(fd)
            throw error
        }
        do {
            let channel = try DatagramBootstrap(group: group)
                .channelOption(.autoRead, value: false)
                .withBoundSocket(fd).wait()
            return (channel, reader)
        } catch {
            reader.stop()
            throw error
        }
    }

    package func broadcast(_ bytes: [UInt8], as kind: BroadcastKind) {
        let (multicast, devices) = sockets.withLock { ($0.multicast, $0.devices) }
        guard let multicast, let address = try? SocketAddress(ipAddress: configuration.group, port: configuration.port) else { return }
        for device in devices {
            if case .v4(let interface)? = device.address, let options = multicast as? SocketOptionProvider {
                // IP_MULTICAST_IF with the interface's in_addr, so the packet leaves by that
                // interface with its address as the source (without it, on lo the source was
                // 0.0.0.0, and peers' direct packets went nowhere once another interface existed).
                _ = options.unsafeSetSocketOption(level: .init(rawValue: CInt(IPPROTO_IP)), name: .init(rawValue: IP_MULTICAST_IF),
                                                  value: interface.address.sin_addr)
            }
            write(bytes, to: address, on: multicast)
        }
    }

    /// Sends a direct packet at once, on the caller's thread (the engine's): handing it to the
    /// loop cost a wake-up of the loop's thread, a tenth of a message's way to the peer
    /// (measured: pings' p50 and p99 fell by about a tenth; bursts kept their rate). Only one the
    /// socket cannot take now (its buffer full) is queued on the loop, which sends it once it
    /// can; it may then go after later ones, which the protocol allows for (datagrams may come
    /// in any order).
    @discardableResult
    package func send(_ bytes: [UInt8], to route: Route) -> Bool {
        guard route.transport == name, let address = socketAddress(route),
              let (unicast, direct) = sockets.withLock({ state in state.unicast.map { ($0, state.direct) } }) else { return false }
        if direct?.send(bytes, to: address) == true { return true }
        write(bytes, to: address, on: unicast)
        return true
    }

    private func write(_ bytes: [UInt8], to address: SocketAddress, on channel: Channel) {
        channel.writeAndFlush(AddressedEnvelope(remoteAddress: address, data: channel.allocator.buffer(bytes: bytes)), promise: nil)
    }

    /// Closes the sockets after what was written has gone. Safe to call twice.
    package func stop() {
        let (multicast, unicast, readers) = sockets.withLock { state in
            // The second descriptor closes once no send is using it.
            defer { state.multicast = nil; state.unicast = nil; state.direct = nil; state.readers = [] }
            return (state.multicast, state.unicast, state.readers)
        }
        guard multicast != nil || unicast != nil else { return }
        readers.forEach { $0.stop() }
        try? multicast?.close().wait()
        try? unicast?.close().wait()
        try? group.syncShutdownGracefully()
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

/// A descriptor of the unicast socket that sends from whichever thread calls. It closes when
/// the last one using it lets go (a send under way when the transport stops never finds its
/// descriptor closed, nor given to another file).
private final class DirectSocket: Sendable {
    private let fd: Int32

    init(_ fd: Int32) { self.fd = fd }

    deinit { close(fd) }

    /// False when the datagram did not go: the socket's buffer is full (it never waits), or
    /// whatever else the loop's own write will meet and deal with.
    func send(_ bytes: [UInt8], to address: SocketAddress) -> Bool {
        address.withSockAddr { target, length in
            bytes.withUnsafeBytes { sendto(fd, $0.baseAddress, $0.count, Int32(MSG_NOSIGNAL), target, socklen_t(length)) >= 0 }
        }
    }
}
