import Crypto
import Foundation
import Synchronization
import TestWorld
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
    /// (one signed answer, sent to each newcomer who asked before it went), and no member hears
    /// an answer meant for the newcomers; each newcomer lists everyone.
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
        let redundant = nodes.map(\.service.statistics.redundant)
        let newcomers = try (0..<5).map { try crowd.join("new\($0)") }
        crowd.advance(by: 1)
        #expect(newcomers.allSatisfy { $0.service.peers().count == 44 })
        // 40 members answer once, to five; newcomers hearing each other's queries answer too.
        #expect(answers.withLock { $0 } <= 40 * 5 + 5 * 4, "\(answers.withLock { $0 }) answers")
        #expect(nodes.map(\.service.statistics.redundant) == redundant, "no member heard an answer")
    }

    /// 40 shells whose link carries 2 refreshes a second (the budget scaled down with the crowd,
    /// so the test stays small): each refreshes every 20 s, not every second; the group sends
    /// about 2 a second; nobody expires anyone; a newcomer lists all 40 within a second.
    @Test func aCrowdRefreshesWithinTheBudgetAndNobodyExpires() throws {
        let crowd = DeterministicEngineTests.Crowd()
        crowd.timing = PresenceTiming(interval: 1, jitter: 0.2, startupGap: 0.5, linkBudget: 2)
        let announcements = Mutex(0), proofs = Mutex(0)
        crowd.network.setLoss { bytes in
            if Self.isRefresh(bytes) { announcements.withLock { $0 += 1 } }
            if Self.isProof(bytes) { proofs.withLock { $0 += 1 } }
            return false
        }
        let nodes = try (0..<40).map { try crowd.join("p\($0)") }
        crowd.advance(by: 2)
        #expect(nodes.allSatisfy { $0.service.peers().count == 39 })
        // Past the first refreshes at a second's interval, each takes the crowd's.
        crowd.advance(by: 30)
        announcements.withLock { $0 = 0 }
        proofs.withLock { $0 = 0 }
        crowd.advance(by: 120)
        let rate = Double(announcements.withLock { $0 }) / 120
        #expect(rate > 1.2 && rate < 2.6, "\(rate) refreshes a second")
        // Nothing changed: three refreshes in four were the next link of their sender's chain,
        // no signature (every fourth is signed, for whoever lost track).
        let share = Double(proofs.withLock { $0 }) / Double(announcements.withLock { $0 })
        #expect(share >= 0.6 && share <= 0.9, "\(share) of the refreshes proofs")
        #expect(nodes.allSatisfy { $0.service.statistics.proved > 0 && $0.service.statistics.dropped.isEmpty })
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

    /// A refresh on a link: an announcement that answers nobody, or a refresh proof.
    static func isRefresh(_ bytes: [UInt8]) -> Bool {
        isProof(bytes) || (bytes.count > 5 && bytes[5] == KindTable.announce && UncheckedHeader(bytes)?.flags.contains(.answer) == false)
    }

    static func isProof(_ bytes: [UInt8]) -> Bool { bytes.count > 5 && bytes[4] == SessionWire.version && bytes[5] == KindTable.refreshProof }

    /// Counts the announcements (and refresh proofs) each network carries (a broker's
    /// withdrawals apart).
    final class Announcements: Sendable {
        private let counts = Mutex<[String: Int]>([:])
        init(_ crowd: DeterministicEngineTests.Crowd) {
            for (name, network) in crowd.world.networks {
                network.setLoss { [self] bytes in
                    if bytes.count > 5, bytes[5] == KindTable.announce || CrowdTests.isProof(bytes) {
                        self.counts.withLock { $0[name, default: 0] += 1 }
                    }
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

    /// Broker-only peers idle for five hours: each publishes once every ten minutes (as it
    /// advertises), and nobody expires anyone, though a broker's copy lasts only 1.25 of its
    /// intervals (an older one is no live client's).
    @Test func aKeptAnnouncementIsPublishedAgainEveryTenMinutes() throws {
        let crowd = DeterministicEngineTests.Crowd(networks: ["broker"], keeping: ["broker"])
        let counted = Announcements(crowd)
        let nodes = try ["ann", "ben"].map { try crowd.join($0, on: ["broker"]) }
        crowd.advance(by: 1)
        counted.reset()
        crowd.advance(by: 5 * 3_600)
        #expect(counted["broker"] == 2 * 5 * 6)
        #expect(nodes.allSatisfy { $0.service.peers().count == 1 && $0.events.all.count == 1 })
        let interval = try #require(nodes[0].service.peers().first?.announcement.intervalMilliseconds)
        #expect(interval == 600_000)
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

    /// A crowd reduced to what the link carries of it, for crowds too large for an engine each
    /// on the in-memory network (every frame would be checked by every member): each member
    /// announces on the program's own schedule (`AnnounceSchedule`, with the interval
    /// `PresenceTiming` gives among the members present, as on a LAN where everyone hears
    /// everyone), signed frames advertising that interval, until it falls silent. The engines
    /// the test watches are real.
    final class SimulatedCrowd: @unchecked Sendable {
        // Safe to send: `members` and `sent` are touched only on `queue`, where the scheduler runs
        // every timer of the crowd, and by the test while the scheduler is still.
        struct Member {
            let signer = Curve25519.Signing.PrivateKey()
            var schedule: AnnounceSchedule
            var sequence: UInt32 = 0
            var silent = false
            var random: SeededRandom
        }

        let network: MemoryNetwork
        let scheduler: ManualScheduler
        let timing: PresenceTiming
        let queue = DispatchQueue(label: "simulated crowd")
        private(set) var members: [Member] = []
        /// Announcements sent, all members together.
        private(set) var sent = 0
        /// The others present besides the crowd (the real engines).
        let others: Int

        init(_ world: World, timing: PresenceTiming, others: Int) {
            network = world.network
            scheduler = world.scheduler
            self.timing = timing
            self.others = others
        }

        var present: Int { members.count { !$0.silent } }

        /// `count` more members, each coming online at a random moment of the next `within` seconds.
        func arrive(_ count: Int, within: Double, seed: UInt64 = 7) {
            var random = SeededRandom(seed: seed)
            for _ in 0..<count {
                let index = members.count
                let at = Double.random(in: 0...within, using: &random)
                members.append(Member(schedule: AnnounceSchedule(timing: timing, now: scheduler.now + at),
                                      random: SeededRandom(seed: random.next())))
                scheduler.after(at, on: queue) { [self] in tick(index) }
            }
        }

        /// The first `count` members stop announcing, without a goodbye.
        func silence(_ count: Int) { for index in 0..<count { members[index].silent = true } }

        func resetCount() { sent = 0 }

        private func tick(_ index: Int) {
            guard !members[index].silent else { return }
            let now = scheduler.now
            let interval = timing.interval(amongPeers: present + others - 1)
            var member = members[index]
            defer { members[index] = member }
            if member.schedule.isDue(now: now, interval: interval, using: &member.random) {
                member.sequence += 1
                let announcement = Announcement(name: "m\(index)", agreementKey: Data(repeating: 1, count: 32), plane: 0, avatar: .none,
                                                unicastPort: 1, intervalMilliseconds: UInt32(interval * 1000))
                let frame = try! Packet.encode(announcement, signer: member.signer, timestamp: UInt64(now * 1000),
                                               sequence: member.sequence)
                sent += 1
                network.inject(frame, from: "m\(index)", by: "memory")
            }
            scheduler.after(max(member.schedule.nextAt - now, 0.001), on: queue) { [self] in tick(index) }
        }
    }

    /// 1,000 on one link, at the program's own budget of 20 announcements a second: an engine
    /// among 999 others stretches its interval to 50 s and advertises it; over ten minutes the
    /// link carries about 20 a second (not the 200 of a 5 s refresh); the engine lists everyone
    /// and expires nobody. When 900 fall silent it lets them go 3.5 of their intervals after
    /// each was last heard, and refreshes sooner again.
    @Test func aThousandOnOneLinkStayWithinTheBudget() throws {
        let world = World()
        let timing = PresenceTiming()
        let observer = DeterministicEngineTests.Node("observer", network: world.network, scheduler: world.scheduler, timing: timing)
        try observer.service.start()
        defer { observer.service.stop() }
        let ownAnnouncements = Mutex<[UInt32]>([]), ownProofs = Mutex(0)
        world.network.setLoss { bytes in
            if Self.isProof(bytes) { ownProofs.withLock { $0 += 1 } }
            if bytes.count > 5, bytes[5] == KindTable.announce, let packet = try? Packet.decode(bytes),
               let announcement = try? packet.read(Announcement.self) {
                ownAnnouncements.withLock { $0.append(announcement.intervalMilliseconds) }
            }
            return false
        }
        let crowd = SimulatedCrowd(world, timing: timing, others: 1)
        world.scheduler.after(0, on: crowd.queue) { crowd.arrive(999, within: 10) }
        world.step(60)
        #expect(observer.service.peers().count == 999)

        world.scheduler.after(0, on: crowd.queue) { crowd.resetCount() }
        ownAnnouncements.withLock { $0 = [] }
        ownProofs.withLock { $0 = 0 }
        world.step(600)
        let rate = Double(crowd.queue.sync { crowd.sent } + ownAnnouncements.withLock { $0.count } + ownProofs.withLock { $0 }) / 600
        #expect((11...13).contains(ownProofs.withLock { $0 } + ownAnnouncements.withLock { $0.count }), "one refresh every 50 s")
        #expect((8...10).contains(ownProofs.withLock { $0 }), "three in four of them proofs")
        #expect(rate > 15 && rate < 25, "\(rate) announcements a second on the link")
        #expect(ownAnnouncements.withLock { $0 }.allSatisfy { $0 == 50_000 }, "the observer's interval among 999: 50 s")
        #expect(observer.service.peers().count == 999)
        #expect(!observer.events.all.contains { $0.hasPrefix("-") }, "nobody expired")

        world.scheduler.after(0, on: crowd.queue) { crowd.silence(900) }
        world.step(0)
        // Each was last heard at most 1.2 intervals (60 s) before: none goes within 175 − 60 s;
        // all within 175 s.
        world.step(110)
        #expect(observer.service.peers().count == 999, "still everyone")
        world.step(175 + 1 - 110)
        #expect(observer.service.peers().count == 99)
        ownAnnouncements.withLock { $0 = [] }
        world.step(10)
        #expect(ownAnnouncements.withLock { $0 }.contains(5_000), "among 99 the observer refreshes every 5 s again")
    }

    /// The table holds 4,096 peers: full of established ones (each heard twice), 1,000 more keys
    /// heard once evict one another, the stalest first, and never an established peer.
    @Test func aFullTableOf4096KeepsItsEstablishedPeers() {
        var table = PresenceTable(timing: PresenceTiming())
        #expect(table.capacity == 4_096)
        let lan = Route(transport: "lan", address: "h")
        let established = (0..<4_096).map { _ in Curve25519.Signing.PrivateKey() }
        for (index, key) in established.enumerated() {
            _ = table.receive(Heard.announce(key, at: 1, sequence: 1), from: lan, now: Double(index) / 1_000)
            _ = table.receive(Heard.announce(key, at: 2, sequence: 2), from: lan, now: 5 + Double(index) / 1_000)
        }
        var evicted: [Data] = []
        let newcomers = (0..<1_000).map { _ in Curve25519.Signing.PrivateKey() }
        for (index, key) in newcomers.enumerated() {
            for event in table.receive(Heard.announce(key, at: 3, sequence: 1), from: lan, now: 10 + Double(index) / 1_000) {
                if case .left(let peer, .evicted) = event { evicted.append(peer.signingKey) }
            }
        }
        #expect(table.peers.count == 4_096)
        // The first newcomer took the stalest established peer's place (the table held no one
        // heard once); every later one evicted the newcomer before it.
        #expect(evicted.first == established[0].publicKey.rawRepresentation)
        #expect(Array(evicted.dropFirst()) == newcomers.dropLast().map(\.publicKey.rawRepresentation))
        #expect(established.dropFirst().allSatisfy { table.peer($0.publicKey.rawRepresentation) != nil })
    }
}
