import Foundation
import Synchronization
import Testing
@testable import Nearby

/// Presence in a crowd on the manual clock: the group's refreshes stay within the link's budget
/// whatever its size (RFC 3550 §6.2), nobody expires for it, and a newcomer still hears everyone
/// within a second.
@Suite struct CrowdTests {
    @Test func theIntervalStretchesWithTheCrowdInWholeSteps() {
        let timing = PresenceTiming()
        #expect(timing.interval(amongPeers: 0) == 5)
        #expect(timing.interval(amongPeers: 99) == 5, "100 refresh every 5 s: 20 a second")
        #expect(timing.interval(amongPeers: 100) == 10)
        #expect(timing.interval(amongPeers: 499) == 25)
        #expect(timing.interval(amongPeers: 999) == 50)
        #expect(timing.interval(amongPeers: 4_095) == 205)
        #expect(PresenceTiming.answerWindow(amongPeers: 10) == 0.02...0.12)
        #expect(PresenceTiming.answerWindow(amongPeers: 500) == 0.02...0.5)
        #expect(PresenceTiming.answerWindow(amongPeers: 4_000).upperBound == 0.8)
    }

    /// Five newcomers arrive together in a crowd of 40: each member answers once for all five
    /// (one multicast answer serves every newcomer who asked before it went), so the link carries
    /// 40 answers plus the newcomers' own, not 200; and each newcomer lists everyone.
    @Test func newcomersArrivingTogetherShareTheCrowdsAnswers() throws {
        let crowd = DeterministicEngineTests.Crowd()
        crowd.timing = PresenceTiming(interval: 1, jitter: 0.2, startupGap: 0.5, linkBudget: 2)
        let nodes = try (0..<40).map { try crowd.join("p\($0)") }
        crowd.advance(by: 30)
        #expect(nodes.allSatisfy { $0.service.peers().count == 39 })
        let answers = Mutex(0)
        crowd.network.setLoss { bytes in
            if bytes.count > 5, bytes[5] == KindTable.announce, UncheckedHeader(bytes)?.flags.contains(.answer) == true {
                answers.withLock { $0 += 1 }
            }
            return false
        }
        let newcomers = try (0..<5).map { try crowd.join("new\($0)") }
        crowd.advance(by: 1)
        #expect(newcomers.allSatisfy { $0.service.peers().count == 44 })
        // 40 members answer once; newcomers hearing each other's queries answer too (at most 5 each).
        #expect(answers.withLock { $0 } <= 40 + 25, "\(answers.withLock { $0 }) answers")
    }

    /// 40 shells whose link carries 2 refreshes a second (the budget scaled down with the crowd,
    /// so the test stays small): each refreshes every 20 s, not every second; the group sends
    /// about 2 a second; nobody expires anyone; a newcomer lists all 40 within a second.
    @Test func aCrowdRefreshesWithinTheBudgetAndNobodyExpires() throws {
        let crowd = DeterministicEngineTests.Crowd()
        crowd.timing = PresenceTiming(interval: 1, jitter: 0.2, startupGap: 0.5, linkBudget: 2)
        let announcements = Mutex(0)
        crowd.network.setLoss { bytes in
            if bytes.count > 5, bytes[5] == KindTable.announce, UncheckedHeader(bytes)?.flags.contains(.answer) == false {
                announcements.withLock { $0 += 1 }
            }
            return false
        }
        let nodes = try (0..<40).map { try crowd.join("p\($0)") }
        crowd.advance(by: 2)
        #expect(nodes.allSatisfy { $0.service.peers().count == 39 })
        // Past the first refreshes at a second's interval, each takes the crowd's.
        crowd.advance(by: 30)
        announcements.withLock { $0 = 0 }
        crowd.advance(by: 120)
        let rate = Double(announcements.withLock { $0 }) / 120
        #expect(rate > 1.2 && rate < 2.6, "\(rate) refreshes a second")
        #expect(nodes.allSatisfy { $0.service.peers().count == 39 && !$0.events.all.contains { $0.hasPrefix("-") } })
        let interval = try #require(nodes[0].service.peers().first?.announcement.intervalMilliseconds)
        #expect(interval == 20_000)
        let newcomer = try crowd.join("newcomer")
        crowd.advance(by: 1)
        #expect(newcomer.service.peers().count == 40)

        // 36 leave: those who stay refresh at the small group's interval (3 s among 4) at once,
        // not after the crowd's 20 s.
        for node in nodes.prefix(36) { node.service.stop() }
        crowd.advance(by: 0.1)
        announcements.withLock { $0 = 0 }
        crowd.advance(by: 4)
        #expect(announcements.withLock { $0 } >= 5, "the 5 who stayed each refreshed within 4 s")
    }

    /// Counts the announcements each network carries (a broker's withdrawals apart).
    final class Announcements: Sendable {
        private let counts = Mutex<[String: Int]>([:])
        init(_ crowd: DeterministicEngineTests.Crowd) {
            for (name, network) in crowd.world.networks {
                network.setLoss { [self] bytes in
                    if bytes.count > 5, bytes[5] == KindTable.announce { self.counts.withLock { $0[name, default: 0] += 1 } }
                    return false
                }
            }
        }
        subscript(_ network: String) -> Int { counts.withLock { $0[network] ?? 0 } }
        func reset() { counts.withLock { $0 = [:] } }
    }

    /// ann and carl are on the LAN and a broker, ben on the broker only. The LAN carries their
    /// refreshes; the broker nothing once each has published, but a change (once) — and ben's
    /// will withdraws him at once when he dies, where the LAN would have waited for 3.5 intervals.
    @Test func aBrokerIsNeverSentTheLANsRefreshes() throws {
        let crowd = DeterministicEngineTests.Crowd(networks: ["lan", "broker"], keeping: ["broker"])
        crowd.timing = PresenceTiming(interval: 1, jitter: 0.2, startupGap: 0.5)
        let counted = Announcements(crowd)
        let ann = try crowd.join("ann", on: ["lan", "broker"])
        let ben = try crowd.join("ben", on: ["broker"])
        let carl = try crowd.join("carl", on: ["lan", "broker"])
        crowd.advance(by: 5)
        #expect([ann, ben, carl].allSatisfy { $0.service.peers().count == 2 })
        #expect(counted["broker"] == 3, "one publication each")
        counted.reset()
        crowd.advance(by: 60)
        #expect(counted["broker"] == 0)
        #expect(counted["lan"] > 80, "ann and carl refresh the LAN every second or so: \(counted["lan"])")
        ann.service.setPlane(1)
        crowd.advance(by: 0.1)
        #expect(counted["broker"] == 1, "a change is published at once")
        #expect(ben.service.peers().first { $0.name == "ann" }?.announcement.plane == 1)

        ben.transport.stop()
        crowd.advance(by: 0)
        #expect(ann.events.all.contains("-ben expired") && carl.events.all.contains("-ben expired"))
    }

    /// Broker-only peers idle for five hours: each publishes once an hour (as it advertises), and
    /// nobody expires anyone, though a route lasts 3.5 of its intervals.
    @Test func aKeptAnnouncementIsPublishedAgainOnceAnHour() throws {
        let crowd = DeterministicEngineTests.Crowd(networks: ["broker"], keeping: ["broker"])
        let counted = Announcements(crowd)
        let nodes = try ["ann", "ben"].map { try crowd.join($0, on: ["broker"]) }
        crowd.advance(by: 1)
        counted.reset()
        crowd.advance(by: 5 * 3_600)
        #expect(counted["broker"] == 2 * 5)
        #expect(nodes.allSatisfy { $0.service.peers().count == 1 && $0.events.all.count == 1 })
        let interval = try #require(nodes[0].service.peers().first?.announcement.intervalMilliseconds)
        #expect(interval == 3_600_000)
    }

    /// The LAN's refresh interval stretches with the crowd the LAN carries, not with the peers a
    /// broker keeps: ann hears carl on the LAN and six others through a broker.
    @Test func theLANsIntervalCountsOnlyThePeersTheLANCarries() throws {
        let crowd = DeterministicEngineTests.Crowd(networks: ["lan", "broker"], keeping: ["broker"])
        crowd.timing = PresenceTiming(interval: 1, jitter: 0, startupGap: 0.5, linkBudget: 2)
        let ann = try crowd.join("ann", on: ["lan", "broker"])
        let carl = try crowd.join("carl", on: ["lan"])
        for n in 0..<6 { _ = try crowd.join("p\(n)", on: ["broker"]) }
        crowd.advance(by: 10)
        #expect(ann.service.peers().count == 7)
        #expect(carl.service.peers().first?.announcement.intervalMilliseconds == 1_000, "2 on the LAN: (1 + 1) / 2 a second")
    }

    /// ann loses the broker; meanwhile ben dies (his will goes to those connected) and dave
    /// changes plane. Back, ann is handed what the broker keeps: dave as he is now; ben, whom it
    /// no longer keeps, is gone once the broker has had its time to hand everything again.
    @Test func afterAReconnectionWhoeverTheBrokerNoLongerKeepsIsGone() throws {
        let crowd = DeterministicEngineTests.Crowd(networks: ["broker"], keeping: ["broker"])
        let counted = Announcements(crowd)
        let ann = try crowd.join("ann", on: ["broker"])
        let ben = try crowd.join("ben", on: ["broker"])
        let dave = try crowd.join("dave", on: ["broker"])
        crowd.advance(by: 2)
        crowd.world.network.setDown("ann", true)
        ben.transport.stop()
        dave.service.setPlane(4)
        crowd.advance(by: 60)
        #expect(ann.service.peers().count == 2, "ann heard nothing of it")
        counted.reset()
        crowd.world.network.setDown("ann", false)
        crowd.advance(by: 0)
        #expect(counted["broker"] == 1, "ann publishes herself again, fresh")
        #expect(ann.service.peers().first { $0.name == "dave" }?.announcement.plane == 4)
        crowd.advance(by: KeptPresence.resync + 0.1)
        #expect(ann.service.peers().map(\.name) == ["dave"])
        #expect(ann.events.all.contains("-ben expired"))
        #expect(dave.service.peers().map(\.name) == ["ann"])
    }
}
