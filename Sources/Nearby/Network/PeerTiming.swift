import Foundation

/// When something sent goes again for want of its acknowledgement: RFC 6298's retransmission
/// timer, from the round trips measured (of copies that went once). Through a broker slowed
/// down by its disk (a clustered one's round trips reached a quarter of a second) a fixed first
/// delay sent every fragment again while it was still on its way, and the broker had twice the
/// work. One per peer (`PeerTiming`), shared by whatever is sent to it until acknowledged: a
/// conversation's fragments (`OutgoingQueue`), a room's copies (`ReliableCopies`) and a file's
/// chunks (`SendWindow`), each with the least delay it can take (`floor`).
package struct RetransmissionTimer: Sendable {
    /// The first delay, until round trips have been measured; then doubling, up to the maximum.
    package static let initialBackoff = 0.25
    package static let maximumBackoff = 4.0

    /// The round trip measured so far (RFC 6298's smoothed time and variation).
    private var smoothedRoundTrip: Double?
    private var roundTripVariation = 0.0
    /// The delay doubled by each timeout, kept until a round trip is measured again (RFC 6298,
    /// 5.5): without it every new fragment started from the short delay and went twice, and
    /// when every fragment acknowledged had gone twice nothing could be measured — through a
    /// slow cluster, 3,600 packets for 3,000 messages, at 24 messages/s.
    private var backoff = 1.0

    package init() {}

    /// The smoothed round trip measured so far, if any.
    package var roundTrip: Double? { smoothedRoundTrip }

    /// How long a copy waits before it first goes again: the measured round trip with room
    /// for its variation, never under `floor` (for a message, `initialBackoff`: a near peer
    /// answers in a millisecond, and losses are repaired as soon as before) nor over
    /// `maximumBackoff`; doubled after a timeout until a round trip is measured.
    package func delay(floor: Double = initialBackoff) -> Double {
        min(Self.maximumBackoff, measuredDelay(floor: floor) * backoff)
    }

    /// A message's first delay (`delay(floor: initialBackoff)`).
    package var delay: Double { delay() }

    /// The delay from the round trips alone.
    private func measuredDelay(floor: Double) -> Double {
        guard let smoothed = smoothedRoundTrip else { return max(floor, Self.initialBackoff) }
        return min(Self.maximumBackoff, max(floor, smoothed + 4 * roundTripVariation))
    }

    /// The wait after a copy went for the `attempts`th time: `delay` after the first, then the
    /// measured delay doubled for each time it went, up to the maximum.
    package func delay(afterAttempt attempts: Int, floor: Double = initialBackoff) -> Double {
        attempts <= 1 ? delay(floor: floor) : min(Self.maximumBackoff, measuredDelay(floor: floor) * Double(1 << min(attempts - 1, 8)))
    }

    /// Copies went again for want of an acknowledgement in time.
    package mutating func timedOut() { backoff = min(backoff * 2, 64) }

    /// Something got through, though nothing could be measured by it: the backoff starts afresh.
    package mutating func progressed() { backoff = 1 }

    /// A copy that went once was acknowledged `roundTrip` seconds later (at most
    /// `maximumBackoff` counts).
    package mutating func measure(_ roundTrip: Double) {
        let roundTrip = min(Self.maximumBackoff, max(0, roundTrip))
        backoff = 1
        guard let smoothed = smoothedRoundTrip else {
            smoothedRoundTrip = roundTrip
            roundTripVariation = roundTrip / 2
            return
        }
        roundTripVariation = 0.75 * roundTripVariation + 0.25 * abs(smoothed - roundTrip)
        smoothedRoundTrip = 0.875 * smoothed + 0.125 * roundTrip
    }
}

/// Every peer's `RetransmissionTimer`, by signing key, bounded: one measure of each peer's round
/// trip for whatever is sent to it until acknowledged. A pure value; `PeerTiming` keeps the
/// engine's, which delivery, rooms and transfers share.
package struct PeerTimers: Sendable {
    private var timers = PeerMap<RetransmissionTimer>()
    /// Peers remembered at most: past it they start afresh (a flood of keys must not grow it).
    static let limit = 4_096

    package init() {}

    package subscript(_ peer: Data) -> RetransmissionTimer {
        get { timers[peer] ?? RetransmissionTimer() }
        set {
            if timers[peer] == nil, timers.count >= Self.limit { timers = PeerMap() }
            timers[peer] = newValue
        }
    }
}

/// The engine's `PeerTimers`: whatever waits for a peer's acknowledgement goes again by the one
/// measure of its round trip. Engine state.
package final class PeerTiming: Sendable {
    private let state: EngineBound<PeerTimers>

    init(engine: Engine) { state = EngineBound(PeerTimers(), engine: engine) }

    /// Runs `body` on every peer's timer (a room's copies go to several).
    package func update<T>(_ body: (inout PeerTimers) throws -> T) rethrows -> T { try state.update(body) }

    /// Runs `body` on `peer`'s timer.
    package func update<T>(_ peer: Data, _ body: (inout RetransmissionTimer) throws -> T) rethrows -> T {
        try state.update { try body(&$0[peer]) }
    }
}
