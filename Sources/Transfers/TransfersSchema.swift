import Foundation
import GRDB
import Storage

package enum TransfersSchema {
    package static let migrations = [transfers, thumbnails, files, mailed]

    package static let transfers = Migration("v22-transfers") { db in
        // One file, one way, in one conversation; its chunks apart, so that a file is read and
        // written a chunk at a time and a kill at any moment leaves whole chunks.
        try db.execute(sql: """
            CREATE TABLE transfer (
                id INTEGER PRIMARY KEY,
                transferId BLOB NOT NULL,
                conversationId INTEGER NOT NULL REFERENCES conversation(id) ON DELETE CASCADE,
                outgoing BOOLEAN NOT NULL,
                name TEXT NOT NULL,
                picture BOOLEAN NOT NULL,
                size INTEGER NOT NULL,
                chunkSize INTEGER NOT NULL,
                sha256 BLOB NOT NULL,
                state TEXT NOT NULL,
                stored INTEGER NOT NULL DEFAULT 0,
                sentAt DOUBLE NOT NULL,
                reason TEXT,
                UNIQUE (conversationId, transferId, outgoing))
            """)
        try db.execute(sql: """
            CREATE TABLE transferChunk (
                transfer INTEGER NOT NULL REFERENCES transfer(id) ON DELETE CASCADE,
                idx INTEGER NOT NULL,
                data BLOB NOT NULL,
                PRIMARY KEY (transfer, idx)) WITHOUT ROWID
            """)
    }
}

extension TransfersSchema {
    /// A picture's bubble draws a thumbnail made once (a few KB), not the picture decoded at
    /// every page.
    package static let thumbnails = Migration("v23-transfer-thumbnails") { db in
        try db.execute(sql: "ALTER TABLE transfer ADD COLUMN thumbnail BLOB")
        try db.execute(sql: "ALTER TABLE transfer ADD COLUMN thumbnailWidth INTEGER")
        try db.execute(sql: "ALTER TABLE transfer ADD COLUMN thumbnailHeight INTEGER")
    }
}

extension TransfersSchema {
    /// Files as files: a received file is kept in the data directory's `transfers` folder, one
    /// of ours read where the user keeps it (`localPath`, and what it was when sent, so that a
    /// change is noticed); the chunks an older seance stored in the database are moved out by
    /// `movingChunksOut`.
    package static let files = Migration("v25-transfer-files") { db in
        try db.execute(sql: "ALTER TABLE transfer ADD COLUMN localPath TEXT")
        try db.execute(sql: "ALTER TABLE transfer ADD COLUMN sourceSize INTEGER")
        try db.execute(sql: "ALTER TABLE transfer ADD COLUMN sourceModified INTEGER")
    }

    /// What an older seance stored as chunks in the database goes into files, a transfer a
    /// step (a kill stops it between two, and the next start goes on); then the space is given
    /// back once (`VACUUM`, which also makes the database give back what later deletes leave).
    package static let movingChunksOut = Backfill("moving files out of the database", remaining: { db in
        guard try db.tableExists("transferChunk") else { return nil }
        let left = try Int.fetchOne(db, sql: "SELECT count(DISTINCT transfer) FROM transferChunk") ?? 0
        if left > 0 { return left }
        // Nothing to move: once, the database is made to give its space back.
        let converted = try Int.fetchOne(db, sql: "PRAGMA auto_vacuum") == 2
        let done = try Bool.fetchOne(db, sql: "SELECT EXISTS (SELECT 1 FROM setting WHERE key = 'transfers-moved-out')") ?? false
        return converted || done ? nil : 0
    }, step: { db in
        guard let number = try Int64.fetchOne(db, sql: "SELECT transfer FROM transferChunk LIMIT 1") else {
            return try db.execute(sql: "INSERT OR REPLACE INTO setting (key, value) VALUES ('transfers-moved-out', '1')")
        }
        let database = try String.fetchOne(db, sql: "SELECT file FROM pragma_database_list WHERE name = 'main'") ?? ""
        let directory = (database as NSString).deletingLastPathComponent + "/transfers"
        if mkdir(directory, 0o700) != 0 && errno != EEXIST { throw TransferFiles.Failure.io(path: directory, reason: String(cString: strerror(errno))) }
        let path = directory + "/\(number)"
        let fd = open(path, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0o600)
        guard fd >= 0 else { throw TransferFiles.Failure.io(path: path, reason: String(cString: strerror(errno))) }
        defer { close(fd) }
        let rows = try Row.fetchCursor(db, sql: """
            SELECT idx, data, (SELECT chunkSize FROM transfer WHERE id = transfer) AS chunkSize FROM transferChunk WHERE transfer = ? ORDER BY idx
            """, arguments: [number])
        while let row = try rows.next() {
            let data: Data = row["data"], index: Int = row["idx"], chunkSize: Int = row["chunkSize"] ?? 1_100
            let written = data.withUnsafeBytes { pwrite(fd, $0.baseAddress!, $0.count, off_t(index * chunkSize)) }
            guard written == data.count else { throw TransferFiles.Failure.io(path: path, reason: String(cString: strerror(errno))) }
        }
        try db.execute(sql: "DELETE FROM transferChunk WHERE transfer = ?", arguments: [number])
    }, afterwards: { db in
        try db.execute(sql: "DROP TABLE IF EXISTS transferChunk")
        try db.execute(sql: "PRAGMA auto_vacuum = INCREMENTAL")
        try db.execute(sql: "VACUUM")
        // The smaller database is in the log until a checkpoint writes it back: now, so that
        // the file shrinks at once.
        try db.execute(sql: "PRAGMA wal_checkpoint(TRUNCATE)")
    })
}

extension TransfersSchema {
    /// A picture of ours left with the brokers for someone away (`TransferMail`): when, so that
    /// it is mailed once and what waits with the brokers for one reader is bounded.
    package static let mailed = Migration("v31-transfer-mailed") { db in
        try db.execute(sql: "ALTER TABLE transfer ADD COLUMN mailedAt DOUBLE")
    }
}
