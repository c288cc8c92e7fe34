import Foundation
import Glibc
import TestSupport
import Testing

extension TestNetwork {
    /// Drops `tenths` of every ten room beacons the bridge forwards to `host`, exactly (nft counts
    /// them: `numgen inc`), so a guest's share of beacons — and its proximity — is what the test
    /// says. The beacon is the datagram whose seance kind (byte 5 of the UDP payload) is 12.
    func dropBeacons(to host: Int, tenths: Int) throws {
        let chain = "beacons\(host)"
        var script = """
            nft add table bridge seance\(id)
            nft add chain bridge seance\(id) \(chain) '{ type filter hook forward priority 1; }'
            nft flush chain bridge seance\(id) \(chain)

            """
        if tenths > 0 {
            let share = tenths >= 10 ? "" : "numgen inc mod 10 '<' \(tenths) "
            script += "nft add rule bridge seance\(id) \(chain) oifname '\"sv\(id)\(host)\"' meta l4proto udp "
                + "@th,104,8 12 \(share)counter drop\n"
        }
        let result = try shellScript(script)
        guard result.status == 0 else { throw SetupError(output: result.output) }
    }
}

/// Rooms between real shells on namespace hosts: a host and three guests that join by
/// themselves, proximity following the share of beacons nft lets through, a guest leaving when
/// the beacon is blocked, a second key beaconing the same room flagged, lines reaching exactly
/// the members the planes allow, and `/close`; through mosquitto, a guest with no LAN in common.
@Suite(.enabled(if: inPrivateNetwork, "runs only inside scripts/in-netns (make test)"))
struct RoomIntegrationTests {
    final class Hosts {
        let net: TestNetwork
        var shells: [String: PipeDriver] = [:]
        var data: [String: String] = [:]

        init(count: Int) throws { net = try TestNetwork(hosts: count) }

        /// A shell on `host`, logged in as `name`, on the plane `battery` gives.
        @discardableResult
        func shell(_ name: String, host: Int, battery: Int = 90, arguments: [String] = []) throws -> PipeDriver {
            let data = try net.makeProfile(name, host: host)
            let driver = try PipeDriver(arguments: ["--data-dir", data, "--interface", "e0", "--announce-interval", "0.2",
                                                    "--battery", "\(battery)"] + arguments,
                                        scratch: net.scratch, prefix: ["/usr/sbin/ip", "netns", "exec", net.namespace(host)])
            try driver.send("login \(name) --password-file \(net.scratch.path)/password")
            shells[name] = driver
            self.data[name] = data
            return driver
        }

        subscript(name: String) -> PipeDriver { shells[name]! }

        func received(_ name: String) throws -> [String] {
            try query(data[name]!, "SELECT text FROM roomMessage WHERE NOT outgoing ORDER BY id")
        }

        deinit { shells.values.forEach { $0.close() } }
    }

    /// The host's `/members` line for `guest` says `proximity`, polled (proximity settles over seconds).
    func member(_ guest: String, of host: PipeDriver, is proximity: String, timeout: Double) throws -> Bool {
        try eventually(timeout: timeout) {
            try host.send("/members")
            try host.drain(for: 0.5)
            // The last listing: the lines after its last "room …: N here".
            guard let listing = host.output.components(separatedBy: " here\n").last else { return false }
            return listing.split(separator: "\n").contains { $0.contains(guest + "#") && $0.hasSuffix(" " + proximity) }
        }
    }

    /// `/send` in a room sends the file to every member, each a transfer of its own (issue 36).
    @Test func aFileSentInARoomGoesToEveryMember() throws {
        let hosts = try Hosts(count: 3)
        let ann = try hosts.shell("ann", host: 1)
        for (name, host) in [("ben", 2), ("cat", 3)] { try hosts.shell(name, host: host) }
        try ann.send("room host 3 4")
        #expect(try ann.read(until: "you host room 3.4", timeout: 20))
        for name in ["ben", "cat"] {
            try hosts[name].send("room listen --wait 20")
            #expect(try hosts[name].read(until: "you joined room 3.4", timeout: 25))
        }
        #expect(try member("cat", of: ann, is: "immediate", timeout: 15) && member("ben", of: ann, is: "immediate", timeout: 15))
        let path = hosts.net.scratch.path + "/plan.txt"
        try Data(String(repeating: "meet at the quarry at dusk\n", count: 1_000).utf8).write(to: URL(fileURLWithPath: path))
        try ann.send("/send \(path)")
        for name in ["ben", "cat"] {
            #expect(try hosts[name].read(until: "offers plan.txt (a file, 26 KiB): /accept 1", timeout: 20))
            try hosts[name].send("/accept 1")
        }
        let both = try eventually(timeout: 30) {
            try query(hosts.data["ann"]!, "SELECT count(*) FROM transfer WHERE state = 'complete'") == ["2"]
        }
        #expect(both, "\(ann.output.suffix(600))")
        for name in ["ben", "cat"] {
            try hosts[name].send("/save 1 \(hosts.net.scratch.path)/\(name).txt")
            #expect(try hosts[name].read(until: "saved file 1", timeout: 10))
            #expect(FileManager.default.contentsEqual(atPath: path, andPath: "\(hosts.net.scratch.path)/\(name).txt"))
        }
    }

    @Test func aHostAndThreeGuestsNearAndFar() throws {
        let hosts = try Hosts(count: 5)
        let ann = try hosts.shell("ann", host: 1)
        // dan is a Ghost: it reaches everyone, and only a Ghost reaches it.
        for (name, host, battery) in [("ben", 2, 90), ("cat", 3, 90), ("dan", 4, 3)] {
            try hosts.shell(name, host: host, battery: battery)
        }
        try ann.send("room host 7 42")
        #expect(try ann.read(until: "you host room 7.42", timeout: 20))
        for name in ["ben", "cat", "dan"] {
            try hosts[name].send("room listen --wait 20")
            #expect(try hosts[name].read(until: "you joined room 7.42, hosted by ann#", timeout: 25))
        }
        for name in ["ben", "cat", "dan"] { #expect(try member(name, of: ann, is: "immediate", timeout: 15), "\(ann.output)") }

        // Lines: ann (Human) reaches the Humans, not the Ghost; the Ghost reaches everyone.
        try ann.send("hello room")
        #expect(try hosts["ben"].read(until: "hello room", timeout: 10))
        #expect(try hosts["cat"].read(until: "hello room", timeout: 10))
        try hosts["dan"].send("boo from beyond")
        for name in ["ann", "ben", "cat"] { #expect(try hosts[name].read(until: "boo from beyond", timeout: 10)) }
        #expect(try hosts.received("dan") == [])
        #expect(try hosts.received("ben") == ["hello room", "boo from beyond"])
        #expect(try query(hosts.data["ann"]!, "SELECT copies, acknowledged FROM roomMessage WHERE outgoing") == ["2|2"])

        // Proximity follows the share of beacons that reach cat: 70 % near, 50 % far, all immediate.
        try hosts.net.dropBeacons(to: 3, tenths: 3)
        #expect(try member("cat", of: ann, is: "near", timeout: 30), "\(ann.output)")
        try hosts.net.dropBeacons(to: 3, tenths: 5)
        #expect(try member("cat", of: ann, is: "far", timeout: 30), "\(ann.output)")
        try hosts.net.dropBeacons(to: 3, tenths: 0)
        #expect(try member("cat", of: ann, is: "immediate", timeout: 30), "\(ann.output)")
        #expect(try hosts["cat"].read(until: "you are now far to the host of room 7.42", timeout: 5))
        #expect(try member("ben", of: ann, is: "immediate", timeout: 1))

        // Every beacon to ben blocked: ben leaves by itself 10 s after the last one came.
        try hosts.net.dropBeacons(to: 2, tenths: 10)
        let blocked = Date()
        #expect(try hosts["ben"].read(until: "no beacon from the host of room 7.42 for 10 s: out of range; you left it", timeout: 20))
        let waited = Date().timeIntervalSince(blocked)
        #expect((8.5...12.5).contains(waited), "left \(waited) s after its beacons were blocked")
        #expect(try ann.read(until: "left room 7.42", timeout: 10))

        // eve, who cannot hear ann, beacons the same numbers with another key: flagged everywhere.
        try hosts.net.dropBeacons(to: 5, tenths: 10)
        let eve = try hosts.shell("eve", host: 5)
        try eve.send("room host 7 42")
        #expect(try eve.read(until: "you host room 7.42", timeout: 20))
        #expect(try ann.read(until: "also beacons room 7.42, which you host: a forged beacon, not followed", timeout: 10))
        #expect(try hosts["cat"].read(until: "also beacons room 7.42, which ann#", timeout: 10))
        try hosts["cat"].send("/scan")
        #expect(try hosts["cat"].read(until: "forged: another key beacons this room", timeout: 10))
        #expect(try hosts["cat"].read(until: "(you are in it)", timeout: 5))

        // The host closes: everyone still in the room is out, with a notice.
        try ann.send("/close")
        #expect(try ann.read(until: "room 7.42 closed", timeout: 10))
        for name in ["cat", "dan"] { #expect(try hosts[name].read(until: "the host closed room 7.42; you left it", timeout: 10)) }
        try hosts["cat"].send("/members")
        #expect(try hosts["cat"].readError(until: "you are in no room", timeout: 10))
    }

    /// ann hosts on host 2; ben on host 3 shares no LAN with it, only mosquitto on host 1.
    @Test func aGuestWithNoLANInCommonJoinsThroughTheBroker() throws {
        let hosts = try Hosts(count: 3)
        try hosts.net.blockMulticast()
        let broker = try BrokerProcess.mosquitto(on: hosts.net, host: 1)
        #expect(try broker.waitUntilReady())
        let ann = try hosts.shell("ann", host: 2, arguments: ["--broker", broker.url])
        let ben = try hosts.shell("ben", host: 3, arguments: ["--broker", broker.url])
        try ann.send("room host 1 2")
        #expect(try ann.read(until: "on lan and broker", timeout: 20))
        try ben.send("room listen --wait 20")
        #expect(try ben.read(until: "you joined room 1.2, hosted by ann#", timeout: 25), "\(ben.output)")
        #expect(try ann.read(until: "joined room 1.2", timeout: 10))
        try ben.send("over the broker")
        #expect(try ann.read(until: "over the broker", timeout: 10))
        try ann.send("/close")
        #expect(try ben.read(until: "the host closed room 1.2", timeout: 10))
    }
}
