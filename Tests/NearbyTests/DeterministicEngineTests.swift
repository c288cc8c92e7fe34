import Crypto
import Foundation
import Synchronization
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
        let engine: Engine
        let transport: MemoryTransport
        let service: NearbyService
        let events = Log()

        init(_ name: String, network: MemoryNetwork, scheduler: ManualScheduler) {
            engine = Engine(scheduler: scheduler)
            transport = MemoryTransport(network: network, address: name)
            let events = self.events
            service = NearbyService(transport: transport, timing: PresenceTiming(interval: 1, jitter: 0, startupGap: 0.5),
                                    signer: .init(),
                                    announcement: Announcement(name: name, agreementKey: Data(repeating: 1, count: 32), plane: 0,
                                                               avatar: .none, unicastPort: 0, intervalMilliseconds: 0),
                                    engine: engine, random: SeededRandom(seed: 1)) { event in
                switch event {
                case .arrived(let peer): events.append("+\(peer.name)")
                case .left(let peer, let reason): events.append("-\(peer.name) \(reason)")
                case .changed, .transport: break
                }
            }
        }
    }

    /// Lets each engine finish what the last step handed it.
    func settle(_ nodes: [Node]) { for _ in 0..<3 { for node in nodes { node.engine.sync {} } } }

    @Test func presenceAndExpiryFollowTheClock() throws {
        let scheduler = ManualScheduler()
        let network = MemoryNetwork()
        let ann = Node("ann", network: network, scheduler: scheduler), ben = Node("ben", network: network, scheduler: scheduler)
        try ann.service.start()
        try ben.service.start()
        defer { ann.service.stop(); ben.service.stop() }
        scheduler.advance(by: 0)
        settle([ann, ben])
        #expect(ann.events.all == ["+ben"] && ben.events.all == ["+ann"])
        // ann vanishes without a goodbye: ben lets her go after 3.5 of her 1 s intervals, not before.
        ann.transport.stop()
        scheduler.advance(by: 3.4)
        settle([ann, ben])
        #expect(ben.events.all == ["+ann"])
        scheduler.advance(by: 0.2)
        settle([ann, ben])
        #expect(ben.events.all == ["+ann", "-ann expired"])
        #expect(ben.service.peers().isEmpty)
    }

    /// A newcomer asks who is there just after ann refreshed her presence: ann answers within the
    /// answer delay all the same (her refresh went before the newcomer listened), not a quarter
    /// of a second after the refresh; a second query right after her answer waits for the gap.
    @Test func aQueryIsAnsweredWithinTheAnswerDelayEvenRightAfterARefresh() throws {
        let scheduler = ManualScheduler()
        let network = MemoryNetwork()
        let ann = Node("ann", network: network, scheduler: scheduler)
        try ann.service.start()
        defer { ann.service.stop() }
        // ann announces at 0 and 0.5, then every second: at 3.5 last, when carl comes 10 ms later.
        scheduler.advance(by: 3.51) { settle([ann]) }
        let carl = Node("carl", network: network, scheduler: scheduler)
        try carl.service.start()
        defer { carl.service.stop() }
        scheduler.advance(by: 0) { settle([ann, carl]) }
        #expect(carl.events.all.isEmpty)
        scheduler.advance(by: NearbyService.answerDelay.upperBound + 0.001) { settle([ann, carl]) }
        #expect(carl.events.all == ["+ann"])

        // dave asks while ann's answer to carl is fresh: hers comes a quarter second after it.
        let dave = Node("dave", network: network, scheduler: scheduler)
        try dave.service.start()
        defer { dave.service.stop() }
        scheduler.advance(by: 0) { settle([ann, carl, dave]) }
        scheduler.advance(by: NearbyService.answerGap - NearbyService.answerDelay.upperBound - 0.01) { settle([ann, carl, dave]) }
        #expect(!dave.events.all.contains("+ann"))
        scheduler.advance(by: NearbyService.answerDelay.upperBound + 0.01) { settle([ann, carl, dave]) }
        #expect(dave.events.all.contains("+ann"))
    }

    /// ann and ben hear each other; carl arrives and asks. Each answers him, and each drops the
    /// other's answer unread; carl, who knew nobody, reads both.
    @Test func anAnswerFromAPeerHeardAlreadyIsDroppedUnread() throws {
        let scheduler = ManualScheduler()
        let network = MemoryNetwork()
        let ann = Node("ann", network: network, scheduler: scheduler), ben = Node("ben", network: network, scheduler: scheduler)
        try ann.service.start()
        try ben.service.start()
        defer { ann.service.stop(); ben.service.stop() }
        // Both come online at once: each hears the other's announcement, then its answer.
        scheduler.advance(by: 0.6) { settle([ann, ben]) }
        #expect(ann.service.statistics.redundant == 1 && ben.service.statistics.redundant == 1)
        let carl = Node("carl", network: network, scheduler: scheduler)
        try carl.service.start()
        defer { carl.service.stop() }
        scheduler.advance(by: 0.2) { settle([ann, ben, carl]) }
        #expect(Set(carl.events.all) == ["+ann", "+ben"])
        #expect(ann.service.statistics.redundant == 2 && ben.service.statistics.redundant == 2)
        #expect(carl.service.statistics.redundant == 0)
        #expect([ann, ben, carl].allSatisfy { $0.service.statistics.dropped.isEmpty })
        #expect(ann.events.all == ["+ben", "+carl"] && ben.events.all == ["+ann", "+carl"])
    }

    /// A datagram that claims to be ann's own reaches her looped back (multicast) or forged: it is
    /// not worth checking. One that claims ben's and is forged is checked, and counted.
    @Test func aDatagramInOurOwnNameIsIgnoredUnchecked() throws {
        let network = MemoryNetwork()
        let ann = Node("ann", network: network, scheduler: ManualScheduler())
        try ann.service.start()
        defer { ann.service.stop() }
        let mallory = MemoryTransport(network: network, address: "mallory")
        try mallory.start { _, _ in }
        defer { mallory.stop() }
        let forger = Curve25519.Signing.PrivateKey()
        for claimed in [ann.service.publicKey, Curve25519.Signing.PrivateKey().publicKey.rawRepresentation] {
            var bytes = try Packet.encode(.goodbye, signer: forger, timestamp: 1, sequence: 1)
            bytes.replaceSubrange(8..<40, with: claimed)
            mallory.broadcast(bytes, as: .other)
        }
        ann.engine.sync {}
        #expect(ann.service.statistics.dropped == ["signature": 1])
    }
}
