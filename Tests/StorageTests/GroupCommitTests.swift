import GRDB
import Runtime
import TestSupport
import Testing
@testable import Storage

/// The engine's writes, committed once a turn (issue 51): on the manual clock, so "at once"
/// means before time moves.
@Suite struct GroupCommitTests: @unchecked Sendable {  // Its parts are used on the engine only.
    let tmp = TemporaryDirectory()
    let db: SeanceDatabase
    let scheduler = ManualScheduler()
    let engine: Engine
    let commits: GroupCommit

    init() throws {
        db = try testDatabase(tmp.path + "/seance.sqlite", schema: settingsOnly)
        engine = Engine(scheduler: scheduler)
        commits = GroupCommit(database: db, engine: engine)
    }

    /// A row of the setting table, written in a group commit; `log` hears how it went.
    private func put(_ key: String, _ log: EngineBound<[String]>) {
        commits.write({ db in try db.execute(sql: "INSERT INTO setting (key, value) VALUES (?, 'v')", arguments: [key]) },
                      then: { error in log.value.append(error == nil ? "\(key) stored" : "\(key) refused") })
    }

    private func newLog() -> EngineBound<[String]> { EngineBound([], engine: engine) }

    private func keys() throws -> [String] { try db.read { try String.fetchAll($0, sql: "SELECT key FROM setting ORDER BY key") } }

    @Test func aLoneWriteIsCommittedAtTheEndOfTheTurnNotHeldForCompany() throws {
        let log = newLog()
        engine.sync { put("a", log) }
        // Not yet: the turn goes on until the engine has handled what it was given.
        #expect(try keys().isEmpty && engine.sync { log.value }.isEmpty)
        scheduler.runUntilIdle()  // The clock does not move.
        #expect(try keys() == ["a"] && engine.sync { log.value } == ["a stored"])
        #expect(engine.sync { commits.transactions } == 1)
    }

    @Test func writesOfOneTurnShareOneTransactionInOrder() throws {
        let log = newLog()
        // Three packets handled in one turn, each causing a write.
        for key in ["a", "b", "c"] { engine.async { [self] in put(key, log) } }
        scheduler.runUntilIdle()
        #expect(try keys() == ["a", "b", "c"])
        #expect(engine.sync { log.value } == ["a stored", "b stored", "c stored"])
        #expect(engine.sync { commits.transactions } == 1)
    }

    @Test func aBurstIsCommittedEveryRowLimitRows() throws {
        let log = newLog()
        let count = GroupCommit.rowLimit * 2 + 5
        engine.sync { for index in 0..<count { put(String(format: "k%03d", index), log) } }
        // Two full transactions at once, while the turn was still going on; the rest at its end.
        #expect(engine.sync { log.value.count } == GroupCommit.rowLimit * 2)
        #expect(engine.sync { commits.transactions } == 2)
        scheduler.runUntilIdle()
        #expect(try keys().count == count && engine.sync { commits.transactions } == 3)
    }

    @Test func aRefusedTransactionKeepsNothingAndTellsEveryWrite() throws {
        let log = newLog()
        engine.sync {
            put("a", log)
            put("a", log)  // The same key again: the primary key refuses it, and with it the turn.
            put("b", log)
        }
        scheduler.runUntilIdle()
        #expect(try keys().isEmpty)
        #expect(engine.sync { log.value } == ["a refused", "a refused", "b refused"])
        // The next turn starts afresh.
        engine.sync { put("c", log) }
        scheduler.runUntilIdle()
        #expect(try keys() == ["c"])
    }
}
