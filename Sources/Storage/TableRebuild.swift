import GRDB

extension Database {
    /// Defines `table` anew where `ALTER TABLE` cannot change it (a constraint, `AUTOINCREMENT`),
    /// by SQLite's own procedure (sqlite.org/lang_altertable.html, "other kinds of table schema
    /// changes"): a table made with `columns`, the rows copied with their ids, the old table
    /// dropped and the new one renamed to its name; then its indexes and triggers, whichever
    /// feature made them, and every view, made again as they were. `columns` names the same
    /// columns as before, in any order. For a migration: its transaction makes it all or nothing.
    package func rebuild(_ table: String, columns: String) throws {
        let names = try String.fetchAll(self, sql: "SELECT name FROM pragma_table_info(?) ORDER BY cid", arguments: [table])
        // An index made by a constraint has no SQL of its own: it comes back with its constraint, or not.
        let attached = try String.fetchAll(self, sql: """
            SELECT sql FROM sqlite_master WHERE type IN ('index', 'trigger') AND tbl_name = ? AND sql IS NOT NULL ORDER BY rowid
            """, arguments: [table])
        // Renaming checks every view against the tables it reads: they go while `table` is away.
        let views = try Row.fetchAll(self, sql: "SELECT name, sql FROM sqlite_master WHERE type = 'view' ORDER BY rowid")
        for view in views { try execute(sql: "DROP VIEW \(String(view[0]).quotedDatabaseIdentifier)") }
        let rebuilt = "\(table)_rebuilt".quotedDatabaseIdentifier, quoted = table.quotedDatabaseIdentifier
        let list = names.map(\.quotedDatabaseIdentifier).joined(separator: ", ")
        try execute(sql: "CREATE TABLE \(rebuilt) (\(columns))")
        try execute(sql: "INSERT INTO \(rebuilt) (\(list)) SELECT \(list) FROM \(quoted)")
        try execute(sql: "DROP TABLE \(quoted)")
        try execute(sql: "ALTER TABLE \(rebuilt) RENAME TO \(quoted)")
        if try tableExists("sqlite_sequence") {
            try execute(sql: "DELETE FROM sqlite_sequence WHERE name = ?", arguments: [table])
        }
        for sql in attached + views.map({ $0[1] }) { try execute(sql: sql) }
    }
}
