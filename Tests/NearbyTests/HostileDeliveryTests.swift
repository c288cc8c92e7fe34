import Accounts
import Crypto
import Foundation
import Glibc
import Nearby
import Storage
import TestWorld
import Testing
@testable import Nearby

/// A sender that does not use `DeliveryService.send`: it seals whatever fragments it likes.
@Suite struct HostileDeliveryTests {
    static func forged(_ text: String, from sender: Identity, to recipient: Identity, first: UInt32 = 1,
                       sentAt: UInt64 = 1_000, endless: Bool = false) throws -> [Packet] {
        let key = try MessageCrypto.key(mine: sender.agreement, theirs: recipient.agreementPublicKey,
                                        mySigningKey: sender.signingPublicKey, theirSigningKey: recipient.signingPublicKey)
        return try MessageCrypto.fragments(of: text, firstSequence: first, sentAt: sentAt).map { whole in
            var fragment = whole
            if endless { fragment.isLast = false }
            let sealed = try MessageCrypto.seal(fragment, key: key, sender: sender.signingPublicKey, recipient: recipient.signingPublicKey)
            return Pair.packet(.fragment(MessageFragment(recipient: recipient.signingPublicKey, sealed: sealed)), from: sender)
        }
    }

    func bobsConversation(_ pair: Pair) throws -> Conversation? {
        try pair.bobStore.existingConversation(myKey: pair.bob.signingPublicKey, peerKey: pair.alice.signingPublicKey)
    }

    func acknowledged(_ pair: Pair) -> UInt32? { pair.acknowledgements().max() }

    @Test func noiseFromAStrangerCreatesNoConversation() throws {
        let pair = try Pair()
        var packets = try Self.forged("hello", from: pair.alice, to: pair.bob)
        var fragment = try packets[0].read(MessageFragment.self)
        fragment.sealed[fragment.sealed.count - 1] ^= 1
        packets[0] = Pair.packet(.fragment(fragment), from: pair.alice)
        for _ in 0..<5 { pair.bobDelivery.receive(packets[0], from: Route(transport: "memory", address: "h")) }
        #expect(try bobsConversation(pair) == nil)
        #expect(pair.bobDelivery.droppedCounts == ["cannot decrypt": 5])
        // A fragment that decrypts does make it.
        pair.bobDelivery.receive(try Self.forged("hello", from: pair.alice, to: pair.bob)[0], from: Route(transport: "memory", address: "h"))
        #expect(try bobsConversation(pair) != nil)
        #expect(pair.received.withLock { $0 } == ["hello"])
    }

    /// Over-long messages (longer than any honest sender can send, or never ending) are
    /// acknowledged, so the conversation moves on, but nothing of them is stored.
    @Test func overLongMessagesAreSkippedNotStored() throws {
        let pair = try Pair()
        let tooLong = try Self.forged(String(repeating: "y", count: DeliveryService.maximumLength + 1), from: pair.alice, to: pair.bob)
        for packet in tooLong { pair.bobDelivery.receive(packet, from: Route(transport: "memory", address: "h")) }
        let endless = try Self.forged(String(repeating: "z", count: 900 * IncomingAssembler.maximumFragments), from: pair.alice, to: pair.bob,
                                      first: UInt32(tooLong.count) + 1, endless: true)
        for packet in endless { pair.bobDelivery.receive(packet, from: Route(transport: "memory", address: "h")) }
        let after = UInt32(tooLong.count + endless.count)
        for packet in try Self.forged("fine", from: pair.alice, to: pair.bob, first: after + 1) { pair.bobDelivery.receive(packet, from: Route(transport: "memory", address: "h")) }
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
        #expect(throws: DeliveryService.SendError.nul) { try pair.aliceDelivery.send("before\0after", in: conversation) }
        for packet in try Self.forged("before\0after", from: pair.alice, to: pair.bob) { pair.bobDelivery.receive(packet, from: Route(transport: "memory", address: "h")) }
        #expect(pair.received.withLock { $0 }.isEmpty)
        #expect(pair.bobDelivery.droppedCounts["NUL character"] == 1)
        #expect(acknowledged(pair) == 1)
    }

    @Test func aSendTimeFarInTheFutureIsNotBelieved() throws {
        let pair = try Pair()
        for packet in try Self.forged("from the future", from: pair.alice, to: pair.bob, sentAt: 1 << 63) {
            pair.bobDelivery.receive(packet, from: Route(transport: "memory", address: "h"))
        }
        let conversation = try #require(try bobsConversation(pair))
        #expect(try pair.bobStore.page(conversation.id).map(\.sentAt) == [0])  // The receiver's clock.
    }
}

/// A storage failure in a batch of received messages: nothing of the batch is stored or
/// acknowledged, it is asked for again, and the conversation goes on (it used to stick until
/// restart).
@Suite struct StorageFailureTests {
    @Test func aFailedWriteWhileReceivingNeverSticksTheConversation() throws {
        let pair = try Pair()
        let conversation = try pair.conversationAtAlice()
        // One packet each, so they can arrive out of order.
        for text in ["one", "poison", "three"] {
            _ = try pair.aliceDelivery.send(text, in: conversation)
            pair.aliceDelivery.tick(now: 0)
        }
        let fragments = pair.toBob.take()
        #expect(fragments.count == 3)
        // The database refuses "poison" (an injected failure), once.
        try pair.bobStore.database.write { db in
            try db.execute(sql: """
                CREATE TEMP TRIGGER refuse BEFORE INSERT ON message WHEN NEW.text = 'poison'
                BEGIN SELECT RAISE(ABORT, 'injected failure'); END
                """)
        }
        // Out of order, so the three messages complete in one batch when the first arrives.
        for packet in fragments.reversed() { pair.bobDelivery.receive(packet, from: Route(transport: "memory", address: "h")) }
        #expect(pair.received.withLock { $0 } == [])
        #expect(try pair.bobStore.page(pair.bobDelivery.conversation(with: Pair.peer(pair.alice, "alice", .human)).id).isEmpty)
        #expect(pair.bobDelivery.droppedCounts["storage"] == 1)
        try pair.bobStore.database.write { try $0.execute(sql: "DROP TRIGGER refuse") }
        // Nothing was acknowledged: alice sends all three again, and they arrive once each.
        pair.exchange(rounds: 4, now: 10)
        #expect(pair.received.withLock { $0 } == ["one", "poison", "three"])
        #expect(try pair.aliceStore.outbox(conversation.id).isEmpty)
    }
}
