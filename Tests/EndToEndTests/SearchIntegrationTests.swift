import Foundation
import TestSupport
import Testing

@Suite(.enabled(if: inPrivateNetwork, "runs only inside scripts/in-netns (make test)"))
struct SearchIntegrationTests {
    /// `open N` opens a result where it was said, in a script too; `/newer` pages on to the
    /// newest, and says when there is nothing newer.
    @Test func aResultOpensWhereItWasSaidAndNewerPagesOn() throws {
        let net = try TestNetwork(hosts: 2)
        let a = try net.makeProfile("ann", host: 1), b = try net.makeProfile("ben", host: 2)
        let runB = try net.start(host: 2, data: b, name: "ben", lines: ["chat"])
        defer { runB.kill() }
        let runA = try net.start(host: 1, data: a, name: "ann", lines: ["chat", "open ben --wait 30"] + (1...30).map { "line \($0)" })
        runA.finish()
        #expect(eventually(timeout: 30) { (try? query(b, "SELECT count(*) FROM message")) == ["30"] })
        runB.send("search \"\"", "search \"line 3\"", "open 1", "/newer", "/newer", "/newer", "/newer", "/newer", "/newer", "/newer", "/newer")
        let out = runB.finish()
        #expect(out.contains("1 match for \"line 3\""), "\(out)")
        // The page's advice is a command (in a room it would be /goto 1, not words sent).
        #expect(out.contains("1–1 of 1; goto N shows one where it was said"), "\(out)")
        // Nothing to look for is a mistake, not zero matches (issue 52).
        #expect(out.contains("search needs a word to look for: search TEXT") && !out.contains("0 matches for"), "\(out)")
        #expect(out.contains(", around #3") && out.contains("│ line 3 │"), "\(out)")
        // Paged on to the newest, each message once.
        #expect(out.components(separatedBy: "│ line 30 │").count == 2, "\(out)")
        #expect(out.components(separatedBy: "│ line 17 │").count == 2, "\(out)")
        #expect(out.contains("nothing newer"), "\(out)")
    }

    /// ben is killed (-9) while a burst of ann's is being stored: every message he kept is
    /// found, nothing found is missing, and both SQLite's and FTS5's own checks pass.
    @Test func aKillDuringABurstLeavesNoMessageUnfindable() throws {
        let net = try TestNetwork(hosts: 2)
        let a = try net.makeProfile("ann", host: 1), b = try net.makeProfile("ben", host: 2)
        let runB = try net.start(host: 2, data: b, name: "ben", lines: ["chat"])
        let runA = try net.start(host: 1, data: a, name: "ann", lines: ["chat", "open ben --wait 30"] + (1...20_000).map { "burst line \($0)" })
        defer { runA.kill() }
        func count(_ sql: String) -> Int { Int((try? query(b, sql))?.first ?? "") ?? -1 }
        // Past two batches of the index: some rows are indexed, the last wait.
        let batch = 1_024  // `SearchSchema.deferLimit`
        #expect(eventually(timeout: 60) { count("SELECT count(*) FROM message") >= 2 * batch + 500 })
        runB.kill()
        _ = runB.wait()
        let stored = count("SELECT count(*) FROM message WHERE text LIKE 'burst line %'")
        #expect(stored >= 2 * batch + 500)
        // At most the last few wait for company to be indexed.
        let indexed = count("SELECT count(*) FROM message_search WHERE message_search MATCH 'burst'")
        #expect(indexed <= stored && indexed > stored - batch, "\(indexed) of \(stored)")
        // seance finds every one, from the last stored back (a search indexes what waits first).
        let found = try runSeance(["--data-dir", b, "-c", "login ben --password-file \(net.scratch.path)/password; search burst --format tsv"], scratch: net.scratch)
        #expect(found.stdout.split(separator: "\n").filter { $0.contains("\t") }.count == stored, "\(found.stderr)")
        // Clean TSV: the login's status line is on standard error (issue 52).
        #expect(found.stdout.split(separator: "\n").allSatisfy { $0.contains("\t") } && found.stderr.contains("logged in as ben#"))
        #expect(count("SELECT count(*) FROM message_search WHERE message_search MATCH 'burst'") == stored)
        #expect(count("SELECT count(*) FROM message WHERE id NOT IN (SELECT rowid FROM message_search WHERE message_search MATCH 'line')") == 0)
        #expect(try query(b, "PRAGMA integrity_check") == ["ok"])
        let check = try sh("sqlite3 '\(b)/seance.sqlite' \"INSERT INTO message_search(message_search) VALUES ('integrity-check')\" 2>&1")
        #expect(check.isEmpty, "\(check)")
    }
}
