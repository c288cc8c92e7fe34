import Accounts
import Crypto
import Foundation
import Glibc
import Dispatch
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

/// alice and bob online over the world's in-memory network, a session made between them, and
/// every direct frame between them kept on its way (`MemoryNetwork.keep`): a test takes what
/// each has sent (`toBob`, `toAlice`) and lets it arrive when it says (`deliver`), through the
/// receiver's gate and router as anything from the network does. Presence flows freely.
final class Pair {
    let world: ChatWorld
    let aliceNode: ChatWorld.Node, bobNode: ChatWorld.Node
    var alice: Identity { aliceNode.identity }
    var bob: Identity { bobNode.identity }
    var aliceDelivery: DeliveryProbe { aliceNode.delivery }
    var bobDelivery: DeliveryProbe { bobNode.delivery }
    let aliceStore: MessageStore, bobStore: MessageStore
    let received = Shared<[String]>([])
    /// How many messages waited for bob each time alice was told he came into reach.
    let awaited = Shared<[Int]>([])

    /// A direct frame on its way, and what it carries as its recipient would open it.
    struct Frame {
        let datagram: MemoryNetwork.Datagram
        let kind: UInt8
        let body: [UInt8]

        func read<Kind: PacketKind>(_ kind: Kind.Type) throws -> Kind { try Kind.read(body) }
    }

    /// - Parameter olderBob: bob reads only what every seance of the session protocol reads: his
    ///   fragments come sealed, one by one or several to a packet (kinds 5 and 18).
    init(alicePlane: Plane = .human, olderBob: Bool = false) throws {
        world = try ChatWorld([("alice", alicePlane), ("bob", .human)], olderReaders: olderBob ? ["bob"] : [])
        (aliceNode, bobNode) = (world.nodes[0], world.nodes[1])
        aliceStore = MessageStore(database: aliceNode.database)
        bobStore = MessageStore(database: bobNode.database)
        // Past the questions, their answers and the second announcements of coming online.
        world.step(0.6)
        let (received, awaited) = (received, awaited)
        bobNode.engine.sync {
            bobNode.context.observe { event in
                if case .delivery(.received(_, let message, _)) = event { received.withLock { $0.append(message.text) } }
            }
        }
        aliceNode.engine.sync {
            aliceNode.context.observe { event in
                if case .delivery(.awaitedArrived(_, _, let waiting)) = event { awaited.withLock { $0.append(waiting) } }
            }
        }
        // Their session, made by an empty frame (kind 0 confirms a session and carries nothing).
        let router = aliceNode.service.node.router, bobPeer = try #require(aliceNode.service.peer(bob.signingPublicKey))
        aliceNode.engine.sync { _ = router.sendRaw(kind: 0, body: [], to: bobPeer) }
        world.step(0)
        #expect(aliceNode.service.sessionCount == 1 && bobNode.service.sessionCount == 1)
        world.network.keep { bytes in bytes.count > 5 && bytes[5] == KindTable.sealed }
    }

    static func peer(_ node: ChatWorld.Node, in other: ChatWorld.Node) throws -> Peer {
        try #require(other.service.peer(node.identity.signingPublicKey))
    }

    func conversationAtAlice() throws -> Conversation { try aliceDelivery.conversation(with: Pair.peer(bobNode, in: aliceNode)) }

    /// The direct frames on their way to bob (or alice), taken, each read as its recipient would.
    var toBob: [Frame] { frames(to: bobNode) }
    var toAlice: [Frame] { frames(to: aliceNode) }

    private func frames(to node: ChatWorld.Node) -> [Frame] {
        world.step(0)
        return world.network.take(to: node.name).map { datagram in
            let opened = node.service.peekSealed(datagram.bytes)
            return Frame(datagram: datagram, kind: opened?.kind ?? 0, body: opened?.body ?? [])
        }
    }

    /// Lets `frames` arrive, in the order given, and runs what follows on both engines.
    func deliver(_ frames: [Frame]) {
        world.network.deliver(frames.map(\.datagram))
        world.step(0)
    }

    /// Delivers everything in flight, both ways, `rounds` times, `seconds` apart.
    func exchange(rounds: Int = 3, every seconds: Double = 10) {
        for _ in 0..<rounds {
            world.step(seconds)
            deliver(toBob)
            deliver(toAlice)
        }
    }

    /// A payload of `kind` from alice to bob, sealed in their session as any other: for what an
    /// honest sender would never send.
    func forge<Kind: PacketKind>(_ packet: Kind) throws {
        let router = aliceNode.service.node.router, bobPeer = try Pair.peer(bobNode, in: aliceNode)
        let body = try packet.encoded()
        aliceNode.engine.sync { _ = router.sendRaw(kind: Kind.code, body: body, to: bobPeer) }
    }

    /// The sequence numbers of the acknowledgements bob has sent alice since last asked.
    func acknowledgements() -> [UInt32] {
        toAlice.compactMap { frame in frame.kind == Acknowledgement.code ? (try? frame.read(Acknowledgement.self))?.sequence : nil }
    }
}

/// Counts the transactions that wrote messages, and the rows they wrote: by GRDB's events for
/// what goes through GRDB, and by the table's count for the inserts `DirectWrite` runs straight
/// through SQLite, which GRDB never sees. The read marks `markRead` writes straight through
/// SQLite change no count: they are not counted.
final class MessageCommits: TransactionObserver, Sendable {
    private let state: Mutex<(count: Int, rows: Int, seenEvents: Int, seenGrowth: Int, total: Int)>
    var count: Int { state.withLock { $0.count } }
    /// Rows of `message` inserted, updated or deleted, in all.
    var rows: Int { state.withLock { $0.rows } }

    /// Observes `writer` from now on.
    init(observing writer: any DatabaseWriter) throws {
        let total = try writer.read(Self.total)
        state = Mutex((count: 0, rows: 0, seenEvents: 0, seenGrowth: 0, total: total))
        writer.add(transactionObserver: self, extent: .observerLifetime)
    }

    private static func total(_ db: Database) throws -> Int { try Int.fetchOne(db, sql: "SELECT count(*) FROM message") ?? 0 }

    func observes(eventsOfKind eventKind: DatabaseEventKind) -> Bool { eventKind.tableName == "message" }
    func databaseDidChange(with event: DatabaseEvent) {
        state.withLock { state in
            state.seenEvents += 1
            state.seenGrowth += event.kind == .insert ? 1 : event.kind == .delete ? -1 : 0
        }
    }
    func databaseDidCommit(_ db: Database) {
        let total = (try? Self.total(db)) ?? 0
        state.withLock { state in
            let unseenInserts = total - state.total - state.seenGrowth
            if state.seenEvents > 0 || unseenInserts != 0 { state.count += 1 }
            state.rows += state.seenEvents + abs(unseenInserts)
            (state.seenEvents, state.seenGrowth, state.total) = (0, 0, total)
        }
    }
    func databaseDidRollback(_ db: Database) { state.withLock { ($0.seenEvents, $0.seenGrowth) = (0, 0) } }
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

    /// Packets the receiver is handed together (a burst) are acknowledged once, for all of
    /// them, after they are stored; a packet alone at once.
    @Test func packetsThatCameTogetherAreAcknowledgedOnce() throws {
        let pair = try Pair()
        let conversation = try pair.conversationAtAlice()
        for index in 1...3 { _ = try pair.aliceDelivery.send(String(repeating: "x", count: 800) + " \(index)", in: conversation) }
        let frames = pair.toBob
        #expect(frames.count == 3)
        // All three arrive before bob's engine takes any (as a burst read off the network).
        pair.deliver(frames)
        #expect(pair.acknowledgements() == [3])
        #expect(pair.received.withLock { $0.count } == 3)
        _ = try pair.aliceDelivery.send("alone", in: conversation)
        pair.deliver(pair.toBob)
        #expect(pair.toAlice.count == 1)
    }

    /// Packets the receiver is handed together are stored in one transaction, not one each; a
    /// packet alone in one of its own.
    @Test func packetsThatCameTogetherAreStoredTogether() throws {
        let pair = try Pair()
        let conversation = try pair.conversationAtAlice()
        let commits = try MessageCommits(observing: pair.bobStore.database.writer)
        for index in 1...3 { _ = try pair.aliceDelivery.send(String(repeating: "x", count: 800) + " \(index)", in: conversation) }
        pair.deliver(pair.toBob)
        #expect(commits.count == 1)
        #expect(pair.received.withLock { $0.count } == 3)
        _ = try pair.aliceDelivery.send("alone", in: conversation)
        pair.deliver(pair.toBob)
        #expect(commits.count == 2)
        #expect(pair.received.withLock { $0.count } == 4)
    }

    /// A message is shown as soon as it is opened, before its row is written, and acknowledged
    /// only once that is committed (issue 51): killed in between, the receiver acknowledged
    /// nothing, and the sender sends it again.
    @Test func aMessageIsShownWhenOpenedAndAcknowledgedOnceStored() throws {
        let pair = try Pair()
        let conversation = try pair.conversationAtAlice()
        let bobConversation = try pair.bobDelivery.conversation(with: Pair.peer(pair.aliceNode, in: pair.bobNode))
        let store = pair.bobStore
        let storedWhenShown = Shared<[Bool]>([])
        pair.bobNode.engine.sync {
            pair.bobNode.context.observe { event in
                guard case .delivery(.received(let conversation, let message, _)) = event else { return }
                let stored = ((try? store.message(number: message.number, in: conversation)) ?? nil) != nil
                storedWhenShown.withLock { $0.append(stored) }
            }
        }
        _ = try pair.aliceDelivery.send("hello", in: conversation)
        _ = try pair.aliceDelivery.send("again", in: conversation)
        pair.deliver(pair.toBob)
        #expect(storedWhenShown.withLock { $0 } == [false, false])
        #expect(try store.page(bobConversation.id).map(\.text) == ["hello", "again"])
        // One acknowledgement, for what is stored, once it is.
        #expect(pair.acknowledgements() == [2])
    }

    /// Someone your messages waited for coming into reach is told (the shell rings for it),
    /// with how many go now; a peer for whom nothing waits is not.
    @Test func aPeerTheOutboxWaitedForIsToldWhenTheyCome() throws {
        let pair = try Pair()
        let conversation = try pair.conversationAtAlice()
        _ = try pair.aliceDelivery.send("one", in: conversation)
        _ = try pair.aliceDelivery.send("two", in: conversation)
        _ = pair.toBob  // Lost: bob was not there after all.
        // bob goes, and comes back: his arrival sends what waits, and alice is told.
        pair.bobNode.goOffline()
        pair.world.step(0)
        #expect(pair.aliceNode.service.peer(pair.bob.signingPublicKey) == nil)
        try pair.bobNode.goOnline(pair.world)
        pair.world.step(0.6)
        #expect(pair.awaited.withLock { $0 } == [2])
        pair.exchange()
        #expect(try pair.aliceStore.outbox(conversation.id).isEmpty)
        // Gone and back again with nothing waiting: nobody is told.
        pair.bobNode.goOffline()
        pair.world.step(0)
        try pair.bobNode.goOnline(pair.world)
        pair.world.step(0.6)
        #expect(pair.awaited.withLock { $0 } == [2])
    }

    /// A line typed alone is written and sent before `send` returns (in the engine's turn, on
    /// the caller's thread: nothing is woken for it); a burst's lines return at once.
    @Test func aLineAloneHasGoneWhenSendReturns() throws {
        let pair = try Pair()
        let conversation = try pair.conversationAtAlice()
        // The engine is busy for a moment: the line waits for its turn, and has gone after it.
        let gate = DispatchSemaphore(value: 0)
        pair.aliceNode.engine.queue.async { gate.wait() }
        DispatchQueue.global().asyncAfter(deadline: .now() + 0.05) { gate.signal() }
        _ = try pair.aliceDelivery.send("typed", in: conversation)
        #expect(pair.world.network.take(to: "bob").count == 1)
        #expect(try pair.aliceStore.outbox(conversation.id).map(\.text) == ["typed"])
        // Lines of a burst are held for the ones after them, not written while `send` waits.
        _ = try pair.aliceDelivery.send("burst 1", in: conversation, more: true)
        #expect(pair.world.network.take(to: "bob").isEmpty)
        _ = try pair.aliceDelivery.send("burst 2", in: conversation)
        #expect(pair.toBob.count == 1)  // Both, bundled in one packet.
    }

    /// Only the oldest fragments in flight go again when due; an acknowledgement that brings
    /// overdue ones among the oldest sends them at once (a burst through a slow broker stalled
    /// for the next alarm, seconds away, and went at 400 messages/s).
    @Test func fragmentsThatBecomeTheOldestGoAgainWhenDue() throws {
        let pair = try Pair()
        let conversation = try pair.conversationAtAlice()
        for index in 1...OutgoingQueue.window { _ = try pair.aliceDelivery.send("m\(index)", in: conversation, more: true) }
        let first = pair.toBob  // All go, many to a packet.
        pair.world.step(0.3)  // The oldest go again, each alone; the others wait their turn.
        #expect(pair.aliceDelivery.resentCount == OutgoingQueue.resendLimit)
        _ = pair.toBob
        // bob has the first packet's messages: his acknowledgement brings as many among the
        // oldest, overdue since 0.25, and they go at once, the clock unmoved.
        pair.deliver([first[0]])
        let acknowledged = try #require(pair.toAlice.first { $0.kind == Acknowledgement.code })
        pair.deliver([acknowledged])
        let moved = Int(try acknowledged.read(Acknowledgement.self).sequence)
        #expect(moved > 1 && pair.aliceDelivery.resentCount == OutgoingQueue.resendLimit + moved)
    }

    /// Copies sent again go together once the peer has shown it reads packets of several, and
    /// alone to one that has not (a reader need not know type 18: it still gets every message).
    @Test func copiesSentAgainGoTogetherToAReaderOfBundles() throws {
        let pair = try Pair(olderBob: true)
        let conversation = try pair.conversationAtAlice()
        func burst(_ name: String) throws {
            for index in 1...30 { _ = try pair.aliceDelivery.send("\(name) \(index)", in: conversation, more: index < 30) }
        }
        func bundled(_ frames: [Pair.Frame]) -> [Bool] { frames.map { $0.kind == MessageBundle.code } }

        // A reader that has not shown it reads packets of several gets the copies sent again, alone.
        try burst("first")
        #expect(bundled(pair.toBob).allSatisfy { $0 })  // Lost.
        pair.world.step(OutgoingQueue.initialBackoff)
        let alone = pair.toBob
        #expect(alone.count == 30 && bundled(alone).allSatisfy { !$0 })
        pair.deliver(alone)
        pair.deliver(pair.toAlice)

        // Once it has acknowledged what only a packet of several carried, they go together.
        try burst("third")
        pair.deliver(pair.toBob)
        pair.deliver(pair.toAlice)
        try burst("fourth")
        _ = pair.toBob  // Lost.
        pair.world.step(OutgoingQueue.initialBackoff)
        let together = pair.toBob
        #expect(!together.isEmpty && together.count < 30 && bundled(together).allSatisfy { $0 })
        pair.deliver(together)
        #expect(pair.received.withLock { $0 }.suffix(30) == (1...30).map { "fourth \($0)" })
    }

    /// When a transport comes back, what waits for an acknowledgement goes again at once, not
    /// when its backoff would have it (a broker's client drops what is sent while it is away).
    @Test func aReturningTransportSendsWhatWaitsAtOnce() throws {
        let pair = try Pair()
        let conversation = try pair.conversationAtAlice()
        _ = try pair.aliceDelivery.send("into the void", in: conversation)
        #expect(pair.toBob.count == 1)  // Lost.
        #expect(pair.toBob.isEmpty)  // Not due again before its backoff.
        pair.world.network.setDown("alice", true)
        pair.world.network.setDown("alice", false)
        #expect(pair.toBob.count == 1)
    }

    @Test func replayedFragmentsAreNotStoredTwice() throws {
        let pair = try Pair()
        let conversation = try pair.conversationAtAlice()
        _ = try pair.aliceDelivery.send("only once", in: conversation)
        let captured = pair.toBob
        for _ in 0..<3 { pair.deliver(captured) }
        #expect(pair.received.withLock { $0 } == ["only once"])
        let bobConversation = try pair.bobDelivery.conversation(with: Pair.peer(pair.aliceNode, in: pair.bobNode))
        #expect(try pair.bobStore.page(bobConversation.id).count == 1)
        #expect(pair.bobNode.service.statistics.dropped["replayed"] == 2)
    }

    /// Between shells that both read fragments as they are, messages go so (kind 29): the
    /// session's frame is their only seal, and a burst goes several to a packet. To one that does
    /// not say it reads them, each fragment is sealed on its own as well (kinds 5 and 18), and
    /// what it writes back to a reader goes as they are.
    @Test func fragmentsGoAsTheyAreToAReaderAndSealedToAnOlderOne() throws {
        for olderBob in [false, true] {
            let pair = try Pair(olderBob: olderBob)
            let conversation = try pair.conversationAtAlice()
            _ = try pair.aliceDelivery.send("alone", in: conversation)
            for index in 1...30 { _ = try pair.aliceDelivery.send("burst \(index)", in: conversation, more: index < 30) }
            let frames = pair.toBob
            #expect(Set(frames.map(\.kind)) == (olderBob ? [MessageFragment.code, MessageBundle.code] : [SessionFragments.code]))
            #expect(frames.count < 31, "several to a packet")
            pair.deliver(frames)
            #expect(pair.received.withLock { $0 } == ["alone"] + (1...30).map { "burst \($0)" })
            let toAlice = try pair.bobDelivery.conversation(with: Pair.peer(pair.aliceNode, in: pair.bobNode))
            _ = try pair.bobDelivery.send("back", in: toAlice)
            #expect(pair.toAlice.contains { $0.kind == SessionFragments.code })
        }
    }

    /// Fragments as they are, addressed to somebody else or past what a conversation may hold,
    /// are dropped as sealed ones are.
    @Test func misaddressedFragmentsAsTheyAreAreDropped() throws {
        let pair = try Pair()
        _ = try pair.conversationAtAlice()
        let hello = Fragment(sequence: 1, isLast: true, sentAt: 1_700_000_000_000, text: Data("hello".utf8))
        try pair.forge(SessionFragments(recipient: Data(repeating: 0, count: 32), fragments: [hello]))
        try pair.forge(SessionFragments(recipient: pair.bob.signingPublicKey, fragments: [Fragment(sequence: 1_000_000, isLast: true, sentAt: 1, text: Data("far".utf8))]))
        pair.deliver(pair.toBob)
        #expect(pair.received.withLock { $0 }.isEmpty)
        #expect(pair.bobDelivery.droppedCounts == ["not for us": 1, "out of window": 1])
        try pair.forge(SessionFragments(recipient: pair.bob.signingPublicKey, fragments: [hello]))
        pair.deliver(pair.toBob)
        #expect(pair.received.withLock { $0 } == ["hello"])
    }

    /// Fragments as they are never come but in a session: signed by their writer's own key,
    /// outside one, they are dropped (the session is their only seal) and nothing is made.
    @Test func fragmentsAsTheyAreOutsideASessionAreDropped() throws {
        let pair = try Pair()
        let hello = SessionFragments(recipient: pair.bob.signingPublicKey,
                                     fragments: [Fragment(sequence: 1, isLast: true, sentAt: 1_700_000_000_000, text: Data("hello".utf8))])
        let frame = try Packet.encode(hello, signer: pair.alice.signing, timestamp: UInt64(pair.world.scheduler.now * 1000), sequence: 9)
        pair.world.network.inject(frame, from: "alice", by: "memory")
        pair.world.step(0)
        #expect(pair.received.withLock { $0 }.isEmpty)
        #expect(pair.bobNode.service.statistics.dropped["unsealed"] == 1)
        #expect(try pair.bobStore.existingConversation(myKey: pair.bob.signingPublicKey, peerKey: pair.alice.signingPublicKey) == nil)
    }

    @Test func corruptedForeignAndMisaddressedFragmentsAreDropped() throws {
        let pair = try Pair(olderBob: true)
        let conversation = try pair.conversationAtAlice()
        _ = try pair.aliceDelivery.send("secret", in: conversation)
        let fragment = try #require(pair.toBob.first).read(MessageFragment.self)
        let (recipient, sealed) = (fragment.recipient, fragment.sealed)
        var corrupted = sealed
        corrupted[corrupted.count - 1] ^= 1
        try pair.forge(MessageFragment(recipient: recipient, sealed: corrupted))
        // Alice's fragment addressed to somebody else.
        try pair.forge(MessageFragment(recipient: Data(repeating: 0, count: 32), sealed: sealed))
        pair.deliver(pair.toBob)
        #expect(pair.received.withLock { $0 }.isEmpty)
        #expect(pair.bobDelivery.droppedCounts == ["cannot decrypt": 1, "not for us": 1])
    }

    @Test func theReceiverEnforcesThePlanes() throws {
        // Alice (Ghost) may write to bob (Human); once alice is only Dying, bob drops what she sent.
        let pair = try Pair(alicePlane: .ghost)
        let conversation = try pair.conversationAtAlice()
        _ = try pair.aliceDelivery.send("boo", in: conversation)
        let boo = pair.toBob
        pair.aliceNode.plane = .dying
        pair.world.step(0)  // Her new plane is announced at once, and bob hears it first.
        pair.deliver(boo)
        #expect(pair.received.withLock { $0 }.isEmpty)
        #expect(pair.bobDelivery.droppedCounts["plane"] == 1)
        // And the sender refuses at once when the table forbids it.
        #expect(throws: Delivery.SendError.cannotReach(mine: .dying, theirs: .human, name: "bob#" + PeerIdentity.fingerprint(of: pair.bob.signingPublicKey))) {
            try pair.aliceDelivery.send("hello?", in: conversation)
        }
    }

    @Test func tooLongIsRefusedBeforeAnythingIsStored() throws {
        let pair = try Pair()
        let conversation = try pair.conversationAtAlice()
        #expect(throws: Delivery.SendError.tooLong(4_001)) {
            try pair.aliceDelivery.send(String(repeating: "x", count: 4_001), in: conversation)
        }
        _ = try pair.aliceDelivery.send(String(repeating: "x", count: 4_000), in: conversation)
        pair.aliceDelivery.settle()
        #expect(try pair.aliceStore.page(conversation.id).count == 1)
    }
}
