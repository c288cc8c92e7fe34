import Foundation

/// When something sent goes again for want of its acknowledgement: RFC 6298's retransmission
/// timer, from the round trips measured (of copies that went once). Through a broker slowed
/// down by its disk (a clustered one's round trips reached a quarter of a second) a fixed first
/// delay sent every fragment again while it was still on its way, and the broker had twice the
/// work. Shared by a conversation's fragments (`OutgoingQueue`) and a room's copies
/// (`ReliableCopies`).
package struct RetransmissionTimer: Sendable {
    /// The first delay, until round trips have been measured; then doubling, up to the maximum.
    package static let initialBackoff = 0.25
    package static let maximumBackoff = 4.0

    /// The round trip measured so far (RFC 6298's smoothed time and variation).
    private var smoothedRoundTrip: Double?
    private var roundTripVariation = 0.0
    /// The delay doubled by a timeout, kept until a round trip is measured again (RFC 6298,
    /// 5.5): without it every new fragment started from the short delay and went twice, and
    /// when every fragment acknowledged had gone twice nothing could be measured — through a
    /// slow cluster, 3,600 packets for 3,000 messages, at 24 messages/s.
    private var backedOff: Double?

    package init() {}

    /// How long a copy waits before it first goes again: the measured round trip with room
    /// for its variation, never under `initialBackoff` (a near peer answers in a millisecond,
    /// and losses are repaired as soon as before) nor over `maximumBackoff`; doubled after a
    /// timeout until a round trip is measured.
    package var delay: Double { backedOff ?? measuredDelay }

    /// The delay from the round trips alone.
    private var measuredDelay: Double {
        guard let smoothed = smoothedRoundTrip else { return Self.initialBackoff }
        return min(Self.maximumBackoff, max(Self.initialBackoff, smoothed + 4 * roundTripVariation))
    }

    /// The wait after a copy went for the `attempts`th time: `delay` after the first, then the
    /// measured delay doubled for each time it went, up to the maximum.
    package func delay(afterAttempt attempts: Int) -> Double {
        attempts <= 1 ? delay : min(Self.maximumBackoff, measuredDelay * Double(1 << min(attempts - 1, 8)))
    }

    /// Copies went again for want of an acknowledgement in time.
    package mutating func timedOut() { backedOff = min(Self.maximumBackoff, delay * 2) }

    /// A copy that went once was acknowledged `roundTrip` seconds later (at most
    /// `maximumBackoff` counts).
    package mutating func measure(_ roundTrip: Double) {
        let roundTrip = min(Self.maximumBackoff, max(0, roundTrip))
        backedOff = nil
        guard let smoothed = smoothedRoundTrip else {
            smoothedRoundTrip = roundTrip
            roundTripVariation = roundTrip / 2
            return
        }
        roundTripVariation = 0.75 * roundTripVariation + 0.25 * abs(smoothed - roundTrip)
        smoothedRoundTrip = 0.875 * smoothed + 0.125 * roundTrip
    }
}
