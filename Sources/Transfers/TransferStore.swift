import Crypto
import Foundation
import GRDB
import Nearby
import Storage
import Terminal
import Shell

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
    /// Where its bytes are when not in the transfers folder: ours, the user's file as sent;
    /// theirs, where the user saved it.
    package var localPath: String?
    /// Ours: what the user's file was when sent (a later read checks it is still so).
    package var source: TransferFiles.Source?
    /// Ours: when it was left with the brokers for its reader, away (`TransferMail`).
    package var mailedAt: Double?

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
    case file(TransferFiles.Failure)

    package var description: String {
        switch self {
        case .unreadable(let path, let reason): return "cannot read \(path): \(reason)"
        case .notAFile(let path, let kind): return "cannot send \(path): it is \(kind), not a file"
        case .empty(let path): return "\(path) is empty: nothing to send"
        case .tooLarge(let path, let size):
            return "\(path) is \(TransferView.size(size)): the most a file can be is \(TransferView.size(Int(FileOffer.maximumSize)))"
        case .noSuchTransfer(let number): return "no file \(number) (\(Advice.command("transfers")) lists them)"
        case .file(let failure): return failure.description
        }
    }
}

/// Transfers in the database, their bytes in files (`TransferFiles`): ours read from the user's
/// own file where it is, theirs written chunk by chunk into a file of the data directory as they
/// come, shown only once the hash over all of it matched.
package struct TransferStore: Sendable {
    package let database: SeanceDatabase
    package let files: TransferFiles

    package init(database: SeanceDatabase) {
        self.database = database
        files = TransferFiles(database: database)
    }

    /// How much of a file's start is read to know whether it is a picture: a JPEG states its
    /// size after its EXIF and tables, often kilobytes in.
    static let pictureHead = 256 << 10

    /// Offers the file at `path` in `conversation`: read once, where it is (never copied), for
    /// its size, its hash and whether it is a picture; a later change to it fails the transfer.
    package func send(path: String, name: String, in conversation: Conversation, id: Data, now: Double) throws -> Transfer {
        let absolute = path.hasPrefix("/") ? path : FileManager.default.currentDirectoryPath + "/" + path
        var info = stat()
        guard stat(absolute, &info) == 0 else { throw TransferError.unreadable(path: path, reason: String(cString: strerror(errno))) }
        if let kind = FileContents.irregularKind(info.st_mode) { throw TransferError.notAFile(path: path, kind: kind) }
        let summary: (sha256: Data, size: Int, head: [UInt8], source: TransferFiles.Source)
        do { summary = try files.summary(of: absolute, head: Self.pictureHead) } catch {
            throw TransferError.unreadable(path: path, reason: error.description)
        }
        guard summary.size > 0 else { throw TransferError.empty(path: path) }
        guard summary.size <= FileOffer.maximumSize else { throw TransferError.tooLarge(path: path, size: summary.size) }
        let picture = ImageHeader.parse(summary.head) != nil
        return try database.write { db in
            try db.execute(sql: """
                INSERT INTO transfer (transferId, conversationId, outgoing, name, picture, size, chunkSize, sha256, state, stored, sentAt,
                                      localPath, sourceSize, sourceModified)
                VALUES (?, ?, 1, ?, ?, ?, ?, ?, 'offered', 0, ?, ?, ?, ?)
                """, arguments: [id, conversation.id, name, picture, summary.size, Int(FileChunk.maximumData), summary.sha256, now,
                                 absolute, summary.source.size, summary.source.modified])
            return try Self.transfer(db, db.lastInsertedRowID)!
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

    /// Chunks received in order, from `first` on: written into its file, then how far the
    /// transfer has come, in one transaction (never said of bytes not written yet).
    package func received(_ chunks: [[UInt8]], from first: Int, of transfer: Transfer) throws {
        guard !chunks.isEmpty else { return }
        do { try files.write(Array(chunks.joined()), at: first * transfer.chunkSize, to: transfer.number) } catch { throw TransferError.file(error) }
        try database.write { db in
            try db.execute(sql: "UPDATE transfer SET stored = ? WHERE id = ? AND stored < ?",
                           arguments: [first + chunks.count, transfer.number, first + chunks.count])
        }
    }

    /// How far a received file has come, written already (by a stream): in chunks, from the first.
    package func stored(_ chunks: Int, of transfer: Transfer) throws {
        try database.write { db in
            try db.execute(sql: "UPDATE transfer SET stored = ? WHERE id = ? AND stored < ?", arguments: [chunks, transfer.number, chunks])
        }
    }

    /// The file of a transfer: where the user keeps it, or in the transfers folder.
    package func path(of transfer: Transfer) -> String { transfer.localPath ?? files.path(of: transfer.number) }

    /// The chunks `indices` of one of ours, by index, read from the user's file (which must
    /// still be as it was sent: `TransferFiles.Failure.changed` otherwise).
    package func chunks(_ indices: [Int], of transfer: Transfer) throws -> [Int: [UInt8]] {
        let ranges = indices.map { (offset: $0 * transfer.chunkSize, count: min(transfer.chunkSize, transfer.size - $0 * transfer.chunkSize)) }
        do {
            let read = try files.read(path(of: transfer), ranges, as: transfer.source)
            return Dictionary(uniqueKeysWithValues: zip(indices, read))
        } catch { throw TransferError.file(error) }
    }

    /// The SHA-256 of a received file, read a mebibyte at a time.
    package func hash(of transfer: Transfer) throws -> Data {
        do { return try files.summary(of: path(of: transfer)).sha256 } catch { throw TransferError.file(error) }
    }

    /// The whole file (a picture to draw), once complete; at most `limit` bytes.
    package func contents(of number: Int64, limit: Int = FileContents.defaultLimit) throws -> [UInt8] {
        guard let transfer = try transfer(number) else { throw TransferError.noSuchTransfer(number) }
        do { return try files.contents(path(of: transfer), limit: limit) } catch { throw TransferError.file(error) }
    }

    /// A new state; a received file that ends without completing is deleted at once.
    package func set(_ number: Int64, state: Transfer.State, stored: Int? = nil, reason: String? = nil) throws {
        let incoming = try database.write { db -> Bool in
            try db.execute(sql: "UPDATE transfer SET state = ?, stored = coalesce(?, stored), reason = coalesce(?, reason) WHERE id = ?",
                           arguments: [state.rawValue, stored, reason, number])
            return try Bool.fetchOne(db, sql: "SELECT NOT outgoing AND localPath IS NULL FROM transfer WHERE id = ?", arguments: [number]) ?? false
        }
        if state.isFinal && state != .complete && incoming { files.remove(number) }
    }

    /// Forgets transfers and deletes their files where they are seance's (a file the user sent
    /// or saved stays where it is); the database gives the space back.
    package func delete(_ transfers: [Transfer]) throws {
        guard !transfers.isEmpty else { return }
        try database.write { db in
            for transfer in transfers { try db.execute(sql: "DELETE FROM transfer WHERE id = ?", arguments: [transfer.number]) }
        }
        for transfer in transfers where transfer.localPath == nil { files.remove(transfer.number) }
        try database.giveSpaceBack()
    }

    /// A received file saved at `path` (which must not exist): moved there from the transfers
    /// folder (a rename on the same file system: no second copy) and kept there from now on;
    /// ours, or one saved already, copied.
    package func save(_ transfer: Transfer, to path: String) throws {
        do {
            guard transfer.localPath == nil else { return try TransferFiles.copy(self.path(of: transfer), to: path) }
            try TransferFiles.move(files.path(of: transfer.number), to: path)
        } catch { throw TransferError.file(error) }
        try database.write { db in try db.execute(sql: "UPDATE transfer SET localPath = ? WHERE id = ?", arguments: [path, transfer.number]) }
    }

    package func transfer(_ number: Int64) throws -> Transfer? { try database.read { db in try Self.transfer(db, number) } }

    /// Ours, left with the brokers at `now`.
    package func mailed(_ number: Int64, at now: Double) throws {
        try database.write { db in try db.execute(sql: "UPDATE transfer SET mailedAt = ? WHERE id = ?", arguments: [now, number]) }
    }

    /// Ours in `conversation` left with the brokers and not yet known to be whole there.
    package func mailedUnfinished(in conversation: Int64) throws -> Int {
        try database.read { db in
            try Int.fetchOne(db, sql: """
                SELECT count(*) FROM transfer WHERE conversationId = ? AND outgoing AND mailedAt IS NOT NULL
                AND state NOT IN ('complete', 'declined', 'cancelled', 'failed')
                """, arguments: [conversation]) ?? 0
        }
    }

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
                 stored: row["stored"], sentAt: row["sentAt"], reason: row["reason"], localPath: row["localPath"],
                 source: (row["sourceSize"] as Int?).map { TransferFiles.Source(size: $0, modified: row["sourceModified"] ?? 0) },
                 mailedAt: row["mailedAt"])
    }
}

extension TransferStore {
    /// A transfer as its bubble draws it: a picture's thumbnail, made once (decoded in a child
    /// process, within the picture budget) and kept beside it; a picture over the budget, or one
    /// that does not decode, is a file from then on, never decoded again.
    func drawn(_ transfer: Transfer) -> (transfer: Transfer, picture: RGBAImage?) {
        guard transfer.picture, transfer.outgoing || transfer.state == .complete else { return (transfer, nil) }
        if let kept = try? thumbnail(of: transfer.number) { return (transfer, kept) }
        guard let bytes = try? contents(of: transfer.number) else { return (transfer, nil) }
        let fitted = try? PictureProcess.fitted(bytes, width: TransferView.thumbnailColumns, height: TransferView.thumbnailRows * 2)
        try? keep(thumbnail: fitted, of: transfer.number)
        var shown = transfer
        shown.picture = fitted != nil
        return (shown, fitted)
    }
}
