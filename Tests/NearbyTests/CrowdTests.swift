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
}
