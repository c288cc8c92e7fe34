import GRDB
import Storage

/// The engine's tables: conversations and their messages (the outbox among them).
package enum NearbySchema {
    /// Every migration of this feature, in order.
    package static let migrations = [conversations, messageNumbers, unreadByPeer, oneConversationIndex, pagesByNumber, deliveredByCounter,
                                    readTimes, mailed, prekeys, brokerTopics, plainIds, readUpTo, sentByMark]

    /// Conversations and their messages.
    package static let conversations = Migration("v6-conversations") { db in
        // One conversation per (my key, their key). Sequence numbers count fragments in each
        // direction: `sentSequence` is the last one given out, `deliveredSequence` the last
        // one received in order, `acknowledgedSequence` the last one the peer confirmed.
        try db.create(table: "conversation") { t in
            t.autoIncrementedPrimaryKey("id")
            t.column("myKey", .blob).notNull()
            t.column("peerKey", .blob).notNull()
            t.column("peerName", .text).notNull()
            t.column("peerAgreementKey", .blob).notNull()
            t.column("sentSequence", .integer).notNull().defaults(to: 0)
            t.column("acknowledgedSequence", .integer).notNull().defaults(to: 0)
            t.column("deliveredSequence", .integer).notNull().defaults(to: 0)
            t.column("unread", .integer).notNull().defaults(to: 0)
            t.column("lastActivity", .double).notNull()
            t.uniqueKey(["myKey", "peerKey"])
        }
        // Outgoing messages span fragments firstSequence...lastSequence; state is sending,
        // sent, delivered or read. Incoming ones are received or read.
        try db.create(table: "message") { t in
            t.autoIncrementedPrimaryKey("id")
            t.belongsTo("conversation", onDelete: .cascade).notNull()
            t.column("outgoing", .boolean).notNull()
            t.column("text", .text).notNull()
            t.column("firstSequence", .integer).notNull()
            t.column("lastSequence", .integer).notNull()
            t.column("sentAt", .double).notNull()
            t.column("receivedAt", .double)
            t.column("state", .text).notNull()
            t.uniqueKey(["conversationId", "outgoing", "lastSequence"])
        }
        // Pages walk this index backwards from a message id: the cost does not depend on how
        // many messages there are. (Since v15 they walk `message_number` and this one is gone.)
        try db.create(index: "message_page", on: "message", columns: ["conversationId", "id"])
        try db.execute(sql: "CREATE INDEX message_outbox ON message(conversationId, firstSequence) WHERE state IN ('sending', 'sent')")
        // Unread incoming messages: few, whatever the length of the conversation.
        try db.execute(sql: "CREATE INDEX message_unread ON message(conversationId, id) WHERE outgoing = 0 AND state = 'received'")
    }

    /// Messages numbered per conversation.
    package static let messageNumbers = Migration("v8-message-numbers") { db in
        // Messages are numbered per conversation (#1, #2, … in each), as people see them;
        // the row id stays the key for paging and read marks.
        try db.execute(sql: "ALTER TABLE message ADD COLUMN number INTEGER NOT NULL DEFAULT 0")
        try db.execute(sql: """
            UPDATE message SET number = numbered.n
            FROM (SELECT id, row_number() OVER (PARTITION BY conversationId ORDER BY id) AS n FROM message) AS numbered
            WHERE message.id = numbered.id
            """)
        try db.execute(sql: "CREATE UNIQUE INDEX message_number ON message(conversationId, number)")
    }

    /// Sent messages the peer has not read yet: a read receipt walks only these, not the
    /// whole conversation (it did, and a long conversation made every receipt slower).
    package static let unreadByPeer = Migration("v13-unread-by-peer") { db in
        try db.execute(sql: "CREATE INDEX message_unread_by_peer ON message(conversationId, lastSequence) WHERE outgoing = 1 AND state != 'read'")
    }

    /// `message_on_conversationId` (made by `belongsTo`) held (conversationId, row id), as
    /// `message_page` does: every message written wrote the same entry twice. The foreign
    /// key's lookups use another index on conversationId (since v15, `message_number`).
    package static let oneConversationIndex = Migration("v14-one-conversation-index") { db in
        try db.execute(sql: "DROP INDEX IF EXISTS message_on_conversationId")
    }

    /// Pages walk `message_number` (conversationId, number), in the rows' order, so
    /// `message_page` (conversationId, id) went: every message written wrote one index fewer
    /// (one page of the log fewer per message, an eighth of a commit).
    package static let pagesByNumber = Migration("v15-pages-by-number") { db in
        try db.execute(sql: "DROP INDEX IF EXISTS message_page")
    }

    /// An acknowledgement no longer writes the row of every message it delivers: a message is
    /// delivered when its last fragment is at or under the conversation's acknowledged sequence,
    /// and when it was is the time of the first `delivery` row that covers it (one row per
    /// acknowledgement written, however many messages it delivers; under a stream of pings a
    /// write of the states was eighty rows, and the next message waited for it). Stored states
    /// are now sending, sent, read (outgoing) and received, read (incoming), and messages
    /// delivered before this migration keep `delivered`; `message_shown` gives every message's
    /// state and time of arrival as they are shown. The outbox is what is neither read nor
    /// acknowledged: the index of messages unread by the peer finds it, so `message_outbox`,
    /// which no longer would, goes (one index fewer per message sent).
    package static let deliveredByCounter = Migration("v16-delivered-by-counter") { db in
        try db.execute(sql: """
            CREATE TABLE delivery (
                conversationId INTEGER NOT NULL REFERENCES conversation(id) ON DELETE CASCADE,
                upTo INTEGER NOT NULL,
                at DOUBLE NOT NULL,
                PRIMARY KEY (conversationId, upTo)
            ) WITHOUT ROWID
            """)
        try db.execute(sql: "DROP INDEX IF EXISTS message_outbox")
        try db.execute(sql: """
            CREATE VIEW message_shown AS
            SELECT message.*,
                   CASE WHEN message.outgoing = 1 AND message.state IN ('sending', 'sent')
                             AND message.lastSequence <= conversation.acknowledgedSequence
                        THEN 'delivered' ELSE message.state END AS shownState,
                   coalesce(message.receivedAt, CASE WHEN message.outgoing = 1 THEN
                       (SELECT at FROM delivery WHERE delivery.conversationId = message.conversationId
                        AND delivery.upTo >= message.lastSequence ORDER BY delivery.upTo LIMIT 1) END) AS shownReceivedAt
            FROM message JOIN conversation ON conversation.id = message.conversationId
            """)
    }

    /// When each message was read, for `tap N`: an incoming one when it was first shown here,
    /// an outgoing one when the peer's read receipt came. Written with the state that says
    /// read, in the same row, so it costs no write of its own; messages read before this
    /// migration keep no time (`tap` says read, without one). `message_shown` selects
    /// `message.*`, which SQLite expands when it reads the schema: the view has it too.
    package static let readTimes = Migration("v17-read-times") { db in
        try db.execute(sql: "ALTER TABLE message ADD COLUMN readAt DOUBLE")
    }

    /// How far a conversation's fragments were left with a broker for the peer away (mail):
    /// each is mailed once, across restarts.
    package static let mailed = Migration("v28-mailed") { db in
        try db.execute(sql: "ALTER TABLE conversation ADD COLUMN mailedSequence INTEGER NOT NULL DEFAULT 0")
        // When the last of them was, until the writer is told it waited a week unread.
        try db.execute(sql: "ALTER TABLE conversation ADD COLUMN mailedAt DOUBLE")
    }

    /// Mail's forward secrecy (X3DH): our signed prekeys, each private half sealed under a key
    /// derived from the profile's (so the database alone opens none), erased once every mail
    /// sealed to it has expired; and the peer's latest, which mail to it is sealed to.
    package static let prekeys = Migration("v29-prekeys") { db in
        try db.execute(sql: """
            CREATE TABLE signed_prekey (
                publicKey BLOB PRIMARY KEY NOT NULL,
                myKey BLOB NOT NULL,
                sealedPrivateKey BLOB NOT NULL,
                made DOUBLE NOT NULL)
            """)
        try db.execute(sql: "ALTER TABLE conversation ADD COLUMN peerPrekey BLOB")
        try db.execute(sql: "ALTER TABLE conversation ADD COLUMN peerPrekeyMade DOUBLE")
    }

    /// The broker topics a profile's mailbox was last told to listen on (`BrokerPost`): its
    /// session outlives the run, and the next one unsubscribes from those no longer ours.
    package static let brokerTopics = Migration("v30-broker-topics") { db in
        try db.execute(sql: "CREATE TABLE broker_topic (myKey BLOB NOT NULL, topic TEXT NOT NULL, PRIMARY KEY (myKey, topic)) WITHOUT ROWID")
    }

    /// A message costs its row and two indexes' entries: no `AUTOINCREMENT`, whose
    /// `sqlite_sequence` each insert read and wrote (a fifth of a lone message's transaction,
    /// one page of the log more), and no unique key on (conversation, direction, last
    /// fragment), an index written with every message and read by no query: a fragment is taken
    /// once, as the conversation's delivered sequence says, which is stored in the same
    /// transaction as the message. Ids still grow, but the newest's id is given again once it is
    /// deleted (a conversation deleted with `sqlite3`: seance deletes none).
    package static let plainIds = Migration("v32-message-plain-ids") { db in
        try db.rebuild("message", columns: """
            id INTEGER PRIMARY KEY, conversationId INTEGER NOT NULL REFERENCES conversation(id) ON DELETE CASCADE,
            outgoing BOOLEAN NOT NULL, text TEXT NOT NULL, firstSequence INTEGER NOT NULL, lastSequence INTEGER NOT NULL,
            sentAt DOUBLE NOT NULL, receivedAt DOUBLE, state TEXT NOT NULL, number INTEGER NOT NULL DEFAULT 0, readAt DOUBLE
            """)
    }

    /// Incoming messages are numbered as they come and shown in order, so those not read yet
    /// are the ones numbered after the last shown: `conversation.readUpTo` keeps that number,
    /// and `markShown` walks `message_number` from it. `message_unread`, an index written with
    /// every message received and again when it was read, goes: one page of the log fewer in
    /// a received message's transaction. The mark starts under the oldest message unread.
    package static let readUpTo = Migration("v35-read-up-to") { db in
        try db.execute(sql: "ALTER TABLE conversation ADD COLUMN readUpTo INTEGER NOT NULL DEFAULT 0")
        try db.execute(sql: """
            UPDATE conversation SET readUpTo = coalesce(
                (SELECT min(number) - 1 FROM message WHERE conversationId = conversation.id AND outgoing = 0 AND state = 'received'),
                (SELECT max(number) FROM message WHERE conversationId = conversation.id), 0)
            """)
        try db.execute(sql: "DROP INDEX message_unread")
    }

    /// A message that went out at least once shows `sent` by the conversation's mark, as one
    /// acknowledged shows `delivered` by its acknowledged sequence: `transmittedSequence` is the
    /// last fragment sent at least once, and rows stay `sending` until read. Writing `sent` into
    /// each row rewrote the row and its entry in `message_unread_by_peer` (whose condition names
    /// `state`): under a burst, a tenth of what the sender spent on a message. Rows written `sent`
    /// before keep it; `message_shown` shows both alike.
    package static let sentByMark = Migration("v37-sent-by-mark") { db in
        try db.execute(sql: "ALTER TABLE conversation ADD COLUMN transmittedSequence INTEGER NOT NULL DEFAULT 0")
        try db.execute(sql: """
            UPDATE conversation SET transmittedSequence = coalesce((SELECT max(lastSequence) FROM message
                WHERE conversationId = conversation.id AND outgoing = 1 AND state != 'sending'), 0)
            """)
        try db.execute(sql: "DROP VIEW message_shown")
        try db.execute(sql: """
            CREATE VIEW message_shown AS
            SELECT message.*,
                   CASE WHEN message.outgoing = 1 AND message.state IN ('sending', 'sent')
                             AND message.lastSequence <= conversation.acknowledgedSequence THEN 'delivered'
                        WHEN message.outgoing = 1 AND message.state = 'sending'
                             AND message.lastSequence <= conversation.transmittedSequence THEN 'sent'
                        ELSE message.state END AS shownState,
                   coalesce(message.receivedAt, CASE WHEN message.outgoing = 1 THEN
                       (SELECT at FROM delivery WHERE delivery.conversationId = message.conversationId
                        AND delivery.upTo >= message.lastSequence ORDER BY delivery.upTo LIMIT 1) END) AS shownReceivedAt
            FROM message JOIN conversation ON conversation.id = message.conversationId
            """)
    }
}
