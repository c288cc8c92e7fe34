import Foundation
import GRDB
import Storage

/// Conversations and messages in the database. Every message is written before it is shown or
/// acknowledged, so killing the shell loses nothing that was sent or confirmed.
package struct MessageStore: Sendable {
    package let database: SeanceDatabase
    package static let pageSize = 20

    package init(database: SeanceDatabase) { self.database = database }

    /// The conversation between `myKey` and `peerKey`, created on first use; the peer's name and
    /// agreement key (and prekey, when it announces one) are kept up to date.
    package func conversation(myKey: Data, peerKey: Data, peerName: String, peerAgreementKey: Data, peerPrekey: SignedPrekey? = nil,
                              now: Double) throws -> Conversation {
        try database.write { db in
            try db.execute(sql: """
                INSERT INTO conversation (myKey, peerKey, peerName, peerAgreementKey, lastActivity) VALUES (?, ?, ?, ?, ?)
                ON CONFLICT(myKey, peerKey) DO UPDATE SET peerName = excluded.peerName, peerAgreementKey = excluded.peerAgreementKey
                """, arguments: [myKey, peerKey, peerName, peerAgreementKey, now])
            // Only with one (an older schema, which the upgrade tests write, has no column for it).
            if let peerPrekey {
                try db.execute(sql: "UPDATE conversation SET peerPrekey = ?, peerPrekeyMade = ? WHERE myKey = ? AND peerKey = ?",
                               arguments: [peerPrekey.publicKey, peerPrekey.made, myKey, peerKey])
            }
            return try Self.fetch(db, sql: "SELECT * FROM conversation WHERE myKey = ? AND peerKey = ?", [myKey, peerKey])!
        }
    }

    /// The conversation between `myKey` and `peerKey`, if there is one (never creates it).
    package func existingConversation(myKey: Data, peerKey: Data) throws -> Conversation? {
        try database.read { db in try Self.fetch(db, sql: "SELECT * FROM conversation WHERE myKey = ? AND peerKey = ?", [myKey, peerKey]) }
    }

    /// Conversations with peers called `name` (any case).
    package func conversations(myKey: Data, peerName name: String) throws -> [Conversation] {
        try database.read { db in
            try Row.fetchAll(db, sql: "SELECT * FROM conversation WHERE myKey = ? AND peerName = ? COLLATE NOCASE",
                             arguments: [myKey, name]).map(Self.conversation)
        }
    }

    package func conversation(id: Int64) throws -> Conversation? {
        try database.read { db in try Self.conversation(db, id: id) }
    }

    /// The same, in a transaction of the caller's (a feature whose rows belong to a conversation).
    package static func conversation(_ db: Database, id: Int64) throws -> Conversation? {
        try fetch(db, sql: "SELECT * FROM conversation WHERE id = ?", [id])
    }

    /// The conversations of `myKey` (to `peerKey` alone, when given), by id: what a feature's
    /// rows that belong to conversations are found by.
    package static func conversations(_ db: Database, myKey: Data, peerKey: Data? = nil) throws -> [Int64: Conversation] {
        let found: [Conversation] = if let peerKey {
            try fetch(db, sql: "SELECT * FROM conversation WHERE myKey = ? AND peerKey = ?", [myKey, peerKey]).map { [$0] } ?? []
        } else {
            try Row.fetchAll(db, sql: "SELECT * FROM conversation WHERE myKey = ?", arguments: [myKey]).map(conversation)
        }
        return Dictionary(uniqueKeysWithValues: found.map { ($0.id, $0) })
    }

    /// Whether the user wrote in the conversation: its person is one they chose to talk to (a
    /// message of theirs to the user proves nothing of the kind). `outgoing` false: whether its
    /// person wrote to the user.
    package func hasWritten(in conversation: Int64, outgoing: Bool = true) throws -> Bool {
        try database.read { db in
            try Bool.fetchOne(db, sql: "SELECT EXISTS (SELECT 1 FROM message WHERE conversationId = ? AND outgoing = ?)",
                              arguments: [conversation, outgoing]) ?? false
        }
    }

    /// Messages received and not read yet, from people neither muted nor blocked, outside the
    /// conversation `shown` (read as they come, though marked so a moment later): the count the
    /// prompt shows.
    package func unreadCount(myKey: Data, besides shown: Int64? = nil) throws -> Int {
        try database.read { db in
            try Int.fetchOne(db, sql: """
                SELECT coalesce(sum(unread), 0) FROM conversation WHERE myKey = ? AND unread > 0 AND id IS NOT ?
                AND peerKey NOT IN (SELECT signingKey FROM \(PeerChoiceStore.List.muted.rawValue))
                AND peerKey NOT IN (SELECT signingKey FROM \(PeerChoiceStore.List.blocked.rawValue))
                """, arguments: [myKey, shown]) ?? 0
        }
    }

    package func conversations(myKey: Data) throws -> [ConversationSummary] {
        try database.read { db in
            try Row.fetchAll(db, sql: """
                SELECT conversation.*,
                       (SELECT text FROM message WHERE conversationId = conversation.id ORDER BY number DESC LIMIT 1) AS lastText,
                       (SELECT sentAt FROM message WHERE conversationId = conversation.id ORDER BY number DESC LIMIT 1) AS lastTime,
                       (SELECT count(*) \(Self.unacknowledged)) AS waiting,
                       (SELECT count(*) \(Self.unacknowledged) AND \(MailRecords.held)) AS mailed
                FROM conversation WHERE myKey = ? ORDER BY lastActivity DESC
                """, arguments: [myKey]).map { row in
                ConversationSummary(conversation: Self.conversation(row), lastText: row["lastText"], lastTime: row["lastTime"],
                                    unread: row["unread"], waiting: row["waiting"], mailed: row["mailed"])
            }
        }
    }

    /// Stores an outgoing message of `fragments` fragments, giving it the next number and
    /// sequence numbers.
    package func queueOutgoing(_ text: String, fragments: Int, in conversation: Int64, now: Double) throws -> PendingMessage {
        try database.write { db in
            let counters = try Self.counters(db, conversation)
            let row = MessageRow(number: counters.nextNumber, text: text, firstSequence: counters.sentSequence + 1,
                                 lastSequence: counters.sentSequence + UInt32(fragments), sentAt: now)
            return PendingMessage(id: try Self.storeOutgoing(db, [(conversation, row)], now: now)[0], row: row)
        }
    }

    /// Stores outgoing messages the engine has numbered already, in one transaction. Returns
    /// their rows, in order.
    package func storeOutgoing(_ rows: [(conversation: Int64, row: MessageRow)], now: Double) throws -> [Int64] {
        guard !rows.isEmpty else { return [] }
        return try database.write { db in try Self.storeOutgoing(db, rows, now: now) }
    }

    /// A burst's rows, several to a statement (`DirectWrite.Insert`): ours, then theirs.
    private static let insertOutgoing = DirectWrite.Insert(
        "INSERT INTO message (conversationId, number, outgoing, text, firstSequence, lastSequence, sentAt, state)",
        row: "(?, ?, 1, ?, ?, ?, ?, 'sending')", parameters: 6)
    private static let insertIncoming = DirectWrite.Insert(
        "INSERT INTO message (conversationId, number, outgoing, text, firstSequence, lastSequence, sentAt, receivedAt, state)",
        row: "(?, ?, 0, ?, ?, ?, ?, ?, 'received')", parameters: 7)

    /// `storeOutgoing` inside a transaction of the caller's (the engine's `GroupCommit`).
    package static func storeOutgoing(_ db: Database, _ rows: [(conversation: Int64, row: MessageRow)], now: Double) throws -> [Int64] {
        let ids = try insertOutgoing.execute(in: db, count: rows.count) { arguments, index, first in
            rows[index].row.bind(to: &arguments, from: first, conversation: rows[index].conversation)
        }
        // A conversation's counters once for the batch, at its last sequence: a burst's lines
        // then cost their inserts, not an update each as well.
        var lastSequence: [Int64: UInt32] = [:]
        for (conversation, row) in rows { lastSequence[conversation] = max(lastSequence[conversation] ?? 0, row.lastSequence) }
        let update = try db.cachedStatement(sql: "UPDATE conversation SET sentSequence = max(sentSequence, ?1), lastActivity = ?2 WHERE id = ?3")
        for (conversation, sequence) in lastSequence {
            try DirectWrite.execute(update, in: db) {
                $0.bind(1, Int64(sequence))
                $0.bind(2, now)
                $0.bind(3, conversation)
            }
        }
        return ids
    }

    /// The last sequence number given to an outgoing fragment and the next message number of
    /// `conversation`: where the engine goes on numbering.
    package func counters(_ conversation: Int64) throws -> (sentSequence: UInt32, nextNumber: Int64) {
        try database.read { db in try Self.counters(db, conversation) }
    }

    private static func counters(_ db: Database, _ conversation: Int64) throws -> (sentSequence: UInt32, nextNumber: Int64) {
        let sent = try UInt32.fetchOne(db, sql: "SELECT sentSequence FROM conversation WHERE id = ?", arguments: [conversation]) ?? 0
        return (sent, try nextNumber(db, conversation))
    }

    /// Outgoing messages not yet acknowledged (nor read), oldest first: the outbox. Found on the
    /// index of messages unread by the peer, from the acknowledged sequence on.
    package func outbox(_ conversation: Int64) throws -> [PendingMessage] {
        try database.read { db in
            try Row.fetchAll(db, sql: """
                SELECT id, number, text, firstSequence, lastSequence, sentAt FROM message INDEXED BY message_unread_by_peer
                WHERE conversationId = ?1 AND outgoing = 1 AND state != 'read'
                  AND lastSequence > (SELECT acknowledgedSequence FROM conversation WHERE id = ?1)
                ORDER BY lastSequence
                """, arguments: [conversation]).map {
                PendingMessage(id: $0[0], row: MessageRow(number: $0[1], text: $0[2], firstSequence: $0[3], lastSequence: $0[4], sentAt: $0[5]))
            }
        }
    }

    /// Conversations with something in the outbox.
    package func conversationsWithOutbox(myKey: Data) throws -> [Conversation] {
        try database.read { db in
            try Row.fetchAll(db, sql: """
                SELECT * FROM conversation WHERE myKey = ? AND EXISTS (SELECT 1 \(Self.unacknowledged))
                """, arguments: [myKey]).map(Self.conversation)
        }
    }

    /// The outbox of the conversation in the outer query: our messages neither read nor
    /// acknowledged, found on the index of messages unread by the peer.
    private static let unacknowledged = """
        FROM message INDEXED BY message_unread_by_peer WHERE conversationId = conversation.id AND outgoing = 1
          AND state != 'read' AND lastSequence > conversation.acknowledgedSequence
        """

    /// The messages up to the one ending at `sequence` went out at least once: `sending`
    /// becomes `sent` (they stay in the outbox until acknowledged), by the conversation's mark
    /// (`NearbySchema.sentByMark`). States only move forward: one already delivered or read
    /// stays so. Returns the numbers of the messages this changed.
    @discardableResult
    package func markSent(in conversation: Int64, through sequence: UInt32) throws -> [Int64] {
        try database.write { db in try Self.markSent(db, in: conversation, through: sequence) }
    }

    /// The peer confirmed every fragment up to `sequence`: those messages are delivered. Their
    /// rows are not written (see `NearbySchema.deliveredByCounter`): the conversation's
    /// acknowledged sequence moves, and one `delivery` row says when. Returns the numbers of the
    /// messages this delivered.
    @discardableResult
    package func acknowledge(_ conversation: Int64, upTo sequence: UInt32, now: Double) throws -> [Int64] {
        try database.write { db in try Self.acknowledge(db, conversation, upTo: sequence, now: now) }
    }

    /// What the engine gathered for a conversation since it last wrote, in one transaction (it
    /// was two, and under a stream of messages the pair came every 50 ms):
    /// `acknowledge(upTo: acknowledged)` when given, then `markSent(through: sentThrough)` for
    /// those still sending. A message acknowledged before its sending was written goes straight to
    /// delivered, its row not written at all (under a stream, nearly all of them). Returns the
    /// numbers each changed.
    package func recordStates(_ conversation: Int64, sentThrough: UInt32?, acknowledgedUpTo acknowledged: UInt32?,
                             now: Double) throws -> (sent: [Int64], delivered: [Int64]) {
        try database.write { db in try Self.recordStates(db, conversation, sentThrough: sentThrough, acknowledgedUpTo: acknowledged, now: now) }
    }

    /// `recordStates` inside a transaction of the caller's.
    package static func recordStates(_ db: Database, _ conversation: Int64, sentThrough: UInt32?, acknowledgedUpTo acknowledged: UInt32?,
                                     now: Double) throws -> (sent: [Int64], delivered: [Int64]) {
        let delivered = try acknowledged.map { try acknowledge(db, conversation, upTo: $0, now: now) } ?? []
        return (try sentThrough.map { try markSent(db, in: conversation, through: $0) } ?? [], delivered)
    }

    private static func markSent(_ db: Database, in conversation: Int64, through sequence: UInt32) throws -> [Int64] {
        // The conversation's mark moves; no message's row is written (see
        // `NearbySchema.sentByMark`). Only what is neither acknowledged nor marked yet is read.
        let before = try UInt32.fetchOne(db.cachedStatement(sql: "SELECT max(acknowledgedSequence, transmittedSequence) FROM conversation WHERE id = ?"),
                                         arguments: [conversation]) ?? 0
        guard sequence > before else { return [] }
        let sent = try DirectWrite.integers(db.cachedStatement(sql: """
            SELECT number FROM message INDEXED BY message_unread_by_peer
            WHERE conversationId = ?1 AND outgoing = 1 AND state != 'read' AND lastSequence > ?2 AND lastSequence <= ?3
              AND state = 'sending'
            """), in: db) { $0.bind(1, conversation); $0.bind(2, Int64(before)); $0.bind(3, Int64(sequence)) }.sorted()
        try db.cachedStatement(sql: "UPDATE conversation SET transmittedSequence = ?1 WHERE id = ?2").execute(arguments: [sequence, conversation])
        return sent
    }

    private static func acknowledge(_ db: Database, _ conversation: Int64, upTo sequence: UInt32, now: Double) throws -> [Int64] {
        let before = try UInt32.fetchOne(db.cachedStatement(sql: "SELECT acknowledgedSequence FROM conversation WHERE id = ?"),
                                         arguments: [conversation]) ?? 0
        guard sequence > before else { return [] }
        // Only what is unread by the peer is walked (its index), and only read.
        let delivered = try DirectWrite.integers(db.cachedStatement(sql: """
            SELECT number FROM message INDEXED BY message_unread_by_peer
            WHERE conversationId = ?1 AND outgoing = 1 AND state != 'read' AND lastSequence > ?2 AND lastSequence <= ?3
            """), in: db) { $0.bind(1, conversation); $0.bind(2, Int64(before)); $0.bind(3, Int64(sequence)) }.sorted()
        try db.cachedStatement(sql: "UPDATE conversation SET acknowledgedSequence = ? WHERE id = ?").execute(arguments: [sequence, conversation])
        try db.cachedStatement(sql: "INSERT INTO delivery (conversationId, upTo, at) VALUES (?, ?, ?)")
            .execute(arguments: [conversation, sequence, now])
        return delivered
    }

    /// The peer has shown every message up to `sequence` (so it was delivered too, even if the
    /// acknowledgement is still on its way). Returns the numbers of the messages this changed.
    @discardableResult
    package func markRead(_ conversation: Int64, upTo sequence: UInt32, now: Double) throws -> [Int64] {
        try database.write { db in try Self.markRead(db, conversation, upTo: sequence, now: now) }
    }

    /// `markRead` inside a transaction of the caller's.
    package static func markRead(_ db: Database, _ conversation: Int64, upTo sequence: UInt32, now: Double) throws -> [Int64] {
        // Only messages not read yet are walked (their index), however long the conversation.
        try DirectWrite.integers(db.cachedStatement(sql: """
            UPDATE message INDEXED BY message_unread_by_peer
            SET state = 'read', readAt = ?1,
                receivedAt = coalesce((SELECT shownReceivedAt FROM message_shown WHERE message_shown.id = message.id), ?1)
            WHERE conversationId = ?2 AND outgoing = 1 AND state != 'read' AND lastSequence <= ?3
            RETURNING number
            """), in: db) { $0.bind(1, now); $0.bind(2, conversation); $0.bind(3, Int64(sequence)) }.sorted()
    }

    /// Stores a complete incoming message that arrived in order, and advances the delivered
    /// sequence, in one transaction. Returns its row and its number in the conversation.
    package func receive(_ text: String, in conversation: Int64, firstSequence: UInt32, lastSequence: UInt32,
                        sentAt: Double, now: Double) throws -> (id: Int64, number: Int64) {
        try database.write { db in
            let number = try Self.nextNumber(db, conversation)
            let row = MessageRow(number: number, text: text, firstSequence: firstSequence, lastSequence: lastSequence, sentAt: sentAt)
            return (try Self.storeIncoming(db, [row], deliveredUpTo: lastSequence, in: conversation, now: now)[0], number)
        }
    }

    /// Stores whole incoming messages the engine has numbered, in order, and advances the
    /// delivered sequence to `deliveredUpTo` (past refused messages too), in one transaction:
    /// a burst costs one commit. Returns their rows, in order.
    package func storeIncoming(_ rows: [MessageRow], deliveredUpTo sequence: UInt32, in conversation: Int64, now: Double) throws -> [Int64] {
        try database.write { db in try Self.storeIncoming(db, rows, deliveredUpTo: sequence, in: conversation, now: now) }
    }

    /// `storeIncoming` inside a transaction of the caller's.
    package static func storeIncoming(_ db: Database, _ rows: [MessageRow], deliveredUpTo sequence: UInt32, in conversation: Int64,
                              now: Double) throws -> [Int64] {
        let ids = try insertIncoming.execute(in: db, count: rows.count) { arguments, index, first in
            rows[index].bind(to: &arguments, from: first, conversation: conversation, receivedAt: now)
        }
        try DirectWrite.execute(db.cachedStatement(sql: """
            UPDATE conversation SET deliveredSequence = max(deliveredSequence, ?1), lastActivity = ?2, unread = unread + ?3 WHERE id = ?4
            """), in: db) {
            $0.bind(1, Int64(sequence))
            $0.bind(2, now)
            $0.bind(3, Int64(rows.count))
            $0.bind(4, conversation)
        }
        return ids
    }

    /// The number the next message of `conversation` gets (one lookup on the unique index).
    private static func nextNumber(_ db: Database, _ conversation: Int64) throws -> Int64 {
        try Int64.fetchOne(db, sql: "SELECT coalesce(max(number), 0) + 1 FROM message WHERE conversationId = ?",
                           arguments: [conversation]) ?? 1
    }

    /// An incoming message that was refused (over the limits): nothing of it is kept but the
    /// fact that its sequence numbers were received, so it is acknowledged and never asked again.
    package func skip(in conversation: Int64, upTo lastSequence: UInt32, now: Double) throws {
        _ = try storeIncoming([], deliveredUpTo: lastSequence, in: conversation, now: now)
    }

    /// Incoming messages up to message #`number` have been shown (at `now`, their time of
    /// reading). Returns the highest sequence now read, for the read receipt, or nil when
    /// nothing changed.
    package func markShown(_ conversation: Int64, upTo number: Int64, now: Double) throws -> UInt32? {
        try database.write { db in try Self.markShown(db, conversation, upTo: number, now: now) }
    }

    /// `markShown` inside a transaction of the caller's. Only messages numbered after the
    /// conversation's `readUpTo` are walked (on `message_number`): what came since the last
    /// time anything was shown, however long the conversation.
    package static func markShown(_ db: Database, _ conversation: Int64, upTo number: Int64, now: Double) throws -> UInt32? {
        let sequences = try UInt32.fetchAll(db.cachedStatement(sql: """
            UPDATE message INDEXED BY message_number SET state = 'read', readAt = ?1
            WHERE conversationId = ?2 AND number > (SELECT readUpTo FROM conversation WHERE id = ?2) AND number <= ?3
              AND outgoing = 0 AND state = 'received'
            RETURNING lastSequence
            """), arguments: [now, conversation, number])
        // The mark moves past all that was walked, read just now or not (messages of our own,
        // or read ones written around seance): had it waited for a message to read, every
        // opening of a conversation that is only ours lately walked all we wrote since.
        // Only as far as what is stored: a message shown and then refused by the database comes
        // again under the same number, still to be read.
        try db.cachedStatement(sql: """
            UPDATE conversation SET unread = max(0, unread - ?1), readUpTo = ?2
            WHERE id = ?3 AND (?1 > 0 OR readUpTo < ?2)
            """).execute(arguments: [sequences.count, Self.readMark(db, conversation, upTo: number), conversation])
        return sequences.max()
    }

    /// Where the mark of what was read goes once messages up to `number` were shown: there, or
    /// to the newest stored if that is older, and never back.
    private static func readMark(_ db: Database, _ conversation: Int64, upTo number: Int64) throws -> Int64 {
        try Int64.fetchOne(db.cachedStatement(sql: """
            SELECT max(readUpTo, min(?2, coalesce((SELECT max(number) FROM message WHERE conversationId = ?1), 0)))
            FROM conversation WHERE id = ?1
            """), arguments: [conversation, number]) ?? 0
    }

    /// The page of messages numbered before `before` (nil: the newest page), oldest first, on
    /// the index of numbers.
    package func page(_ conversation: Int64, before: Int64? = nil, limit: Int = pageSize) throws -> [ChatMessage] {
        try database.read { db in
            try Row.fetchAll(db.cachedStatement(sql: Self.pageQuery), arguments: [conversation, before, limit]).reversed().map(Self.message)
        }
    }

    static let pageQuery = """
        SELECT id, number, outgoing, text, sentAt, shownReceivedAt, shownState, readAt FROM message_shown
        WHERE conversationId = ?1
          AND number < coalesce(?2, 9223372036854775807)
        ORDER BY number DESC LIMIT ?3
        """

    /// The messages numbered `numbers` (those that exist), oldest first.
    package func messages(_ conversation: Int64, numbers: ClosedRange<Int64>) throws -> [ChatMessage] {
        try database.read { db in
            try Row.fetchAll(db, sql: """
                SELECT id, number, outgoing, text, sentAt, shownReceivedAt, shownState, readAt FROM message_shown
                WHERE conversationId = ? AND number BETWEEN ? AND ? ORDER BY number
                """, arguments: [conversation, numbers.lowerBound, numbers.upperBound]).map(Self.message)
        }
    }

    /// The message just before message #`number` of the same conversation (for section headers).
    package func message(before number: Int64, in conversation: Int64) throws -> ChatMessage? {
        try page(conversation, before: number, limit: 1).first
    }

    /// Message #`number` of `conversation`.
    package func message(number: Int64, in conversation: Int64) throws -> ChatMessage? {
        try database.read { db in
            try Row.fetchOne(db, sql: """
                SELECT id, number, outgoing, text, sentAt, shownReceivedAt, shownState, readAt FROM message_shown
                WHERE conversationId = ? AND number = ?
                """, arguments: [conversation, number]).map(Self.message)
        }
    }

    private static func message(_ row: Row) -> ChatMessage {
        ChatMessage(id: row[0], number: row[1], outgoing: row[2], text: row[3], sentAt: row[4], receivedAt: row[5],
                    readAt: row[7], state: ChatMessage.State(rawValue: row[6]) ?? .received)
    }

    private static func fetch(_ db: Database, sql: String, _ arguments: StatementArguments) throws -> Conversation? {
        try Row.fetchOne(db, sql: sql, arguments: arguments).map(conversation)
    }

    private static func conversation(_ row: Row) -> Conversation {
        Conversation(id: row["id"], myKey: row["myKey"], peerKey: row["peerKey"], peerName: row["peerName"],
                     peerAgreementKey: row["peerAgreementKey"], sentSequence: row["sentSequence"],
                     acknowledgedSequence: row["acknowledgedSequence"], deliveredSequence: row["deliveredSequence"],
                     lastActivity: row["lastActivity"], mailedSequence: row["mailedSequence"] ?? 0, mailedAt: row["mailedAt"],
                     peerPrekey: (row["peerPrekey"] as Data?).map { SignedPrekey(publicKey: $0, made: row["peerPrekeyMade"] ?? 0) })
    }
}

extension MessageRow {
    /// A message insert's values from parameter `first` on: its conversation, its number, its
    /// text, its first and last sequence, when it was sent, and when it came (received only).
    fileprivate func bind(to arguments: inout DirectWrite.Arguments, from first: Int32, conversation: Int64, receivedAt: Double? = nil) {
        arguments.bind(first, conversation)
        arguments.bind(first + 1, number)
        arguments.bind(first + 2, text)
        arguments.bind(first + 3, Int64(firstSequence))
        arguments.bind(first + 4, Int64(lastSequence))
        arguments.bind(first + 5, sentAt)
        if let receivedAt { arguments.bind(first + 6, receivedAt) }
    }
}
