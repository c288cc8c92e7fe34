import Foundation
import Testing
@testable import Nearby

@Suite struct OutgoingQueueTests {
    func fragments(_ range: ClosedRange<UInt32>) -> [Fragment] {
        range.map { Fragment(sequence: $0, isLast: true, sentAt: 0, text: Data("m\($0)".utf8)) }
    }

    @Test func sendsAtOnceThenBacksOff() {
        var queue = OutgoingQueue()
        var queueTimer = RetransmissionTimer()
        queue.enqueue(fragments(1...1), message: 10, now: 0)
        let first = queue.due(now: 0, timing: &queueTimer)
        #expect(first.fragments.map(\.sequence) == [1] && first.sentThrough == 1)
        #expect(queue.due(now: 0.2, timing: &queueTimer).fragments.isEmpty)
        #expect(queue.due(now: 0.25, timing: &queueTimer).fragments.map(\.sequence) == [1])   // +0.25
        #expect(queue.due(now: 0.7, timing: &queueTimer).fragments.isEmpty)
        #expect(queue.due(now: 0.75, timing: &queueTimer).fragments.map(\.sequence) == [1])   // +0.5
        #expect(queue.due(now: 1.75, timing: &queueTimer).fragments.map(\.sequence) == [1])   // +1
        #expect(queue.due(now: 1.75, timing: &queueTimer).sentThrough == nil)
        for _ in 0..<10 { _ = queue.due(now: 1_000, timing: &queueTimer) }
        #expect(queue.due(now: 1_003.9, timing: &queueTimer).fragments.isEmpty)               // Capped at 4 s.
        #expect(queue.due(now: 1_004, timing: &queueTimer).fragments.count == 1)
    }

    /// An outbox loaded when its peer comes back, all at once: what is queued already is left
    /// as it is, the rest added in order, whatever order it came in.
    @Test func anOutboxIsQueuedAtOnceInOrderWithoutDuplicates() {
        var queue = OutgoingQueue()
        var timer = RetransmissionTimer()
        queue.enqueue(fragments(3...4), message: 3, now: 0)
        _ = queue.due(now: 0, timing: &timer)  // 3 and 4 went once.
        queue.enqueue([(fragments(5...5), 5), (fragments(1...2), 1), (fragments(3...4), 3), (fragments(6...6), 6)], now: 1)
        #expect(queue.entries.map(\.fragment.sequence) == [1, 2, 3, 4, 5, 6])
        #expect(queue.entries.map(\.attempts) == [0, 0, 1, 1, 0, 0])
        // Ten thousand at once, mostly queued already: one pass, not one each.
        var big = OutgoingQueue()
        big.enqueue(fragments(1...10_000), message: 1, now: 0)
        big.enqueue((1...10_000).map { (fragments($0...$0), Int64($0)) } + [(fragments(10_001...10_001), 10_001)], now: 0)
        #expect(big.entries.count == 10_001 && big.entries.last?.fragment.sequence == 10_001)
    }

    /// How far first sends reach is the end of the last message begun, even past the window:
    /// the message counts as sent once any of it went.
    @Test func firstSendsReachTheEndOfTheLastMessageBegun() {
        var queue = OutgoingQueue()
        var queueTimer = RetransmissionTimer()
        let window = UInt32(OutgoingQueue.window)
        for sequence in 1..<window { queue.enqueue(fragments(sequence...sequence), message: Int64(sequence), now: 0) }
        let long = (window...window + 2).map { Fragment(sequence: $0, isLast: $0 == window + 2, sentAt: 0, text: Data("x".utf8)) }
        queue.enqueue(long, message: Int64(window), now: 0)
        let due = queue.due(now: 0, timing: &queueTimer)
        #expect(due.fresh.last?.sequence == window && due.sentThrough == window + 2)
        #expect(queue.due(now: 0, timing: &queueTimer).sentThrough == nil)  // Nothing went for the first time.
    }

    @Test func onlyTheWindowIsInFlight() {
        var queue = OutgoingQueue()
        var queueTimer = RetransmissionTimer()
        let window = UInt32(OutgoingQueue.window)
        queue.enqueue(fragments(1...window + 36), message: 1, now: 0)
        #expect(queue.due(now: 0, timing: &queueTimer).fragments.map(\.sequence) == Array(1...window))
        queue.acknowledge(upTo: 10, now: 0, timing: &queueTimer)
        #expect(queue.due(now: 0.01, timing: &queueTimer).fragments.map(\.sequence) == Array(window + 1...window + 10))
        queue.acknowledge(upTo: window + 36, now: 0, timing: &queueTimer)
        #expect(queue.isEmpty)
    }

    /// A window that went unacknowledged goes again only in part, the oldest first; the rest
    /// when the acknowledgements bring it among the oldest.
    @Test func onlyTheOldestGoAgain() {
        var queue = OutgoingQueue()
        var queueTimer = RetransmissionTimer()
        let window = UInt32(OutgoingQueue.window), limit = UInt32(OutgoingQueue.resendLimit)
        queue.enqueue(fragments(1...window), message: 1, now: 0)
        #expect(queue.due(now: 0, timing: &queueTimer).fresh.count == Int(window))
        #expect(queue.nextDue == 0.25)
        #expect(queue.due(now: 0.25, timing: &queueTimer).repeated.map(\.sequence) == Array(1...limit))
        #expect(queue.nextDue == 0.75)  // The others are not due while they wait their turn.
        queue.acknowledge(upTo: 10, now: 0.25, timing: &queueTimer)
        #expect(queue.nextDue == 0.25)
        #expect(queue.due(now: 0.3, timing: &queueTimer).repeated.map(\.sequence) == Array(limit + 1...limit + 10))
    }

    /// The first delay before a fragment goes again follows the round trips measured (a slow
    /// broker's), with room for their variation; a near peer's keep the quickest delay, and an
    /// answer to a fragment that went twice, or went before the peer was away, measures nothing.
    @Test func theDelayFollowsTheMeasuredRoundTrip() {
        var queue = OutgoingQueue()
        var queueTimer = RetransmissionTimer()
        queue.sendAlone(1, at: 0, timing: &queueTimer)
        queue.acknowledge(upTo: 1, now: 0.6, timing: &queueTimer)
        #expect(queueTimer.delay == 0.6 + 4 * 0.3)
        queue.sendAlone(2, at: 1, timing: &queueTimer)
        #expect(queue.nextDue == 1 + 1.8)

        var near = OutgoingQueue()
        var nearTimer = RetransmissionTimer()
        for sequence in UInt32(1)...20 {
            near.sendAlone(sequence, at: Double(sequence), timing: &nearTimer)
            near.acknowledge(upTo: sequence, now: Double(sequence) + 0.001, timing: &nearTimer)
        }
        #expect(nearTimer.delay == OutgoingQueue.initialBackoff)

        var resent = OutgoingQueue()
        var resentTimer = RetransmissionTimer()
        resent.sendAlone(1, at: 0, timing: &resentTimer)
        _ = resent.due(now: 0.25, timing: &resentTimer)
        resent.acknowledge(upTo: 1, now: 3, timing: &resentTimer)
        #expect(resentTimer.delay == 2 * OutgoingQueue.initialBackoff)  // As its timeout left it.

        var away = OutgoingQueue()  // Its answer after the peer was out of reach measures nothing.
        var awayTimer = RetransmissionTimer()
        away.sendAlone(1, at: 0, timing: &awayTimer)
        away.restart(now: 60)
        away.acknowledge(upTo: 1, now: 60.001, timing: &awayTimer)
        #expect(awayTimer.delay == OutgoingQueue.initialBackoff)

        var slow = OutgoingQueue()
        var slowTimer = RetransmissionTimer()
        slow.sendAlone(1, at: 0, timing: &slowTimer)
        slow.acknowledge(upTo: 1, now: 3, timing: &slowTimer)
        #expect(slowTimer.delay == OutgoingQueue.maximumBackoff)
    }

    /// A timeout doubles the delay for what goes next, until a round trip is measured again:
    /// through a slow broker, new fragments no longer go twice each.
    @Test func aTimeoutDoublesTheDelayUntilARoundTripIsMeasured() {
        var queue = OutgoingQueue()
        var queueTimer = RetransmissionTimer()
        queue.sendAlone(1, at: 0, timing: &queueTimer)
        #expect(queue.due(now: 0.25, timing: &queueTimer).repeated.map(\.sequence) == [1])
        #expect(queueTimer.delay == 0.5)
        queue.sendAlone(2, at: 0.3, timing: &queueTimer)
        #expect(queue.due(now: 0.6, timing: &queueTimer).fragments.isEmpty)  // It waits the doubled delay.
        queue.acknowledge(upTo: 2, now: 0.65, timing: &queueTimer)  // Covers one that went again: measures nothing.
        #expect(queueTimer.delay == 0.5)
        queue.sendAlone(3, at: 1, timing: &queueTimer)
        queue.acknowledge(upTo: 3, now: 1.01, timing: &queueTimer)
        #expect(queueTimer.delay == OutgoingQueue.initialBackoff)
    }

    @Test func aReturningPeerGetsEverythingAtOnce() {
        var queue = OutgoingQueue()
        var queueTimer = RetransmissionTimer()
        queue.enqueue(fragments(1...3), message: 1, now: 0)
        for t in [0.0, 0.25, 0.75, 1.75] { _ = queue.due(now: t, timing: &queueTimer) }
        #expect(queue.due(now: 2, timing: &queueTimer).fragments.isEmpty)
        queue.restart(now: 2)
        #expect(queue.due(now: 2, timing: &queueTimer).fragments.count == 3)
        queue.enqueue(fragments(2...4), message: 2, now: 2)  // Duplicates are ignored.
        #expect(queue.entries.map(\.fragment.sequence) == [1, 2, 3, 4])
    }

    /// A peer reads packets of several once it has acknowledged a fragment that only ever went
    /// in one; a fragment that also went alone, or only alone, proves nothing.
    @Test func aPeerReadsBundlesOnceItHasOneOnlyABundleCarried() {
        var queue = OutgoingQueue()
        var queueTimer = RetransmissionTimer()
        queue.sendAlone(1, at: 0, timing: &queueTimer)
        queue.acknowledge(upTo: 1, now: 0.01, timing: &queueTimer)
        #expect(!queue.peerReadsBundles)

        queue.enqueue(fragments(2...4), message: 2, now: 1)
        _ = queue.due(now: 1, timing: &queueTimer)
        queue.wentBundled([2, 3])
        #expect(queue.due(now: 1.25, timing: &queueTimer).repeated.map(\.sequence) == [2, 3, 4])  // Alone, this time.
        queue.acknowledge(upTo: 4, now: 1.3, timing: &queueTimer)
        #expect(!queue.peerReadsBundles)

        queue.enqueue(fragments(5...6), message: 3, now: 2)
        _ = queue.due(now: 2, timing: &queueTimer)
        queue.wentBundled([5, 6])
        queue.acknowledge(upTo: 5, now: 2.01, timing: &queueTimer)
        #expect(queue.peerReadsBundles)

        // Its second and third copies go together; later ones alone, in case it changed.
        var copies: [(together: [UInt32], alone: [UInt32])] = []
        for now in [3.0, 10, 20, 30] {
            let due = queue.due(now: now, timing: &queueTimer)
            copies.append((due.repeatedTogether.map(\.sequence), due.repeated.map(\.sequence)))
        }
        #expect(copies.map(\.together) == [[6], [6], [], []])
        #expect(copies.map(\.alone) == [[], [], [6], [6]])
    }
}

@Suite struct IncomingAssemblerTests {
    func fragment(_ sequence: UInt32, _ text: String, last: Bool = true) -> Fragment {
        Fragment(sequence: sequence, isLast: last, sentAt: UInt64(sequence), text: Data(text.utf8))
    }

    @Test func inOrderExactlyOnce() {
        var assembler = IncomingAssembler(delivered: 0)
        #expect(assembler.receive(fragment(1, "a")) == .messages([AssembledMessage(text: "a", firstSequence: 1, lastSequence: 1, sentAt: 1)]))
        #expect(assembler.receive(fragment(1, "a")) == .duplicate)
        #expect(assembler.delivered == 1)
    }

    @Test func outOfOrderIsHeldBack() {
        var assembler = IncomingAssembler(delivered: 0)
        #expect(assembler.receive(fragment(3, "c")) == .buffered)
        #expect(assembler.receive(fragment(2, "b")) == .buffered)
        #expect(assembler.delivered == 0)
        guard case .messages(let messages) = assembler.receive(fragment(1, "a")) else { Issue.record("nothing out"); return }
        #expect(messages.map(\.text) == ["a", "b", "c"])
        #expect(assembler.delivered == 3)
    }

    @Test func fragmentsMakeOneMessageAndTheAckWaitsForTheLast() {
        var assembler = IncomingAssembler(delivered: 4)
        #expect(assembler.receive(fragment(5, "hel", last: false)) == .buffered)
        #expect(assembler.delivered == 4)  // Not acknowledged until whole.
        #expect(assembler.receive(fragment(7, "!")) == .buffered)
        guard case .messages(let messages) = assembler.receive(fragment(6, "lo")) else { Issue.record("nothing out"); return }
        #expect(messages == [AssembledMessage(text: "hello", firstSequence: 5, lastSequence: 6, sentAt: 5),
                             AssembledMessage(text: "!", firstSequence: 7, lastSequence: 7, sentAt: 7)])
        #expect(assembler.delivered == 7)
    }

    @Test func farAheadIsRefused() {
        var assembler = IncomingAssembler(delivered: 0)
        #expect(assembler.receive(fragment(2_000, "x")) == .outOfWindow)
    }

    /// A thousand fragments, shuffled and with duplicates, come out once each and in order.
    @Test func shuffledWithDuplicates() {
        var assembler = IncomingAssembler(delivered: 0)
        var arrivals = (1...1_000).map { fragment(UInt32($0), "\($0)") }
        arrivals += arrivals.filter { $0.sequence % 7 == 0 }
        let seed = UInt64.random(in: 0...UInt64.max)
        var rng = SeededRandom(seed: seed)
        var delivered: [String] = []
        for chunk in stride(from: 0, to: arrivals.count, by: 50) {
            var window = Array(arrivals[chunk..<min(chunk + 50, arrivals.count)])
            window.shuffle(using: &rng)
            for piece in window {
                if case .messages(let messages) = assembler.receive(piece) { delivered += messages.map(\.text) }
            }
        }
        #expect(delivered == (1...1_000).map(String.init), "seed \(seed)")
    }
}

extension OutgoingQueue {
    /// Fragment `sequence`, a message of its own, queued and sent at `now`.
    mutating func sendAlone(_ sequence: UInt32, at now: Double, timing timer: inout RetransmissionTimer) {
        enqueue([Fragment(sequence: sequence, isLast: true, sentAt: 0, text: Data("m\(sequence)".utf8))], message: Int64(sequence), now: now)
        _ = due(now: now, timing: &timer)
    }
}
