import Accounts
import Crypto
import Foundation
import Glibc
import GRDB
import Nearby
import Storage
import Synchronization
import TestWorld
import Testing
@testable import Nearby

/// A value shared across closures, behind a lock.
final class Shared<Value: Sendable>: Sendable {
    private let mutex: Mutex<Value>
    init(_ value: Value) { mutex = Mutex(value) }
    func withLock<R>(_ body: (inout Value) -> R) -> R { mutex.withLock { body(&$0) } }
    func take() -> Value where Value: RangeReplaceableCollection {
        mutex.withLock { value in
            defer { value = Value() }
            return value
        }
    }
}

/// Two delivery services joined by an in-memory network that can lose, duplicate or tamper.
final class Pair: Sendable {
    let alice = Identity(), bob = Identity()
    let aliceStore: MessageStore, bobStore: MessageStore
    let aliceDelivery: DeliveryService, bobDelivery: DeliveryService
    let alicePlane = Shared(Plane.human), bobPlane = Shared(Plane.human)
    /// Packets in flight from each side, in order; tests deliver them by hand.
    let toBob = Shared<[Packet]>([]), toAlice = Shared<[Packet]>([])
    let received = Shared<[String]>([])
    /// How many messages waited for bob each time alice was told he came into reach.
    let awaited = Shared<[Int]>([])
    let directory: String
    /// Each side's engine: `settle` waits until what each was given to do is done (a receiver's
    /// acknowledgement follows what it was already given).
    let aliceEngine = Engine(label: "alice"), bobEngine = Engine(label: "bob")

    init() throws {
        directory = temporaryDirectory("delivery")
        aliceStore = MessageStore(database: try testDatabase(directory + "/a.sqlite"))
        bobStore = MessageStore(database: try testDatabase(directory + "/b.sqlite"))
        let alicePlane = self.alicePlane, bobPlane = self.bobPlane, received = self.received, awaited = self.awaited
        aliceDelivery = DeliveryService(store: aliceStore, identity: alice, myPlane: { alicePlane.withLock { $0 } }, engine: aliceEngine, clock: { 0 }) { event in
            if case .awaitedArrived(_, _, let waiting) = event { awaited.withLock { $0.append(waiting) } }
        }
        bobDelivery = DeliveryService(store: bobStore, identity: bob, myPlane: { bobPlane.withLock { $0 } }, engine: bobEngine, clock: { 0 }) { event in
            if case .received(_, let message, _) = event { received.withLock { $0.append(message.text) } }
        }
        let (alice, bob, toBob, toAlice) = (self.alice, self.bob, self.toBob, self.toAlice)
        aliceDelivery.connect(DeliveryNetwork(
            peers: { [Pair.peer(bob, "bob", bobPlane.withLock { $0 })] },
            send: { payload, _ in toBob.withLock { $0.append(Pair.packet(payload, from: alice)) } }))
        bobDelivery.connect(DeliveryNetwork(
            peers: { [Pair.peer(alice, "alice", alicePlane.withLock { $0 })] },
            send: { payload, _ in toAlice.withLock { $0.append(Pair.packet(payload, from: bob)) } }))
    }

    deinit { removeDirectory(directory) }

    static func peer(_ identity: Identity, _ name: String, _ plane: Plane) -> Peer {
        Peer(signingKey: identity.signingPublicKey,
             announcement: Announcement(name: name, agreementKey: identity.agreementPublicKey, plane: plane.wireValue,
                                        avatar: .none, unicastPort: 1, intervalMilliseconds: 5000),
             route: Route(transport: "memory", address: "198.18.0.1"), lastSeen: 0)
    }

    static func packet(_ sent: DeliveryPacket, from identity: Identity) -> Packet {
        let sender = identity.signingPublicKey
        switch sent {
        case .fragment(let value): return try! Packet(value, sender: sender, timestamp: 1, sequence: 1)
        case .bundle(let value): return try! Packet(value, sender: sender, timestamp: 1, sequence: 1)
        case .acknowledgement(let value): return try! Packet(value, sender: sender, timestamp: 1, sequence: 1)
        case .receipt(let value): return try! Packet(value, sender: sender, timestamp: 1, sequence: 1)
        }
    }

    func conversationAtAlice() throws -> Conversation { try aliceDelivery.conversation(with: Pair.peer(bob, "bob", .human)) }

    /// Delivers everything in flight, both ways, `rounds` times (with a tick between).
    func exchange(rounds: Int = 3, now: Double = 0) {
        for round in 0..<rounds {
            aliceDelivery.tick(now: now + Double(round) * 10)
            for packet in toBob.take() { bobDelivery.receive(packet, from: Route(transport: "memory", address: "h")) }
            settle()
            for packet in toAlice.take() { aliceDelivery.receive(packet, from: Route(transport: "memory", address: "h")) }
            settle()
        }
    }

    func settle() {
        aliceEngine.sync {}
        bobEngine.sync {}
    }

    /// The sequence numbers of the acknowledgements bob has sent alice since last asked, once
    /// both engines have done what they were given.
    func acknowledgements() -> [UInt32] {
        settle()
        return toAlice.take().compactMap { packet -> UInt32? in
            (try? packet.read(Acknowledgement.self))?.sequence
        }
    }
}

/// Counts the transactions that wrote messages.
final class MessageCommits: TransactionObserver, Sendable {
    private let state = Mutex((count: 0, changed: false, rows: 0))
    var count: Int { state.withLock { $0.count } }
    /// Rows of `message` inserted, updated or deleted, in all.
    var rows: Int { state.withLock { $0.rows } }
    func observes(eventsOfKind eventKind: DatabaseEventKind) -> Bool { eventKind.tableName == "message" }
    func databaseDidChange(with event: DatabaseEvent) {
        state.withLock { state in
            state.changed = true
            state.rows += 1
        }
    }
    func databaseDidCommit(_ db: Database) {
        state.withLock { state in
            if state.changed { state.count += 1 }
            state.changed = false
        }
    }
    func databaseDidRollback(_ db: Database) { state.withLock { $0.changed = false } }
}

@Suite struct DeliveryServiceTests {
    @Test func messagesArriveDecryptedAndAreConfirmed() throws {
        let pair = try Pair()
        let conversation = try pair.conversationAtAlice()
        let long = String(repeating: "👻 boo ", count: 500)  // Several fragments.
        _ = try pair.aliceDelivery.send("hello", in: conversation)
        _ = try pair.aliceDelivery.send(long, in: conversation)
        pair.exchange()
        #expect(pair.received.withLock { $0 } == ["hello", long])
        #expect(try pair.aliceStore.outbox(conversation.id).isEmpty)
        #expect(try pair.aliceStore.page(conversation.id).map(\.state) == [.delivered, .delivered])
    }

    /// Packets the receiver was given together (a burst) are acknowledged once, for all of
    /// them, after they are stored; a packet alone at once.
    @Test func packetsThatCameTogetherAreAcknowledgedOnce() throws {
        let pair = try Pair()
        let conversation = try pair.conversationAtAlice()
        for index in 1...3 {
            _ = try pair.aliceDelivery.send(String(repeating: "x", count: 800) + " \(index)", in: conversation)
            pair.aliceDelivery.tick(now: 0)
        }
        let packets = pair.toBob.take()
        #expect(packets.count == 3)
        let route = Route(transport: "memory", address: "h")
        // One engine job takes all three (as a burst read off the network together would).
        pair.bobEngine.sync { for packet in packets { pair.bobDelivery.receive(packet, from: route) } }
        #expect(pair.acknowledgements() == [3])
        #expect(pair.received.withLock { $0.count } == 3)
        _ = try pair.aliceDelivery.send("alone", in: conversation)
        pair.aliceDelivery.tick(now: 0)
        for packet in pair.toBob.take() { pair.bobDelivery.receive(packet, from: route) }
        pair.settle()
        #expect(pair.toAlice.take().count == 1)
    }

    /// Packets the receiver was given together are stored in one transaction, not one each; a
    /// packet alone in one of its own, before this returns when not handed over by the engine.
    @Test func packetsThatCameTogetherAreStoredTogether() throws {
        let pair = try Pair()
        let conversation = try pair.conversationAtAlice()
        let commits = MessageCommits()
        pair.bobStore.database.writer.add(transactionObserver: commits, extent: .observerLifetime)
        for index in 1...3 {
            _ = try pair.aliceDelivery.send(String(repeating: "x", count: 800) + " \(index)", in: conversation)
            pair.aliceDelivery.tick(now: 0)
        }
        let packets = pair.toBob.take()
        let route = Route(transport: "memory", address: "h")
        pair.bobEngine.sync { for packet in packets { pair.bobDelivery.receive(packet, from: route) } }
        pair.settle()
        #expect(commits.count == 1)
        #expect(pair.received.withLock { $0.count } == 3)
        _ = try pair.aliceDelivery.send("alone", in: conversation)
        pair.aliceDelivery.tick(now: 0)
        for packet in pair.toBob.take() { pair.bobDelivery.receive(packet, from: route) }
        #expect(commits.count == 2)
        #expect(pair.received.withLock { $0.count } == 4)
    }

    /// Someone your messages waited for coming into reach is told (the shell rings for it),
    /// with how many go now; a peer that only changed, or for whom nothing waits, is not.
    @Test func aPeerTheOutboxWaitedForIsToldWhenTheyCome() throws {
        let pair = try Pair()
        let conversation = try pair.conversationAtAlice()
        _ = try pair.aliceDelivery.send("one", in: conversation)
        _ = try pair.aliceDelivery.send("two", in: conversation)
        _ = pair.toBob.take()  // Lost: bob was not there after all.
        let bob = Pair.peer(pair.bob, "bob", .human)
        pair.aliceDelivery.peerArrived(bob)
        #expect(pair.awaited.withLock { $0 }.isEmpty)
        pair.aliceDelivery.peerArrived(bob, returned: true)
        #expect(pair.awaited.withLock { $0 } == [2])
        pair.exchange()
        #expect(try pair.aliceStore.outbox(conversation.id).isEmpty)
        pair.aliceDelivery.peerArrived(bob, returned: true)
        #expect(pair.awaited.withLock { $0 } == [2])
    }

    /// A line typed alone is written and sent before `send` returns (in the engine's turn, on
    /// the caller's thread: nothing is woken for it); a burst's lines return at once.
    @Test func aLineAloneHasGoneWhenSendReturns() throws {
        let pair = try Pair()
        let conversation = try pair.conversationAtAlice()
        // The engine is busy for a moment: the line waits for its turn, and has gone after it.
        let gate = DispatchSemaphore(value: 0)
        pair.aliceEngine.async { gate.wait() }
        DispatchQueue.global().asyncAfter(deadline: .now() + 0.05) { gate.signal() }
        _ = try pair.aliceDelivery.send("typed", in: conversation)
        #expect(pair.toBob.take().count == 1)
        #expect(try pair.aliceStore.outbox(conversation.id).map(\.text) == ["typed"])
        // Lines of a burst are held for the ones after them, not written while `send` waits.
        _ = try pair.aliceDelivery.send("burst 1", in: conversation, more: true)
        #expect(pair.toBob.take().isEmpty)
        _ = try pair.aliceDelivery.send("burst 2", in: conversation)
        pair.settle()
        #expect(pair.toBob.take().count == 1)  // Both, bundled in one packet.
    }

    /// Only the oldest fragments in flight go again when due; an acknowledgement that brings
    /// overdue ones among the oldest sets the alarm for them at once (a burst through a slow
    /// broker stalled for the next alarm, seconds away, and went at 400 messages/s).
    @Test func fragmentsThatBecomeTheOldestGoAgainWhenDue() throws {
        let clock = Shared(0.0), wakes = Shared<[Double]>([])
        let alice = Identity(), bob = Identity()
        let directory = temporaryDirectory("delivery")
        defer { removeDirectory(directory) }
        let store = MessageStore(database: try testDatabase(directory + "/a.sqlite"))
        let delivery = DeliveryService(store: store, identity: alice, myPlane: { .human }, engine: Engine(label: "alice"),
                                       clock: { clock.withLock { $0 } }) { _ in }
        let bobPeer = Pair.peer(bob, "bob", .human)
        delivery.connect(DeliveryNetwork(peer: { $0 == bob.signingPublicKey ? bobPeer : nil }, send: { _, _, _, _ in true },
                                         wake: { deadline in wakes.withLock { $0.append(deadline) } }))
        let conversation = try delivery.conversation(with: bobPeer)
        for index in 1...OutgoingQueue.window { _ = try delivery.send("m\(index)", in: conversation) }
        delivery.tick(now: 0)  // All go.
        _ = wakes.take()
        clock.withLock { $0 = 0.3 }
        delivery.tick(now: 0.3)  // The oldest go again; the others wait their turn.
        #expect(wakes.take().allSatisfy { $0 > 0.3 })
        let ack = Pair.packet(.acknowledgement(Acknowledgement(recipient: alice.signingPublicKey, sequence: 10)), from: bob)
        delivery.receive(ack, from: Route(transport: "memory", address: "h"))
        // Ten more are among the oldest, and overdue since 0.25.
        #expect(wakes.take().contains { $0 <= 0.3 })
    }

    /// Copies sent again go together once the peer has shown it reads packets of several, and
    /// alone to one that has not (a reader need not know type 18: it still gets every message).
    @Test func copiesSentAgainGoTogetherToAReaderOfBundles() throws {
        let pair = try Pair()
        let conversation = try pair.conversationAtAlice()
        func burst(_ name: String) throws {
            for index in 1...30 { _ = try pair.aliceDelivery.send("\(name) \(index)", in: conversation, more: index < 30) }
            pair.settle()
        }
        func bundled(_ packets: [Packet]) -> [Bool] {
            packets.map { packet in
                packet.kind == MessageBundle.code
            }
        }
        let route = Route(transport: "memory", address: "h")

        // A reader that ignores packets of several gets the copies sent again, alone.
        try burst("first")
        #expect(bundled(pair.toBob.take()).allSatisfy { $0 })
        pair.aliceDelivery.tick(now: 10)
        let alone = pair.toBob.take()
        #expect(alone.count == 30 && bundled(alone).allSatisfy { !$0 })
        for packet in alone { pair.bobDelivery.receive(packet, from: route) }
        for packet in pair.toAlice.take() { pair.aliceDelivery.receive(packet, from: route) }
        try burst("second")  // Lost.
        _ = pair.toBob.take()
        pair.aliceDelivery.tick(now: 20)
        #expect(pair.toBob.take().count == 30)

        // Once it has acknowledged what only a packet of several carried, they go together.
        pair.exchange(rounds: 3, now: 100)
        try burst("third")
        for packet in pair.toBob.take() { pair.bobDelivery.receive(packet, from: route) }
        pair.settle()
        for packet in pair.toAlice.take() { pair.aliceDelivery.receive(packet, from: route) }
        try burst("fourth")  // Lost.
        _ = pair.toBob.take()
        pair.aliceDelivery.tick(now: 200)
        let together = pair.toBob.take()
        #expect(!together.isEmpty && together.count < 30 && bundled(together).allSatisfy { $0 })
        for packet in together { pair.bobDelivery.receive(packet, from: route) }
        pair.settle()
        #expect(pair.received.withLock { $0 }.suffix(30) == (1...30).map { "fourth \($0)" })
    }

    /// When a transport comes back, what waits for an acknowledgement goes again at once, not
    /// when its backoff would have it (a broker's client drops what is sent while it is away).
    @Test func aReturningTransportSendsWhatWaitsAtOnce() throws {
        let pair = try Pair()
        let conversation = try pair.conversationAtAlice()
        _ = try pair.aliceDelivery.send("into the void", in: conversation)
        pair.aliceDelivery.tick(now: 0)
        #expect(pair.toBob.take().count == 1)  // Lost.
        pair.aliceDelivery.tick(now: 0)
        #expect(pair.toBob.take().isEmpty)  // Not due again before its backoff.
        pair.aliceDelivery.transportReturned()
        #expect(pair.toBob.take().count == 1)
    }

    @Test func replayedFragmentsAreNotStoredTwice() throws {
        let pair = try Pair()
        let conversation = try pair.conversationAtAlice()
        _ = try pair.aliceDelivery.send("only once", in: conversation)
        pair.aliceDelivery.tick(now: 0)
        let captured = pair.toBob.withLock { $0 }
        for _ in 0..<3 { for packet in captured { pair.bobDelivery.receive(packet, from: Route(transport: "memory", address: "h")) } }
        #expect(pair.received.withLock { $0 } == ["only once"])
        let bobConversation = try pair.bobDelivery.conversation(with: Pair.peer(pair.alice, "alice", .human))
        #expect(try pair.bobStore.page(bobConversation.id).count == 1)
    }

    @Test func corruptedForeignAndMisaddressedFragmentsAreDropped() throws {
        let pair = try Pair()
        let conversation = try pair.conversationAtAlice()
        _ = try pair.aliceDelivery.send("secret", in: conversation)
        pair.aliceDelivery.tick(now: 0)
        guard let fragment = pair.toBob.withLock({ $0.first }).flatMap({ try? $0.read(MessageFragment.self) }) else {
            Issue.record("nothing sent"); return
        }
        let (recipient, sealed) = (fragment.recipient, fragment.sealed)
        var corrupted = sealed
        corrupted[corrupted.count - 1] ^= 1
        pair.bobDelivery.receive(Pair.packet(.fragment(MessageFragment(recipient: recipient, sealed: corrupted)), from: pair.alice), from: Route(transport: "memory", address: "h"))
        // Someone else's packet for bob, claiming to be from an unknown key.
        pair.bobDelivery.receive(Pair.packet(.fragment(MessageFragment(recipient: recipient, sealed: sealed)), from: Identity()), from: Route(transport: "memory", address: "h"))
        // Alice's packet addressed to somebody else.
        pair.bobDelivery.receive(Pair.packet(.fragment(MessageFragment(recipient: Data(repeating: 0, count: 32), sealed: sealed)), from: pair.alice), from: Route(transport: "memory", address: "h"))
        #expect(pair.received.withLock { $0 }.isEmpty)
        #expect(pair.bobDelivery.droppedCounts == ["cannot decrypt": 1, "unknown sender": 1, "not for us": 1])
    }

    @Test func theReceiverEnforcesThePlanes() throws {
        let pair = try Pair()
        let conversation = try pair.conversationAtAlice()
        // Alice (Ghost) may write to bob (Human); once alice is only Dying, bob drops what she sends.
        pair.alicePlane.withLock { $0 = .ghost }
        _ = try pair.aliceDelivery.send("boo", in: conversation)
        pair.aliceDelivery.tick(now: 0)
        pair.alicePlane.withLock { $0 = .dying }
        for packet in pair.toBob.withLock({ $0 }) { pair.bobDelivery.receive(packet, from: Route(transport: "memory", address: "h")) }
        #expect(pair.received.withLock { $0 }.isEmpty)
        #expect(pair.bobDelivery.droppedCounts["plane"] == 1)
        // And the sender refuses at once when the table forbids it.
        #expect(throws: DeliveryService.SendError.cannotReach(mine: .dying, theirs: .human, name: "bob#" + PeerIdentity.fingerprint(of: pair.bob.signingPublicKey))) {
            try pair.aliceDelivery.send("hello?", in: conversation)
        }
    }

    @Test func tooLongIsRefusedBeforeAnythingIsStored() throws {
        let pair = try Pair()
        let conversation = try pair.conversationAtAlice()
        #expect(throws: DeliveryService.SendError.tooLong(4_001)) {
            try pair.aliceDelivery.send(String(repeating: "x", count: 4_001), in: conversation)
        }
        _ = try pair.aliceDelivery.send(String(repeating: "x", count: 4_000), in: conversation)
        pair.aliceDelivery.settle()
        #expect(try pair.aliceStore.page(conversation.id).count == 1)
    }
}
