import Foundation
import TestSupport
import Glibc
import Testing

/// The store through the built binary: a batch session, tampering with sqlite3, and purchases
/// killed at every moment.
@Suite struct StoreEndToEndTests {
    let scratch = Scratch()

    func seance(_ commands: String, seed: Int = 5) throws -> RunResult {
        try runSeance(["--data-dir", scratch.dataDir, "--seed", "\(seed)"], stdin: commands, scratch: scratch)
    }

    func query(_ sql: String) throws -> String {
        try sh("sqlite3 '\(scratch.dataDir)/seance.sqlite' \"\(sql)\"")
    }

    func makeProfile() throws -> (right: String, wrong: String) {
        let right = scratch.write("right", "correct horse\n"), wrong = scratch.write("wrong", "wrong horse\n")
        #expect(try runSeance(["--data-dir", scratch.dataDir, "-c", "profile new ann --password-file \(right)"], scratch: scratch).status == 0)
        return (right, wrong)
    }

    @Test func aBatchSessionBuysListsVerifiesUsesAndWears() throws {
        let (right, wrong) = try makeProfile()
        let result = try seance("""
            store catalogue
            store buy candle
            login ann --password-file \(right)
            store
            buy candle 3 --password-file \(right)
            buy medallion --password-file \(wrong)
            buy medallion 2 --password-file \(right)
            buy candle 0 --password-file \(right)
            inventory
            receipts
            use
            wear medallion
            wear
            inventory
            """)
        #expect(result.stdout.contains("Holy candle        $0.99") && result.stdout.contains("Saint's medallion  $2.99"), "\(result.stdout)")
        #expect(result.stdout.contains("3 Holy candles for $2.97\nbought 3 Holy candles 🕯️ — receipt "), "\(result.stdout)")
        #expect(result.stdout.contains("total spent: $8.95"))
        #expect(result.stdout.contains("a Saint's medallion is worn: it breaks in 60 min"))
        let handle = try #require(result.stderr.split(separator: "\n").first { $0.hasPrefix("logged in as ") }?.dropFirst(13))
        #expect(result.stderr == """
            line 2: no profile is logged in: login NAME, or profile new
            logged in as \(handle)
            line 6: wrong password
            line 8: you can buy 1 to 99 at a time, not 0
            line 11: no curse is on you: the candle is kept for when one is
            line 13: you already wear a Saint's medallion (it breaks in 60 min); one at a time

            """, "\(result.stderr)")
        #expect(result.status == 1)
        // What is stored: the wrong password and the bad count bought nothing.
        #expect(try query("SELECT item, quantity FROM receipt ORDER BY timeMs, rowid") == "candle|3\nmedallion|2\n")
        #expect(try query("SELECT item, count FROM inventory ORDER BY item") == "candle|3\nmedallion|1\n")
    }

    /// Change any stored field with sqlite3 and `receipt ID` says INVALID; untouched, valid.
    @Test func aTamperedReceiptIsInvalid() throws {
        let (right, _) = try makeProfile()
        _ = try seance("login ann --password-file \(right)\nstore buy medallion 2 --password-file \(right)\n")
        let id = try query("SELECT id FROM receipt").trimmingCharacters(in: .whitespacesAndNewlines)
        let check = "login ann --password-file \(right)\nstore receipt \(id.prefix(8))\n"
        #expect(try seance(check).stdout.contains("signature   valid"))
        for change in ["quantity = 20", "totalCents = 1", "item = 'candle'", "timeMs = timeMs + 1", "signature = zeroblob(64)"] {
            let before = try query("SELECT quantity, totalCents, item, timeMs, hex(signature) FROM receipt")
            _ = try query("UPDATE receipt SET \(change)")
            let shown = try seance(check).stdout
            #expect(shown.contains("signature   INVALID"), "\(change): \(shown)")
            // Put it back for the next change (restore every column from the copy).
            let fields = before.trimmingCharacters(in: .newlines).split(separator: "|")
            _ = try query("UPDATE receipt SET quantity = \(fields[0]), totalCents = \(fields[1]), item = '\(fields[2])', "
                          + "timeMs = \(fields[3]), signature = X'\(fields[4])'")
        }
        #expect(try seance(check).stdout.contains("signature   valid"))
    }

    /// kill -9 at many moments during `buy`: afterwards the receipts and the inventory agree,
    /// every time (both written, or neither).
    @Test func aPurchaseKilledAtAnyMomentLeavesBothOrNeither() throws {
        let (right, _) = try makeProfile()
        let script = scratch.write("buy", "login ann --password-file \(right)\nstore buy candle 2 --password-file \(right)\n")
        func launch() throws -> Child {
            try Child([seanceBinary, "--data-dir", scratch.dataDir, script], stdout: .null, stderr: .null)
        }
        // How long a whole purchase takes here, to spread the kills across it.
        let started = Date()
        let whole = try launch()
        waitForExit(whole, timeout: 120)
        let span = Date().timeIntervalSince(started)
        var killedMidway = 0
        for round in 0..<30 {
            let process = try launch()
            // The fault injected: a kill at a moment spread across the purchase (not a wait for
            // something to happen; what is checked is the database afterwards).
            usleep(useconds_t(span * 1_000_000 * Double(round) / 30))
            process.kill()
            if case .signalled = waitForExit(process, timeout: 60) { killedMidway += 1 }
            let bought = try query("SELECT coalesce(sum(quantity), 0) FROM receipt WHERE item = 'candle'")
            let held = try query("SELECT coalesce(sum(count), 0) FROM inventory WHERE item = 'candle'")
            #expect(bought == held, "round \(round): receipts say \(bought), inventory \(held)")
        }
        #expect(killedMidway > 10)
        #expect(try query("PRAGMA integrity_check") == "ok\n")
    }
}
