import Crypto
import Foundation
import Testing
@testable import Nearby

/// A generator that always gives the same middle value: jitter becomes predictable.
struct FixedRandom: RandomNumberGenerator {
    var value: UInt64
    mutating func next() -> UInt64 { value }
}

@Suite struct ScheduleTests {
    @Test func announcesAtOnceThenAfterTheGapThenEveryInterval() {
        var rng = FixedRandom(value: UInt64.max / 2)  // Jitter of about zero.
        var schedule = AnnounceSchedule(timing: PresenceTiming(interval: 5, jitter: 0.2, startupGap: 1), now: 100)
        #expect(schedule.isDue(now: 100, using: &rng))
        #expect(!schedule.isDue(now: 100.9, using: &rng))
        #expect(schedule.isDue(now: 101, using: &rng))
        #expect(!schedule.isDue(now: 105.9, using: &rng))
        #expect(schedule.isDue(now: 106.01, using: &rng))
        schedule.announceSoon(now: 107)
        #expect(schedule.isDue(now: 107, using: &rng))
    }

    @Test func jitterStaysWithinItsBounds() {
        let seed = UInt64.random(in: 0...UInt64.max)
        var rng = SeededRandom(seed: seed)
        var gaps: [Double] = []
        var schedule = AnnounceSchedule(timing: PresenceTiming(interval: 5, jitter: 0.2), now: 0)
        var now = 0.0
        _ = schedule.isDue(now: now, using: &rng)
        now = schedule.nextAt
        _ = schedule.isDue(now: now, using: &rng)
        for _ in 0..<500 {
            let last = now
            now = schedule.nextAt
            #expect(schedule.isDue(now: now, using: &rng))
            gaps.append(now - last)
        }
        #expect(gaps.allSatisfy { (4.0...6.0).contains($0) }, "seed \(seed)")
        #expect(Set(gaps.map { Int($0 * 10) }).count > 5, "seed \(seed)")  // Really spread out.
    }
}

@Suite struct PresenceTableTests {
    let alice = Curve25519.Signing.PrivateKey()
    let timing = PresenceTiming(interval: 5)

    func announce(_ plane: UInt8 = 0, name: String = "alice", at timestamp: UInt64, sequence: UInt32 = 0,
                  interval: UInt32 = 5000) -> Heard {
        Heard.announce(alice, name: name, plane: plane, at: timestamp, sequence: sequence, interval: interval, avatar: .emoji("👻"))
    }

    @Test func arrivalChangeAndGoodbye() {
        var table = PresenceTable(timing: timing)
        guard case .arrived(let peer)? = table.receive(announce(at: 1), from: Route(transport: "lan", address: "198.18.0.2"), now: 0).first else {
            Issue.record("no arrival"); return
        }
        #expect(peer.handle == "alice#" + PeerIdentity.fingerprint(of: alice.publicKey.rawRepresentation))
        #expect(table.receive(announce(at: 2), from: Route(transport: "lan", address: "198.18.0.2"), now: 5).isEmpty)  // A refresh, nothing new.
        let change = table.receive(announce(3, at: 3), from: Route(transport: "lan", address: "198.18.0.2"), now: 6)
        guard case .changed(let from, let to)? = change.first else { Issue.record("no change"); return }
        #expect(from.announcement.plane == 0 && to.announcement.plane == 3)
        let goodbye = Heard.goodbye(alice, at: 4, sequence: 0)
        guard case .left(_, .goodbye)? = table.receive(goodbye, from: Route(transport: "lan", address: "198.18.0.2"), now: 7).first else {
            Issue.record("no goodbye"); return
        }
        #expect(table.peers.isEmpty)
    }

    @Test func replaysAndReorderedPacketsAreIgnored() {
        var table = PresenceTable(timing: timing)
        _ = table.receive(announce(at: 10, sequence: 5), from: Route(transport: "lan", address: "h"), now: 0)
        #expect(table.receive(announce(2, at: 10, sequence: 5), from: Route(transport: "lan", address: "h"), now: 1).isEmpty)  // Same packet again.
        #expect(table.receive(announce(2, at: 9, sequence: 9), from: Route(transport: "lan", address: "h"), now: 1).isEmpty)  // Older.
        #expect(table.peers.values.first?.announcement.plane == 0)
        let oldGoodbye = Heard.goodbye(alice, at: 5, sequence: 0)
        #expect(table.receive(oldGoodbye, from: Route(transport: "lan", address: "h"), now: 2).isEmpty)
        #expect(table.peers.count == 1)
    }

    @Test func expiryAfterThreeMissedRefreshes() {
        var table = PresenceTable(timing: timing)
        _ = table.receive(announce(at: 1), from: Route(transport: "lan", address: "h"), now: 100)
        #expect(table.expire(now: 100 + 15).isEmpty)    // Two missed: still here.
        #expect(table.expire(now: 100 + 17.4).isEmpty)
        guard case .left(_, .expired)? = table.expire(now: 100 + 17.6).first else { Issue.record("not expired"); return }
        #expect(table.peers.isEmpty)
    }

    /// A peer is heard on a transport while its refreshes come there on time: its interval
    /// and half again, not its whole lifetime.
    @Test func aPeerIsHeardOnATransportWhileItsRefreshesComeOnTime() {
        var table = PresenceTable(timing: timing)
        let key = alice.publicKey.rawRepresentation
        #expect(!table.hears(key, on: "lan", now: 100))
        _ = table.receive(announce(at: 1), from: Route(transport: "lan", address: "h"), now: 100)
        #expect(table.hears(key, on: "lan", now: 107.4))
        #expect(!table.hears(key, on: "lan", now: 107.6))  // Late: still listed, but an answer of its is read.
        #expect(table.peers.count == 1)
        #expect(!table.hears(key, on: "broker", now: 100))
    }

    @Test func expiryFollowsThePeersOwnInterval() {
        var table = PresenceTable(timing: timing)
        _ = table.receive(announce(at: 1, interval: 200), from: Route(transport: "lan", address: "h"), now: 0)  // A fast peer: 0.2 s.
        #expect(table.expire(now: 0.6).isEmpty)
        #expect(table.expire(now: 0.8).count == 1)
    }

    /// A refresh proof refreshes the route whose chain it follows, by the address that route
    /// was heard at, and nothing else: not a copy or an earlier link, not a forgery, not the
    /// right link from elsewhere. The link a signed announcement carries is no change.
    @Test func aProofRefreshesOnlyTheRouteWhoseChainItFollows() throws {
        var table = PresenceTable(timing: PresenceTiming())
        var chain = RefreshChain(length: 64)
        let lan = Route(transport: "lan", address: "198.18.0.7:41000"), broker = Route(transport: "broker", address: "k")
        var events = table.receive(Heard.announce(alice, at: 1, sequence: 1, chain: chain.head), from: lan, now: 0)
        #expect(events.count == 1)
        let peer = try #require(table.peer(alice.publicKey.rawRepresentation))
        #expect(peer.announcement.refreshChain == nil, "kept with the route, not the announcement")
        let signer = alice.publicKey.rawRepresentation
        let first = chain.next()!
        #expect(table.proved(first, of: signer, by: lan, now: 5) == .refreshed(interval: 5))
        #expect(table.peer(signer)?.routes[0].lastSeen == 5)
        #expect(table.proved(first, of: signer, by: lan, now: 6) == .repeated)
        let second = chain.next()!
        #expect(table.proved(second, of: signer, by: Route(transport: "lan", address: "198.18.0.8:47777"), now: 6) == .untracked,
                "from another host")
        #expect(table.proved(second, of: signer, by: broker, now: 6) == .untracked)
        var forged = second
        forged.value[31] ^= 0xFF
        #expect(table.proved(forged, of: signer, by: lan, now: 6) == .forged)
        #expect(table.proved(second, of: Data(repeating: 3, count: 32), by: lan, now: 6) == .untracked, "a key not in the table")
        #expect(table.peer(signer)?.routes[0].lastSeen == 5, "none of those refreshed it")
        for _ in 0..<20 { _ = chain.next() }
        #expect(table.proved(chain.head, of: signer, by: lan, now: 7) == .untracked, "too many links missed to hash back")
        // A signed announcement carries the link revealed last: no change, and proofs follow it.
        events = table.receive(Heard.announce(alice, at: 2, sequence: 2, chain: chain.head), from: lan, now: 8)
        #expect(events.isEmpty)
        // The multicast socket's port, where an answer's route had the unicast one's.
        #expect(table.proved(chain.next()!, of: signer, by: Route(transport: "lan", address: "198.18.0.7:47777"), now: 9)
                == .refreshed(interval: 5))
        #expect(table.peer(signer)?.routes[0].source == lan, "the route stays where it was")
        #expect(table.expire(now: 9 + 17).isEmpty && table.expire(now: 9 + 18).count == 1, "3.5 intervals after the last proof")
    }

    /// A signed announcement on a chain begun again says the peer restarted (its sessions are
    /// gone); one overtaken by a later proof (an older link of the same chain) does not.
    @Test func aNewChainIsARestartAndAnOvertakenLinkIsNot() throws {
        var table = PresenceTable(timing: PresenceTiming())
        var chain = RefreshChain(length: 64)
        let lan = Route(transport: "lan", address: "198.18.0.7:41000")
        let signer = alice.publicKey.rawRepresentation
        _ = table.receive(Heard.announce(alice, at: 1, sequence: 1, chain: chain.head), from: lan, now: 0)
        _ = chain.next()
        let signedAt = chain.head  // Carried by a signed announcement that a proof overtakes.
        #expect(table.proved(chain.next()!, of: signer, by: lan, now: 5) == .refreshed(interval: 5))
        #expect(table.receive(Heard.announce(alice, at: 2, sequence: 2, chain: signedAt), from: lan, now: 6).isEmpty)
        // Killed and started again: a new chain, from its link 0.
        let fresh = RefreshChain(length: 64)
        let events = table.receive(Heard.announce(alice, at: 3, sequence: 1, chain: fresh.head), from: lan, now: 7)
        #expect(events.count == 1 && { if case .restarted = events[0] { true } else { false } }(), "\(events)")
    }
}
