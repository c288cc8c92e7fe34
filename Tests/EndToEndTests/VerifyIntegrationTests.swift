import Foundation
import TestSupport
import Testing

/// `verify` between two real shells on namespace hosts (issue 49): each shows the same 60
/// digits and a QR code of them; marked verified, the key carries ✓ in `nearby` and `chats`.
@Suite(.enabled(if: inPrivateNetwork, "runs only inside scripts/in-netns (make test)"))
struct VerifyIntegrationTests {
    /// The three lines of five-digit groups a `verify` printed.
    static func digits(_ output: String) -> [String] {
        output.split(separator: "\n").map { $0.trimmingCharacters(in: .whitespaces) }
            .filter { $0.range(of: #"^\d{5} \d{5} \d{5} \d{5}$"#, options: .regularExpression) != nil }
    }

    @Test func bothEndsShowTheSameSafetyNumberAndTheMarkFollows() throws {
        let net = try TestNetwork(hosts: 2)
        let a = try net.makeProfile("ann", host: 1), b = try net.makeProfile("ben", host: 2)
        let runA = try net.start(host: 1, data: a, name: "ann", lines: ["chat"])
        let runB = try net.start(host: 2, data: b, name: "ben", lines: ["chat"])
        defer { runA.kill(); runB.kill() }
        #expect(runA.waitForPeer("ben") && runB.waitForPeer("ann"))
        runA.send("verify ben", "echo shown")
        runB.send("verify ann", "echo shown")
        #expect(runA.waitFor("shown") && runB.waitFor("shown"))
        let (mine, theirs) = (Self.digits(runA.output), Self.digits(runB.output))
        #expect(mine.count == 3 && mine == theirs, "ann: \(mine), ben: \(theirs)")
        #expect(runA.output.contains("██"), "a QR code in half blocks")
        #expect(runA.output.contains("if they match: verify ben#"))
        runA.send("verify ben --yes", "nearby", "open ben", "hello, verified", "/back", "chats", "echo listed")
        #expect(runA.waitFor("listed"))
        let lines = runA.output.split(separator: "\n")
        #expect(lines.contains { $0.contains("ben#") && $0.contains("✓") && $0.contains(" seen ") }, "\(runA.output.suffix(1_500))")
        #expect(runA.output.contains("is verified ✓"))
        // In chats, the conversation's line is marked too (nearby's is one, chats' the other).
        #expect(lines.filter { $0.contains("ben#") && $0.contains("✓") }.count >= 2)
        #expect(runB.waitFor("hello, verified"))
        runA.send("unverify ben", "echo done")
        #expect(runA.waitFor("no longer marked verified"))
    }
}
