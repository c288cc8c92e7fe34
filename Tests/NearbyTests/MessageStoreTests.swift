import Foundation
import Glibc
import GRDB
import Storage
import Synchronization
import TestWorld
import Testing
@testable import Nearby

@Suite struct MessageStoreTests {
    func makeStore() throws -> (MessageStore, Conversation, String) {
        let dir = temporaryDirectory("messages")
        let store = MessageStore(database: try testDatabase(dir + "/seance.sqlite"))
        let conversation = try store.conversation(myKey: Data([1]), peerKey: Data([2]), peerName: "bob",
                                                  peerAgreementKey: Data(repeating: 3, count: 32), now: 0)
        return (store, conversation, dir)
    }

    /// Every message written writes each of its indexes: none of them may be another's twin
    /// (a row id ends every index's key, so (conversationId) was (conversationId, id)). Deleting
    /// a conversation's messages still goes by an index.
    @Test func noIndexOfMessagesRepeatsAnother() throws {
        let dir = temporaryDirectory("messages")
        defer { removeDirectory(dir) }
        let database = try testDatabase(dir + "/seance.sqlite")
        try database.read { db in
            let names = try String.fetchAll(db, sql: "SELECT name FROM pragma_index_list('message') WHERE partial = 0")
            let keys = try names.map { name -> [String] in
                let columns = try String.fetchAll(db, sql: "SELECT coalesce(name, 'rowid') FROM pragma_index_xinfo(?) WHERE key = 1 ORDER BY seqno", arguments: [name])
                // The row id that ends every key, and the id column that is the row id.
                return Array(columns.map { $0 == "id" ? "rowid" : $0 }.reversed().drop(while: { $0 == "rowid" }).reversed())
            }
            #expect(Set(keys).count == keys.count, "\(zip(names, keys).map { "\($0): \($1)" })")
            let plan = try Row.fetchAll(db, sql: "EXPLAIN QUERY PLAN SELECT id FROM message WHERE conversationId = 1").map { $0["detail"] as String }.joined()
            #expect(plan.contains("USING") && plan.contains("INDEX"), "\(plan)")
        }
    }

    /// A page starts where it is asked on the index of numbers and reads only its rows: no
    /// scan, no sort, however long the conversation.
    @Test func aPageWalksTheIndexOfNumbers() throws {
        let (store, _, dir) = try makeStore()
        defer { removeDirectory(dir) }
        try store.database.read { db in
            let plan = try Row.fetchAll(db, sql: "EXPLAIN QUERY PLAN " + MessageStore.pageQuery, arguments: [1, 5, 10])
                .map { $0["detail"] as String }
            #expect(plan.allSatisfy { !$0.contains("SCAN") && !$0.contains("TEMP B-TREE") }, "\(plan)")
            #expect(plan.contains { $0.contains("message_number") }, "\(plan)")
        }
    }

    @Test func outgoingGetSequencesAndLeaveTheOutboxWhenAcknowledged() throws {
        let (store, conversation, dir) = try makeStore()
        defer { removeDirectory(dir) }
        let a = try store.queueOutgoing("one", fragments: 1, in: conversation.id, now: 1)
        let b = try store.queueOutgoing(String(repeating: "x", count: 2000), fragments: 3, in: conversation.id, now: 2)
        let c = try store.queueOutgoing("three", fragments: 1, in: conversation.id, now: 3)
        #expect((a.firstSequence, a.lastSequence, b.firstSequence, b.lastSequence, c.firstSequence) == (1, 1, 2, 4, 5))
        #expect(try store.markSent(in: conversation.id, through: b.lastSequence) == [1, 2])
        #expect(try store.markSent(in: conversation.id, through: b.lastSequence).isEmpty)  // Already sent: nothing changes twice.
        #expect(try store.outbox(conversation.id).map(\.number) == [a.number, b.number, c.number])
        // Fragment 3 of b is confirmed but not fragment 4: b is still pending.
        #expect(try store.acknowledge(conversation.id, upTo: 3, now: 10) == [a.number])
        #expect(try store.outbox(conversation.id).map(\.number) == [b.number, c.number])
        #expect(try store.acknowledge(conversation.id, upTo: 5, now: 11) == [b.number, c.number])
        #expect(try store.outbox(conversation.id).isEmpty)
        #expect(try store.page(conversation.id).map(\.state) == [.delivered, .delivered, .delivered])
        #expect(try store.markRead(conversation.id, upTo: 4, now: 12) == [a.number, b.number])
        #expect(try store.page(conversation.id).map(\.state) == [.read, .read, .delivered])
        #expect(try store.markSent(in: conversation.id, through: c.lastSequence).isEmpty)  // States never go back.
    }

    /// What the engine gathered (first sends, an acknowledgement) is one transaction, not two,
    /// and writes no message's row: a message acknowledged by then goes straight to delivered,
    /// one sent shows so by the conversation's mark.
    @Test func sentAndDeliveredAreWrittenTogether() throws {
        let (store, conversation, dir) = try makeStore()
        defer { removeDirectory(dir) }
        let a = try store.queueOutgoing("one", fragments: 1, in: conversation.id, now: 1)
        let b = try store.queueOutgoing("two", fragments: 1, in: conversation.id, now: 2)
        let commits = try MessageCommits(observing: store.database.writer)
        let transactions = Transactions(observing: store.database.writer)
        let changed = try store.recordStates(conversation.id, sentThrough: b.lastSequence, acknowledgedUpTo: 1, now: 3)
        #expect(changed.sent == [b.number] && changed.delivered == [a.number])
        #expect(transactions.count == 1)
        #expect(commits.rows == 0)
        #expect(try store.page(conversation.id).map(\.state) == [.delivered, .sent])
        #expect(try store.existingConversation(myKey: Data([1]), peerKey: Data([2]))?.acknowledgedSequence == 1)
        // Only first sends: the acknowledgement is not written again.
        let c = try store.queueOutgoing("three", fragments: 1, in: conversation.id, now: 4)
        #expect(try store.recordStates(conversation.id, sentThrough: c.lastSequence, acknowledgedUpTo: nil, now: 5) == (sent: [c.number], delivered: []))
    }

    /// An acknowledgement writes the conversation and one `delivery` row, not the row of every
    /// message it delivers (under a stream, the next message waited for eighty of them): each
    /// message still shows delivered, at the time of the acknowledgement that covered it, and
    /// keeps that time once read.
    @Test func anAcknowledgementWritesNoMessage() throws {
        let (store, conversation, dir) = try makeStore()
        defer { removeDirectory(dir) }
        let messages = try (1...50).map { try store.queueOutgoing("m\($0)", fragments: 1, in: conversation.id, now: Double($0)) }
        let commits = try MessageCommits(observing: store.database.writer)
        #expect(try store.acknowledge(conversation.id, upTo: 30, now: 100) == Array(1...30))
        #expect(try store.acknowledge(conversation.id, upTo: 20, now: 101).isEmpty)  // An old one changes nothing.
        #expect(try store.recordStates(conversation.id, sentThrough: messages.last!.lastSequence, acknowledgedUpTo: 50, now: 102)
                == (sent: [], delivered: Array(31...50)))
        #expect(commits.rows == 0)
        let page = try store.page(conversation.id, limit: 50)
        #expect(page.allSatisfy { $0.state == .delivered })
        #expect(page.map(\.receivedAt) == Array(repeating: 100, count: 30) + Array(repeating: 102, count: 20))
        #expect(try store.outbox(conversation.id).isEmpty)
        #expect(try store.conversationsWithOutbox(myKey: Data([1])).isEmpty)
        #expect(try store.markRead(conversation.id, upTo: 40, now: 200) == Array(1...40))
        #expect(try store.message(number: 35, in: conversation.id).map { ($0.state, $0.receivedAt) } ?? (.sending, nil) == (.read, 102))
        #expect(try store.message(number: 45, in: conversation.id).map { ($0.state, $0.receivedAt) } ?? (.sending, nil) == (.delivered, 102))
    }

    /// First sends reach up to a sequence: the messages up to it that are still sending become
    /// sent, and only those neither acknowledged nor read are written (or even visited).
    @Test func markSentGoesUpToTheSequence() throws {
        let (store, conversation, dir) = try makeStore()
        defer { removeDirectory(dir) }
        for index in 1...10 { _ = try store.queueOutgoing("m\(index)", fragments: 2, in: conversation.id, now: 1) }
        #expect(try store.markSent(in: conversation.id, through: 4) == [1, 2])
        _ = try store.acknowledge(conversation.id, upTo: 8, now: 2)
        _ = try store.markRead(conversation.id, upTo: 10, now: 3)
        #expect(try store.markSent(in: conversation.id, through: 14) == [6, 7])
        #expect(try store.page(conversation.id).map(\.state.rawValue).joined(separator: " ")
                == "read read read read read sent sent sending sending sending")
    }

    /// The outbox is found on the index of messages unread by the peer, from the acknowledged
    /// sequence on: no scan of the conversation, however long.
    @Test func theOutboxIsFoundOnAnIndex() throws {
        let (store, conversation, dir) = try makeStore()
        defer { removeDirectory(dir) }
        _ = try store.queueOutgoing("waiting", fragments: 1, in: conversation.id, now: 1)
        #expect(try store.conversationsWithOutbox(myKey: Data([1])).map(\.id) == [conversation.id])
        // What `offline` and leaving tell: how many wait, in conversations with any.
        let quiet = try store.conversation(myKey: Data([1]), peerKey: Data([9]), peerName: "carol",
                                           peerAgreementKey: Data(repeating: 3, count: 32), now: 0)
        _ = try store.queueOutgoing("delivered", fragments: 1, in: quiet.id, now: 1)
        _ = try store.acknowledge(quiet.id, upTo: 1, now: 2)
        _ = try store.queueOutgoing("waiting too", fragments: 2, in: conversation.id, now: 3)
        #expect(try store.conversations(myKey: Data([1])).map { "\($0.conversation.peerName) \($0.waiting)" } == ["bob 2", "carol 0"])
        _ = try store.acknowledge(conversation.id, upTo: 1, now: 4)
        #expect(try store.conversations(myKey: Data([1])).map { "\($0.conversation.peerName) \($0.waiting)" } == ["bob 1", "carol 0"])
        try store.database.read { db in
            let plan = try Row.fetchAll(db, sql: """
                EXPLAIN QUERY PLAN SELECT id FROM message INDEXED BY message_unread_by_peer
                WHERE conversationId = ?1 AND outgoing = 1 AND state != 'read'
                  AND lastSequence > (SELECT acknowledgedSequence FROM conversation WHERE id = ?1) ORDER BY lastSequence
                """, arguments: [conversation.id]).map { $0["detail"] as String }
            #expect(plan.allSatisfy { !$0.contains("SCAN") && !$0.contains("TEMP B-TREE") }, "\(plan)")
        }
    }

    /// A database written before `delivered` was counted rather than stored: its messages keep
    /// their states and times, and what was waiting is still the outbox.
    @Test func messagesDeliveredBeforeTheCounterKeepTheirStates() throws {
        let dir = temporaryDirectory("messages")
        defer { removeDirectory(dir) }
        let store = try Self.migrated(dir, from: NearbySchema.deliveredByCounter, """
                INSERT INTO conversation (id, myKey, peerKey, peerName, peerAgreementKey, sentSequence, acknowledgedSequence, lastActivity)
                VALUES (1, x'01', x'02', 'bob', x'03', 4, 2, 0);
                INSERT INTO message (conversationId, number, outgoing, text, firstSequence, lastSequence, sentAt, receivedAt, state) VALUES
                    (1, 1, 1, 'read', 1, 1, 1, 5, 'read'), (1, 2, 1, 'delivered', 2, 2, 2, 7, 'delivered'),
                    (1, 3, 1, 'sent', 3, 3, 3, NULL, 'sent'), (1, 4, 1, 'sending', 4, 4, 4, NULL, 'sending');
                """)
        #expect(try store.page(1).map { "\($0.state) \($0.receivedAt ?? 0)" } == ["read 5.0", "delivered 7.0", "sent 0.0", "sending 0.0"])
        #expect(try store.outbox(1).map(\.number) == [3, 4])
        #expect(try store.acknowledge(1, upTo: 4, now: 9) == [3, 4])
        #expect(try store.page(1).map { "\($0.state) \($0.receivedAt ?? 0)" } == ["read 5.0", "delivered 7.0", "delivered 9.0", "delivered 9.0"])
    }

    /// A database in `directory` as a seance from before `migration` left it, with `sql` run
    /// there, then opened by this one (every migration run).
    static func migrated(_ directory: String, from migration: Migration, _ sql: String) throws -> MessageStore {
        let path = directory + "/seance.sqlite"
        let older = Schema(Array(NearbySchema.migrations.prefix { $0.name != migration.name }))
        _ = try SeanceDatabase(path: path, schema: older).writer.write { try $0.execute(sql: sql) }
        return MessageStore(database: try SeanceDatabase(path: path, schema: Schema(NearbySchema.migrations)))
    }

    /// Messages stored under `AUTOINCREMENT` and the unique key keep their ids, numbers and
    /// states; the table has neither afterwards, and the next message takes the next id.
    @Test func messagesStoredBeforePlainIdsKeepTheirIds() throws {
        let dir = temporaryDirectory("messages")
        defer { removeDirectory(dir) }
        let store = try Self.migrated(dir, from: NearbySchema.plainIds, """
                INSERT INTO conversation (id, myKey, peerKey, peerName, peerAgreementKey, sentSequence, acknowledgedSequence, deliveredSequence, lastActivity)
                VALUES (1, x'01', x'02', 'bob', x'03', 2, 1, 1, 0);
                INSERT INTO message (id, conversationId, number, outgoing, text, firstSequence, lastSequence, sentAt, receivedAt, state) VALUES
                    (7, 1, 1, 1, 'mine', 1, 1, 1, NULL, 'sent'), (9, 1, 2, 0, 'theirs', 1, 1, 2, 2, 'received'),
                    (12, 1, 3, 1, 'mine again', 2, 2, 3, NULL, 'sending');
                """)
        #expect(try store.page(1).map { "\($0.id) \($0.text) \($0.state)" } == ["7 mine delivered", "9 theirs received", "12 mine again sending"])
        #expect(try store.receive("next", in: 1, firstSequence: 2, lastSequence: 2, sentAt: 4, now: 4).id == 13)
        let schema = try store.database.read { try String.fetchOne($0, sql: "SELECT sql FROM sqlite_master WHERE name = 'message'") } ?? ""
        #expect(!schema.contains("AUTOINCREMENT") && !schema.contains("UNIQUE"))
    }

    /// A database written before read times were kept: its read messages stay read, with no
    /// time, and the first receipt or showing after it gives one.
    @Test func messagesReadBeforeReadTimesStayReadWithoutATime() throws {
        let dir = temporaryDirectory("messages")
        defer { removeDirectory(dir) }
        let store = try Self.migrated(dir, from: NearbySchema.readTimes, """
                INSERT INTO conversation (id, myKey, peerKey, peerName, peerAgreementKey, sentSequence, acknowledgedSequence, deliveredSequence, lastActivity)
                VALUES (1, x'01', x'02', 'bob', x'03', 2, 2, 2, 0);
                INSERT INTO message (conversationId, number, outgoing, text, firstSequence, lastSequence, sentAt, receivedAt, state) VALUES
                    (1, 1, 1, 'mine, read', 1, 1, 1, 2, 'read'), (1, 2, 0, 'theirs, read', 1, 1, 3, 3, 'read'),
                    (1, 3, 1, 'mine, delivered', 2, 2, 4, NULL, 'sent'), (1, 4, 0, 'theirs, new', 2, 2, 5, 5, 'received');
                """)
        #expect(try store.page(1).map { "\($0.state) \($0.readAt.map { "\($0)" } ?? "-")" } == ["read -", "read -", "delivered -", "received -"])
        #expect(try store.markRead(1, upTo: 2, now: 8) == [3])
        #expect(try store.markShown(1, upTo: 4, now: 9) == 2)
        #expect(try store.page(1).map { "\($0.state) \($0.readAt.map { "\($0)" } ?? "-")" } == ["read -", "read -", "read 8.0", "read 9.0"])
    }

    /// Each conversation counts its own messages; a read receipt that overtakes the
    /// acknowledgement still gives the message a delivery time.
    @Test func numbersArePerConversationAndStatesOnlyMoveForward() throws {
        let (store, conversation, dir) = try makeStore()
        defer { removeDirectory(dir) }
        let other = try store.conversation(myKey: Data([1]), peerKey: Data([9]), peerName: "carol",
                                           peerAgreementKey: Data(repeating: 3, count: 32), now: 0)
        let a = try store.queueOutgoing("to bob", fragments: 1, in: conversation.id, now: 1)
        let b = try store.queueOutgoing("to carol", fragments: 1, in: other.id, now: 2)
        let c = try store.receive("from bob", in: conversation.id, firstSequence: 1, lastSequence: 1, sentAt: 3, now: 3)
        #expect((a.number, b.number, c.number) == (1, 1, 2))
        #expect(try store.markRead(conversation.id, upTo: 1, now: 5) == [1])
        #expect(try store.markSent(in: conversation.id, through: a.lastSequence).isEmpty)
        #expect(try store.acknowledge(conversation.id, upTo: 1, now: 6).isEmpty)
        let message = try #require(try store.message(number: 1, in: conversation.id))
        #expect(message.state == .read && message.receivedAt == 5 && message.readAt == 5)
        #expect(try store.message(number: 1, in: other.id)?.text == "to carol")
        #expect(try store.markRead(conversation.id, upTo: 1, now: 7).isEmpty)
        #expect(try store.message(number: 1, in: conversation.id)?.readAt == 5, "a receipt again keeps the first time")
        #expect(try store.page(other.id).map(\.readAt) == [nil])
    }

    @Test func incomingAdvanceTheDeliveredSequenceAndCountAsUnread() throws {
        let (store, conversation, dir) = try makeStore()
        defer { removeDirectory(dir) }
        let n = try store.receive("hello", in: conversation.id, firstSequence: 1, lastSequence: 2, sentAt: 5, now: 6).id
        #expect(try store.conversation(id: conversation.id)?.deliveredSequence == 2)
        #expect(try store.conversations(myKey: Data([1])).first?.unread == 1)
        #expect(try store.message(number: 1, in: conversation.id)?.readAt == nil)
        #expect(try store.markShown(conversation.id, upTo: n, now: 8) == 2)
        #expect(try store.conversations(myKey: Data([1])).first?.unread == 0)
        #expect(try store.markShown(conversation.id, upTo: n, now: 9) == nil)
        let message = try #require(try store.message(number: 1, in: conversation.id))
        #expect(message.sentAt == 5 && message.receivedAt == 6 && message.id == n)
        #expect(message.readAt == 8, "read when first shown, not again")
    }

    /// Showing walks only what came after the last message shown; a number shown beyond what is
    /// stored (its transaction refused) leaves that number to be read when it comes again.
    @Test func showingReadsWhatCameSinceTheLastShown() throws {
        let (store, conversation, dir) = try makeStore()
        defer { removeDirectory(dir) }
        let id = conversation.id
        _ = try store.receive("one", in: id, firstSequence: 1, lastSequence: 1, sentAt: 1, now: 1)
        _ = try store.queueOutgoing("mine", fragments: 1, in: id, now: 2)
        _ = try store.receive("three", in: id, firstSequence: 2, lastSequence: 2, sentAt: 3, now: 3)
        #expect(try store.markShown(id, upTo: 4, now: 4) == 2, "#4 is not stored: shown, then refused")
        _ = try store.receive("four", in: id, firstSequence: 3, lastSequence: 3, sentAt: 5, now: 5)
        #expect(try store.conversations(myKey: Data([1])).first?.unread == 1)
        #expect(try store.markShown(id, upTo: 4, now: 6) == 3)
        #expect(try store.page(id).map { "\($0.text) \($0.state)" } == ["one read", "mine sending", "three read", "four read"])
        #expect(try store.conversations(myKey: Data([1])).first?.unread == 0)
    }

    /// The mark moves past our own messages too, though nothing was read: the next showing walks
    /// only what came after them, not every message we wrote since the last one received.
    @Test func theMarkPassesOurOwnMessages() throws {
        let (store, conversation, dir) = try makeStore()
        defer { removeDirectory(dir) }
        let id = conversation.id
        func mark() throws -> Int64? { try store.database.read { try Int64.fetchOne($0, sql: "SELECT readUpTo FROM conversation WHERE id = ?", arguments: [id]) } }
        _ = try store.receive("one", in: id, firstSequence: 1, lastSequence: 1, sentAt: 1, now: 1)
        #expect(try store.markShown(id, upTo: 1, now: 2) == 1)
        for i in 2...4 { _ = try store.queueOutgoing("mine \(i)", fragments: 1, in: id, now: Double(i)) }
        #expect(try store.markShown(id, upTo: 4, now: 5) == nil)
        #expect(try mark() == 4)
        #expect(try store.markShown(id, upTo: 9, now: 6) == nil)
        #expect(try mark() == 4, "only as far as what is stored")
        #expect(try store.markShown(id, upTo: 2, now: 7) == nil)
        #expect(try mark() == 4, "never back")
        _ = try store.receive("five", in: id, firstSequence: 2, lastSequence: 2, sentAt: 8, now: 8)
        #expect(try store.markShown(id, upTo: 5, now: 9) == 2)
        #expect(try mark() == 5)
        #expect(try store.page(id).map { "\($0.text) \($0.readAt ?? 0)" } == ["one 2.0", "mine 2 0.0", "mine 3 0.0", "mine 4 0.0", "five 9.0"])
    }

    /// Messages marked `sent` in their rows before the conversation's mark existed still show
    /// so, and the mark starts after them: marking again changes none of them, and a message
    /// still `sending` becomes `sent` without its row being written.
    @Test func messagesSentBeforeTheMarkStillShowSent() throws {
        let dir = temporaryDirectory("messages")
        defer { removeDirectory(dir) }
        let store = try Self.migrated(dir, from: NearbySchema.sentByMark, """
                INSERT INTO conversation (id, myKey, peerKey, peerName, peerAgreementKey, sentSequence, acknowledgedSequence, lastActivity)
                VALUES (1, x'01', x'02', 'bob', x'03', 5, 1, 0);
                INSERT INTO message (conversationId, number, outgoing, text, firstSequence, lastSequence, sentAt, state) VALUES
                    (1, 1, 1, 'delivered', 1, 1, 1, 'sent'), (1, 2, 1, 'sent', 2, 3, 2, 'sent'),
                    (1, 3, 1, 'read', 4, 4, 3, 'read'), (1, 4, 1, 'waiting', 5, 5, 4, 'sending');
                """)
        func states() throws -> [String] { try store.page(1).map { "\($0.text) \($0.state)" } }
        #expect(try states() == ["delivered delivered", "sent sent", "read read", "waiting sending"])
        #expect(try store.database.read { try Int.fetchOne($0, sql: "SELECT transmittedSequence FROM conversation") } == 4)
        #expect(try store.markSent(in: 1, through: 4).isEmpty)
        let commits = try MessageCommits(observing: store.database.writer)
        #expect(try store.markSent(in: 1, through: 5) == [4])
        #expect(commits.rows == 0)
        #expect(try states() == ["delivered delivered", "sent sent", "read read", "waiting sent"])
        #expect(try store.acknowledge(1, upTo: 5, now: 9) == [2, 4])
        #expect(try states() == ["delivered delivered", "sent delivered", "read read", "waiting delivered"])
    }

    /// Messages stored before the mark existed: the unread ones, and only they, are read when
    /// shown, wherever they are in the conversation.
    @Test func messagesUnreadBeforeTheMarkAreReadWhenShown() throws {
        let dir = temporaryDirectory("messages")
        defer { removeDirectory(dir) }
        let store = try Self.migrated(dir, from: NearbySchema.readUpTo, """
                INSERT INTO conversation (id, myKey, peerKey, peerName, peerAgreementKey, sentSequence, deliveredSequence, unread, lastActivity)
                VALUES (1, x'01', x'02', 'bob', x'03', 1, 3, 2, 0);
                INSERT INTO message (conversationId, number, outgoing, text, firstSequence, lastSequence, sentAt, receivedAt, state, readAt) VALUES
                    (1, 1, 0, 'read', 1, 1, 1, 1, 'read', 1), (1, 2, 0, 'unread', 2, 2, 2, 2, 'received', NULL),
                    (1, 3, 1, 'mine', 1, 1, 3, NULL, 'sent', NULL), (1, 4, 0, 'unread too', 3, 3, 4, 4, 'received', NULL);
                """)
        #expect(try store.markShown(1, upTo: 4, now: 9) == 3)
        #expect(try store.page(1).map { "\($0.text) \($0.readAt ?? 0)" } == ["read 1.0", "unread 9.0", "mine 0.0", "unread too 9.0"])
        let indexes = try store.database.read { try String.fetchAll($0, sql: "SELECT name FROM sqlite_master WHERE type = 'index' AND tbl_name = 'message'") }
        #expect(Set(indexes) == ["message_number", "message_unread_by_peer"])
    }

    @Test func pagesGoBackwardsOldestFirst() throws {
        let (store, conversation, dir) = try makeStore()
        defer { removeDirectory(dir) }
        for i in 1...45 { _ = try store.queueOutgoing("m\(i)", fragments: 1, in: conversation.id, now: Double(i)) }
        let newest = try store.page(conversation.id)
        #expect(newest.map(\.text) == (26...45).map { "m\($0)" })
        let older = try store.page(conversation.id, before: newest.first!.id)
        #expect(older.map(\.text) == (6...25).map { "m\($0)" })
        #expect(try store.page(conversation.id, before: older.first!.id).map(\.text) == (1...5).map { "m\($0)" })
    }

    @Test func theConversationKeepsThePeersLatestName() throws {
        let (store, conversation, dir) = try makeStore()
        defer { removeDirectory(dir) }
        let again = try store.conversation(myKey: Data([1]), peerKey: Data([2]), peerName: "robert",
                                           peerAgreementKey: Data(repeating: 3, count: 32), now: 9)
        #expect(again.id == conversation.id && again.peerName == "robert")
    }
}

@Suite struct ConversationLookupTests {
    @Test func lookingUpNeverCreates() throws {
        let dir = temporaryDirectory("lookup")
        defer { removeDirectory(dir) }
        let store = MessageStore(database: try testDatabase(dir + "/seance.sqlite"))
        #expect(try store.existingConversation(myKey: Data([1]), peerKey: Data([2])) == nil)
        #expect(try store.conversations(myKey: Data([1])).isEmpty)
        _ = try store.conversation(myKey: Data([1]), peerKey: Data([2]), peerName: "bob", peerAgreementKey: Data(count: 32), now: 0)
        #expect(try store.existingConversation(myKey: Data([1]), peerKey: Data([2]))?.peerName == "bob")
    }
}

/// Transactions committed that changed any table (through GRDB's statements).
private final class Transactions: TransactionObserver, Sendable {
    private let committed = Mutex(0)
    var count: Int { committed.withLock { $0 } }

    init(observing writer: any DatabaseWriter) { writer.add(transactionObserver: self, extent: .observerLifetime) }

    func observes(eventsOfKind eventKind: DatabaseEventKind) -> Bool { true }
    func databaseDidChange(with event: DatabaseEvent) {}
    func databaseDidCommit(_ db: Database) { committed.withLock { $0 += 1 } }
    func databaseDidRollback(_ db: Database) {}
}
