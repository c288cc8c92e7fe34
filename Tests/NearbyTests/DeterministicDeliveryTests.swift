import Accounts
import Foundation
import Glibc
import Nearby
import Storage
import Synchronization
import TestWorld
import Testing
@testable import Nearby

/// Retransmission on a manual clock over the in-memory network: a lost fragment goes again
/// after the first backoff (0.25 s), not before, with no sleeping.
@Suite struct DeterministicDeliveryTests {
    /// The texts `node` has received, oldest first.
    func received(by node: ChatWorld.Node) throws -> [String] {
        try node.database.read { db in try String.fetchAll(db, sql: "SELECT text FROM message WHERE outgoing = 0 ORDER BY id") }
    }

    @Test func aLostFragmentIsSentAgainAfterTheBackoff() throws {
        let world = try ChatWorld([("ann", .human), ("ben", .human)])
        let (ann, ben) = (world.nodes[0], world.nodes[1])
        // Past the questions, their answers and the second announcements of coming online.
        world.step(0.6)
        let benPeer = try #require(ann.service.peer(ben.identity.signingPublicKey))
        // A first message makes their session (a frame is only told apart from others once
        // its recipient can open it).
        _ = try ann.delivery.send("first", in: try ann.delivery.conversation(with: benPeer))
        world.step(0)
        #expect(try received(by: ben) == ["first"])
        // The next message fragment is lost on the way; everything else arrives.
        let lost = Mutex(false)
        let packets = world.packets
        world.network.setLoss { bytes in
            guard packets(bytes)?.code == KindTable.sessionFragments else { return false }
            return lost.withLock { done in defer { done = true }; return !done }
        }
        let before = (ann.service.statistics.received, ben.service.statistics.received)
        _ = try ann.delivery.send("hello", in: try ann.delivery.conversation(with: benPeer))
        world.step(0)
        #expect(try received(by: ben) == ["first"])
        world.step(0.2)  // Not yet: the first retry is due at 0.25 s.
        #expect(try received(by: ben) == ["first"])
        world.step(0.06)
        #expect(try received(by: ben) == ["first", "hello"], "ann sent \(ann.service.statistics)")
        // `nearby stats` counts what carries messages too: ben got the copy that came through,
        // ann its acknowledgement (nobody announced meanwhile: the interval is a second).
        #expect((ann.service.statistics.received - before.0, ben.service.statistics.received - before.1) == (1, 1))
        #expect((ann.delivery.resentCount, ben.delivery.resentCount) == (1, 0), "the lost fragment went again, once")
    }

    /// One shell on two transports (a "lan" and a "broker", each its own network): the peer is
    /// listed once with both routes, the LAN preferred; each message is stored once; when the
    /// LAN stops carrying anything, the next copy goes by the broker as well and arrives.
    @Test func aPeerOnTwoTransportsIsOnePeerAndSurvivesTheLossOfOne() throws {
        let world = try ChatWorld([("ann", .human), ("ben", .human)], transports: ["lan", "broker"])
        let (ann, ben) = (world.nodes[0], world.nodes[1])
        let benPeer = try #require(ann.service.peer(ben.identity.signingPublicKey))
        #expect(ann.service.peers().count == 1, "each side hears the other once, not once per transport")
        #expect(ann.service.routeNames(of: benPeer) == ["lan", "broker"])

        let conversation = try ann.delivery.conversation(with: benPeer)
        _ = try ann.delivery.send("by the lan", in: conversation)
        world.step(0.05)
        #expect(try received(by: ben) == ["by the lan"])

        // The LAN goes dark: the first copy (by the LAN) is lost; the copy sent again goes by
        // both routes and the broker's arrives, once.
        world.networks["lan"]!.setLoss { _ in true }
        _ = try ann.delivery.send("by the broker", in: conversation)
        world.step(0.05)
        #expect(try received(by: ben) == ["by the lan"])
        world.step(0.3)
        #expect(try received(by: ben) == ["by the lan", "by the broker"])
        world.step(2)
        #expect(try received(by: ben) == ["by the lan", "by the broker"], "stored exactly once")
        #expect(try MessageStore(database: ann.database).outbox(conversation.id).isEmpty, "acknowledged by the route that worked")

        // After a few silent intervals the LAN route is forgotten and the broker is preferred.
        world.step(5)
        let later = try #require(ann.service.peer(ben.identity.signingPublicKey))
        #expect(ann.service.routeNames(of: later) == ["broker"])
    }

    /// With no transport carrying anything (the broker down, no LAN), a message stays
    /// `sending`: nothing left the machine. Once it goes, it is delivered.
    @Test func nothingIsSentWhileNoTransportCarries() throws {
        let world = try ChatWorld([("ann", .human), ("ben", .human)])
        let (ann, ben) = (world.nodes[0], world.nodes[1])
        let peer = try #require(ann.service.peer(ben.identity.signingPublicKey))
        let conversation = try ann.delivery.conversation(with: peer)
        // ann's transport stops carrying (as a broker's does while it is down); she still lists ben.
        world.network.setDown("ann", true)
        let message = try ann.delivery.send("anyone?", in: conversation)
        let store = MessageStore(database: ann.database)
        func state() throws -> ChatMessage.State? { try store.page(conversation.id).first { $0.number == message.number }?.state }
        world.step(0.1)
        #expect(try state() == .sending)
        world.network.setDown("ann", false)
        world.step(1)
        #expect(try state() == .delivered)
    }

    /// An acknowledgement is written as soon as it is handled, not at a tick: the first copy is
    /// lost, the retry goes at 0.25 s exactly, and at that instant the message is `delivered`
    /// (with a 50 ms tick it was the tick after).
    @Test func anAcknowledgementIsWrittenWithoutWaitingForATick() throws {
        let world = try ChatWorld([("ann", .human), ("ben", .human)])
        let (ann, ben) = (world.nodes[0], world.nodes[1])
        let lost = Mutex(false)
        let packets = world.packets
        world.network.setLoss { bytes in
            guard packets(bytes)?.code == KindTable.sessionFragments else { return false }
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
