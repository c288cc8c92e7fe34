import Dispatch
import Foundation
import Glibc
import Synchronization
import TestSupport
import Testing
import Wire
@testable import LAN

/// Routes are strings only the LAN reads: they must survive the forms a dual-stack socket
/// reports addresses in (a lost direct packet was the price once).
@Suite struct LANRouteTests {
    @Test func addressesAreNamedAndSplitSafely() {
        #expect(LANTransport.hostName("::ffff:127.0.0.1") == "127.0.0.1")
        #expect(LANTransport.hostName("::FFFF:198.18.0.2") == "198.18.0.2")
        #expect(LANTransport.hostName("0.0.0.0") == "127.0.0.1")
        #expect(LANTransport.hostName("198.18.0.7") == "198.18.0.7")
        let lan = LANTransport(configuration: .init())
        #expect(lan.directRoute(from: Route(transport: "lan", address: "198.18.0.2:47777"), port: 40_000, signingKey: Data()).address == "198.18.0.2:40000")
    }

    /// Direct routes are worked out once per address and port, and the ones remembered are
    /// forgotten past `remembered`: each answer stays its own address's, before and after.
    @Test func directRoutesRememberedAreEachAddresssOwn() {
        let lan = LANTransport(configuration: .init())
        func route(_ host: Int, _ port: UInt16) -> String {
            lan.directRoute(from: Route(transport: "lan", address: "198.18.\(host / 256).\(host % 256):47777"), port: port,
                            signingKey: Data()).address
        }
        #expect(route(2, 40_000) == "198.18.0.2:40000")
        #expect(route(2, 40_001) == "198.18.0.2:40001", "the port is the peer's, not the one remembered")
        for host in 0..<(LANTransport.remembered + 10) {
            #expect(route(host, 40_000) == "198.18.\(host / 256).\(host % 256):40000")
        }
        #expect(route(2, 40_001) == "198.18.0.2:40001")
    }
}

/// Direct packets leave from the thread that sends them, by the socket whose port peers were
/// told: the loop's wake-up was a tenth of a message's way to the peer. Each socket is read on
/// a thread of its own.
@Suite(.enabled(if: inPrivateNetwork, "opens sockets: only inside scripts/in-netns"))
struct LANDirectSendTests {
    @Test func aDirectPacketDoesNotWaitForTheLoop() throws {
        try withTransportAndPeer { lan, peer in
            // The loop is busy for as long as the packet is waited for.
            let release = holdUp(lan)
            defer { release.signal() }
            lan.send([7, 8, 9], to: peer.route)
            let (bytes, sourcePort) = try #require(peer.receive(waiting: 2))
            #expect(bytes == [7, 8, 9])
            #expect(sourcePort == lan.directPort)
        }
    }

    @Test func aPacketSentOnTheLoopStillGoes() throws {
        try withTransportAndPeer { lan, peer in
            lan.group.next().execute { lan.send([1], to: peer.route) }
            let (bytes, sourcePort) = try #require(peer.receive(waiting: 5))
            #expect(bytes == [1])
            #expect(sourcePort == lan.directPort)
        }
    }

    /// Direct packets are read on a thread of their own, not by the loop: they come in while the
    /// loop is held up, from the peer's address and port.
    @Test func aDirectPacketIsReadWithoutTheLoop() throws {
        let heard = try readWhileTheLoopIsHeldUp(count: 2) { lan, peer in
            for bytes: [UInt8] in [[4, 5, 6], [7]] { peer.send(bytes, toPort: lan.directPort) }
        }
        #expect(heard.map(\.bytes) == [[4, 5, 6], [7]])
    }

    /// The group's socket is read on a thread of its own too.
    @Test func aBroadcastIsReadWithoutTheLoop() throws {
        let heard = try readWhileTheLoopIsHeldUp(count: 1) { lan, peer in peer.send([9, 9], toPort: UInt16(lan.configuration.port)) }
        #expect(heard.map(\.bytes) == [[9, 9]])
    }

    /// What a started transport delivers of `count` datagrams that `send` has a peer send it
    /// while its loop is held up (empty when they do not all come within 5 s each), each from
    /// the peer's route.
    func readWhileTheLoopIsHeldUp(count: Int, _ send: (LANTransport, UDPListener) -> Void) throws -> [(bytes: [UInt8], route: Route)] {
        let heard = Mutex<[(bytes: [UInt8], route: Route)]>([]), came = DispatchSemaphore(value: 0)
        var delivered: [(bytes: [UInt8], route: Route)] = []
        try withTransportAndPeer(deliver: { bytes, route in
            heard.withLock { $0.append((bytes, route)) }
            came.signal()
        }) { lan, peer in
            let release = holdUp(lan)
            defer { release.signal() }
            send(lan, peer)
            guard (0..<count).allSatisfy({ _ in came.wait(timeout: .now() + 5) == .success }) else { return }
            delivered = heard.withLock { $0 }
            #expect(delivered.allSatisfy { $0.route == peer.route })
        }
        return delivered
    }

    /// Keeps `lan`'s loop busy until the semaphore returned is signalled.
    func holdUp(_ lan: LANTransport) -> DispatchSemaphore {
        let busy = DispatchSemaphore(value: 0), release = DispatchSemaphore(value: 0)
        lan.group.next().execute {
            busy.signal()
            release.wait()
        }
        busy.wait()
        return release
    }

    /// A started transport on `lo` (the default group and port) and a peer on loopback, in a
    /// network of the test's own, for `body`.
    func withTransportAndPeer(deliver: @escaping @Sendable ([UInt8], Route) -> Void = { _, _ in },
                              _ body: (LANTransport, UDPListener) throws -> Void) throws {
        let network = try PrivateNetwork()
        let lan = LANTransport(configuration: .init(interfaces: ["lo"]))
        try network.inside { try lan.start(deliver: deliver, report: { _ in }) }
        defer { lan.stop() }
        let peer = try #require(try network.inside { UDPListener() })
        defer { peer.close() }
        try body(lan, peer)
    }
}

/// The reader's thread ends with `stop`, which waits for it to leave its loop: nothing is read
/// once it returns.
@Suite(.enabled(if: inPrivateNetwork, "opens sockets: only inside scripts/in-netns"))
struct DatagramReaderTests {
    /// The names of this process's threads.
    func threadNames() throws -> [String] {
        try FileManager.default.contentsOfDirectory(atPath: "/proc/self/task").compactMap { task in
            try? String(contentsOfFile: "/proc/self/task/\(task)/comm", encoding: .utf8).trimmingCharacters(in: .whitespacesAndNewlines)
        }
    }

    @Test func stopEndsItsThread() throws {
        let network = try PrivateNetwork()
        let socket = try #require(try network.inside { UDPListener() })
        defer { socket.close() }
        let own = fcntl(socket.fd, F_DUPFD_CLOEXEC, 0)
        _ = fcntl(own, F_SETFL, fcntl(own, F_GETFL) | O_NONBLOCK)
        let heard = Mutex<[[UInt8]]>([]), came = DispatchSemaphore(value: 0)
        let reader = try DatagramReader(socket: own, name: "reader-test", deliver: { bytes, _ in
            heard.withLock { $0.append(bytes) }
            came.signal()
        })
        // Running, on a thread of its name: it reads what a peer sends.
        let peer = try #require(try network.inside { UDPListener() })
        defer { peer.close() }
        peer.send([1], toPort: socket.port)
        #expect(came.wait(timeout: .now() + 5) == .success)
        #expect(try threadNames().contains("reader-test"))
        reader.stop()
        // Its thread has ended: gone from the process's threads once the system has reaped it,
        // a moment after (waited for, up to 5 s).
        let deadline = Date() + 5
        while try threadNames().contains("reader-test"), Date() < deadline { usleep(1000) }
        #expect(try !threadNames().contains("reader-test"))
        #expect(heard.withLock { $0 } == [[1]])
        reader.stop()  // Twice is harmless.
    }
}

/// A plain UDP socket on 127.0.0.1, standing for a peer.
struct UDPListener {
    let fd: Int32
    let port: UInt16

    init?() {
        guard let (fd, port) = loopbackSocket(SOCK_DGRAM) else { return nil }
        self.fd = fd
        self.port = port
    }

    var route: Route { Route(transport: "lan", address: "127.0.0.1:\(port)") }

    /// The next datagram and its source port, or nil if none came within `seconds`.
    func receive(waiting seconds: Double) -> ([UInt8], UInt16)? {
        var ready = pollfd(fd: fd, events: Int16(POLLIN), revents: 0)
        guard poll(&ready, 1, Int32(seconds * 1000)) == 1 else { return nil }
        var buffer = [UInt8](repeating: 0, count: 2048)
        var source = sockaddr_in()
        var length = socklen_t(MemoryLayout<sockaddr_in>.size)
        let count = withUnsafeMutablePointer(to: &source) { pointer in
            pointer.withMemoryRebound(to: sockaddr.self, capacity: 1) { recvfrom(fd, &buffer, buffer.count, 0, $0, &length) }
        }
        guard count >= 0 else { return nil }
        return (Array(buffer[..<count]), UInt16(bigEndian: source.sin_port))
    }

    /// Sends `bytes` to 127.0.0.1:`port`.
    func send(_ bytes: [UInt8], toPort port: UInt16) {
        var target = sockaddr_in()
        target.sin_family = sa_family_t(AF_INET)
        target.sin_addr.s_addr = inet_addr("127.0.0.1")
        target.sin_port = port.bigEndian
        _ = withUnsafePointer(to: &target) { pointer in
            pointer.withMemoryRebound(to: sockaddr.self, capacity: 1) {
                sendto(fd, bytes, bytes.count, 0, $0, socklen_t(MemoryLayout<sockaddr_in>.size))
            }
        }
    }

    func close() { Glibc.close(fd) }
}
