import Foundation
import GRDB
import Nearby
import Storage
import Wire

/// A room as stored: its numbers with its host's key (numbers alone can be reused), on this
/// profile.
package struct StoredRoom: Equatable, Sendable {
    package var id: Int64
    package var room: RoomID
    package var hostKey: Data
}

/// Room lines, paged like conversations: each line once (a copy sent again is recognised by its
/// sender and id), numbered per room, with how many members got our own. Online, the engine
/// numbers lines as they are said or received and writes them in that order (`RoomTalk`), so
/// numbers grow with rows: the next is the newest row's plus one, found by the page index
/// (`max(number)` read every line of the room: a long room's insert cost a millisecond).
package struct RoomStore: Sendable {
    package let database: SeanceDatabase

    package init(database: SeanceDatabase) { self.database = database }

    /// The number after the newest line's in room `?`.
    static let newestPlusOne = "coalesce((SELECT number FROM roomMessage WHERE roomId = ? ORDER BY id DESC LIMIT 1), 0) + 1"

    /// The room, created on first use.
    package func room(_ room: RoomID, host: Data, hostName: String, myKey: Data, now: Double) throws -> StoredRoom {
        try database.write { db in
            try db.execute(sql: """
                INSERT INTO room (myKey, hostKey, major, minor, hostName, lastActivity) VALUES (?, ?, ?, ?, ?, ?)
                ON CONFLICT(myKey, hostKey, major, minor) DO UPDATE SET hostName = excluded.hostName, lastActivity = excluded.lastActivity
                """, arguments: [myKey, host, room.major, room.minor, hostName, now])
            let id = try Int64.fetchOne(db, sql: "SELECT id FROM room WHERE myKey = ? AND hostKey = ? AND major = ? AND minor = ?",
                                        arguments: [myKey, host, room.major, room.minor])!
            return StoredRoom(id: id, room: room, hostKey: host)
        }
    }

    /// The number the room's next line takes.
    package func nextNumber(in room: Int64) throws -> Int64 { try database.read { try Self.nextNumber($0, in: room) } }

    static func nextNumber(_ db: Database, in room: Int64) throws -> Int64 {
        try Int64.fetchOne(db, sql: "SELECT \(newestPlusOne)", arguments: [room])!
    }

    /// A line received, numbered next; nil when it was stored already (a copy sent again).
    package func received(in room: Int64, id: Data, sender: Data, senderName: String, text: String, sentAt: Double,
                         now: Double) throws -> ChatMessage? {
        try database.write { db in
            try Self.received(db, in: room, number: Self.nextNumber(db, in: room), id: id, sender: sender, senderName: senderName,
                              text: text, sentAt: sentAt, now: now)
        }
    }

    /// As `received`, numbered `number`, in the engine turn's transaction (`GroupCommit`).
    ///
    /// Written straight through SQLite (`DirectWrite`), as a conversation's messages are, and
    /// made from what was written rather than read back: reading the row back was a sixth of
    /// what a guest spent on a line (58,000 of 371,000 instructions).
    static func received(_ db: Database, in room: Int64, number: Int64, id: Data, sender: Data, senderName: String, text: String,
                         sentAt: Double, now: Double) throws -> ChatMessage? {
        try DirectWrite.execute(db.cachedStatement(sql: """
            INSERT OR IGNORE INTO roomMessage (roomId, number, messageId, senderKey, senderName, outgoing, text, sentAt, receivedAt)
            VALUES (?1, ?2, ?3, ?4, ?5, 0, ?6, ?7, ?8)
            """), in: db) {
            bindLine(&$0, room: room, number: number, id: id, sender: sender, senderName: senderName, text: text, sentAt: sentAt)
            $0.bind(8, now)
        }
        guard db.changesCount > 0 else { return nil }
        // As `message(_:)` reads a received row.
        return ChatMessage(id: db.lastInsertedRowID, number: number, outgoing: false, text: text, sentAt: sentAt, receivedAt: now,
                           state: .received, sender: PeerIdentity.handle(name: senderName, signingKey: sender))
    }

    /// A line of ours numbered `number`, sent to `copies` members, in the engine turn's transaction.
    static func sent(_ db: Database, in room: Int64, number: Int64, id: Data, me: Data, myName: String, text: String, copies: Int,
                     now: Double) throws {
        try DirectWrite.execute(db.cachedStatement(sql: """
            INSERT INTO roomMessage (roomId, number, messageId, senderKey, senderName, outgoing, text, sentAt, copies)
            VALUES (?1, ?2, ?3, ?4, ?5, 1, ?6, ?7, ?8)
            """), in: db) {
            bindLine(&$0, room: room, number: number, id: id, sender: me, senderName: myName, text: text, sentAt: now)
            $0.bind(8, Int64(copies))
        }
    }

    /// The values both inserts of a line take first, ?1 to ?7: its room, number and id, who
    /// wrote it (key and name), its text and when it was sent.
    private static func bindLine(_ arguments: inout DirectWrite.Arguments, room: Int64, number: Int64, id: Data, sender: Data,
                                 senderName: String, text: String, sentAt: Double) {
        arguments.bind(1, room)
        arguments.bind(2, number)
        arguments.bind(3, id)
        arguments.bind(4, sender)
        arguments.bind(5, senderName)
        arguments.bind(6, text)
        arguments.bind(7, sentAt)
    }

    /// One more member acknowledged our line `id`, in the engine turn's transaction: a host
    /// writes this for every member of every line.
    static func acknowledged(_ db: Database, in room: Int64, id: Data, me: Data, now: Double) throws {
        try DirectWrite.execute(db.cachedStatement(sql: """
            UPDATE roomMessage SET acknowledged = acknowledged + 1, receivedAt = coalesce(receivedAt, ?1)
            WHERE roomId = ?2 AND senderKey = ?3 AND messageId = ?4 AND acknowledged < copies
            """), in: db) {
            $0.bind(1, now)
            $0.bind(2, room)
            $0.bind(3, me)
            $0.bind(4, id)
        }
    }

    /// The newest lines before row `before` (nil: the newest of all), oldest first.
    package func page(_ room: Int64, before: Int64? = nil, limit: Int = MessageStore.pageSize) throws -> [ChatMessage] {
        try database.read { db in
            try Row.fetchAll(db, sql: "\(Self.columns) WHERE roomId = ? AND id < ? ORDER BY id DESC LIMIT ?",
                             arguments: [room, before ?? Int64.max, limit]).reversed().map(Self.message)
        }
    }

    static let columns = "SELECT id, number, outgoing, text, sentAt, receivedAt, copies, acknowledged, senderName, senderKey FROM roomMessage"

    static func message(_ row: Row) -> ChatMessage {
        let outgoing: Bool = row["outgoing"]
        let copies: Int = row["copies"], acknowledged: Int = row["acknowledged"]
        let state: ChatMessage.State = !outgoing ? .received : (acknowledged >= copies ? .delivered : .sent)
        let sender = PeerIdentity.handle(name: row["senderName"], signingKey: row["senderKey"])
        return ChatMessage(id: row["id"], number: row["number"], outgoing: outgoing, text: row["text"], sentAt: row["sentAt"],
                           receivedAt: row["receivedAt"], state: state, sender: outgoing ? nil : sender)
    }
}

package enum RoomsSchema {
    /// Every migration of this feature, in order.
    package static let migrations = [rooms, plainIds]

    package static let rooms = Migration("v12-rooms") { db in
        try db.create(table: "room") { t in
            t.autoIncrementedPrimaryKey("id")
            t.column("myKey", .blob).notNull()
            t.column("hostKey", .blob).notNull()
            t.column("major", .integer).notNull()
            t.column("minor", .integer).notNull()
            t.column("hostName", .text).notNull()
            t.column("lastActivity", .double).notNull()
            t.uniqueKey(["myKey", "hostKey", "major", "minor"])
        }
        try db.create(table: "roomMessage") { t in
            t.autoIncrementedPrimaryKey("id")
            t.column("roomId", .integer).notNull().references("room", onDelete: .cascade)
            t.column("number", .integer).notNull()
            t.column("messageId", .blob).notNull()
            t.column("senderKey", .blob).notNull()
            t.column("senderName", .text).notNull()
            t.column("outgoing", .boolean).notNull()
            t.column("text", .text).notNull()
            t.column("sentAt", .double).notNull()
            t.column("receivedAt", .double)
            // Our own lines: how many members were sent a copy, and how many acknowledged it.
            t.column("copies", .integer).notNull().defaults(to: 0)
            t.column("acknowledged", .integer).notNull().defaults(to: 0)
            t.uniqueKey(["roomId", "senderKey", "messageId"])
        }
        try db.execute(sql: "CREATE INDEX roomMessage_page ON roomMessage(roomId, id)")
    }

    /// A line's row without `AUTOINCREMENT`, whose `sqlite_sequence` every insert read and wrote
    /// (as `NearbySchema.plainIds` for messages).
    package static let plainIds = Migration("v33-room-plain-ids") { db in
        try db.rebuild("roomMessage", columns: """
            id INTEGER PRIMARY KEY, roomId INTEGER NOT NULL REFERENCES room(id) ON DELETE CASCADE, number INTEGER NOT NULL,
            messageId BLOB NOT NULL, senderKey BLOB NOT NULL, senderName TEXT NOT NULL, outgoing BOOLEAN NOT NULL, text TEXT NOT NULL,
            sentAt DOUBLE NOT NULL, receivedAt DOUBLE, copies INTEGER NOT NULL DEFAULT 0, acknowledged INTEGER NOT NULL DEFAULT 0,
            UNIQUE (roomId, senderKey, messageId)
            """)
    }
}
