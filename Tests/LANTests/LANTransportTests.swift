import Foundation
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
}
