import GRDB
import Storage

/// The full-text index of every line said: FTS5 tables over the messages of conversations and
/// the lines of rooms, kept in step by triggers (a line and its index entry are one
/// transaction's), and the backfill that indexes what an older seance stored.
package enum SearchSchema {
    /// The tables indexed: the stored table and its index, whose rows are the stored rows' ids.
    static let indexed = [(table: "message", index: "message_search"), (table: "roomMessage", index: "roomMessage_search")]

    /// Case and diacritics folded (`QUOK` finds "quokka", `cafe` "café").
    static let tokenizer = "unicode61 remove_diacritics 2"

    /// Every migration of this feature, in order.
    package static let migrations = [search]

    package static let search = Migration("v18-search") { db in
        for (table, index) in indexed {
            // External content: the text is kept once, in the stored table.
            try db.execute(sql: """
                CREATE VIRTUAL TABLE \(index) USING fts5(text, content='\(table)', content_rowid='id', tokenize='\(tokenizer)')
                """)
            try db.execute(sql: """
                CREATE TRIGGER \(index)_insert AFTER INSERT ON \(table) BEGIN
                    INSERT INTO \(index)(rowid, text) VALUES (new.id, new.text);
                END;
                CREATE TRIGGER \(index)_delete AFTER DELETE ON \(table) BEGIN
                    INSERT INTO \(index)(\(index), rowid, text) VALUES ('delete', old.id, old.text);
                END;
                CREATE TRIGGER \(index)_update AFTER UPDATE OF text ON \(table) BEGIN
                    INSERT INTO \(index)(\(index), rowid, text) VALUES ('delete', old.id, old.text);
                    INSERT INTO \(index)(rowid, text) VALUES (new.id, new.text);
                END;
                """)
        }
        // What was stored before: indexed afterwards by `indexing`, a range of ids at a time.
        try db.execute(sql: """
            CREATE TABLE search_backlog (tableName TEXT PRIMARY KEY, first INTEGER NOT NULL, next INTEGER NOT NULL,
                                         last INTEGER NOT NULL) WITHOUT ROWID
            """)
        for (table, _) in indexed {
            try db.execute(sql: """
                INSERT INTO search_backlog SELECT '\(table)', min(id), min(id), max(id) FROM \(table) HAVING count(*) > 0
                """)
        }
    }

    /// Rows indexed in one step of the backfill: a transaction short enough that another
    /// process waiting to write is not kept waiting long.
    static let backfillStep: Int64 = 20_000

    /// Indexes the rows stored before the index existed, `backfillStep` ids at a time.
    package static let indexing = Backfill("indexing messages for search", remaining: { db in
        // A table that is gone (an older schema in a test) leaves nothing to do.
        guard try db.tableExists("search_backlog"),
              let row = try Row.fetchOne(db, sql: "SELECT sum(last - next + 1), sum(last - first + 1) FROM search_backlog"),
              let left: Int = row[0], let total: Int = row[1] else { return nil }
        return (left, total)
    }, step: { db in
        guard let row = try Row.fetchOne(db, sql: "SELECT tableName, next, last FROM search_backlog ORDER BY tableName LIMIT 1") else { return }
        let table: String = row[0], next: Int64 = row[1], last: Int64 = row[2]
        guard let index = indexed.first(where: { $0.table == table })?.index else {
            return try db.execute(sql: "DELETE FROM search_backlog WHERE tableName = ?", arguments: [table])
        }
        let end = min(last, next + backfillStep - 1)
        try db.execute(sql: "INSERT INTO \(index)(rowid, text) SELECT id, text FROM \(table) WHERE id BETWEEN ? AND ?",
                       arguments: [next, end])
        if end >= last {
            try db.execute(sql: "DELETE FROM search_backlog WHERE tableName = ?", arguments: [table])
        } else {
            try db.execute(sql: "UPDATE search_backlog SET next = ? WHERE tableName = ?", arguments: [end + 1, table])
        }
    })
}
