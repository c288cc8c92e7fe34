import Foundation
import Testing

@Suite(.enabled(if: inPrivateNetwork, "runs only inside scripts/in-netns (make test)"))
struct SearchIntegrationTests {
    /// ben is killed (-9) while a burst of ann's is being stored: every message he kept is
    /// found, nothing found is missing, and both SQLite's and FTS5's own checks pass.
    @Test func aKillDuringABurstLeavesNoMessageUnfindable() throws {
        let net = try TestNetwork(hosts: 2)
        let a = try net.makeProfile("ann", host: 1), b = try net.makeProfile("ben", host: 2)
        let runB = try net.start(host: 2, data: b, name: "ben", lines: ["chat"])
        let runA = try net.start(host: 1, data: a, name: "ann", lines: ["chat", "open ben --wait 30"] + (1...20_000).map { "burst line \($0)" })
        defer { runA.kill() }
        func count(_ sql: String) -> Int { Int((try? query(b, sql))?.first ?? "") ?? -1 }
        #expect(eventually(timeout: 60) { count("SELECT count(*) FROM message") >= 500 })
        runB.kill()
        _ = runB.wait()
        let stored = count("SELECT count(*) FROM message WHERE text LIKE 'burst line %'")
        #expect(stored >= 500)
        #expect(count("SELECT count(*) FROM message_search WHERE message_search MATCH 'burst'") == stored)
        #expect(count("SELECT count(*) FROM message WHERE id NOT IN (SELECT rowid FROM message_search WHERE message_search MATCH 'line')") == 0)
        #expect(try query(b, "PRAGMA integrity_check") == ["ok"])
        let check = try sh("sqlite3 '\(b)/seance.sqlite' \"INSERT INTO message_search(message_search) VALUES ('integrity-check')\" 2>&1")
        #expect(check.isEmpty, "\(check)")
        // And seance finds them, from the last stored back.
        let found = try runSeance(["--data-dir", b, "-c", "login ben --password-file \(net.scratch.path)/password; search burst --format tsv"], scratch: net.scratch)
        #expect(found.stdout.split(separator: "\n").filter { $0.contains("\t") }.count == stored, "\(found.stderr)")
    }
}
