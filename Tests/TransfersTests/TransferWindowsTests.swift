import Nearby
import Runtime
import Testing
@testable import Transfers

/// The two ends of a transfer as pure values: what goes, what is written, on a manual clock.
@Suite struct TransferWindowsTests {
    static func chunk(_ index: Int, count: Int, chunkSize: Int, size: Int) -> [UInt8] {
        [UInt8](repeating: UInt8(index % 251), count: index == count - 1 ? size - chunkSize * (count - 1) : chunkSize)
    }

    /// 1,000 chunks through 10 % loss both ways, duplicates and reordering: every chunk is
    /// written once, in order, and no more than a window is ever in flight past what was stored.
    @Test(arguments: [1, 2, 3] as [UInt64])
    func everyChunkIsWrittenOnceInOrderThroughLoss(seed: UInt64) {
        var random = SeededRandom(seed: seed)
        let (count, chunkSize) = (1_000, 10)
        let size = count * chunkSize - 3
        var sender = SendWindow(count: count)
        var senderTimer = RetransmissionTimer()
        var receiver = ReceiveWindow(count: count, chunkSize: chunkSize, size: size)
        var written: [[UInt8]] = []
        var chunksInFlight: [(at: Double, index: Int)] = []
        var acksInFlight: [(at: Double, stored: Int, held: [UInt64])] = []
        var now = 0.0, sent = 0, highestSent = -1
        while !sender.isComplete && now < 120 {
            now += 0.001
            for index in sender.due(now: now, timing: &senderTimer) {
                sent += 1
                highestSent = max(highestSent, index)
                #expect(index < sender.stored + SendWindow.size)
                guard Double.random(in: 0..<1, using: &random) >= 0.1 else { continue }
                chunksInFlight.append((now + Double.random(in: 0.001...0.005, using: &random), index))
                if Double.random(in: 0..<1, using: &random) < 0.05 { chunksInFlight.append((now + 0.006, index)) }
            }
            let arrived = chunksInFlight.filter { $0.at <= now }
            chunksInFlight.removeAll { $0.at <= now }
            guard !arrived.isEmpty else { continue }
            for (_, index) in arrived { _ = receiver.take(index, Self.chunk(index, count: count, chunkSize: chunkSize, size: size)) }
            written += receiver.unwritten
            receiver.written()
            let ack = receiver.acknowledgement
            if Double.random(in: 0..<1, using: &random) >= 0.1 { acksInFlight.append((now + 0.002, ack.stored, ack.held)) }
            for ack in acksInFlight where ack.at <= now { sender.acknowledged(stored: ack.stored, held: ack.held, now: now, timing: &senderTimer) }
            acksInFlight.removeAll { $0.at <= now }
        }
        #expect(sender.isComplete && receiver.isComplete)
        #expect(written == (0..<count).map { Self.chunk($0, count: count, chunkSize: chunkSize, size: size) })
        // Loss costs resends, not a resend of everything.
        #expect(sent < count * 3 / 2, "\(sent) chunks sent for \(count)")
    }

    /// An acknowledgement that arrives late says less than one before it: nothing goes back.
    @Test func aLateAcknowledgementChangesNothing() {
        var sender = SendWindow(count: 100)
        var senderTimer = RetransmissionTimer()
        _ = sender.due(now: 0, timing: &senderTimer)
        let forward = sender.acknowledged(stored: 50, held: [0], now: 0.01, timing: &senderTimer)
        let back = sender.acknowledged(stored: 20, held: [0b111], now: 0.02, timing: &senderTimer)
        let beyond = sender.acknowledged(stored: 101, held: [0], now: 0.03, timing: &senderTimer)  // More than there is.
        #expect(forward && !back && !beyond && sender.stored == 50)
    }

    /// A hole below chunks the receiver holds goes again once a round trip has passed, not the
    /// chunks it holds; with no news at all, the oldest go again at the timeout.
    @Test func holesGoAgainAndWhatIsHeldDoesNot() {
        var sender = SendWindow(count: 10)
        var senderTimer = RetransmissionTimer()
        senderTimer.measure(0.05)  // The peer's round trip, as its messages measured it (`PeerTiming`).
        let first = sender.due(now: 0, timing: &senderTimer)
        #expect(first == Array(0..<10))
        // The receiver stored 0–2, lacks 3, holds 4–9.
        sender.acknowledged(stored: 3, held: [0b111111], now: 0.2, timing: &senderTimer)
        let hole = sender.due(now: 0.2, timing: &senderTimer), next = sender.due(now: 0.21, timing: &senderTimer)
        #expect(hole == [3] && next.isEmpty)
        sender.acknowledged(stored: 10, held: [0], now: 0.3, timing: &senderTimer)
        #expect(sender.isComplete && sender.deadline(timing: senderTimer) == nil)
        var silent = SendWindow(count: 3)
        var silentTimer = RetransmissionTimer()
        _ = silent.due(now: 0, timing: &silentTimer)
        let early = silent.due(now: 0.01, timing: &silentTimer)
        let late = silent.due(now: silent.deadline(timing: silentTimer)!, timing: &silentTimer)
        #expect(early.isEmpty && late == [0, 1, 2])
    }

    /// A receiver killed and started again has lost the chunks it held in memory past a hole:
    /// its next acknowledgement does not mark them, and they go again at the timeout, the hole
    /// first (the sender kept them as held, and the transfer waited for ever).
    @Test func whatAReceiverNoLongerHoldsGoesAgain() throws {
        var sender = SendWindow(count: 10)
        var senderTimer = RetransmissionTimer()
        senderTimer.measure(0.05)
        _ = sender.due(now: 0, timing: &senderTimer)
        // 0–2 stored, 3 lost, 4–9 held in memory.
        sender.acknowledged(stored: 3, held: [0b111111], now: 0.2, timing: &senderTimer)
        let hole = sender.due(now: 0.2, timing: &senderTimer)
        #expect(hole == [3])
        // Killed and started again: it stored 3 meanwhile, nothing past it.
        let news = sender.acknowledged(stored: 4, held: [0], now: 0.3, timing: &senderTimer)
        let atOnce = sender.due(now: 0.3, timing: &senderTimer)
        #expect(news && atOnce.isEmpty)
        // (Before, they stayed held: nothing was in flight, so there was no deadline at all.)
        let again = sender.due(now: try #require(sender.deadline(timing: senderTimer)), timing: &senderTimer)
        #expect(again == Array(4..<10))
        // A later acknowledgement marking some held again takes them out of flight.
        sender.acknowledged(stored: 4, held: [0b11], now: try #require(sender.deadline(timing: senderTimer)) - 0.001, timing: &senderTimer)
        let last = sender.due(now: try #require(sender.deadline(timing: senderTimer)) + 1e-9, timing: &senderTimer)
        #expect(last.contains(4) && !last.contains(5) && !last.contains(6), "\(last)")
    }

    /// A transfer that resumes starts from what the receiver stored.
    @Test func aResumedWindowStartsWhereTheReceiverStopped() {
        var sender = SendWindow(count: 2_000, from: 600)
        var senderTimer = RetransmissionTimer()
        let first = sender.due(now: 0, timing: &senderTimer)
        #expect(first.first == 600 && first.count == SendWindow.size)
    }

    /// What is not a chunk of this file is refused: a wrong length, an index out of the file
    /// or past the window; one had already is a duplicate.
    @Test func theReceiverTakesOnlyChunksOfTheFile() {
        var receiver = ReceiveWindow(count: 1_000, chunkSize: 10, size: 9_995)
        func take(_ index: Int, _ byte: UInt8, _ length: Int = 10) -> ReceiveWindow.Taken {
            receiver.take(index, [UInt8](repeating: byte, count: length))
        }
        #expect(take(0, 0, 9) == .invalid)
        #expect(take(1_000, 0) == .invalid)
        #expect(take(-1, 0) == .invalid)
        #expect(take(999, 0) == .invalid)  // The last is 5 long.
        #expect(take(SendWindow.size, 0) == .duplicate)  // Past the window: not kept.
        #expect(take(2, 2) == .held)
        #expect(take(2, 2) == .duplicate)
        #expect(receiver.acknowledgement.held == [0b10] + Array(repeating: 0, count: FileChunkAck.heldBits / 64 - 1))
        #expect(take(0, 0) == .inOrder)
        #expect(take(1, 1) == .inOrder)
        #expect(receiver.unwritten.count == 3)
        receiver.written()
        #expect(receiver.acknowledgement.stored == 3 && receiver.acknowledgement.held.allSatisfy { $0 == 0 })
        #expect(take(1, 1) == .duplicate)
    }
}
