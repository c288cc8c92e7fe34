import Foundation
import Glibc
import Runtime
import Synchronization
import Wire

/// Reads one of the LAN's sockets on a thread of its own and hands each datagram to `deliver`
/// with the route of its source. swift-nio's loop read them before, for some 5,000–8,000
/// instructions a datagram (its readiness loop and pipeline, and the source spelled with
/// `inet_ntop` each time): a twentieth of a message received alone. Here a datagram is a
/// `poll` and a `recvfrom`, and a source's route is worked out once. NIO keeps the sockets for
/// sending and for joining the group (its own reading off).
final class DatagramReader: Sendable {
    /// A pipe whose one byte tells the thread to end (`stop`).
    private let wake: (read: Int32, write: Int32)
    private let ended = DispatchSemaphore(value: 0)
    private let stopped = Mutex(false)

    /// Starts reading `socket` (a descriptor of the socket the reader then owns and closes when
    /// its thread ends, non-blocking) on a thread named `name` (its first 15 bytes, as the
    /// system keeps them).
    init(socket: Int32, name: String, deliver: @escaping @Sendable ([UInt8], Route) -> Void) throws(LANTransport.Failure) {
        var ends: [Int32] = [-1, -1]
        guard pipe(&ends) == 0 else { throw LANTransport.failure(closing: socket) }
        for end in ends { _ = fcntl(end, F_SETFD, FD_CLOEXEC) }
        wake = (ends[0], ends[1])
        Thread.start(named: name) { [wake, ended] in
            Self.read(socket, until: wake.read, deliver: deliver)
            close(socket)
            ended.signal()
        }
    }

    /// Ends the thread and waits for it: nothing is delivered once this returns. Safe to call
    /// twice.
    func stop() {
        let first = stopped.withLock { stopped in
            defer { stopped = true }
            return !stopped
        }
        guard first else { return }
        var byte: UInt8 = 1
        _ = write(wake.write, &byte, 1)
        ended.wait()
        close(wake.read)
        close(wake.write)
    }

    /// At most this many datagrams are read before the pipe is looked at again (a flood does
    /// not hold up `stop`).
    static let batch = 64
    /// The size of a read, as NIO's was: a longer datagram is cut there, and still too long
    /// for the wire, which refuses it (and counts it).
    static let readSize = 2048

    private static func read(_ socket: Int32, until wake: Int32, deliver: @Sendable ([UInt8], Route) -> Void) {
        var buffer = [UInt8](repeating: 0, count: readSize)
        var routes = SourceRoutes()
        var ready = [pollfd(fd: socket, events: Int16(POLLIN), revents: 0), pollfd(fd: wake, events: Int16(POLLIN), revents: 0)]
        while true {
            guard poll(&ready, 2, -1) >= 0 || errno == EINTR else { return }
            if ready[1].revents != 0 { return }
            // What waits, until the socket has nothing more (or an error, which the read takes
            // off it: an ICMP refusal of something sent).
            for _ in 0..<batch {
                var source = sockaddr_in()
                var length = socklen_t(MemoryLayout<sockaddr_in>.size)
                let count = buffer.withUnsafeMutableBytes { bytes in
                    withUnsafeMutablePointer(to: &source) { pointer in
                        pointer.withMemoryRebound(to: sockaddr.self, capacity: 1) {
                            recvfrom(socket, bytes.baseAddress, bytes.count, Int32(MSG_DONTWAIT), $0, &length)
                        }
                    }
                }
                guard count >= 0 else { break }
                guard source.sin_family == sa_family_t(AF_INET) else { continue }
                deliver(Array(buffer[..<count]), routes.route(of: source))
            }
        }
    }
}

/// The routes of IPv4 sources heard from lately, on the one thread that reads a socket: writing
/// an address out (`inet_ntop`, then formatting) for every datagram was a sixtieth of a
/// message's work at either end. Emptied when full, so a crowd of forged senders costs memory
/// only up to `LANTransport.remembered`.
struct SourceRoutes {
    private struct Source: Hashable {
        var address: UInt32
        var port: UInt16
    }

    private var routes: [Source: Route] = [:]

    mutating func route(of address: sockaddr_in) -> Route {
        let source = Source(address: address.sin_addr.s_addr, port: address.sin_port)
        if let known = routes[source] { return known }
        var text = [CChar](repeating: 0, count: Int(INET_ADDRSTRLEN))
        var ip = address.sin_addr
        inet_ntop(AF_INET, &ip, &text, socklen_t(text.count))
        let host = LANTransport.hostName(text.withUnsafeBufferPointer { String(cString: $0.baseAddress!) })
        let route = Route(transport: "lan", address: "\(host):\(UInt16(bigEndian: address.sin_port))")
        if routes.count >= LANTransport.remembered { routes.removeAll(keepingCapacity: true) }
        routes[source] = route
        return route
    }
}
