import Accounts
import Crypto
import Foundation
import Glibc
import Nearby
import Storage
import TestWorld
import Testing
@testable import Nearby

/// A sender that does not use `Delivery.send`: it seals whatever fragments it likes (in its
/// session with the receiver, as any direct packet travels).
@Suite struct HostileDeliveryTests {
    static func forged(_ text: String, from sender: Identity, to recipient: Identity, first: UInt32 = 1,
                       sentAt: UInt64 = 1_000, endless: Bool = false) throws -> [MessageFragment] {
        let key = try MessageCrypto.key(mine: sender.agreement, theirs: recipient.agreementPublicKey,
                                        mySigningKey: sender.signingPublicKey, theirSigningKey: recipient.signingPublicKey)
        return try MessageCrypto.fragments(of: text, firstSequence: first, sentAt: sentAt).map { whole in
            var fragment = whole
            if endless { fragment.isLast = false }
            let sealed = try MessageCrypto.seal(fragment, key: key, sender: sender.signingPublicKey, recipient: recipient.signingPublicKey)
            return MessageFragment(recipient: recipient.signingPublicKey, sealed: sealed)
        }
    }

    /// Fragments forged by alice, delivered to bob.
    func deliver(_ fragments: [MessageFragment], _ pair: Pair) throws {
        for fragment in fragments { try pair.forge(fragment) }
        pair.deliver(pair.toBob)
    }

    func bobsConversation(_ pair: Pair) throws -> Conversation? {
        try pair.bobStore.existingConversation(myKey: pair.bob.signingPublicKey, peerKey: pair.alice.signingPublicKey)
    }

    func acknowledged(_ pair: Pair) -> UInt32? { pair.acknowledgements().max() }

    @Test func noiseFromAStrangerCreatesNoConversation() throws {
        let pair = try Pair()
        var fragment = try Self.forged("hello", from: pair.alice, to: pair.bob)[0]
        fragment.sealed[fragment.sealed.count - 1] ^= 1
        try deliver(Array(repeating: fragment, count: 5), pair)
        #expect(try bobsConversation(pair) == nil)
        #expect(pair.bobDelivery.droppedCounts == ["cannot decrypt": 5])
        // A fragment that decrypts does make it.
        try deliver([Self.forged("hello", from: pair.alice, to: pair.bob)[0]], pair)
        #expect(try bobsConversation(pair) != nil)
        #expect(pair.received.withLock { $0 } == ["hello"])
    }

    /// Over-long messages (longer than any honest sender can send, or never ending) are
    /// acknowledged, so the conversation moves on, but nothing of them is stored.
    @Test func overLongMessagesAreSkippedNotStored() throws {
        let pair = try Pair()
        let tooLong = try Self.forged(String(repeating: "y", count: Delivery.maximumLength + 1), from: pair.alice, to: pair.bob)
        try deliver(tooLong, pair)
        let endless = try Self.forged(String(repeating: "z", count: 900 * IncomingAssembler.maximumFragments), from: pair.alice, to: pair.bob,
                                      first: UInt32(tooLong.count) + 1, endless: true)
        try deliver(endless, pair)
        let after = UInt32(tooLong.count + endless.count)
        try deliver(try Self.forged("fine", from: pair.alice, to: pair.bob, first: after + 1), pair)
        #expect(pair.received.withLock { $0 } == ["fine"])
        #expect(acknowledged(pair) == after + 1)
        let conversation = try #require(try bobsConversation(pair))
        #expect(try pair.bobStore.page(conversation.id).map(\.text) == ["fine"])
        #expect((pair.bobDelivery.droppedCounts["too long"] ?? 0) >= 2)
    }

    /// A NUL would cut the stored text short: refused on sending, skipped on receiving.
    @Test func nulIsRefusedNeverTruncated() throws {
        let pair = try Pair()
        let conversation = try pair.conversationAtAlice()
        #expect(throws: Delivery.SendError.nul) { try pair.aliceDelivery.send("before\0after", in: conversation) }
        try deliver(try Self.forged("before\0after", from: pair.alice, to: pair.bob), pair)
        #expect(pair.received.withLock { $0 }.isEmpty)
        #expect(pair.bobDelivery.droppedCounts["NUL character"] == 1)
        #expect(acknowledged(pair) == 1)
    }

    @Test func aSendTimeFarInTheFutureIsNotBelieved() throws {
        let pair = try Pair()
        try deliver(try Self.forged("from the future", from: pair.alice, to: pair.bob, sentAt: 1 << 63), pair)
        let conversation = try #require(try bobsConversation(pair))
        #expect(try pair.bobStore.page(conversation.id).map(\.sentAt) == [pair.world.scheduler.now])  // The receiver's clock.
    }
}

/// A storage failure in a batch of received messages: shown when opened, nothing of the batch is
/// stored or acknowledged, it is asked for again and stored then (not shown twice), and the
/// conversation goes on (it used to stick until restart).
@Suite struct StorageFailureTests {
    @Test func aFailedWriteWhileReceivingNeverSticksTheConversation() throws {
        let pair = try Pair()
        let conversation = try pair.conversationAtAlice()
        // One packet each, so they can arrive out of order.
        for text in ["one", "poison", "three"] { _ = try pair.aliceDelivery.send(text, in: conversation) }
        let fragments = pair.toBob
        #expect(fragments.count == 3)
        // The database refuses "poison" (an injected failure), once.
        try pair.bobStore.database.write { db in
            try db.execute(sql: """
                CREATE TEMP TRIGGER refuse BEFORE INSERT ON message WHEN NEW.text = 'poison'
                BEGIN SELECT RAISE(ABORT, 'injected failure'); END
                """)
        }
        // Out of order, so the three messages complete in one batch when the first arrives.
        pair.deliver(fragments.reversed())
        #expect(pair.received.withLock { $0 } == ["one", "poison", "three"])
        #expect(try pair.bobStore.page(pair.bobDelivery.conversation(with: Pair.peer(pair.aliceNode, in: pair.bobNode)).id).isEmpty)
        #expect(pair.bobDelivery.droppedCounts["storage"] == 1)
        try pair.bobStore.database.write { try $0.execute(sql: "DROP TRIGGER refuse") }
        // Nothing was acknowledged: alice sends all three again; they are stored, and shown once.
        pair.exchange(rounds: 4)
        #expect(pair.received.withLock { $0 } == ["one", "poison", "three"])
        let stored = try pair.bobStore.page(pair.bobDelivery.conversation(with: Pair.peer(pair.aliceNode, in: pair.bobNode)).id)
        #expect(stored.map(\.text) == ["one", "poison", "three"] && stored.map(\.number) == [1, 2, 3])
        #expect(try pair.aliceStore.outbox(conversation.id).isEmpty)
    }
}
