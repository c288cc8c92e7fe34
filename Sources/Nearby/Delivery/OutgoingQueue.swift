import Foundation

/// The sending side of one conversation: fragments waiting for their acknowledgement, sent in a
/// window and sent again with a growing delay until the peer confirms them. The delay is the
/// peer's (`PeerTiming`), lent to `due` and `acknowledge`.
package struct OutgoingQueue: Sendable {
    package struct Entry: Equatable, Sendable {
        package var fragment: Fragment
        /// The local number of the message the fragment belongs to.
        package var message: Int64
        var attempts = 0
        var nextAt: Double = 0
        /// When it first went, while its acknowledgement can measure the round trip: it went
        /// once, and not before the peer was last out of reach (nil otherwise).
        var measuredFrom: Double?
        /// Every copy of it so far went in a packet of several (type 18): if the peer has it,
        /// the peer reads those.
        var onlyBundled = false
    }

    /// At most this many fragments are in flight at once. A burst's fragments travel about
    /// twenty to a packet and are acknowledged once per few packets: with 64 in flight (three
    /// packets) the sender kept stopping for acknowledgements, both sides' engines half idle,
    /// at 13,000–16,000 messages/s; 512 keep the pipe full (22,000–32,000/s, same machine).
    package static let window = 512
    /// Of the fragments in flight, only the oldest this many go again when their time comes. A
    /// lost one is among them (acknowledgements are cumulative, and the receiver keeps what came
    /// after it); when the peer is only slow (a loaded broker), a whole window sent again, a
    /// fragment to a packet, would add 512 packets to what holds it up. The others go again
    /// once they are among the oldest.
    package static let resendLimit = 64
    /// First retransmission after this long, until round trips have been measured; then
    /// doubling, up to `maximumBackoff` (`RetransmissionTimer`).
    package static let initialBackoff = RetransmissionTimer.initialBackoff
    package static let maximumBackoff = RetransmissionTimer.maximumBackoff

    /// The peer has acknowledged a fragment whose every copy went in a packet of several: it
    /// reads them (type 18 is not required of a reader), and copies sent again may go together.
    package private(set) var peerReadsBundles = false

    /// Entries before `head` are acknowledged: dropping them costs nothing until they are many
    /// (a long burst's queue is thousands long, and an acknowledgement comes every few packets).
    private var items: [Entry] = []
    private var head = 0

    package init() {}

    /// The fragments waiting for their acknowledgement, in sequence order.
    package var entries: ArraySlice<Entry> { items[head...] }

    package var isEmpty: Bool { head == items.count }

    /// Fragments sent at least once and not yet acknowledged.
    package var inFlight: Int { window.count { items[$0].attempts > 0 } }

    /// The window's entries, by their indices in `items`: read field by field there, since a
    /// chain over the entries copied each (its fragment's text retained and released), and
    /// under a burst the window is asked after every packet sent.
    private var window: Range<Int> { head..<min(items.count, head + Self.window) }

    /// When the next fragment in the window is due, if any waits.
    package var nextDue: Double? {
        var soonest: Double?
        for index in window where items[index].attempts == 0 || index - head < Self.resendLimit {
            soonest = min(soonest ?? .infinity, items[index].nextAt)
        }
        return soonest
    }

    /// Adds fragments (in sequence order); fragments already queued are ignored.
    package mutating func enqueue(_ fragments: [Fragment], message: Int64, now: Double) {
        let fresh = fragments.map { Entry(fragment: $0, message: message, nextAt: now) }
        // The usual case, a new message after the last: appended, nothing to look up.
        if let first = fragments.first?.sequence, isEmpty || first > items[items.count - 1].fragment.sequence,
           zip(fragments, fragments.dropFirst()).allSatisfy({ $0.sequence < $1.sequence }) {
            return items += fresh
        }
        let known = Set(entries.map(\.fragment.sequence))
        items += fresh.filter { !known.contains($0.fragment.sequence) }
        items[head...].sort { $0.fragment.sequence < $1.fragment.sequence }
    }

    /// Adds the fragments of many messages at once (an outbox loaded when its peer comes back):
    /// those already queued are ignored, and the queue is put in order once. One `enqueue` a
    /// message looked every entry up and sorted them all each time: for an outbox of 8,000
    /// that was seconds of the engine, while presence and everything else waited.
    package mutating func enqueue(_ messages: [(fragments: [Fragment], message: Int64)], now: Double) {
        let known = Set(entries.map(\.fragment.sequence))
        var fresh: [Entry] = []
        for (fragments, message) in messages {
            for fragment in fragments where !known.contains(fragment.sequence) {
                fresh.append(Entry(fragment: fragment, message: message, nextAt: now))
            }
        }
        guard !fresh.isEmpty else { return }
        let last = items.last?.fragment.sequence
        items += fresh
        let inOrder = zip(fresh, fresh.dropFirst()).allSatisfy { $0.fragment.sequence < $1.fragment.sequence }
        if !inOrder || (last.map { fresh[0].fragment.sequence < $0 } ?? false) {
            items[head...].sort { $0.fragment.sequence < $1.fragment.sequence }
        }
    }

    /// What is due now: fragments going for the first time, fragments going again (they go by
    /// every route the peer has, in case the preferred one stopped working), and how far the
    /// messages sent for the first time reach.
    package struct Due: Equatable, Sendable {
        package var fresh: [Fragment] = []
        /// Going again, each alone.
        package var repeated: [Fragment] = []
        /// Going again, several to a packet: to a peer that reads them (`peerReadsBundles`).
        package var repeatedTogether: [Fragment] = []
        /// The last fragment of the last message that went for the first time now (nil: none
        /// did). Fresh fragments go in order, so every message up to it has gone at least once.
        package var sentThrough: UInt32?

        /// Every fragment due, in sequence order.
        package var fragments: [Fragment] { (fresh + repeated + repeatedTogether).sorted { $0.sequence < $1.sequence } }
        package var isEmpty: Bool { fresh.isEmpty && repeated.isEmpty && repeatedTogether.isEmpty }
    }

    /// A fragment's copies after this many go alone even to a peer that reads packets of
    /// several: the peer may since be another program, which need not read them.
    package static let togetherCopies = 3

    /// The fragments to (re)send now: those in the window whose time has come (to go again,
    /// among the `resendLimit` oldest). Each gets its next deadline, by the peer's `timer`.
    package mutating func due(now: Double, timing timer: inout RetransmissionTimer) -> Due {
        var due = Due()
        var lastFresh: Int?
        for (position, index) in items.indices[head...].prefix(Self.window).enumerated() where items[index].nextAt <= now {
            if items[index].attempts > 0 && position >= Self.resendLimit { continue }
            if items[index].attempts == 0 {
                lastFresh = index
                items[index].measuredFrom = now
                due.fresh.append(items[index].fragment)
            } else {
                items[index].measuredFrom = nil
                items[index].onlyBundled = false
                if peerReadsBundles && items[index].attempts < Self.togetherCopies {
                    due.repeatedTogether.append(items[index].fragment)
                } else {
                    due.repeated.append(items[index].fragment)
                }
            }
            items[index].attempts += 1
            items[index].nextAt = now + timer.delay(afterAttempt: items[index].attempts)
        }
        if !due.repeated.isEmpty || !due.repeatedTogether.isEmpty { timer.timedOut() }
        if var end = lastFresh {
            // Its message may go on past the window: to its last fragment.
            while end + 1 < items.count && items[end + 1].message == items[end].message { end += 1 }
            due.sentThrough = items[end].fragment.sequence
        }
        return due
    }

    /// The fragments with these sequence numbers went in a packet of several (type 18).
    package mutating func wentBundled(_ sequences: [UInt32]) {
        guard !peerReadsBundles else { return }
        for sequence in sequences {
            // Entries are in sequence order: the first at or after it is it, if it waits.
            var low = head, high = items.count
            while low < high {
                let middle = (low + high) / 2
                if items[middle].fragment.sequence < sequence { low = middle + 1 } else { high = middle }
            }
            if low < items.count, items[low].fragment.sequence == sequence, items[low].attempts == 1 { items[low].onlyBundled = true }
        }
    }

    /// The peer has every fragment up to `sequence`: they leave the queue. The newest of them
    /// measures the round trip if none of them went again (which copy was answered is unknown,
    /// and a fragment after one that went again waited for it); a round trip counts as at most
    /// `maximumBackoff`, in the peer's `timer`.
    package mutating func acknowledge(upTo sequence: UInt32, now: Double, timing timer: inout RetransmissionTimer) {
        var newest: Entry?
        var measurable = true
        while head < items.count && items[head].fragment.sequence <= sequence {
            newest = items[head]
            measurable = measurable && items[head].measuredFrom != nil
            if items[head].onlyBundled { peerReadsBundles = true }
            head += 1
        }
        if measurable, let start = newest?.measuredFrom { timer.measure(now - start) }
        if head == items.count || (head >= 1_024 && head * 2 >= items.count) {
            items.removeFirst(head)
            head = 0
        }
    }

    /// The peer is back in range: everything is due at once, with the backoff started afresh.
    package mutating func restart(now: Double) {
        for index in items.indices[head...] {
            items[index].nextAt = now
            items[index].attempts = min(items[index].attempts, 1)
            items[index].measuredFrom = nil
        }
    }
}
