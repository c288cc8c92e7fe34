import Crypto
import Foundation
import Glibc
import Nearby
import TestSupport
import Testing

/// Frames that prove nothing, forged in a friend's name from another host, spend nothing the
/// friend's own frames need (issue 49): ann and ben on two hosts, an attacker on a third who
/// knows ben's key and floods ann with handshake first messages and refresh proofs in ben's
/// name, 200 and then 2,000 of each a second. ben stays listed throughout, a session is made,
/// and a line ann types at the start of each flood reaches ben while it lasts.
@Suite(.enabled(if: inPrivateNetwork, "runs only inside scripts/in-netns (make test)"))
struct SilencingTests {
    /// Sends `rate` forged frames of each kind a second for `seconds`, in `claimed`'s name, to
    /// `victim` (its unicast port) and the group.
    static func flood(from peer: FakePeer, claimed: Data, victim: (key: Data, host: String, port: UInt16), rate: Int, seconds: Double) {
        let start = Date()
        var sent = 0
        while Date().timeIntervalSince(start) < seconds {
            let first = HandshakeFrame(sender: claimed, recipient: victim.key, senderIndex: UInt32.random(in: 1...UInt32.max), recipientIndex: 0,
                                       step: 1, message: (0..<32).map { _ in UInt8.random(in: 0...255) })
            peer.send(first.encoded(), to: victim.host, port: victim.port)
            let proof = RefreshProof(sender: claimed, unicastPort: victim.port,
                                     link: ChainLink(index: UInt32.random(in: 1...1_000), value: (0..<32).map { _ in UInt8.random(in: 0...255) }))
            peer.multicast(proof.encoded())
            sent += 1
            // Paced to the rate (a burst each millisecond at the higher one).
            let due = start.addingTimeInterval(Double(sent) / Double(rate))
            if due > Date() { usleep(useconds_t(max(0, due.timeIntervalSinceNow) * 1_000_000)) }
        }
    }

    @Test func forgedFramesInAFriendsNameDoNotSilenceThem() throws {
        let net = try TestNetwork(hosts: 3)
        let a = try net.makeProfile("ann", host: 1), b = try net.makeProfile("ben", host: 2)
        let listener = try net.inside(host: 3) { GroupListener(port: seancePort, host: net.address(3)) }
        let runB = try net.start(host: 2, data: b, name: "ben", lines: ["chat"])
        let runA = try net.start(host: 1, data: a, name: "ann", lines: ["chat"])
        defer { runA.kill(); runB.kill() }
        let (benKey, _) = try #require(listener.announcement(of: "ben", timeout: 20))
        let (annKey, ann) = try #require(listener.announcement(of: "ann", timeout: 20))
        #expect(runA.waitForPeer("ben"))
        // Used by the flood's thread alone, one flood at a time.
        nonisolated(unsafe) let attacker = try net.inside(host: 3) { FakePeer(port: seancePort, host: net.address(3)) }
        let victim = (annKey, net.address(1), ann.unicastPort)
        for rate in [200, 2_000] {
            let line = "said at the start of a flood of \(rate)"
            // The flood runs on a thread of its own; ann types as it begins.
            let flooding = Thread {
                Self.flood(from: attacker, claimed: benKey, victim: victim, rate: rate, seconds: 30)
            }
            flooding.start()
            runA.send("open ben --wait 10", line, "/back")
            #expect(runB.waitFor(line, timeout: 25), "ann's line did not reach ben during the flood")
            while flooding.isExecuting || !flooding.isFinished { usleep(100_000) }
        }
        // Listed throughout: ann was never told ben left, and their session holds.
        #expect(!runA.output.split(separator: "\n").contains { $0.hasPrefix("- ") && $0.contains("ben#") }, "\(runA.output.suffix(2_000))")
        runA.send("nearby stats")
        #expect(runA.waitFor { $0.range(of: #"sessions: [1-9]\d* open"#, options: .regularExpression) != nil })
        // The forgeries were refused where they came from, never by ben's own allowance.
        let stats = runA.output.split(separator: "\n").last { $0.hasPrefix("sent ") }.map(String.init) ?? ""
        #expect(stats.range(of: #"flood: a key's allowance \d"#, options: .regularExpression) == nil, "\(stats)")
        #expect(stats.contains("flood: a host's allowance") || stats.contains("from one host"), "\(stats)")
    }
}
