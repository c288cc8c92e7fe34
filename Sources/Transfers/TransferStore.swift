import Crypto
import Foundation
import GRDB
import Nearby
import Storage
import Terminal

/// A transfer as stored: one file, one way, in one conversation. Its number is the one the
/// commands take (`/open N`, `/save N`, `/cancel N`): the row's, unique on this profile.
package struct Transfer: Equatable, Sendable {
    package enum State: String, Sendable {
        /// Ours, its bytes being read and stored (`send`): nothing else sees it yet.
        case storing
        /// Ours, offered and not answered yet.
        case offered
        /// Theirs, waiting for `/accept` (ours: waiting for theirs).
        case asking
        case moving, complete, declined, cancelled, failed

        /// Nothing more will happen to it.
        package var isFinal: Bool { [.complete, .declined, .cancelled, .failed].contains(self) }
    }

    package var number: Int64
    package var transferID: Data
    package var conversation: Int64
    package var peerKey: Data
    package var peerName: String
    package var outgoing: Bool
    package var name: String
    package var picture: Bool
    package var size: Int
    package var chunkSize: Int
    package var sha256: Data
    package var state: State
    /// Chunks the receiver stored, from the first (ours: as far as it said).
    package var stored: Int
    package var sentAt: Double
    /// Why it failed, or who stopped it.
    package var reason: String?

    package var chunkCount: Int { (size + chunkSize - 1) / chunkSize }

    package var offer: FileOffer {
        FileOffer(id: transferID, name: name, picture: picture, size: UInt64(size), chunkSize: UInt16(chunkSize), sha256: sha256,
                  sentAt: UInt64(max(0, sentAt) * 1000))
    }
}

package enum TransferError: Error, Equatable, CustomStringConvertible {
    case unreadable(path: String, reason: String)
    case notAFile(path: String, kind: String)
    case empty(path: String)
    case tooLarge(path: String, size: Int)
    case noSuchTransfer(Int64)

    package var description: String {
        switch self {
        case .unreadable(let path, let reason): return "cannot read \(path): \(reason)"
        case .notAFile(let path, let kind): return "cannot send \(path): it is \(kind), not a file"
        case .empty(let path): return "\(path) is empty: nothing to send"
        case .tooLarge(let path, let size):
            return "\(path) is \(TransferView.size(size)): the most a file can be is \(TransferView.size(Int(FileOffer.maximumSize)))"
        case .noSuchTransfer(let number): return "no file \(number) (transfers lists them)"
        }
    }
}

/// Transfers and their chunks in the database. A file's bytes are read once, when it is
/// sent, and kept here; a received one is written chunk by chunk as it comes, and is shown
/// only once the hash over all of it matched.
package struct TransferStore: Sendable {
    package let database: SeanceDatabase

    package init(database: SeanceDatabase) { self.database = database }

    /// Reads the file at `path` once (at most 16 MiB), in chunks, into a new outgoing transfer
    /// in `conversation`; its picture-ness from its header, its hash over every byte.
    package func send(path: String, name: String, in conversation: Conversation, id: Data, now: Double) throws -> Transfer {
        let fd = open(path, O_RDONLY | O_CLOEXEC)
        guard fd >= 0 else { throw TransferError.unreadable(path: path, reason: String(cString: strerror(errno))) }
        defer { close(fd) }
        var info = stat()
        guard fstat(fd, &info) == 0 else { throw TransferError.unreadable(path: path, reason: String(cString: strerror(errno))) }
        if let kind = FileContents.irregularKind(info.st_mode) { throw TransferError.notAFile(path: path, kind: kind) }
        guard info.st_size > 0 else { throw TransferError.empty(path: path) }
        guard info.st_size <= FileOffer.maximumSize else { throw TransferError.tooLarge(path: path, size: Int(info.st_size)) }
        let chunkSize = Int(FileChunk.maximumData)
        // Written a mebibyte a transaction, as `storing` until the last: the engine writes between
        // them (a 16 MiB file in one transaction held its writes back half a second), and what a
        // kill leaves half-stored is never offered (`removeUnstored`).
        let row = try database.write { db in
            try db.execute(sql: """
                INSERT INTO transfer (transferId, conversationId, outgoing, name, picture, size, chunkSize, sha256, state, stored, sentAt)
                VALUES (?, ?, 1, ?, 0, 0, ?, zeroblob(32), 'storing', 0, ?)
                """, arguments: [id, conversation.id, name, chunkSize, now])
            return db.lastInsertedRowID
        }
        do {
            var hash = SHA256()
            var size = 0, index = 0, head: [UInt8] = [], ended = false
            var buffer = [UInt8](repeating: 0, count: chunkSize)
            while !ended {
                var batch: [[UInt8]] = []
                while !ended && batch.count < (1 << 20) / chunkSize {
                    // A whole chunk at a time (a pipe or a slow disk may give less per read).
                    var filled = 0
                    while filled < chunkSize {
                        let n = buffer.withUnsafeMutableBytes { read(fd, $0.baseAddress! + filled, chunkSize - filled) }
                        if n < 0 && errno == EINTR { continue }
                        guard n >= 0 else { throw TransferError.unreadable(path: path, reason: String(cString: strerror(errno))) }
                        if n == 0 { break }
                        filled += n
                    }
                    ended = filled < chunkSize
                    guard filled > 0 else { break }
                    let chunk = Array(buffer[..<filled])
                    size += filled
                    guard size <= FileOffer.maximumSize else { throw TransferError.tooLarge(path: path, size: size) }
                    if head.count < 64 { head += chunk.prefix(64 - head.count) }
                    hash.update(data: chunk)
                    batch.append(chunk)
                }
                try database.write { db in
                    let insert = try db.cachedStatement(sql: "INSERT INTO transferChunk (transfer, idx, data) VALUES (?, ?, ?)")
                    for chunk in batch {
                        try insert.execute(arguments: [row, index, Data(chunk)])
                        index += 1
                    }
                }
            }
            guard size > 0 else { throw TransferError.empty(path: path) }
            let picture = ImageHeader.parse(head) != nil
            return try database.write { db in
                try db.execute(sql: "UPDATE transfer SET size = ?, picture = ?, sha256 = ?, state = 'offered' WHERE id = ?",
                               arguments: [size, picture, Data(hash.finalize()), row])
                guard let stored = try Self.transfer(db, row) else { throw TransferError.unreadable(path: path, reason: "it was removed meanwhile") }
                return stored
            }
        } catch {
            _ = try? database.write { db in try db.execute(sql: "DELETE FROM transfer WHERE id = ?", arguments: [row]) }
            throw error
        }
    }

    /// Files a kill stopped while they were being stored at `/send`: never offered, removed.
    package func removeUnstored(myKey: Data) throws {
        try database.write { db in
            for conversation in try MessageStore.conversations(db, myKey: myKey).keys {
                try db.execute(sql: "DELETE FROM transfer WHERE state = 'storing' AND conversationId = ?", arguments: [conversation])
            }
        }
    }

    /// An incoming transfer offered by `peerKey`, stored as its announcement alone (no chunk
    /// is kept before it is accepted); the one stored before when it was offered already.
    package func offered(_ offer: FileOffer, in conversation: Conversation, state: Transfer.State, now: Double) throws -> (Transfer, new: Bool) {
        try database.write { db in
            if let known = try Row.fetchOne(db, sql: "SELECT id FROM transfer WHERE conversationId = ? AND transferId = ? AND outgoing = 0",
                                            arguments: [conversation.id, offer.id]) {
                return (try Self.transfer(db, known["id"])!, false)
            }
            try db.execute(sql: """
                INSERT INTO transfer (transferId, conversationId, outgoing, name, picture, size, chunkSize, sha256, state, stored, sentAt)
                VALUES (?, ?, 0, ?, ?, ?, ?, ?, ?, 0, ?)
                """, arguments: [offer.id, conversation.id, offer.name, offer.picture, Int(offer.size), Int(offer.chunkSize), offer.sha256,
                                 state.rawValue, min(Double(offer.sentAt) / 1000, now)])
            return (try Self.transfer(db, db.lastInsertedRowID)!, true)
        }
    }

    /// Chunks received in order, from `first` on, and how far the transfer has come: one transaction.
    package func received(_ chunks: [[UInt8]], from first: Int, in number: Int64) throws {
        try database.write { db in
            // One statement, compiled once, for every chunk (compiling it each time was a tenth of a chunk's cost).
            let insert = try db.cachedStatement(sql: "INSERT OR REPLACE INTO transferChunk (transfer, idx, data) VALUES (?, ?, ?)")
            for (offset, chunk) in chunks.enumerated() {
                try chunk.withUnsafeBytes { bytes in
                    try insert.execute(arguments: [number, first + offset, Data(bytesNoCopy: UnsafeMutableRawPointer(mutating: bytes.baseAddress!),
                                                                               count: bytes.count, deallocator: .none)])
                }
            }
            try db.execute(sql: "UPDATE transfer SET stored = ? WHERE id = ? AND stored < ?",
                           arguments: [first + chunks.count, number, first + chunks.count])
        }
    }

    /// The chunks `indices` of transfer `number`, by index.
    package func chunks(_ indices: [Int], of number: Int64) throws -> [Int: [UInt8]] {
        guard let low = indices.min(), let high = indices.max() else { return [:] }
        return try database.read { db in
            var found: [Int: [UInt8]] = [:]
            let wanted = Set(indices)
            let rows = try Row.fetchCursor(db, sql: "SELECT idx, data FROM transferChunk WHERE transfer = ? AND idx BETWEEN ? AND ?",
                                           arguments: [number, low, high])
            while let row = try rows.next() {
                let index: Int = row["idx"]
                guard wanted.contains(index) else { continue }
                let data: Data = row["data"]
                found[index] = [UInt8](data)
            }
            return found
        }
    }

    /// The SHA-256 of every chunk in order, read a chunk at a time.
    package func hash(of number: Int64) throws -> Data {
        try database.read { db in
            var hash = SHA256()
            let rows = try Data.fetchCursor(db, sql: "SELECT data FROM transferChunk WHERE transfer = ? ORDER BY idx", arguments: [number])
            while let data = try rows.next() { hash.update(data: data) }
            return Data(hash.finalize())
        }
    }

    /// The whole file (a picture to draw, a file to save), once complete.
    package func contents(of number: Int64) throws -> [UInt8] {
        try database.read { db in
            var bytes: [UInt8] = []
            let rows = try Data.fetchCursor(db, sql: "SELECT data FROM transferChunk WHERE transfer = ? ORDER BY idx", arguments: [number])
            while let data = try rows.next() { bytes += data }
            return bytes
        }
    }

    /// A new state; what the transfer holds is let go when it ends without completing.
    package func set(_ number: Int64, state: Transfer.State, stored: Int? = nil, reason: String? = nil) throws {
        try database.write { db in
            try db.execute(sql: "UPDATE transfer SET state = ?, stored = coalesce(?, stored), reason = coalesce(?, reason) WHERE id = ?",
                           arguments: [state.rawValue, stored, reason, number])
            if state.isFinal && state != .complete {
                // A sent file keeps its bytes (it can be saved still); a received one that did not complete keeps nothing.
                try db.execute(sql: "DELETE FROM transferChunk WHERE transfer = ? AND (SELECT outgoing FROM transfer WHERE id = ?) = 0",
                               arguments: [number, number])
            }
        }
    }

    package func transfer(_ number: Int64) throws -> Transfer? { try database.read { db in try Self.transfer(db, number) } }

    /// The small picture kept for a transfer's bubble, once made.
    package func thumbnail(of number: Int64) throws -> RGBAImage? {
        try database.read { db in
            guard let row = try Row.fetchOne(db, sql: "SELECT thumbnail, thumbnailWidth, thumbnailHeight FROM transfer WHERE id = ?",
                                             arguments: [number]),
                  let pixels = row["thumbnail"] as Data?, let width = row["thumbnailWidth"] as Int?, let height = row["thumbnailHeight"] as Int?,
                  width > 0, height > 0, pixels.count == width * height * 4 else { return nil }
            return RGBAImage(width: width, height: height, pixels: [UInt8](pixels))
        }
    }

    /// Keeps a transfer's thumbnail; nil: it is no picture to draw (over the budget, or it does
    /// not decode), and is shown as a file from now on.
    package func keep(thumbnail: RGBAImage?, of number: Int64) throws {
        try database.write { db in
            if let thumbnail {
                try db.execute(sql: "UPDATE transfer SET thumbnail = ?, thumbnailWidth = ?, thumbnailHeight = ? WHERE id = ?",
                               arguments: [Data(thumbnail.pixels), thumbnail.width, thumbnail.height, number])
            } else {
                try db.execute(sql: "UPDATE transfer SET picture = 0 WHERE id = ?", arguments: [number])
            }
        }
    }

    /// The transfer `id` in `conversation`, ours (`outgoing`) or theirs, if there is one.
    package func transfer(_ id: Data, in conversation: Int64, outgoing: Bool) throws -> Transfer? {
        try database.read { db in
            guard let number = try Int64.fetchOne(db, sql: "SELECT id FROM transfer WHERE conversationId = ? AND transferId = ? AND outgoing = ?",
                                                  arguments: [conversation, id, outgoing]) else { return nil }
            return try Self.transfer(db, number)
        }
    }

    /// Transfers of this profile (`myKey`), newest last; only those still moving or waiting
    /// when `unfinished`, only those of one conversation when it is given.
    package func transfers(myKey: Data, unfinished: Bool = false, in conversation: Int64? = nil) throws -> [Transfer] {
        try database.read { db in
            let conversations = try MessageStore.conversations(db, myKey: myKey).filter { conversation == nil || $0.key == conversation }
            guard !conversations.isEmpty else { return [] }
            let places = Array(repeating: "?", count: conversations.count).joined(separator: ", ")
            return try Row.fetchAll(db, sql: """
                SELECT * FROM transfer WHERE conversationId IN (\(places))
                \(unfinished ? "AND state IN ('offered', 'asking', 'moving')" : "") ORDER BY id
                """, arguments: StatementArguments(Array(conversations.keys))).map { Self.transfer($0, in: conversations[$0["conversationId"]]!) }
        }
    }

    /// How many files offered to this profile wait for its user's answer, from everyone.
    package func waitingForAnswer(myKey: Data) throws -> Int {
        try database.read { db in
            let conversations = try MessageStore.conversations(db, myKey: myKey).keys
            guard !conversations.isEmpty else { return 0 }
            let places = Array(repeating: "?", count: conversations.count).joined(separator: ", ")
            return try Int.fetchOne(db, sql: "SELECT count(*) FROM transfer WHERE outgoing = 0 AND state = 'asking' AND conversationId IN (\(places))",
                                    arguments: StatementArguments(Array(conversations))) ?? 0
        }
    }

    /// What `peerKey` holds of our disk in unfinished transfers (bytes), and how many it has
    /// offered that are not finished.
    package func holding(of peerKey: Data, myKey: Data) throws -> (bytes: Int, unfinished: Int) {
        try database.read { db in
            guard let conversation = try MessageStore.conversations(db, myKey: myKey, peerKey: peerKey).keys.first else { return (0, 0) }
            let row = try Row.fetchOne(db, sql: """
                SELECT coalesce(sum(CASE WHEN state = 'moving' THEN size ELSE 0 END), 0) AS bytes, count(*) AS unfinished
                FROM transfer WHERE conversationId = ? AND outgoing = 0 AND state IN ('asking', 'moving')
                """, arguments: [conversation])!
            return (row["bytes"], row["unfinished"])
        }
    }

    static func transfer(_ db: Database, _ number: Int64) throws -> Transfer? {
        guard let row = try Row.fetchOne(db, sql: "SELECT * FROM transfer WHERE id = ?", arguments: [number]),
              let conversation = try MessageStore.conversation(db, id: row["conversationId"]) else { return nil }
        return transfer(row, in: conversation)
    }

    /// A transfer's row, with the person of its conversation.
    static func transfer(_ row: Row, in conversation: Conversation) -> Transfer {
        Transfer(number: row["id"], transferID: row["transferId"], conversation: row["conversationId"], peerKey: conversation.peerKey,
                 peerName: conversation.peerName, outgoing: row["outgoing"], name: row["name"], picture: row["picture"], size: row["size"],
                 chunkSize: row["chunkSize"], sha256: row["sha256"], state: Transfer.State(rawValue: row["state"]) ?? .failed,
                 stored: row["stored"], sentAt: row["sentAt"], reason: row["reason"])
    }
}

package enum TransfersSchema {
    package static let migrations = [transfers, thumbnails]

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
