import Foundation
import GRDB
import GRDBSQLite

/// Statements bound and run straight through SQLite: for the rows every message and room line
/// writes, a room's acknowledgements, and the numbers a burst's states read (issue 51), where
/// GRDB's boxing of each argument and its bookkeeping around each step cost more than SQLite's
/// own work. Only for inserts, updates and queries inside a transaction GRDB opened, on a
/// statement used no other way (its bindings are cleared after each run). GRDB's transaction
/// observers never hear of these writes: nothing in seance observes these tables (the tests'
/// `MessageCommits` counts the inserts itself). A text is bound whole, NUL bytes and all, where
/// GRDB's binding and reading stop at the first: what is written this way holds none.
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

        package mutating func bind(_ index: Int32, _ value: Data) {
            // No bytes at no address would bind NULL: an empty blob is said so.
            guard !value.isEmpty else { return keep(sqlite3_bind_zeroblob(raw, index, 0)) }
            // SQLITE_TRANSIENT, as for text.
            keep(value.withUnsafeBytes { sqlite3_bind_blob(raw, index, $0.baseAddress, Int32($0.count), unsafeBitCast(-1, to: sqlite3_destructor_type.self)) })
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
        try run(statement, in: db, bind) { raw in
            let code = sqlite3_step(raw)
            guard code == SQLITE_DONE else { throw error(code, statement, db) }
        }
    }

    /// The integers of the first column of what `statement` returns (a query, or a write's
    /// `RETURNING`), run straight through SQLite as `execute` runs a write: the states a burst's
    /// acknowledgements change are read as thousands of numbers, and GRDB's cursor cost some
    /// 2,000 instructions a number. A NULL reads as 0: for columns that cannot hold one.
    package static func integers(_ statement: Statement, in db: Database, _ bind: (inout Arguments) -> Void) throws -> [Int64] {
        try run(statement, in: db, bind) { raw in
            var values: [Int64] = []
            while true {
                switch sqlite3_step(raw) {
                case SQLITE_ROW: values.append(sqlite3_column_int64(raw, 0))
                case SQLITE_DONE: return values
                case let code: throw error(code, statement, db)
                }
            }
        }
    }

    /// `statement` bound by `bind`, stepped by `steps` unless a binding was refused, then reset
    /// with no binding left for its next run.
    private static func run<T>(_ statement: Statement, in db: Database, _ bind: (inout Arguments) -> Void,
                               _ steps: (OpaquePointer) throws -> T) throws -> T {
        let raw = statement.sqliteStatement
        var arguments = Arguments(raw: raw)
        bind(&arguments)
        defer {
            sqlite3_reset(raw)
            sqlite3_clear_bindings(raw)
        }
        guard arguments.code == SQLITE_OK else { throw error(arguments.code, statement, db) }
        return try steps(raw)
    }

    /// Rows inserted into one table several to a statement, in order: a batch of `count` goes
    /// in as few statements as `sizes` make (37 rows: 16, 16, 4 and 1). What SQLite does around
    /// each run of a statement (its cursors opened on the table and on each index, the
    /// statement's journal, the foreign key looked up) was half of a row's insert when each
    /// row ran on its own: with `sqlite3_step` alone counted, 18,800 instructions a message row
    /// in transactions of 64, 9,700 with one statement for the 64. A row alone runs as before.
    ///
    /// For a rowid table whose rows are given no id and that no insert trigger writes to, with
    /// no `OR IGNORE` or upsert: then a statement's rows get consecutive ids. A statement
    /// refused keeps none of its rows, but those of the statements before it stay: the caller
    /// gives up the transaction (as every writer of a `GroupCommit` does).
    package struct Insert: Sendable {
        /// Rows to a statement, largest first; 1 last, so any count is made of them.
        static let sizes = [64, 16, 4, 1]
        /// Each size's statement, its rows' parameters numbered on from one row to the next.
        private let texts: [String]
        /// How many parameters each row's values take.
        let parameters: Int32

        /// - Parameters:
        ///   - head: the statement up to its values, `INSERT INTO t (a, b, c)`.
        ///   - row: one row's values, with a `?` for each of its `parameters`: `(?, ?, 0)`.
        package init(_ head: String, row: String, parameters: Int32) {
            texts = Self.sizes.map { size in head + " VALUES " + Array(repeating: row, count: size).joined(separator: ", ") }
            self.parameters = parameters
        }

        /// Inserts `count` rows, in order; `bind(&arguments, index, first)` binds the values of
        /// row `index` from parameter `first` on. Returns the rows' ids, in order: a statement's
        /// rows get consecutive ids (each one past the largest), the last SQLite's last inserted.
        package func execute(in db: Database, count: Int, _ bind: (inout Arguments, _ index: Int, _ first: Int32) -> Void) throws -> [Int64] {
            var ids: [Int64] = []
            ids.reserveCapacity(count)
            var done = 0
            for (size, text) in zip(Self.sizes, texts) {
                while count - done >= size {
                    let statement = try db.cachedStatement(sql: text)
                    // A row's values that do not match its `?`s would leave some NULL unnoticed.
                    assert(sqlite3_bind_parameter_count(statement.sqliteStatement) == Int32(size) * parameters)
                    try DirectWrite.execute(statement, in: db) { arguments in
                        for row in 0..<size { bind(&arguments, done + row, Int32(row) * parameters + 1) }
                    }
                    let last = db.lastInsertedRowID
                    ids.append(contentsOf: (last - Int64(size) + 1)...last)
                    done += size
                }
            }
            return ids
        }
    }

    /// SQLite's refusal as GRDB reports it: its code, its message and the statement.
    static func error(_ code: Int32, _ statement: Statement, _ db: Database) -> DatabaseError {
        DatabaseError(resultCode: ResultCode(rawValue: code), message: String(cString: sqlite3_errmsg(db.sqliteConnection)),
                      sql: statement.sql)
    }
}
