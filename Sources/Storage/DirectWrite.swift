import GRDB
import GRDBSQLite

/// A write statement bound and run straight through SQLite: for the rows every message writes
/// (issue 51), where GRDB's boxing of each argument and its bookkeeping around each step cost
/// more than SQLite's own insert. Only for plain inserts and updates inside a transaction GRDB
/// opened, on a statement used no other way (its bindings are cleared after each run). GRDB's
/// transaction observers never hear of these writes: nothing in seance observes these tables
/// (the tests' `MessageCommits` counts their rows itself).
package enum DirectWrite {
    /// Binds a statement's parameters, numbered from 1.
    package struct Arguments {
        fileprivate let raw: OpaquePointer
        fileprivate var code = SQLITE_OK

        package mutating func bind(_ index: Int32, _ value: Int64) {
            keep(sqlite3_bind_int64(raw, index, value))
        }

        package mutating func bind(_ index: Int32, _ value: Double) {
            keep(sqlite3_bind_double(raw, index, value))
        }

        package mutating func bind(_ index: Int32, _ value: String) {
            var value = value
            // SQLITE_TRANSIENT: SQLite copies the text before the call returns.
            keep(value.withUTF8 { sqlite3_bind_text(raw, index, $0.baseAddress, Int32($0.count), unsafeBitCast(-1, to: sqlite3_destructor_type.self)) })
        }

        private mutating func keep(_ result: Int32) {
            if code == SQLITE_OK { code = result }
        }
    }

    /// Runs `statement` once with the arguments `bind` gives it.
    package static func execute(_ statement: Statement, in db: Database, _ bind: (inout Arguments) -> Void) throws {
        let raw = statement.sqliteStatement
        var arguments = Arguments(raw: raw)
        bind(&arguments)
        defer {
            sqlite3_reset(raw)
            sqlite3_clear_bindings(raw)
        }
        guard arguments.code == SQLITE_OK else { throw error(arguments.code, statement, db) }
        let code = sqlite3_step(raw)
        guard code == SQLITE_DONE else { throw error(code, statement, db) }
    }

    /// SQLite's refusal as GRDB reports it: its code, its message and the statement.
    static func error(_ code: Int32, _ statement: Statement, _ db: Database) -> DatabaseError {
        DatabaseError(resultCode: ResultCode(rawValue: code), message: String(cString: sqlite3_errmsg(db.sqliteConnection)),
                      sql: statement.sql)
    }
}
