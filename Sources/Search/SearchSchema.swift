import GRDB
import GRDBSQLite
import Storage
import Synchronization

/// The full-text index of every line said: FTS5 tables over the messages of conversations and
/// the lines of rooms, brought up to the rows just written at the end of every write
/// transaction (`keepingUp`: a line and its index entry are one transaction's), lines deleted
/// or changed by triggers, and the backfill that indexes what was stored before the index or
/// around seance (by `sqlite3`, say).
package enum SearchSchema {
    /// The tables indexed: the stored table and its index, whose rows are the stored rows' ids.
    static let indexed = [(table: "message", index: "message_search"), (table: "roomMessage", index: "roomMessage_search")]

    /// Case and diacritics folded (`QUOK` finds "quokka", `cafe` "café").
    static let tokenizer = "unicode61 remove_diacritics 2"

    /// Every migration of this feature, in order.
    package static let migrations = [search, indexByRange, deferredIndex, reusedIds, noColumnSizes]

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

    /// A row inserted through a trigger cost FTS5 a segment of its own (SQLite opens a
    /// savepoint for each statement a trigger runs on a virtual table, and FTS5 writes its
    /// pending terms out at each): indexing a burst's messages made storing them 30 % slower.
    /// Instead, the rows of a table above `upTo` are indexed in one statement at the end of
    /// the transaction that wrote them. Ids only grow, so every row above `upTo` is new (since
    /// `reusedIds`, also once the newest rows are deleted). Deletions and changes stay with the
    /// triggers: they are rare.
    package static let indexByRange = Migration("v19-search-by-range") { db in
        try db.execute(sql: "CREATE TABLE search_indexed (tableName TEXT PRIMARY KEY, upTo INTEGER NOT NULL) WITHOUT ROWID")
        for (table, index) in indexed {
            // Everything stored until now is indexed, or in the backlog.
            try db.execute(sql: "INSERT INTO search_indexed SELECT '\(table)', coalesce(max(id), 0) FROM \(table)")
            try db.execute(sql: "DROP TRIGGER \(index)_insert")
        }
    }

    /// Rows stored and not yet indexed wait for company up to this many: indexing costs FTS5 a
    /// new segment a transaction whatever it holds (some 140,000 instructions, more than
    /// storing the message and everything else about receiving it), so a lone message is not
    /// indexed alone. A search indexes what waits first (`catchingUp`), so it finds everything.
    /// At 64 (a group commit's rows), a burst's index cost a received message 11,000
    /// instructions; at 256, 6,800 (with `noColumnSizes`); at 1,024, 4,400, a tenth of what the
    /// rest of storing it costs (issue 51). A search after a burst indexes up to 1,023 rows
    /// first, about a millisecond.
    static let deferLimit: Int64 = 1_024

    /// The end of every write transaction: the rows it stored indexed with it once
    /// `deferLimit` of them wait (a burst), else later. The tables' bounds are read only once
    /// enough rows may have been written since they last were for one table to reach the limit:
    /// SQLite counts every row this connection writes (`sqlite3_total_changes64`), and reading
    /// the bounds was a tenth of a lone message's transaction.
    package static let keepingUp = CommitStep(remembering: {
        // When the bounds were last read: the connection's count of rows written then, and how
        // many more rows could be written before a table had `deferLimit` waiting.
        let lastRead = Mutex<(changes: Int64, room: Int64)?>(nil)
        return { db in
            let changes = sqlite3_total_changes64(db.sqliteConnection)
            if let last = lastRead.withLock({ $0 }), changes >= last.changes, changes - last.changes < last.room { return }
            var room = deferLimit
            for (table, index, upTo, newest) in try bounds(db) {
                if newest - upTo >= deferLimit && newest - upTo <= backfillStep {
                    try indexRows(db, table, index, after: upTo, through: newest)
                } else {
                    room = min(room, deferLimit - (newest - upTo))
                }
            }
            let now = sqlite3_total_changes64(db.sqliteConnection)
            lastRead.withLock { $0 = (now, room) }
        }
    })

    /// The indexes keep no column sizes (`columnsize=0`): only ranking by relevance (`bm25`)
    /// reads them, and seance orders what it finds by time. Keeping them wrote a row of a table
    /// of their own for every line indexed, some 4,000 instructions a message, a third of all
    /// its indexing. The indexes are made anew, and every line is indexed again: by the next
    /// transaction when few, else by the backfill when the database is opened, with its
    /// progress told. The backlog's lines are among them.
    package static let noColumnSizes = Migration("v36-search-no-column-sizes") { db in
        for (table, index) in indexed {
            try db.execute(sql: "DROP TABLE \(index)")
            try db.execute(sql: """
                CREATE VIRTUAL TABLE \(index) USING fts5(text, content='\(table)', content_rowid='id', tokenize='\(tokenizer)',
                                                         columnsize=0)
                """)
            try db.execute(sql: "UPDATE search_indexed SET upTo = 0 WHERE tableName = ?", arguments: [table])
        }
        try db.execute(sql: "DELETE FROM search_backlog")
    }

    /// Before a search: what waits to be indexed (fewer than `deferLimit` rows, ours) is. More is
    /// what was written around seance: the backfill's, on the next start.
    package static func catchingUp(_ db: Database) throws {
        for (table, index, upTo, newest) in try bounds(db) where newest > upTo && newest - upTo < deferLimit {
            try indexRows(db, table, index, after: upTo, through: newest)
        }
    }

    /// Whether rows wait that `catchingUp` would index.
    package static func waiting(_ db: Database) throws -> Bool {
        try bounds(db).contains { $0.newest > $0.upTo && $0.newest - $0.upTo < deferLimit }
    }

    /// `bounds`' statement: for each table of `indexed`, two columns.
    private static let boundsQuery = "SELECT " + indexed.map { table, _ in
        "(SELECT upTo FROM search_indexed WHERE tableName = '\(table)'), (SELECT max(id) FROM \(table))"
    }.joined(separator: ", ")

    /// For each table followed: the last row indexed and its newest row, in one statement.
    private static func bounds(_ db: Database) throws -> [(table: String, index: String, upTo: Int64, newest: Int64)] {
        guard let row = try FirstRow.integers(db.cachedStatement(sql: boundsQuery), columns: 2 * indexed.count, in: db) else { return [] }
        return indexed.enumerated().compactMap { column, source in
            row[2 * column].map { (source.table, source.index, $0, row[2 * column + 1] ?? 0) }
        }
    }

    /// Indexes the rows of `table` with ids in `upTo + 1 ... end`, and records them indexed.
    private static func indexRows(_ db: Database, _ table: String, _ index: String, after upTo: Int64, through end: Int64) throws {
        try db.cachedStatement(sql: "INSERT INTO \(index)(rowid, text) SELECT id, text FROM \(table) WHERE id > ? AND id <= ?")
            .execute(arguments: [upTo, end])
        try db.cachedStatement(sql: "UPDATE search_indexed SET upTo = ? WHERE tableName = ?").execute(arguments: [end, table])
    }

    /// Rows indexed in one step of the backfill: a transaction short enough that another
    /// process waiting to write is not kept waiting long.
    static let backfillStep: Int64 = 20_000

    /// Indexes what is not yet: the rows stored before the index existed (the backlog), and
    /// rows written around seance, `backfillStep` ids at a time.
    package static let indexing = Backfill("indexing messages for search", remaining: { db in
        // A table that is gone (an older schema in a test) leaves nothing to do.
        guard try db.tableExists("search_backlog") else { return nil }
        var left = try Int.fetchOne(db, sql: "SELECT coalesce(sum(last - next + 1), 0) FROM search_backlog") ?? 0
        if try db.tableExists("search_indexed") {
            for (_, _, upTo, newest) in try bounds(db) where newest - upTo >= deferLimit { left += Int(newest - upTo) }
        }
        return left > 0 ? left : nil
    }, step: { db in
        if let row = try Row.fetchOne(db, sql: "SELECT tableName, next, last FROM search_backlog ORDER BY tableName LIMIT 1") {
            let table: String = row[0], next: Int64 = row[1], last: Int64 = row[2]
            let end = min(last, next + backfillStep - 1)
            if let index = indexed.first(where: { $0.table == table })?.index {
                try db.execute(sql: "INSERT INTO \(index)(rowid, text) SELECT id, text FROM \(table) WHERE id BETWEEN ? AND ?",
                               arguments: [next, end])
            }
            if end >= last || !indexed.contains(where: { $0.table == table }) {
                try db.execute(sql: "DELETE FROM search_backlog WHERE tableName = ?", arguments: [table])
            } else {
                try db.execute(sql: "UPDATE search_backlog SET next = ? WHERE tableName = ?", arguments: [end + 1, table])
            }
            return
        }
        for (table, index, upTo, newest) in try bounds(db) where newest - upTo >= deferLimit {
            return try indexRows(db, table, index, after: upTo, through: min(newest, upTo + backfillStep))
        }
    })

    /// A row not indexed yet (it waits for company, `deferLimit`) has nothing in the index to
    /// take out: deleting or changing it must not tell FTS5 to remove terms it never had (an
    /// external-content index trusts what it is told, and would be damaged).
    package static let deferredIndex = Migration("v26-search-deferred") { db in
        for (table, index) in indexed {
            let indexedRow = "old.id <= (SELECT upTo FROM search_indexed WHERE tableName = '\(table)')"
            try db.execute(sql: """
                DROP TRIGGER \(index)_delete;
                DROP TRIGGER \(index)_update;
                CREATE TRIGGER \(index)_delete AFTER DELETE ON \(table) WHEN \(indexedRow) BEGIN
                    INSERT INTO \(index)(\(index), rowid, text) VALUES ('delete', old.id, old.text);
                END;
                CREATE TRIGGER \(index)_update AFTER UPDATE OF text ON \(table) WHEN \(indexedRow) BEGIN
                    INSERT INTO \(index)(\(index), rowid, text) VALUES ('delete', old.id, old.text);
                    INSERT INTO \(index)(rowid, text) VALUES (new.id, new.text);
                END;
                """)
        }
    }

    /// The tables' ids are no longer `AUTOINCREMENT` (`NearbySchema.plainIds`): a row deleted
    /// while the newest gives its id to the next one stored. So a deletion also brings `upTo`
    /// down to the newest row left, else that next row, at or under `upTo`, would never be
    /// indexed. Its terms go from the index first, while `upTo` still says it was indexed.
    package static let reusedIds = Migration("v34-search-reused-ids") { db in
        for (table, index) in indexed {
            try db.execute(sql: """
                DROP TRIGGER \(index)_delete;
                CREATE TRIGGER \(index)_delete AFTER DELETE ON \(table) BEGIN
                    INSERT INTO \(index)(\(index), rowid, text) SELECT 'delete', old.id, old.text
                        WHERE old.id <= (SELECT upTo FROM search_indexed WHERE tableName = '\(table)');
                    UPDATE search_indexed SET upTo = (SELECT coalesce(max(id), 0) FROM \(table))
                        WHERE tableName = '\(table)' AND upTo > (SELECT coalesce(max(id), 0) FROM \(table));
                END;
                """)
        }
    }
}
