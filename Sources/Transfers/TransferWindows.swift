import Nearby

/// The sender's side of one transfer: which chunks to send now. At most `size` chunks are in
/// flight past the last one the receiver stored; a chunk goes again when the receiver says it
/// has later ones but not it (a hole, sent again once a round trip has passed) or when nothing
/// came back in time (the timeout, doubled while nothing moves). The round trip and the timeout
/// are the peer's (`PeerTiming`, lent to each call), as its messages' are. A pure value: the
/// caller sends what it says and is woken at `deadline`.
package struct SendWindow: Sendable, Equatable {
    /// Chunks in flight at most: a window's worth of memory at each end (512 × 1,100 bytes).
    package static let size = FileChunkAck.heldBits
    package let count: Int
    /// Every chunk below this is stored by the receiver.
    package private(set) var stored = 0
    /// The next chunk never sent.
    private var next = 0
    /// Chunks past `stored` the receiver holds already.
    private var held: Set<Int> = []
    /// Chunks in flight: when each went last; and those that went more than once, whose
    /// acknowledgement measures no round trip (which copy it answers is unknown: Karn's rule).
    private var sentAt: [Int: Double] = [:]
    private var sentAgain: Set<Int> = []
    /// Holes found by what is held after them, not yet sent again: they are no timeout.
    private var lateOnes = 0
    /// Chunks held after a hole before it is taken for lost.
    static let reorderingAllowance = 3

    package init(count: Int, from stored: Int = 0) {
        self.count = count
        self.stored = min(max(0, stored), count)
        next = self.stored
    }

    package var isComplete: Bool { stored >= count }

    /// The least a chunk waits for news of it before it goes again: a chunk is acknowledged as
    /// soon as it is written, and a LAN's round trip is a millisecond.
    static let timeoutFloor = 0.02

    /// How long a chunk waits for news of it before it goes again, by the peer's `timer`.
    static func timeout(_ timer: RetransmissionTimer) -> Double { timer.delay(floor: timeoutFloor) }

    /// The round trip to the peer, as far as it was measured (a hole is sent again once it has
    /// passed).
    static func roundTrip(_ timer: RetransmissionTimer) -> Double { timer.roundTrip ?? 0.05 }

    /// The chunks to send now: those overdue, then new ones while the window has room.
    package mutating func due(now: Double, timing timer: inout RetransmissionTimer) -> [Int] {
        let timeout = Self.timeout(timer)
        var chunks = sentAt.filter { $0.value + timeout <= now }.map(\.key)  // As `deadline` adds it up.
        // Only a timeout stretches the next one: holes found by what is held after them do not.
        if chunks.count > lateOnes { timer.timedOut() }
        lateOnes = 0
        while next < count && next < stored + Self.size {
            chunks.append(next)
            next += 1
        }
        for chunk in chunks {
            if sentAt.updateValue(now, forKey: chunk) != nil { sentAgain.insert(chunk) }
        }
        return chunks.sorted()
    }

    /// When a chunk in flight falls overdue, if any is.
    package func deadline(timing timer: RetransmissionTimer) -> Double? { sentAt.values.min().map { $0 + Self.timeout(timer) } }

    /// The receiver stored every chunk below `stored` and holds those `held` marks. A chunk it
    /// lacks below what it holds goes again once a round trip has passed since it went (the
    /// next `due`). False when it says nothing new or nothing possible.
    @discardableResult
    package mutating func acknowledged(stored newStored: Int, held bits: [UInt64], now: Double, timing timer: inout RetransmissionTimer) -> Bool {
        guard newStored <= count, newStored >= stored, bits.count * 64 <= FileChunkAck.heldBits else { return false }  // A late one says less.
        var progressed = false
        if newStored > stored {
            if let went = sentAt[newStored - 1], !sentAgain.contains(newStored - 1) { timer.measure(now - went) }
            for chunk in stored..<newStored {
                sentAt[chunk] = nil
                sentAgain.remove(chunk)
            }
            held = held.filter { $0 >= newStored }
            stored = newStored
            next = max(next, stored)
            progressed = true
        }
        var heldNow: [Int] = []
        for bit in 0..<bits.count * 64 where bits[bit / 64] & (1 << UInt64(bit % 64)) != 0 {
            let chunk = stored + 1 + bit
            guard chunk < next else { break }
            if held.insert(chunk).inserted { progressed = true }
            sentAt[chunk] = nil
            heldNow.append(chunk)
        }
        // Held before and not now: the receiver lost what it kept in memory (its seance was
        // killed and started again), or this is a late acknowledgement. In flight again, from
        // now: sent again at the timeout, unless a newer acknowledgement marks it held. (Kept as
        // held, it was never sent again, and the receiver waited for it for ever.)
        if held.count > heldNow.count {
            let current = Set(heldNow)
            for chunk in held where !current.contains(chunk) {
                held.remove(chunk)
                sentAt[chunk] = now
            }
        }
        // A hole with three chunks held after it (a reordering rarely holds back three), sent
        // more than a round trip ago: overdue now, not at the timeout.
        if heldNow.count >= Self.reorderingAllowance {
            let limit = heldNow[heldNow.count - Self.reorderingAllowance]
            let (roundTrip, timeout) = (Self.roundTrip(timer), Self.timeout(timer))
            for (chunk, went) in sentAt where chunk < limit && now - went >= roundTrip * 1.25 {
                sentAt[chunk] = now - timeout
                lateOnes += 1
            }
        }
        if progressed { timer.progressed() }
        return progressed
    }
}

/// The receiver's side of one transfer: chunks that arrive in order are written (the caller
/// writes `unwritten` and calls `written`), those ahead of a gap wait in memory, at most a
/// window of them. A pure value.
package struct ReceiveWindow: Sendable, Equatable {
    package let count: Int
    package let chunkSize: Int
    package let size: Int
    /// Every chunk below this is in the database.
    package private(set) var stored: Int
    /// Chunks that follow `stored` in order, to write next.
    package private(set) var unwritten: [[UInt8]] = []
    /// Chunks ahead of a gap.
    private var held: [Int: [UInt8]] = [:]

    package init(count: Int, chunkSize: Int, size: Int, stored: Int = 0) {
        self.count = count
        self.chunkSize = chunkSize
        self.size = size
        self.stored = stored
    }

    /// The length chunk `index` must have: the chunk size, but for the last.
    func length(of index: Int) -> Int { index == count - 1 ? size - chunkSize * (count - 1) : chunkSize }

    package enum Taken: Equatable, Sendable {
        /// It continues what will be written.
        case inOrder
        /// It waits for those before it.
        case held
        /// Had already, or outside the window.
        case duplicate
        /// Not a chunk of this file: wrong index or length.
        case invalid
    }

    package mutating func take(_ index: Int, _ data: [UInt8]) -> Taken {
        guard index >= 0, index < count, data.count == length(of: index) else { return .invalid }
        let first = stored + unwritten.count
        guard index >= first, index < stored + SendWindow.size, held[index] == nil else { return .duplicate }
        guard index == first else {
            held[index] = data
            return .held
        }
        unwritten.append(data)
        while let following = held.removeValue(forKey: stored + unwritten.count) { unwritten.append(following) }
        return .inOrder
    }

    /// `unwritten` is in the database now.
    package mutating func written() {
        stored += unwritten.count
        unwritten = []
    }

    package var isComplete: Bool { stored >= count }

    /// What the acknowledgement says: the chunks stored, and which of the window after them are held.
    package var acknowledgement: (stored: Int, held: [UInt64]) {
        var bits = [UInt64](repeating: 0, count: FileChunkAck.heldWords)
        for index in held.keys where index > stored && index <= stored + FileChunkAck.heldBits {
            let bit = index - stored - 1
            bits[bit / 64] |= 1 << UInt64(bit % 64)
        }
        return (stored, bits)
    }
}
