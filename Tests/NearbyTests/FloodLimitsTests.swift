import Foundation
import Testing
@testable import Nearby

/// The limits a signed datagram meets before its signature is checked, on a clock the test
/// moves: each bucket, the refresh that comes too soon, the new keys' budget and how it is
/// shared between a flood and an honest newcomer.
@Suite struct FloodLimitsTests {
    static func key(_ n: Int) -> Data { Data((0..<32).map { UInt8(truncatingIfNeeded: n >> ($0 % 4 * 8)) ^ UInt8($0) }) }

    @Test func aBucketRefillsAtItsRateUpToItsBurst() {
        var bucket = TokenBucket(rate: 10, burst: 4, now: 0)
        #expect((0..<6).map { _ in bucket.take(now: 0) } == [true, true, true, true, false, false])
        #expect(bucket.take(now: 0.1) && !bucket.take(now: 0.1), "one token in a tenth of a second")
        #expect((0..<6).map { _ in bucket.take(now: 100) }.filter { $0 }.count == 4, "never more than the burst")
    }

    /// One host: its first 60 frames are checked at once, then 20 a second, whatever keys they
    /// claim; another host is not held up by it.
    @Test func aHostGetsItsAllowanceAndNoMore() {
        var limits = FloodLimits(now: 0)
        let verdicts = (0..<100).map { limits.admit(sender: Self.key($0), source: "lan 198.18.0.9", transport: "lan", refresh: nil, now: 0) }
        #expect(verdicts.prefix(60).allSatisfy { $0 == nil })
        #expect(verdicts.dropFirst(60).allSatisfy { $0 == .source })
        let second = (0..<100).map { limits.admit(sender: Self.key(1_000 + $0), source: "lan 198.18.0.9", transport: "lan", refresh: nil, now: 1) }
        #expect(second.filter { $0 == nil }.count == 20)
        #expect(limits.admit(sender: Self.key(5_000), source: "lan 198.18.0.2", transport: "lan", refresh: nil, now: 1) == nil)
    }

    /// A known key refreshing: the same frame again is a duplicate; the same announcement
    /// before 0.7 of its interval is too soon (a change is checked at once); on time it passes.
    @Test func anUnchangedRefreshSoonerThanItsIntervalIsDropped() {
        var limits = FloodLimits(now: 0)
        let bob = Self.key(7)
        limits.accepted(bob, transport: "lan", interval: 10, payload: 42, timestamp: 1_000, sequence: 1, isRefresh: true, now: 0)
        func admit(_ timestamp: UInt64, _ sequence: UInt32, _ payload: Int, at now: Double) -> FloodLimits.Reason? {
            limits.admit(sender: bob, source: "lan 198.18.0.2", transport: "lan", refresh: (timestamp, sequence, payload), now: now)
        }
        #expect(admit(1_000, 1, 42, at: 0.5) == .duplicate)
        #expect(admit(2_000, 2, 42, at: 1) == .tooSoon)
        #expect(admit(6_900, 3, 42, at: 6.9) == .tooSoon)
        #expect(admit(2_000, 2, 43, at: 1) == nil, "a change (a new plane) is announced at once")
        #expect(admit(7_100, 4, 42, at: 7.1) == nil)
        // By another transport it is no repeat.
        #expect(limits.admit(sender: bob, source: "broker x", transport: "broker", refresh: (1_000, 1, 42), now: 0.5) == nil)
    }

    /// Frames claiming a known key beyond its allowance are dropped, whatever host sends them.
    @Test func aKnownKeyGetsItsAllowance() {
        var limits = FloodLimits(now: 0)
        let bob = Self.key(7)
        limits.accepted(bob, transport: "lan", interval: 5, payload: 1, timestamp: 1, sequence: 1, isRefresh: true, now: 0)
        let verdicts = (0..<60).map { limits.admit(sender: bob, source: "lan 198.18.0.\($0 + 10)", transport: "lan", refresh: nil, now: 0) }
        #expect(verdicts.filter { $0 == nil }.count == 32)
        #expect(verdicts.dropFirst(32).allSatisfy { $0 == .key })
        limits.forget(bob)
        #expect(!limits.isKnown(bob))
    }

    /// What proves nothing spends nothing of the key it names (issue 49): a host sending a
    /// thousand handshake messages or refresh proofs in bob's name spends its own allowance and
    /// that of the pair (its host, bob's key), and bob, from his own host, is checked every time;
    /// signed frames that fail their check give the key's token back.
    @Test func framesThatProveNothingSpendNothingOfTheKey() {
        var limits = FloodLimits(now: 0)
        let bob = Self.key(7)
        limits.accepted(bob, transport: "lan", interval: 5, payload: 1, timestamp: 1, sequence: 1, isRefresh: true, now: 0)
        var verdicts: [FloodLimits.Reason?] = []
        var now = 0.0
        while now < 10 {
            for _ in 0..<200 {
                verdicts.append(limits.admit(sender: bob, source: "lan 198.18.0.66", transport: "lan", refresh: nil, claim: .unverified, now: now))
            }
            // Bob's own handshake message and signed frame, five a second each.
            if Int((now * 10).rounded()) % 2 == 0 {
                #expect(limits.admit(sender: bob, source: "lan 198.18.0.2", transport: "lan", refresh: nil, claim: .unverified, now: now) == nil)
                #expect(limits.admit(sender: bob, source: "lan 198.18.0.2", transport: "lan", refresh: nil, now: now) == nil)
            }
            now += 0.1
        }
        // The attacker's pair gets bob's burst and rate, then its host runs dry first or the pair does.
        #expect(verdicts.filter { $0 == nil }.count <= 32 + 16 * 10)
        #expect(verdicts.contains(.pair))
        #expect(!verdicts.contains(.key))
        // Forged signatures: admitted, refused, refunded, a thousand times; bob's allowance is whole.
        for index in 0..<1_000 {
            #expect(limits.admit(sender: bob, source: "lan 198.18.0.\(100 + index % 100)", transport: "lan", refresh: nil, now: now) == nil)
            limits.refund(bob)
        }
        #expect((0..<32).allSatisfy { _ in limits.admit(sender: bob, source: "lan 198.18.0.3", transport: "lan", refresh: nil, now: now) == nil })
        #expect(limits.admit(sender: bob, source: "lan 198.18.0.4", transport: "lan", refresh: nil, now: now) == .key)
    }

    /// A captured announcement older than the last one checked is a replay: dropped unchecked,
    /// whatever its payload, so replaying a peer's past announcements spends none of its allowance.
    @Test func anOlderAnnouncementIsAReplay() {
        var limits = FloodLimits(now: 0)
        let bob = Self.key(7)
        limits.accepted(bob, transport: "lan", interval: 5, payload: 1, timestamp: 10_000, sequence: 9, isRefresh: true, now: 10)
        for (timestamp, sequence) in [(9_000, 8), (10_000, 8), (5_000, 1)] as [(UInt64, UInt32)] {
            #expect(limits.admit(sender: bob, source: "lan 198.18.0.66", transport: "lan", refresh: (timestamp, sequence, 2), now: 30) == .duplicate)
        }
        #expect(limits.admit(sender: bob, source: "lan 198.18.0.2", transport: "lan", refresh: (30_000, 10, 1), now: 30) == nil)
    }

    /// 300 hosts send fresh keys at twice their allowance (12,000 a second, of which 6,000 within
    /// the hosts' allowances: six times the new keys' budget of 1,000). Once half the budget is
    /// gone only hosts that kept within their own allowance get the rest. An honest newcomer,
    /// announcing every 5 s, is checked every time; the flood gets about the budget.
    @Test func theNewKeysBudgetLeavesRoomForAnHonestNewcomer() {
        var limits = FloodLimits(now: 0)
        var flooded = 0, honest = 0, honestTries = 0, next = 0
        var now = 0.0
        while now < 20 {
            for host in 0..<1_200 {
                next += 1
                if limits.admit(sender: Self.key(next), source: "lan 198.18.1.\(host % 300)", transport: "lan", refresh: nil, now: now) == nil {
                    flooded += 1
                }
            }
            if now.truncatingRemainder(dividingBy: 5) < 0.05 {
                honestTries += 1
                next += 1
                if limits.admit(sender: Self.key(next), source: "lan 198.18.0.2", transport: "lan", refresh: nil, now: now) == nil { honest += 1 }
            }
            now += 0.1
        }
        #expect(honest == honestTries)
        // 20 s at 1,000 a second, plus the budget and the hosts' bursts to begin with.
        #expect(flooded <= 20 * 1_000 + 2_000 + 300 * 60, "\(flooded)")
        #expect(flooded >= 20 * 1_000 / 2, "the flood is not refused outright either: \(flooded)")
    }

    /// A crowd of 500 hosts answering a newcomer within half a second, and a broker handing it a
    /// site of 1,000 at once: every answer is checked.
    @Test func honestCrowdsMeetNoLimit() {
        var limits = FloodLimits(now: 0)
        let answers = (0..<500).map { limits.admit(sender: Self.key($0), source: "lan 198.18.\($0 / 250).\($0 % 250 + 1)", transport: "lan",
                                                   refresh: nil, now: Double($0) / 1_000) }
        #expect(answers.allSatisfy { $0 == nil })
        let site = (0..<1_000).map { limits.admit(sender: Self.key(10_000 + $0), source: "broker \($0)", transport: "broker",
                                                  refresh: nil, now: 1) }
        #expect(site.allSatisfy { $0 == nil })
    }
}
