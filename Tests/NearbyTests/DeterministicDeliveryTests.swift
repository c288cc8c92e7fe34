import Accounts
import Foundation
import Glibc
import Nearby
import Storage
import Synchronization
import TestSupport
import Testing
@testable import Nearby

/// Retransmission on a manual clock over the in-memory network: a lost fragment goes again
/// after the first backoff (0.25 s), not before, with no sleeping.
@Suite struct DeterministicDeliveryTests {
    @Test func aLostFragmentIsSentAgainAfterTheBackoff() throws {
        let directory = temporaryDirectory("manual")
        defer { removeDirectory(directory) }
        let scheduler = ManualScheduler()
        let network = MemoryNetwork()
        let received = Mutex<[String]>([])
        func node(_ name: String) throws -> (NearbyService, DeliveryService, Identity, Engine) {
            let identity = Identity()
            let engine = Engine(scheduler: scheduler)
            let service = NearbyService(transport: MemoryTransport(network: network, address: name),
                                        timing: PresenceTiming(interval: 1, jitter: 0, startupGap: 0.5), signer: identity.signing,
                                        announcement: Announcement(name: name, agreementKey: identity.agreementPublicKey, plane: 0,
                                                                   avatar: .none, unicastPort: 0, intervalMilliseconds: 0),
                                        engine: engine) { _ in }
            let delivery = DeliveryService(store: MessageStore(database: try testDatabase(directory + "/\(name).sqlite")),
                                           identity: identity, myPlane: { .human }, engine: engine, clock: { scheduler.now }) { event in
                if case .received(_, let message, _) = event { received.withLock { $0.append(message.text) } }
            }
            delivery.attach(service)
            try service.start()
            return (service, delivery, identity, engine)
        }
        let (annService, ann, _, annEngine) = try node("ann")
        let (benService, benDelivery, ben, benEngine) = try node("ben")
        defer { annService.stop(); benService.stop() }
        func settle() { for _ in 0..<3 { annEngine.sync {}; benEngine.sync {} } }
        scheduler.advance(by: 0)
        settle()
        // The first message fragment is lost on the way; everything else arrives.
        let lost = Mutex(false)
        network.setLoss { bytes in
            guard bytes.count > 5, bytes[5] == 5 else { return false }
            return lost.withLock { done in defer { done = true }; return !done }
        }
        let benPeer = try #require(annService.peer(ben.signingPublicKey))
        let before = (annService.statistics.received, benService.statistics.received)
        _ = try ann.send("hello", in: try ann.conversation(with: benPeer))
        settle()
        #expect(received.withLock { $0 }.isEmpty)
        scheduler.advance(by: 0.2)  // Not yet: the first retry is due at 0.25 s.
        settle()
        #expect(received.withLock { $0 }.isEmpty)
        scheduler.advance(by: 0.15)  // The retry, at the first 50 ms tick at or after 0.25 s.
        settle()
        #expect(received.withLock { $0 } == ["hello"], "ann sent \(annService.statistics)")
        // `nearby stats` counts what carries messages too: ben got the copy that came through,
        // ann its acknowledgement.
        #expect((annService.statistics.received - before.0, benService.statistics.received - before.1) == (1, 1))
        #expect((ann.resentCount, benDelivery.resentCount) == (1, 0), "the lost fragment went again, once")
        withExtendedLifetime(benDelivery) {}  // The service holds its delivery weakly.
    }

    /// One shell on two transports (a "lan" and a "broker", each its own network): the peer is
    /// listed once with both routes, the LAN preferred; each message is stored once; when the
    /// LAN stops carrying anything, the next copy goes by the broker as well and arrives.
    @Test func aPeerOnTwoTransportsIsOnePeerAndSurvivesTheLossOfOne() throws {
        let directory = temporaryDirectory("routes")
        defer { removeDirectory(directory) }
        let scheduler = ManualScheduler()
        let lan = MemoryNetwork(), broker = MemoryNetwork()
        let received = Mutex<[String]>([])
        let arrivals = Mutex(0)
        func node(_ name: String) throws -> (NearbyService, DeliveryService, Identity, Engine, MessageStore) {
            let identity = Identity()
            let engine = Engine(scheduler: scheduler)
            let service = NearbyService(transports: [MemoryTransport(network: lan, address: name, name: "lan"),
                                                     MemoryTransport(network: broker, address: name, name: "broker")],
                                        timing: PresenceTiming(interval: 1, jitter: 0, startupGap: 0.5), signer: identity.signing,
                                        announcement: Announcement(name: name, agreementKey: identity.agreementPublicKey, plane: 0,
                                                                   avatar: .none, unicastPort: 0, intervalMilliseconds: 0),
                                        engine: engine) { event in
                if case .arrived = event { arrivals.withLock { $0 += 1 } }
            }
            let store = MessageStore(database: try testDatabase(directory + "/\(name).sqlite"))
            let delivery = DeliveryService(store: store, identity: identity, myPlane: { .human }, engine: engine, clock: { scheduler.now }) { event in
                if case .received(_, let message, _) = event { received.withLock { $0.append(message.text) } }
            }
            delivery.attach(service)
            try service.start()
            return (service, delivery, identity, engine, store)
        }
        let (annService, ann, _, annEngine, annStore) = try node("ann")
        let (benService, benDelivery, ben, benEngine, _) = try node("ben")
        defer { annService.stop(); benService.stop() }
        func settle() { for _ in 0..<3 { annEngine.sync {}; benEngine.sync {} } }
        scheduler.advance(by: 0)
        settle()
        #expect(arrivals.withLock { $0 } == 2, "each side hears the other once, not once per transport")
        let benPeer = try #require(annService.peer(ben.signingPublicKey))
        #expect(annService.peers().count == 1)
        #expect(annService.routeNames(of: benPeer) == ["lan", "broker"])

        let conversation = try ann.conversation(with: benPeer)
        _ = try ann.send("by the lan", in: conversation)
        settle()
        scheduler.advance(by: 0.05)
        settle()
        #expect(received.withLock { $0 } == ["by the lan"])

        // The LAN goes dark: the first copy (by the LAN) is lost; the copy sent again goes by
        // both routes and the broker's arrives, once.
        lan.setLoss { _ in true }
        _ = try ann.send("by the broker", in: conversation)
        settle()
        scheduler.advance(by: 0.05)
        settle()
        #expect(received.withLock { $0 } == ["by the lan"])
        scheduler.advance(by: 0.3)
        settle()
        #expect(received.withLock { $0 } == ["by the lan", "by the broker"])
        scheduler.advance(by: 2)
        settle()
        #expect(received.withLock { $0 } == ["by the lan", "by the broker"], "stored exactly once")
        #expect(try annStore.outbox(conversation.id).isEmpty, "acknowledged by the route that worked")

        // After a few silent intervals the LAN route is forgotten and the broker is preferred.
        scheduler.advance(by: 5)
        settle()
        let later = try #require(annService.peer(ben.signingPublicKey))
        #expect(annService.routeNames(of: later) == ["broker"])
        withExtendedLifetime(benDelivery) {}
    }

    /// An acknowledgement is written as soon as it is handled, not at a tick: the first copy is
    /// lost, the retry goes at 0.25 s exactly, and at that instant the message is `delivered`
    /// (with a 50 ms tick it was the tick after).
    @Test func anAcknowledgementIsWrittenWithoutWaitingForATick() throws {
        let world = try ChatWorld([("ann", .human), ("ben", .human)])
        let (ann, ben) = (world.nodes[0], world.nodes[1])
        let lost = Mutex(false)
        world.network.setLoss { bytes in
            guard bytes.count > 5, bytes[5] == 5 else { return false }
            return lost.withLock { done in defer { done = true }; return !done }
        }
        world.step(1)  // Past the moment anything was last written.
        let peer = try #require(ann.service.peer(ben.identity.signingPublicKey))
        let conversation = try ann.delivery.conversation(with: peer)
        let message = try ann.delivery.send("no waiting", in: conversation)
        let store = MessageStore(database: ann.database)
        func state() throws -> ChatMessage.State? { try store.page(conversation.id).first { $0.number == message.number }?.state }
        world.step(0)
        #expect(try state() == .sent)
        world.step(OutgoingQueue.initialBackoff)
        #expect(try state() == .delivered)
    }
}
