import Foundation
import Glibc
import TestSupport
import Testing

/// Block and mute between real processes on namespace hosts.
@Suite(.enabled(if: inPrivateNetwork, "runs only inside scripts/in-netns (make test)"))
struct BlockIntegrationTests {
    /// The handle a shell announced itself with (`announcing ben#1a2b as Human on …`).
    func handle(_ run: TestNetwork.Run) -> String? {
        guard run.waitFor("announcing "), let line = run.output.split(separator: "\n").first(where: { $0.hasPrefix("announcing ") }) else {
            return nil
        }
        return line.split(separator: " ").dropFirst().first.map(String.init)
    }

    /// Two people called ben; ann blocks one by name#fingerprint (a script says --yes). His
    /// line is neither shown nor stored, his outbox keeps waiting, `nearby` no longer lists
    /// him and its statistics count what was dropped; the other ben's line arrives. Blocked
    /// across a restart of ann; unblocked, what he wrote while blocked never arrives (issue 52:
    /// taken, so his outbox stops, and dropped), and what he writes after does.
    @Test func aBlockedPersonIsNeitherShownNorStoredUntilUnblocked() throws {
        let net = try TestNetwork(hosts: 3)
        let a = try net.makeProfile("ann", host: 1), b1 = try net.makeProfile("ben", host: 2), b2 = try net.makeProfile("ben", host: 3)
        var runA = try net.start(host: 1, data: a, name: "ann", lines: ["chat"])
        let runB1 = try net.start(host: 2, data: b1, name: "ben", lines: ["chat"])
        let runB2 = try net.start(host: 3, data: b2, name: "ben", lines: ["chat"])
        defer { runA.kill(); runB1.kill(); runB2.kill() }
        let blocked = try #require(handle(runB1)), other = try #require(handle(runB2))
        #expect(runA.waitFor { $0.contains(blocked) && $0.contains(other) })
        runA.send("block \(blocked) --yes")
        #expect(runA.waitFor("blocked \(blocked): nothing they send reaches you"))
        let refused = try #require(runA.count("blocked"))
        runB1.send("open ann --wait 30", "secret from the blocked ben", "/back")
        runB2.send("open ann --wait 30", "hello from the other ben")
        #expect(try eventually(timeout: 30) { try query(a, "SELECT text FROM message WHERE outgoing = 0") == ["hello from the other ben"] })
        // The blocked one's line went, and went again for want of an answer; ann refused what came.
        #expect(runB1.waitForCount("resent", atLeast: 2))
        #expect(runA.waitForCount("blocked", atLeast: refused + 2))
        #expect(try query(a, "SELECT count(*) FROM message WHERE text LIKE '%secret%'") == ["0"])
        #expect(try query(b1, "SELECT shownState FROM message_shown WHERE outgoing = 1") != ["delivered"])
        #expect(!runA.output.contains("secret from the blocked ben"))
        runA.send("nearby", "nearby stats", "blocked --format tsv")
        #expect(runA.waitFor { $0.contains("\tben\t") || $0.split(separator: "\n").contains { $0.hasPrefix("ben\t") } })
        let listing = runA.output.split(separator: "\n").last { $0.hasPrefix("ben\t") }.map(String.init) ?? ""
        #expect(listing.hasPrefix("ben\t" + blocked.split(separator: "#")[1] + "\t20"), "\(listing)")
        let after = runA.output.components(separatedBy: "nothing they send reaches you").last ?? ""
        #expect(!after.split(separator: "\n").contains { $0.contains(blocked) && $0.contains(" seen ") }, "\(after)")
        #expect(after.range(of: #"[(,] ?blocked [1-9]"#, options: .regularExpression) != nil,
                "nearby stats counts the drops: \(after)")

        // Still blocked after a restart: the line goes again to the new ann, and is refused.
        let resent = try #require(runB1.count("resent"))
        runA.finish()
        runA = try net.start(host: 1, data: a, name: "ann", lines: ["chat"])
        #expect(runA.waitForPeer("ben"))
        #expect(runB1.waitForCount("resent", atLeast: resent + 2))
        #expect(runA.waitForCount("blocked", atLeast: 2))
        #expect(try query(a, "SELECT count(*) FROM message WHERE text LIKE '%secret%'") == ["0"])
        runA.send("unblock \(blocked)")
        #expect(runA.waitFor("unblocked \(blocked)"))
        // His outbox hears back at last (the line is taken) and stops; ann keeps nothing of it.
        #expect(try eventually(timeout: 30) { try query(b1, "SELECT shownState FROM message_shown WHERE outgoing = 1") == ["delivered"] })
        #expect(runA.waitForCount("written while blocked", atLeast: 1))
        runB1.send("open ann --wait 30", "written after the unblock")
        #expect(try eventually(timeout: 30) { try query(a, "SELECT count(*) FROM message WHERE text = 'written after the unblock'") == ["1"] })
        #expect(try query(a, "SELECT count(*) FROM message WHERE text LIKE '%secret%'") == ["0"])
        #expect(!runA.output.contains("secret from the blocked ben"))
    }

    /// ann mutes ben: his line is stored and counted unread, but told by no notice above the
    /// prompt; `chats` marks the conversation muted. Unmuted, his next line is told.
    @Test func aMutedPersonIsStoredSilently() throws {
        let net = try TestNetwork(hosts: 2)
        let a = try net.makeProfile("ann", host: 1), b = try net.makeProfile("ben", host: 2)
        let runA = try net.start(host: 1, data: a, name: "ann", lines: ["chat"])
        let runB = try net.start(host: 2, data: b, name: "ben", lines: ["chat"])
        defer { runA.kill(); runB.kill() }
        #expect(runA.waitForPeer("ben"))
        runA.send("mute ben")
        #expect(runA.waitFor("muted ben#"))
        runB.send("open ann --wait 30", "psst, quietly")
        #expect(try eventually(timeout: 30) { try query(a, "SELECT text FROM message WHERE outgoing = 0") == ["psst, quietly"] })
        runA.send("chats")
        #expect(runA.waitFor { $0.contains("muted, 1 unread") })
        #expect(!runA.output.contains("ben#") || !runA.output.split(separator: "\n").contains { $0.contains("✉") })
        runA.send("unmute ben")
        #expect(runA.waitFor("unmuted ben#"))
        runB.send("now out loud")
        #expect(runA.waitFor { $0.split(separator: "\n").contains { $0.contains("✉") && $0.contains("now out loud") } })
        // A script is never rung at (issue 37): no bell, no notification, in its output.
        #expect(!runA.output.contains("\u{7}") && !runA.output.contains("\u{1B}]"))
    }
}
