import GRDB
import GRDBSQLite

/// The first row of a statement's result as integers, read straight from SQLite: for the queries
/// every write transaction runs (`SearchSchema.keepingUp`'s bounds), where GRDB's cursor and row
/// cost more than SQLite's own work.
package enum FirstRow {
    /// The first `columns` columns of `statement`'s first row (nil where NULL); nil when it has
    /// no row. The statement takes no arguments.
    package static func integers(_ statement: Statement, columns: Int, in db: Database) throws -> [Int64?]? {
        let raw = statement.sqliteStatement
        sqlite3_reset(raw)
        defer { sqlite3_reset(raw) }
        let code = sqlite3_step(raw)
        if code == SQLITE_DONE { return nil }
        guard code == SQLITE_ROW else { throw DirectWrite.error(code, statement, db) }
        return (0..<Int32(columns)).map { sqlite3_column_type(raw, $0) == SQLITE_NULL ? nil : sqlite3_column_int64(raw, $0) }
    }
}
