import Foundation
import GRDB
import TestSupport
import Testing
@testable import Storage

/// Writes bound and run straight through SQLite (issue 51): what they store, how a refusal
/// reads, and that a statement keeps nothing of its last run.
@Suite struct DirectWriteTests {
    let tmp = TemporaryDirectory()

    private func database() throws -> DatabaseQueue {
        let queue = try DatabaseQueue(path: tmp.path + "/direct.sqlite")
        try queue.write { try $0.execute(sql: "CREATE TABLE t (id INTEGER PRIMARY KEY, n INTEGER NOT NULL, x REAL, s TEXT UNIQUE)") }
        return queue
    }

    @Test func integersRealsAndTextAreStoredAsBound() throws {
        let queue = try database()
        try queue.write { db in
            let insert = try db.cachedStatement(sql: "INSERT INTO t (n, x, s) VALUES (?1, ?2, ?3)")
            try DirectWrite.execute(insert, in: db) {
                $0.bind(1, Int64.min)
                $0.bind(2, 0.25)
                $0.bind(3, "👻 boo\u{0}after a zero byte")
            }
            try DirectWrite.execute(insert, in: db) {
                $0.bind(1, Int64.max)
                $0.bind(2, -1e300)
                $0.bind(3, "")
            }
        }
        // The text's bytes, all of them: its length is given, so a zero byte does not end it.
        let rows = try queue.read { try Row.fetchAll($0, sql: "SELECT n, x, CAST(s AS BLOB) FROM t ORDER BY id") }
        #expect(rows.map { $0[0] as Int64 } == [.min, .max])
        #expect(rows.map { $0[1] as Double } == [0.25, -1e300])
        #expect(rows.map { $0[2] as Data } == [Data("👻 boo\u{0}after a zero byte".utf8), Data()])
    }

    /// Bytes are stored as bound, every one of them (zeros and none included), as a blob.
    @Test func bytesAreStoredAsABlob() throws {
        let queue = try database()
        let values = [Data([0, 1, 0, 255]), Data(), Data(repeating: 7, count: 4_096)]
        try queue.write { db in
            try db.execute(sql: "CREATE TABLE b (id INTEGER PRIMARY KEY, v BLOB)")
            let insert = try db.cachedStatement(sql: "INSERT INTO b (v) VALUES (?1)")
            for value in values { try DirectWrite.execute(insert, in: db) { $0.bind(1, value) } }
        }
        let rows = try queue.read { try Row.fetchAll($0, sql: "SELECT typeof(v), v FROM b ORDER BY id") }
        #expect(rows.map { $0[0] as String } == ["blob", "blob", "blob"])
        #expect(rows.map { $0[1] as Data } == values)
    }

    /// Runs `insert` (its ?1 the integer, its ?2 the text).
    private func run(_ insert: Statement, _ n: Int64, _ text: String, in db: Database) throws {
        try DirectWrite.execute(insert, in: db) {
            $0.bind(1, n)
            $0.bind(2, text)
        }
    }

    /// A parameter left unbound is NULL, not what the run before bound: here that breaks the
    /// NOT NULL, as a stale binding would not.
    @Test func aStatementKeepsNoBindingOfItsLastRun() throws {
        let queue = try database()
        try queue.write { db in
            let insert = try db.cachedStatement(sql: "INSERT INTO t (n, s) VALUES (?1, ?2)")
            try run(insert, 7, "first", in: db)
            #expect(throws: DatabaseError.self) {
                try DirectWrite.execute(insert, in: db) { $0.bind(2, "second") }
            }
        }
        #expect(try queue.read { try Int.fetchOne($0, sql: "SELECT count(*) FROM t") } == 1)
    }

    /// SQLite's refusal comes back as GRDB reports one: its code, its message and the statement;
    /// the statement runs again afterwards.
    @Test func aRefusalSaysWhatAndWhere() throws {
        let queue = try database()
        try queue.write { db in
            let insert = try db.cachedStatement(sql: "INSERT INTO t (n, s) VALUES (?1, ?2)")
            try run(insert, 1, "same", in: db)
            let error = try #require(throws: DatabaseError.self) { try run(insert, 2, "same", in: db) }
            #expect(error.extendedResultCode == .SQLITE_CONSTRAINT_UNIQUE)
            #expect(error.message?.contains("t.s") == true)
            #expect(error.sql == "INSERT INTO t (n, s) VALUES (?1, ?2)")
            try run(insert, 3, "other", in: db)
        }
        #expect(try queue.read { try String.fetchAll($0, sql: "SELECT s FROM t ORDER BY id") } == ["same", "other"])
    }

    /// A binding SQLite refuses (a parameter the statement does not have) fails the run before
    /// anything is written.
    @Test func aBindingOutOfRangeWritesNothing() throws {
        let queue = try database()
        try queue.write { db in
            let insert = try db.cachedStatement(sql: "INSERT INTO t (n) VALUES (?1)")
            let error = try #require(throws: DatabaseError.self) {
                try DirectWrite.execute(insert, in: db) {
                    $0.bind(1, Int64(1))
                    $0.bind(2, Int64(2))
                }
            }
            #expect(error.resultCode == .SQLITE_RANGE)
        }
        #expect(try queue.read { try Int.fetchOne($0, sql: "SELECT count(*) FROM t") } == 0)
    }

    /// Rows several to a statement: any count goes in whole, in order, and the ids returned
    /// are the rows' own.
    @Test(arguments: [0, 1, 3, 4, 5, 16, 37, 64, 65, 200])
    func rowsGoInSeveralToAStatementInOrder(count: Int) throws {
        let queue = try database()
        let insert = DirectWrite.Insert("INSERT INTO t (n, x, s)", row: "(?, 0.5, ?)", parameters: 2)
        let ids = try queue.write { db in
            try insert.execute(in: db, count: count) { arguments, index, first in
                arguments.bind(first, Int64(index))
                arguments.bind(first + 1, "row \(index)")
            }
        }
        let rows = try queue.read { try Row.fetchAll($0, sql: "SELECT id, n, x, s FROM t ORDER BY n") }
        #expect(rows.map { $0[1] as Int64 } == (0..<Int64(count)).map { $0 })
        #expect(rows.map { $0[3] as String } == (0..<count).map { "row \($0)" })
        #expect(rows.allSatisfy { $0[2] as Double == 0.5 })
        #expect(ids == rows.map { $0[0] as Int64 })
    }

    /// One row refused refuses its statement: none of that statement's rows is kept, and the
    /// error says why.
    @Test func aRowRefusedRefusesItsStatement() throws {
        let queue = try database()
        let insert = DirectWrite.Insert("INSERT INTO t (n, s)", row: "(?, ?)", parameters: 2)
        try queue.write { db in
            let error = try #require(throws: DatabaseError.self) {
                try insert.execute(in: db, count: 16) { arguments, index, first in
                    arguments.bind(first, Int64(index))
                    arguments.bind(first + 1, index == 9 ? "row 3" : "row \(index)")
                }
            }
            #expect(error.extendedResultCode == .SQLITE_CONSTRAINT_UNIQUE)
        }
        #expect(try queue.read { try Int.fetchOne($0, sql: "SELECT count(*) FROM t") } == 0)
    }

    /// A later statement refused leaves the earlier ones' rows to the transaction, which its
    /// writer gives up: nothing is kept.
    @Test func aLaterStatementRefusedLeavesTheRestToTheTransaction() throws {
        let queue = try database()
        let insert = DirectWrite.Insert("INSERT INTO t (n, s)", row: "(?, ?)", parameters: 2)
        #expect(throws: DatabaseError.self) {
            try queue.write { db in
                do {
                    _ = try insert.execute(in: db, count: 20) { arguments, index, first in  // 16, then 4.
                        arguments.bind(first, Int64(index))
                        arguments.bind(first + 1, index == 18 ? "row 2" : "row \(index)")
                    }
                } catch {
                    #expect(try Int.fetchOne(db, sql: "SELECT count(*) FROM t") == 16)
                    throw error
                }
            }
        }
        #expect(try queue.read { try Int.fetchOne($0, sql: "SELECT count(*) FROM t") } == 0)
    }

    /// A query's integers, and a write's through `RETURNING`, in the order SQLite gives them;
    /// none is an empty list; a statement SQLite refuses is an error.
    @Test func integersComeBackAsReturned() throws {
        let queue = try database()
        try queue.write { db in
            let insert = try db.cachedStatement(sql: "INSERT INTO t (n, s) VALUES (?1, ?2)")
            for n in [5, 3, 9] { try run(insert, Int64(n), "s\(n)", in: db) }
            let select = try db.cachedStatement(sql: "SELECT n FROM t WHERE n > ?1 ORDER BY n")
            #expect(try DirectWrite.integers(select, in: db) { $0.bind(1, Int64(4)) } == [5, 9])
            #expect(try DirectWrite.integers(select, in: db) { $0.bind(1, Int64(100)) } == [])
            let update = try db.cachedStatement(sql: "UPDATE t SET x = 1.5 WHERE n < ?1 RETURNING n")
            #expect(try DirectWrite.integers(update, in: db) { $0.bind(1, Int64(6)) }.sorted() == [3, 5])
            let refused = try db.cachedStatement(sql: "UPDATE t SET s = 's9' WHERE n = ?1 RETURNING n")
            let error = try #require(throws: DatabaseError.self) { try DirectWrite.integers(refused, in: db) { $0.bind(1, Int64(3)) } }
            #expect(error.extendedResultCode == .SQLITE_CONSTRAINT_UNIQUE)
        }
        #expect(try queue.read { try Int.fetchOne($0, sql: "SELECT count(*) FROM t WHERE x = 1.5") } == 2)
    }
}
