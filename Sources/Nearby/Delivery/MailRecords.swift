import Foundation
import GRDB
import Storage

/// What mail keeps with a conversation: how far its fragments were mailed and when, and the
/// peer's prekey that mail to it is sealed to.
package enum MailRecords {
    /// Of the outbox, what a broker holds for the peer: mailed (and not yet a week ago, when
    /// the writer was told it waited unread).
    static let held = "message.lastSequence <= conversation.mailedSequence AND conversation.mailedAt IS NOT NULL"

    /// Whether our message `number` is held by a broker for the peer (mailed, not acknowledged).
    package static func isMailed(_ database: SeanceDatabase, number: Int64, in conversation: Int64) throws -> Bool {
        try database.read { db in
            try Bool.fetchOne(db, sql: """
                SELECT EXISTS (SELECT 1 FROM message JOIN conversation ON conversation.id = message.conversationId
                               WHERE message.conversationId = ? AND message.number = ? AND message.outgoing = 1
                                 AND message.state IN ('sending', 'sent') AND lastSequence > conversation.acknowledgedSequence
                                 AND \(held))
                """, arguments: [conversation, number]) ?? false
        }
    }

    /// The numbers of our messages whose fragments end after `after` and at most at `through`:
    /// what is mailed and not acknowledged.
    static func messagesBetween(_ database: SeanceDatabase, _ conversation: Int64, after: UInt32, through: UInt32) throws -> [Int64] {
        try database.read { db in
            try Int64.fetchAll(db.cachedStatement(sql: """
                SELECT number FROM message INDEXED BY message_unread_by_peer
                WHERE conversationId = ? AND outgoing = 1 AND state != 'read' AND lastSequence > ? AND lastSequence <= ?
                ORDER BY number
                """), arguments: [conversation, after, through])
        }
    }

    /// Fragments up to `sequence` were left with a broker for the peer away (mail), `now`.
    static func recordMailed(_ db: Database, _ conversation: Int64, through sequence: UInt32, now: Double) throws {
        try db.cachedStatement(sql: "UPDATE conversation SET mailedSequence = max(mailedSequence, ?), mailedAt = ? WHERE id = ?")
            .execute(arguments: [sequence, now, conversation])
    }

    /// The peer announced `prekey`: mail to it is sealed to that one from now on.
    static func recordPrekey(_ db: Database, _ conversation: Int64, _ prekey: SignedPrekey) throws {
        try db.cachedStatement(sql: "UPDATE conversation SET peerPrekey = ?, peerPrekeyMade = ? WHERE id = ?")
            .execute(arguments: [prekey.publicKey, prekey.made, conversation])
    }

    /// The peers `me` has conversations with, their agreement keys, and whether they wrote to
    /// `me` or acknowledged something of `me`'s (then they have a conversation with `me` too).
    static func correspondents(_ database: SeanceDatabase, me: Data) throws -> [(key: Data, agreement: Data, answered: Bool)] {
        try database.read { db in
            try Row.fetchAll(db.cachedStatement(sql: """
                SELECT peerKey, peerAgreementKey, deliveredSequence > 0 OR acknowledgedSequence > 0 AS answered
                FROM conversation WHERE myKey = ?
                """), arguments: [me]).map { ($0["peerKey"], $0["peerAgreementKey"], $0["answered"]) }
        }
    }

    /// The broker topics `me`'s mailbox was last told to listen on.
    static func listenedTopics(_ database: SeanceDatabase, me: Data) throws -> Set<String> {
        try database.read { db in Set(try String.fetchAll(db, sql: "SELECT topic FROM broker_topic WHERE myKey = ?", arguments: [me])) }
    }

    /// `me`'s mailbox listens on `topics` from now on.
    static func rememberTopics(_ database: SeanceDatabase, me: Data, _ topics: Set<String>) throws {
        try database.write { db in
            try db.execute(sql: "DELETE FROM broker_topic WHERE myKey = ?", arguments: [me])
            let insert = try db.cachedStatement(sql: "INSERT INTO broker_topic (myKey, topic) VALUES (?, ?)")
            for topic in topics { try insert.execute(arguments: [me, topic]) }
        }
    }

    /// The writer was told that what it mailed waited a week unread: not told again.
    static func forgetMailedTime(_ database: SeanceDatabase, _ conversation: Int64) throws {
        try database.write { db in try db.execute(sql: "UPDATE conversation SET mailedAt = NULL WHERE id = ?", arguments: [conversation]) }
    }
}
