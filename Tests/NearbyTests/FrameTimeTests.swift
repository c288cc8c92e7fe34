import Crypto
import Foundation
import Testing
@testable import Nearby

/// A signed broadcast's own time against the receiver's clock (`FrameTime`): clocks within two
/// minutes of each other agree; a stale frame is no presence, one from the future is dropped.
@Suite struct FrameTimeTests {
    /// An announcement of `name`, signed by `key`, stamped `offset` seconds from `now`.
    static func announcement(_ key: Curve25519.Signing.PrivateKey, name: String, interval: UInt32 = 5_000, offset: Double,
                             now: Double, sequence: UInt32 = 1) throws -> [UInt8] {
        let announcement = Announcement(name: name, agreementKey: Data(repeating: 1, count: 32), plane: 0, avatar: .none,
                                        unicastPort: 1, intervalMilliseconds: interval)
        return try Packet.encode(announcement, signer: key, timestamp: UInt64((now + offset) * 1000), sequence: sequence)
    }

    @Test func theAllowanceReadsAFrameAsMadeNowOrAsOldAsItSays() {
        #expect(FrameTime.heard(stamp: 1_000 - 90, now: 1_000) == 1_000, "a clock 90 s behind: heard now")
        #expect(FrameTime.heard(stamp: 1_000 + 90, now: 1_000) == 1_000, "a clock 90 s ahead: heard now")
        #expect(FrameTime.heard(stamp: 1_000 + 121, now: 1_000) == nil, "from the future")
        #expect(FrameTime.heard(stamp: -6_200, now: 1_000) == -6_080.0, "two hours old: as old as it says, less the allowance")
        #expect(FrameTime.said(stamp: -6_200, now: 1_000) == -6_200.0)
        #expect(FrameTime.said(stamp: 1_000 - 60, now: 1_000) == 1_000)
    }

    /// On the LAN: a peer whose clock is a minute behind is not listed at its first (old-looking)
    /// announcement but asked, and listed by its next (seen "now": within the allowance); one
    /// ten minutes behind or ahead is not, and the user is told once.
    @Test func aLiveAnnouncementFarFromOurClockIsNoPresenceAndSaidOnce() throws {
        let crowd = DeterministicEngineTests.Crowd()
        let events = DeterministicEngineTests.Log()
        let ann = DeterministicEngineTests.Node("ann", network: crowd.network, scheduler: crowd.scheduler) { event in
            if case .clockOff(let name, _, let offset) = event { events.append("\(name) \(Int(offset))") }
        }
        try ann.service.start()
        defer { ann.service.stop() }
        let now = crowd.scheduler.now
        let slow = Curve25519.Signing.PrivateKey(), behind = Curve25519.Signing.PrivateKey(), ahead = Curve25519.Signing.PrivateKey()
        crowd.network.inject(try Self.announcement(slow, name: "slow", offset: -60, now: now), from: "slow", by: "memory")
        crowd.network.inject(try Self.announcement(behind, name: "behind", offset: -600, now: now), from: "behind", by: "memory")
        crowd.network.inject(try Self.announcement(ahead, name: "ahead", offset: 600, now: now), from: "ahead", by: "memory")
        crowd.advance(by: 0)
        #expect(ann.service.peers().isEmpty)
        #expect(ann.service.statistics.dropped["not live"] == 1)
        crowd.network.inject(try Self.announcement(slow, name: "slow", offset: -60, now: crowd.scheduler.now + 1, sequence: 2), from: "slow",
                             by: "memory")
        crowd.advance(by: 1)
        let listed = ann.service.peers()
        #expect(listed.map(\.name) == ["slow"])
        #expect(listed.first?.lastSaid == crowd.scheduler.now - 1, "seen now: within the allowance")
        #expect(events.all == ["behind -600"], "told once, of the first")
        #expect(ann.service.statistics.dropped["stale"] == 1 && ann.service.statistics.dropped["from the future"] == 1)
    }

    /// Issue 49: an announcement captured 25 s before its peer's goodbye, replayed to a shell
    /// started after it, lists nobody (however often it is replayed): it is too old to be live,
    /// and its sender, asked, never answers with anything newer.
    @Test func aReplayedAnnouncementToANewcomerListsNobody() throws {
        let crowd = DeterministicEngineTests.Crowd()
        let ann = try crowd.join("ann")
        let gone = Curve25519.Signing.PrivateKey()
        let captured = try Self.announcement(gone, name: "gone", offset: -25, now: crowd.scheduler.now)
        for _ in 0..<5 {
            crowd.network.inject(captured, from: "mallory", by: "memory")
            crowd.advance(by: 5)
        }
        #expect(ann.service.peers().isEmpty)
        #expect((ann.service.statistics.dropped["not live"] ?? 0) >= 1)
    }

    /// Through a broker: a copy older than its client would have published again (its interval
    /// and a quarter, plus the allowance) is no presence; one within it is listed as seen when
    /// it says, and expires when its next copy is overdue, not 3.5 intervals after its arrival;
    /// handed again on a reconnection, it lives no longer.
    @Test func aStaleRetainedAnnouncementIsAsOldAsItSays() throws {
        let crowd = DeterministicEngineTests.Crowd(networks: ["broker"], keeping: ["broker"])
        let ann = try crowd.join("ann", on: ["broker"])
        let now = crowd.scheduler.now
        let old = Curve25519.Signing.PrivateKey(), older = Curve25519.Signing.PrivateKey()
        crowd.network.inject(try Self.announcement(old, name: "old", interval: 3_600_000, offset: -3_000, now: now), from: "old", by: "broker")
        crowd.network.inject(try Self.announcement(older, name: "older", interval: 3_600_000, offset: -7_200, now: now), from: "older",
                             by: "broker")
        crowd.advance(by: 1)
        let listed = ann.service.peers()
        #expect(listed.map(\.name) == ["old"])
        #expect(listed.first?.lastSaid == now - 3_000)
        #expect(ann.service.statistics.dropped["stale"] == 1)
        // 1.25 hours after its time, plus the allowance: 1,620 s from now.
        crowd.advance(by: 1_500)
        #expect(ann.service.peers().map(\.name) == ["old"])
        crowd.network.inject(try Self.announcement(old, name: "old", interval: 3_600_000, offset: -3_000, now: now), from: "old", by: "broker")
        crowd.advance(by: 130)
        #expect(ann.service.peers().isEmpty, "the same frame again did not make it younger")
    }

    /// A goodbye, a query or a beacon is of its moment: stamped ten minutes ago it is a replay,
    /// dropped before its signature is checked.
    @Test func anOldBroadcastOtherThanAnAnnouncementIsDropped() throws {
        let crowd = DeterministicEngineTests.Crowd()
        let ann = try crowd.join("ann")
        let mallory = Curve25519.Signing.PrivateKey(), now = crowd.scheduler.now
        crowd.network.inject(try Packet.encode(Query(), signer: mallory, timestamp: UInt64((now - 600) * 1000), sequence: 1),
                             from: "mallory", by: "memory")
        crowd.network.inject(try Packet.encode(Goodbye(), signer: mallory, timestamp: UInt64((now + 600) * 1000), sequence: 2),
                             from: "mallory", by: "memory")
        crowd.advance(by: 0)
        #expect(ann.service.statistics.dropped["stale"] == 1 && ann.service.statistics.dropped["from the future"] == 1)
    }
}
