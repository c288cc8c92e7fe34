import Crypto
import Foundation
import Synchronization
import TestWorld
import Testing
@testable import Nearby

/// The engine on a manual clock and scheduler, over the in-memory network: presence and expiry
/// happen exactly when the rules say, with no sleeping.
@Suite struct DeterministicEngineTests {
    final class Log: Sendable {
        private let items = Mutex<[String]>([])
        func append(_ item: String) { items.withLock { $0.append(item) } }
        var all: [String] { items.withLock { $0 } }
    }

    final class Node {
        var engine: Engine { service.engine }
        let transports: [MemoryTransport]
        var transport: MemoryTransport { transports[0] }
        let service: NetworkProbe
        let events = Log()

        /// `networks`: the transports' names and networks (one called `memory` when not given).
        init(_ name: String, at address: String? = nil, network: MemoryNetwork, scheduler: ManualScheduler,
             signer: Curve25519.Signing.PrivateKey = .init(), timing: PresenceTiming = PresenceTiming(interval: 1, jitter: 0, startupGap: 0.5),
             networks: [(String, MemoryNetwork)]? = nil, seed: UInt64 = 1, observe: (@Sendable (PresenceEvent) -> Void)? = nil) {
            transports = (networks ?? [("memory", network)]).map { MemoryTransport(network: $1, address: address ?? name, name: $0) }
            let events = self.events
            service = NetworkProbe(transports: transports, timing: timing, signer: signer,
                                   announcement: Announcement(name: name, agreementKey: Data(repeating: 1, count: 32), plane: 0,
                                                              avatar: .none, unicastPort: 0, intervalMilliseconds: 0),
                                   scheduler: scheduler, random: SeededRandom(seed: seed)) { event in
                observe?(event)
                switch event {
                case .arrived(let peer): events.append("+\(peer.name)")
                case .left(let peer, let reason): events.append("-\(peer.name) \(reason)")
                case .alsoOnlineElsewhere(let transport): events.append("also online elsewhere, by \(transport)")
                case .restarted(let peer): events.append("~\(peer.name) restarted")
                case .changed, .transport, .olderSeance, .flooded, .clockOff: break
                }
            }
        }
    }

    /// Presence alone (no profile, no features) on the world's clock and network. Everyone goes
    /// offline with the crowd.
    final class Crowd {
        let world: World
        /// `networks`: their names (`keeping`: those that keep presence, as a broker does).
        init(networks: [String] = ["memory"], keeping: Set<String> = []) { world = World(networks: networks, keeping: keeping) }
        var scheduler: ManualScheduler { world.scheduler }
        var network: MemoryNetwork { world.network }
        private(set) var nodes: [Node] = []

        /// A node online from now on.
        /// How every node of this crowd times its presence.
        var timing = PresenceTiming(interval: 1, jitter: 0, startupGap: 0.5)

        func join(_ name: String, at address: String? = nil, signer: Curve25519.Signing.PrivateKey = .init(),
                  on names: [String]? = nil, seed: UInt64 = 1) throws -> Node {
            let node = Node(name, at: address, network: network, scheduler: scheduler, signer: signer, timing: timing,
                            networks: names.map { $0.map { ($0, world.networks[$0]!) } }, seed: seed)
            try node.service.start()
            nodes.append(node)
            return node
        }

        func advance(by seconds: Double) { world.step(seconds) }

        deinit { nodes.forEach { $0.service.stop() } }
    }

    @Test func presenceAndExpiryFollowTheClock() throws {
        let crowd = Crowd()
        let ann = try crowd.join("ann"), ben = try crowd.join("ben")
        crowd.advance(by: 0)
        #expect(ann.events.all == ["+ben"] && ben.events.all == ["+ann"])
        // ann vanishes without a goodbye: ben lets her go after 3.5 of her 1 s intervals, not before.
        ann.transport.stop()
        crowd.advance(by: 3.4)
        #expect(ben.events.all == ["+ann"])
        crowd.advance(by: 0.2)
        #expect(ben.events.all == ["+ann", "-ann expired"])
        #expect(ben.service.peers().isEmpty)
    }

    /// ann's shell killed and started again before ben lets her go: her first announcement is
    /// on a new refresh chain, and ben knows she restarted (her sessions are gone with it), once;
    /// her refreshes after it are no news.
    @Test func aPeerStartedAgainWithoutAGoodbyeIsKnownAsRestarted() throws {
        let crowd = Crowd()
        let key = Curve25519.Signing.PrivateKey()
        let ann = try crowd.join("ann", at: "host-a", signer: key), ben = try crowd.join("ben")
        crowd.advance(by: 3)
        #expect(ben.events.all == ["+ann"])
        ann.transport.stop()  // Killed: no goodbye.
        crowd.advance(by: 1)
        _ = try crowd.join("ann", at: "host-a", signer: key)
        crowd.advance(by: 5)
        #expect(ben.events.all == ["+ann", "~ann restarted"])
    }

    /// A newcomer asks who is there (20–50 ms after its first announcement) just after ann
    /// refreshed her presence: ann answers within the answer delay all the same (her refresh
    /// went before the newcomer listened), not a quarter of a second after the refresh; a
    /// second query right after her answer waits for the gap.
    @Test func aQueryIsAnsweredWithinTheAnswerDelayEvenRightAfterARefresh() throws {
        let crowd = Crowd()
        _ = try crowd.join("ann")
        // ann announces at 0 and 0.5, then every second: at 3.5 last, when carl comes 10 ms later.
        crowd.advance(by: 3.51)
        let carl = try crowd.join("carl")
        crowd.advance(by: 0)
        #expect(carl.events.all.isEmpty)
        let asked = Questions.queryDelay.upperBound
        crowd.advance(by: asked + Presence.answerDelay.upperBound + 0.001)
        #expect(carl.events.all == ["+ann"])

        // dave asks while ann's answer to carl is fresh: hers comes a quarter second after it.
        let dave = try crowd.join("dave")
        crowd.advance(by: Questions.queryDelay.lowerBound)
        crowd.advance(by: Presence.answerGap - Presence.answerDelay.upperBound - asked - 0.01)
        #expect(!dave.events.all.contains("+ann"))
        crowd.advance(by: Presence.answerDelay.upperBound + asked + 0.01)
        #expect(dave.events.all.contains("+ann"))
    }

    /// ann and ben come online together: each hears the other's announcement, then its answer,
    /// which it leaves unread. carl arrives and asks: each answers him, at his address, and
    /// neither hears the other's answer; carl, who knew nobody, reads both.
    @Test func anAnswerGoesToWhoAskedAndIsLeftUnreadByWhoHeardItsSenderAlready() throws {
        let crowd = Crowd()
        let ann = try crowd.join("ann"), ben = try crowd.join("ben")
        crowd.advance(by: 0.6)
        #expect(ann.service.statistics.redundant == 1 && ben.service.statistics.redundant == 1)
        let received = (ann.service.statistics.received, ben.service.statistics.received)
        let carl = try crowd.join("carl")
        crowd.advance(by: 0.2)
        #expect(Set(carl.events.all) == ["+ann", "+ben"])
        #expect(ann.service.statistics.redundant == 1 && ben.service.statistics.redundant == 1)
        // Each heard carl's announcement and his query, not the other's answer.
        #expect(ann.service.statistics.received == received.0 + 2 && ben.service.statistics.received == received.1 + 2)
        #expect(carl.service.statistics.redundant == 0)
        #expect(crowd.nodes.allSatisfy { $0.service.statistics.dropped.isEmpty })
        #expect(ann.events.all == ["+ben", "+carl"] && ben.events.all == ["+ann", "+carl"])
    }

    /// A datagram that claims to be ann's own reaches her looped back (multicast) or forged: it is
    /// not worth checking. One that claims ben's and is forged is checked, and counted.
    @Test func aDatagramInOurOwnNameIsIgnoredUnchecked() throws {
        let crowd = Crowd()
        let ann = try crowd.join("ann")
        let mallory = MemoryTransport(network: crowd.network, address: "mallory")
        try mallory.start { _, _ in }
        defer { mallory.stop() }
        let forger = Curve25519.Signing.PrivateKey()
        for claimed in [ann.service.publicKey, Curve25519.Signing.PrivateKey().publicKey.rawRepresentation] {
            var bytes = try Packet.encode(Goodbye(), signer: forger, timestamp: UInt64((crowd.scheduler.now - 1) * 1000), sequence: 1)
            bytes.replaceSubrange(8..<40, with: claimed)
            mallory.broadcast(bytes, as: .other)
        }
        ann.engine.sync {}
        #expect(ann.service.statistics.dropped == ["signature": 1, "in our name, made before we came online": 1])
    }

    /// ann's profile online twice (a copy of her data on another machine): each seance is told
    /// once, however many refreshes follow. Her own packets coming back, even long after, are
    /// hers; one forged in her name since she came online is checked and fails.
    @Test func theSameProfileOnlineTwiceIsToldOnceOnEachSide() throws {
        let crowd = Crowd()
        let key = Curve25519.Signing.PrivateKey()
        let ann = try crowd.join("ann", signer: key)
        let heard = Mutex<[[UInt8]]>([])
        let mallory = MemoryTransport(network: crowd.network, address: "mallory")
        try mallory.start { bytes, _ in heard.withLock { $0.append(bytes) } }
        defer { mallory.stop() }
        crowd.advance(by: 3)
        // Everything ann sent, back to her (a broker's retained presence, a replay): hers.
        for bytes in heard.withLock({ $0 }) { mallory.broadcast(bytes, as: .other) }
        var forged = try Packet.encode(Goodbye(), signer: Curve25519.Signing.PrivateKey(), timestamp: UInt64(crowd.scheduler.now * 1000), sequence: 1)
        forged.replaceSubrange(8..<40, with: ann.service.publicKey)
        mallory.broadcast(forged, as: .other)
        crowd.advance(by: 0)
        #expect(ann.events.all.isEmpty)
        #expect(ann.service.statistics.dropped == ["signature": 1])

        let copy = try crowd.join("ann", at: "elsewhere", signer: key)
        crowd.advance(by: 5)
        #expect(ann.events.all == ["also online elsewhere, by memory"])
        #expect(copy.events.all == ["also online elsewhere, by memory"])
    }

    /// Two copies of ann's profile started in the same millisecond (a test's two shells, a
    /// script's) on a broker, where an announcement is the one signed frame either sends, the
    /// copy's connection taken a moment after it announced: the two announcements would be
    /// alike but for the random start of their sequence numbers, and each would take the
    /// other's for its own, looped back. Each is told.
    @Test func twoCopiesStartedAtOnceOnABrokerAreEachToldOfTheOther() throws {
        let crowd = Crowd(networks: ["broker"], keeping: ["broker"])
        let key = Curve25519.Signing.PrivateKey()
        let broker = crowd.world.networks["broker"]!
        let ann = try crowd.join("ann", at: "here", signer: key, on: ["broker"], seed: 7)
        broker.setDown("elsewhere", true)
        let copy = try crowd.join("ann", at: "elsewhere", signer: key, on: ["broker"], seed: 8)
        crowd.advance(by: 0)
        broker.setDown("elsewhere", false)
        crowd.advance(by: 3)
        #expect(ann.events.all == ["also online elsewhere, by broker"])
        #expect(copy.events.all == ["also online elsewhere, by broker"])
    }
}

@Suite struct OwnBroadcastsTests {
    @Test func aPacketIsKnownByItsSequenceAndTimestampAndTheOlderHalfGoesPastCapacity() {
        var sent = OwnBroadcasts(capacity: 4)
        for sequence in UInt32(1)...4 { sent.insert(sequence: sequence, timestamp: 1_000 + UInt64(sequence)) }
        #expect(sent.contains(sequence: 2, timestamp: 1_002))
        #expect(!sent.contains(sequence: 2, timestamp: 1_003))  // Another seance's second packet.
        sent.insert(sequence: 5, timestamp: 1_005)
        #expect(sent.count == 3 && !sent.contains(sequence: 1, timestamp: 1_001) && !sent.contains(sequence: 2, timestamp: 1_002))
        #expect(sent.contains(sequence: 3, timestamp: 1_003) && sent.contains(sequence: 5, timestamp: 1_005))
    }
}
