import Foundation
import GRDB
import Nearby
import Storage

/// A line found: where it was said, by whom, when, and its number there.
package struct SearchHit: Equatable, Sendable {
    package enum Place: Equatable, Sendable {
        case conversation(id: Int64, peerName: String, peerKey: Data)
        case room(id: Int64, major: Int, minor: Int, hostName: String)
    }

    package var place: Place
    /// The stored row (of `message` or `roomMessage`).
    package var rowID: Int64
    package var number: Int64
    package var outgoing: Bool
    /// Who wrote it: the peer's name, a room member's, or yours.
    package var sender: String
    package var text: String
    package var sentAt: Double
}

/// Which lines a search looks at, besides what they say.
package struct SearchFilter: Equatable, Sendable {
    /// Who wrote them.
    package enum Author: Equatable, Sendable {
        case me
        case named(String)
    }

    package var author: Author?
    /// Only these conversations and rooms (nil: all; an empty set: none of that kind).
    package var conversations: Set<Int64>?
    package var rooms: Set<Int64>?
    /// Not this conversation or room (the one searched first, listed before the others).
    package var notConversation: Int64?
    package var notRoom: Int64?
    package var since: Double?
    package var before: Double?

    package init() {}

    var isEmpty: Bool { self == SearchFilter() }
}

/// Full-text search over one profile's conversations and rooms (`SearchSchema`'s index).
package struct SearchStore {
    package let database: SeanceDatabase
    /// The profile searched: its key and name.
    package let me: Data
    package let myName: String

    package init(database: SeanceDatabase, me: Data, myName: String) {
        self.database = database
        self.me = me
        self.myName = myName
    }

    /// Indexes the lines that wait for company (`SearchSchema.deferLimit`), so that a search
    /// finds every line stored. A database that cannot be written (another seance holds it
    /// long) is searched as it is.
    private func catchUp() {
        guard (try? database.read { try SearchSchema.waiting($0) }) == true else { return }
        try? database.write { try SearchSchema.catchingUp($0) }
    }

    /// How many lines match.
    package func count(_ query: SearchQuery, _ filter: SearchFilter) throws -> Int {
        guard !query.isEmpty else { return 0 }
        catchUp()
        return try database.read { db in
            // Most databases hold one profile's lines only: then the index alone counts them,
            // without a join per match.
            if filter.isEmpty, try onlyMine(db) {
                return try Source.all.reduce(0) { total, source in
                    total + (try Int.fetchOne(db.cachedStatement(sql: "SELECT count(*) FROM \(source.index) WHERE \(source.index) MATCH ?"),
                                              arguments: [query.match]) ?? 0)
                }
            }
            return try Source.all.compactMap { statement($0, query, filter, count: true) }.reduce(0) {
                $0 + (try Int.fetchOne(db.cachedStatement(sql: $1.sql), arguments: $1.arguments) ?? 0)
            }
        }
    }

    /// The first `limit` matching lines, newest first (in the order they were stored).
    package func hits(_ query: SearchQuery, _ filter: SearchFilter, limit: Int) throws -> [SearchHit] {
        guard !query.isEmpty, limit > 0 else { return [] }
        catchUp()
        return try database.read { db in
            var hits: [SearchHit] = []
            for source in Source.all {
                guard var statement = statement(source, query, filter, count: false) else { continue }
                // The limit bound, not written in: one filter's statements are prepared once.
                statement.sql += " ORDER BY \(source.index).rowid DESC LIMIT ?"
                statement.arguments += [limit]
                hits += try Row.fetchAll(db.cachedStatement(sql: statement.sql), arguments: statement.arguments).map { row in
                    SearchHit(place: source.place(row), rowID: row[0], number: row[2], outgoing: row[3],
                              sender: row[3] ? myName : row[6], text: row[4], sentAt: row[5])
                }
            }
            return Array(hits.sorted { $0.sentAt > $1.sentAt }.prefix(limit))
        }
    }

    /// The conversations and rooms `name` means: a conversation's peer (case aside), or a room
    /// as `7.42` or `room 7.42`.
    package func places(named name: String) throws -> (conversations: Set<Int64>, rooms: Set<Int64>) {
        try database.read { db in
            let conversations = try Int64.fetchAll(db, sql: "SELECT id FROM conversation WHERE myKey = ? AND peerName = ? COLLATE NOCASE",
                                                   arguments: [me, name])
            var rooms: [Int64] = []
            var room = Substring(name)
            if room.lowercased().hasPrefix("room ") { room = room.dropFirst(5) }
            let numbers = room.split(separator: ".", omittingEmptySubsequences: false).map { Int($0) }
            if numbers.count == 2, let major = numbers[0], let minor = numbers[1] {
                rooms = try Int64.fetchAll(db, sql: "SELECT id FROM room WHERE myKey = ? AND major = ? AND minor = ?",
                                           arguments: [me, major, minor])
            }
            return (Set(conversations), Set(rooms))
        }
    }

    /// Room lines around row `id` (up to `around` before and after it), oldest first, as a
    /// room page shows them.
    package func roomLines(around id: Int64, in room: Int64, around count: Int) throws -> [ChatMessage] {
        try database.read { db in
            let columns = "id, number, outgoing, text, sentAt, receivedAt, senderName"
            let before = try Row.fetchAll(db, sql: "SELECT \(columns) FROM roomMessage WHERE roomId = ? AND id <= ? ORDER BY id DESC LIMIT ?",
                                          arguments: [room, id, count + 1])
            let after = try Row.fetchAll(db, sql: "SELECT \(columns) FROM roomMessage WHERE roomId = ? AND id > ? ORDER BY id LIMIT ?",
                                         arguments: [room, id, count])
            return (before.reversed() + after).map { row in
                ChatMessage(id: row[0], number: row[1], outgoing: row[2], text: row[3], sentAt: row[4], receivedAt: row[5],
                            state: row[2] ? .delivered : .received, sender: row[2] ? nil : row[6])
            }
        }
    }

    /// Whether every conversation and room is this profile's. Asked as two ranges either side
    /// of its key, which the tables' unique keys (myKey first) find at once; `!=` read them whole.
    private func onlyMine(_ db: Database) throws -> Bool {
        try Bool.fetchOne(db.cachedStatement(sql: """
            SELECT NOT EXISTS (SELECT 1 FROM conversation WHERE myKey < ?1) AND NOT EXISTS (SELECT 1 FROM conversation WHERE myKey > ?1)
               AND NOT EXISTS (SELECT 1 FROM room WHERE myKey < ?1) AND NOT EXISTS (SELECT 1 FROM room WHERE myKey > ?1)
            """), arguments: [me]) ?? false
    }

    /// Where lines are kept, as the statements below read them: conversations' messages, or
    /// rooms' lines.
    struct Source: Sendable {
        /// The FTS5 table, the stored table (as `line`) and its place's (as `place`), the
        /// column of `line` that names its place, and the sender's name.
        let index, table, placeTable, placeColumn, senderName: String
        /// The columns after the seven every source gives (id, place, number, outgoing, text,
        /// sentAt, sender), and the place made of the row.
        let placeColumns: String
        let place: @Sendable (Row) -> SearchHit.Place
        /// The filter's places of this kind, and the one to leave out.
        let only: @Sendable (SearchFilter) -> Set<Int64>?
        let leaveOut: @Sendable (SearchFilter) -> Int64?

        static let all = [
            Source(index: "message_search", table: "message", placeTable: "conversation", placeColumn: "line.conversationId",
                   senderName: "place.peerName", placeColumns: "place.peerKey",
                   place: { .conversation(id: $0[1], peerName: $0[6], peerKey: $0[7]) }, only: { $0.conversations }, leaveOut: { $0.notConversation }),
            Source(index: "roomMessage_search", table: "roomMessage", placeTable: "room", placeColumn: "line.roomId",
                   senderName: "line.senderName", placeColumns: "place.major, place.minor, place.hostName",
                   place: { .room(id: $0[1], major: $0[7], minor: $0[8], hostName: $0[9]) }, only: { $0.rooms }, leaveOut: { $0.notRoom }),
        ]
    }

    /// The statement over one source's lines (`count`: how many); nil when the filter leaves none.
    private func statement(_ source: Source, _ query: SearchQuery, _ filter: SearchFilter,
                           count: Bool) -> (sql: String, arguments: StatementArguments)? {
        if let only = source.only(filter), only.isEmpty { return nil }
        let columns = "line.id, \(source.placeColumn), line.number, line.outgoing, line.text, line.sentAt, \(source.senderName), "
            + source.placeColumns
        var sql = """
            SELECT \(count ? "count(*)" : columns)
            FROM \(source.index) JOIN \(source.table) line ON line.id = \(source.index).rowid
                JOIN \(source.placeTable) place ON place.id = \(source.placeColumn)
            WHERE \(source.index) MATCH ? AND place.myKey = ?
            """
        var arguments: StatementArguments = [query.match, me]
        if let only = source.only(filter) { sql += " AND \(source.placeColumn) IN (\(only.map(String.init).joined(separator: ",")))" }
        if let not = source.leaveOut(filter) { sql += " AND \(source.placeColumn) != \(not)" }
        switch filter.author {
        case .me: sql += " AND line.outgoing = 1"
        case .named(let name):
            sql += " AND line.outgoing = 0 AND \(source.senderName) = ? COLLATE NOCASE"
            arguments += [name]
        case nil: break
        }
        if let since = filter.since { sql += " AND line.sentAt >= ?"; arguments += [since] }
        if let before = filter.before { sql += " AND line.sentAt < ?"; arguments += [before] }
        return (sql, arguments)
    }
}
