import Crypto
import Foundation
@_exported import Wire

/// Timing of presence, mDNS-like: announce at once and again after `startupGap`, then every
/// `interval` give or take `jitter` (a fraction), so peers do not fall into step. A peer that
/// misses three refreshes in a row is gone.
package struct PresenceTiming: Sendable, Equatable {
    /// The least refresh interval: a small group refreshes this often.
    package var interval: Double
    package var jitter: Double
    package var startupGap: Double
    package var missedBeforeExpiry: Double
    /// Refreshes a second the whole group may send on a link (RFC 3550 §6.2's share of the
    /// session's bandwidth, as RTCP keeps it): each shell stretches its interval with the crowd.
    package var linkBudget: Double

    package init(interval: Double = 5, jitter: Double = 0.2, startupGap: Double = 1, missedBeforeExpiry: Double = 3,
                 linkBudget: Double = 20) {
        self.interval = interval
        self.jitter = jitter
        self.startupGap = startupGap
        self.missedBeforeExpiry = missedBeforeExpiry
        self.linkBudget = linkBudget
    }

    /// The refresh interval among `peers` others: `interval`, or longer, so that everyone's
    /// refreshes together stay within `linkBudget` a second (each of the n + 1 refreshes once
    /// an interval). Advertised in the announcement, by which the others expire us.
    /// Rounded up to a whole number of `interval`s, so that it changes (and the announcement
    /// with it, which a broker keeps) once every few dozen arrivals, not with each.
    package func interval(amongPeers peers: Int) -> Double {
        (max(interval, Double(peers + 1) / linkBudget) / interval).rounded(.up) * interval
    }

    /// The range answers to a query are delayed over: 20–120 ms in a small group; in a crowd
    /// wide enough that the answers come about 1,000 a second, but within 0.8 s (a newcomer
    /// lists everyone within a second).
    package static func answerWindow(amongPeers peers: Int) -> ClosedRange<Double> { 0.02...min(0.8, max(0.12, Double(peers) / 1000)) }

    /// How long after its last announcement a peer announcing every `interval` expires: half an
    /// interval more than the allowed misses, so jitter alone never expires anyone.
    package func lifetime(ofInterval interval: Double) -> Double { interval * (missedBeforeExpiry + 0.5) }

    /// How long a broker's copy of a peer's announcement, published again every `interval`
    /// while its client is connected, counts as presence: a quarter interval more than that. An
    /// older one is no live client's (its will would have withdrawn it, or a newer copy replaced
    /// it): a replay.
    package func keptLifetime(ofInterval interval: Double) -> Double { interval * 1.25 }

    /// How old (by its own stamp) an announcement heard on the LAN may be and still be live:
    /// three of its intervals, at least 15 s. A key not listed yet whose announcement is older
    /// is asked before it is listed (`Questions.notLive`): a replay gets no newer answer.
    package static func liveness(ofInterval interval: Double) -> Double { max(15, 3 * interval) }
}

/// When to announce next.
package struct AnnounceSchedule: Sendable {
    package let timing: PresenceTiming
    package private(set) var nextAt: Double
    private var sent = 0
    /// The interval the next announcement was scheduled with.
    private var scheduledInterval: Double?

    /// The first announcement is due at once.
    package init(timing: PresenceTiming, now: Double) {
        self.timing = timing
        nextAt = now
    }

    /// True when an announcement is due; the next one is then scheduled, `interval` (the one
    /// this announcement advertises) later, give or take the jitter.
    package mutating func isDue(now: Double, interval: Double? = nil, using rng: inout some RandomNumberGenerator) -> Bool {
        guard now >= nextAt else { return false }
        sent += 1
        if sent < 2 {
            nextAt = now + timing.startupGap
        } else {
            let spread = timing.jitter > 0 ? Double.random(in: -timing.jitter...timing.jitter, using: &rng) : 0
            scheduledInterval = interval ?? timing.interval
            nextAt = now + scheduledInterval! * (1 + spread)
        }
        return true
    }

    /// The crowd shrank and the interval with it: the next announcement comes as much sooner
    /// (RFC 3550 §6.3.4's reverse reconsideration), else those who stay would wait out the
    /// crowd's long interval.
    package mutating func shrink(to interval: Double, now: Double) {
        guard let scheduled = scheduledInterval, interval < scheduled, nextAt > now else { return }
        nextAt = now + (nextAt - now) * interval / scheduled
        scheduledInterval = interval
    }

    /// Past the start-up's two announcements, which are signed whatever else holds.
    package var isPastStartUp: Bool { sent > 2 }

    /// Something changed (the plane): announce at the next check.
    package mutating func announceSoon(now: Double) { nextAt = min(nextAt, now) }
}

/// How a signed broadcast's own time is read against this machine's clock. Clocks differ: a
/// frame stamped within `allowance` of now, either way, counts as made now. One stamped earlier
/// counts as made at its own time plus the allowance (a broker's retained announcement, or a
/// replay, is as old as it says, give or take the allowance); one stamped later is from the
/// future, and dropped.
package enum FrameTime {
    package static let allowance = 120.0

    /// When a frame stamped `stamp` (seconds) arriving at `now` counts as heard; nil when it is
    /// from the future beyond the allowance.
    package static func heard(stamp: Double, now: Double) -> Double? {
        guard stamp <= now + allowance else { return nil }
        return now - stamp <= allowance ? now : stamp + allowance
    }

    /// When it says it was made, as `nearby` shows it: its own time when older than the
    /// allowance, else its arrival.
    package static func said(stamp: Double, now: Double) -> Double { now - stamp <= allowance ? now : min(now, stamp) }
}

