import Dispatch
import Foundation
import Glibc
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
        #expect(LANTransport.hostAndPort("127.0.0.1:47777")! == ("127.0.0.1", 47_777))
        #expect(LANTransport.hostAndPort("fe80::1:47777")! == ("fe80::1", 47_777))
        #expect(LANTransport.hostAndPort("nonsense") == nil)
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
/// told: the loop's wake-up was a tenth of a message's way to the peer.
@Suite(.enabled(if: inPrivateNetwork, "opens sockets: only inside scripts/in-netns"))
struct LANDirectSendTests {
    @Test func aDirectPacketDoesNotWaitForTheLoop() throws {
        try withTransportAndPeer { lan, peer in
            // The loop is busy for as long as the packet is waited for.
            let busy = DispatchSemaphore(value: 0), release = DispatchSemaphore(value: 0)
            lan.group.next().execute {
                busy.signal()
                release.wait()
            }
            busy.wait()
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

    /// A started transport on `lo` (the default group and port) and a peer on loopback, in a
    /// network of the test's own, for `body`.
    func withTransportAndPeer(_ body: (LANTransport, UDPListener) throws -> Void) throws {
        let network = try PrivateNetwork()
        let lan = LANTransport(configuration: .init(interfaces: ["lo"]))
        try network.inside { try lan.start(deliver: { _, _ in }, report: { _ in }) }
        defer { lan.stop() }
        let peer = try #require(try network.inside { UDPListener() })
        defer { peer.close() }
        try body(lan, peer)
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

    func close() { Glibc.close(fd) }
}
