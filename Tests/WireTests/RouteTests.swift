import Testing
@testable import Wire

/// A route's address is read for its host in two places: the LAN sends to it, and the gate and
/// presence group what comes from one host. One reading serves both.
@Suite struct RouteTests {
    @Test func aPortIsCutAndAnythingElseKept() {
        func host(_ address: String) -> String { String(Route(transport: "lan", address: address).host) }
        #expect(host("198.18.0.2:47777") == "198.18.0.2")
        #expect(host("0123456789abcdef0123456789abcdef") == "0123456789abcdef0123456789abcdef")
        #expect(host("a:b:7") == "a:b")
        #expect(host("a:7b") == "a:7b")
        #expect(host("ä:٣") == "ä:٣")  // Only ASCII digits make a port.
        #expect(host("198.18.0.2:") == "198.18.0.2:")  // No digits, no port.
        #expect(host("") == "")
    }

    @Test func aSocketsAddressSplitsAtItsLastColon() {
        func split(_ address: String) -> (String, UInt16)? {
            Route(transport: "lan", address: address).hostAndPort.map { (String($0.host), $0.port) }
        }
        #expect(split("127.0.0.1:47777")! == ("127.0.0.1", 47_777))
        #expect(split("fe80::1:47777")! == ("fe80::1", 47_777))
        #expect(split("[::1]:0")! == ("[::1]", 0))
        #expect(split("h:65535")! == ("h", 65_535))
        #expect(split("h:65536") == nil)
        #expect(split("h:000001") == nil)  // More digits than a port has.
        #expect(split("h:-1") == nil && split("h:+1") == nil)
        #expect(split("nonsense") == nil)
    }
}
