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

    /// How many lines match.
    package func count(_ query: SearchQuery, _ filter: SearchFilter) throws -> Int {
        guard !query.isEmpty else { return 0 }
        return try database.read { db in
            // Most databases hold one profile's lines only: then the index alone counts them,
            // without a join per match.
            if filter.isEmpty, try onlyMine(db) {
                return try SearchSchema.indexed.reduce(0) { total, indexed in
                    total + (try Int.fetchOne(db, sql: "SELECT count(*) FROM \(indexed.index) WHERE \(indexed.index) MATCH ?",
                                              arguments: [query.match]) ?? 0)
                }
            }
            return try [messages(query, filter, count: true), roomLines(query, filter, count: true)].compactMap { $0 }.reduce(0) {
                $0 + (try Int.fetchOne(db, sql: $1.sql, arguments: $1.arguments) ?? 0)
            }
        }
    }

    /// The first `limit` matching lines, newest first (in the order they were stored).
    package func hits(_ query: SearchQuery, _ filter: SearchFilter, limit: Int) throws -> [SearchHit] {
        guard !query.isEmpty, limit > 0 else { return [] }
        return try database.read { db in
            var hits: [SearchHit] = []
            if var statement = messages(query, filter, count: false) {
                statement.sql += " ORDER BY message_search.rowid DESC LIMIT \(limit)"
                hits += try Row.fetchAll(db, sql: statement.sql, arguments: statement.arguments).map { row in
                    SearchHit(place: .conversation(id: row[1], peerName: row[6], peerKey: row[7]), rowID: row[0], number: row[2],
                              outgoing: row[3], sender: row[3] ? myName : row[6], text: row[4], sentAt: row[5])
                }
            }
            if var statement = roomLines(query, filter, count: false) {
                statement.sql += " ORDER BY roomMessage_search.rowid DESC LIMIT \(limit)"
                hits += try Row.fetchAll(db, sql: statement.sql, arguments: statement.arguments).map { row in
                    SearchHit(place: .room(id: row[1], major: row[7], minor: row[8], hostName: row[9]), rowID: row[0], number: row[2],
                              outgoing: row[3], sender: row[3] ? myName : row[6], text: row[4], sentAt: row[5])
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

    private func onlyMine(_ db: Database) throws -> Bool {
        try Bool.fetchOne(db, sql: """
            SELECT NOT EXISTS (SELECT 1 FROM conversation WHERE myKey != ?1) AND NOT EXISTS (SELECT 1 FROM room WHERE myKey != ?1)
            """, arguments: [me]) ?? false
    }

    /// The statement over conversations' messages; nil when the filter leaves none.
    private func messages(_ query: SearchQuery, _ filter: SearchFilter, count: Bool) -> (sql: String, arguments: StatementArguments)? {
        if let only = filter.conversations, only.isEmpty { return nil }
        var sql = """
            SELECT \(count ? "count(*)" : "m.id, m.conversationId, m.number, m.outgoing, m.text, m.sentAt, c.peerName, c.peerKey")
            FROM message_search JOIN message m ON m.id = message_search.rowid JOIN conversation c ON c.id = m.conversationId
            WHERE message_search MATCH ? AND c.myKey = ?
            """
        var arguments: StatementArguments = [query.match, me]
        if let only = filter.conversations { sql += " AND m.conversationId IN (\(only.map(String.init).joined(separator: ",")))" }
        if let not = filter.notConversation { sql += " AND m.conversationId != \(not)" }
        switch filter.author {
        case .me: sql += " AND m.outgoing = 1"
        case .named(let name):
            sql += " AND m.outgoing = 0 AND c.peerName = ? COLLATE NOCASE"
            arguments += [name]
        case nil: break
        }
        if let since = filter.since { sql += " AND m.sentAt >= ?"; arguments += [since] }
        if let before = filter.before { sql += " AND m.sentAt < ?"; arguments += [before] }
        return (sql, arguments)
    }

    /// The statement over rooms' lines; nil when the filter leaves none.
    private func roomLines(_ query: SearchQuery, _ filter: SearchFilter, count: Bool) -> (sql: String, arguments: StatementArguments)? {
        if let only = filter.rooms, only.isEmpty { return nil }
        var sql = """
            SELECT \(count ? "count(*)" : "r.id, r.roomId, r.number, r.outgoing, r.text, r.sentAt, r.senderName, room.major, room.minor, room.hostName")
            FROM roomMessage_search JOIN roomMessage r ON r.id = roomMessage_search.rowid JOIN room ON room.id = r.roomId
            WHERE roomMessage_search MATCH ? AND room.myKey = ?
            """
        var arguments: StatementArguments = [query.match, me]
        if let only = filter.rooms { sql += " AND r.roomId IN (\(only.map(String.init).joined(separator: ",")))" }
        if let not = filter.notRoom { sql += " AND r.roomId != \(not)" }
        switch filter.author {
        case .me: sql += " AND r.outgoing = 1"
        case .named(let name):
            sql += " AND r.outgoing = 0 AND r.senderName = ? COLLATE NOCASE"
            arguments += [name]
        case nil: break
        }
        if let since = filter.since { sql += " AND r.sentAt >= ?"; arguments += [since] }
        if let before = filter.before { sql += " AND r.sentAt < ?"; arguments += [before] }
        return (sql, arguments)
    }
}
