/// A guest's estimate of how near the host is, from two things it can observe: the share of
/// the host's beacons that reached it over the last `window` seconds, and the round-trip time
/// of its probes (the median of the last three answered).
///
///     immediate   share ≥ 90 %  and round trip ≤ 10 ms
///     near        share ≥ 60 %  and round trip ≤ 100 ms
///     far         anything less
///
/// Before any probe is answered the share alone decides. A new class is taken only once it has
/// been the estimate `settle` times in a row (once a second), so one unlucky second does not
/// make a guest flicker between classes. Pure: time comes in as arguments.
package struct ProximityEstimator: Sendable {
    package static let window = 10.0
    package static let immediateShare = 0.9, nearShare = 0.6
    package static let immediateRoundTrip = 0.010, nearRoundTrip = 0.100
    package static let settle = 3
    static let roundTrips = 3

    package let joinedAt: Double
    /// The host's beacon interval, as its beacons say (clamped by the caller).
    package var interval: Double
    /// Each beacon heard within the window: its counter (a copy by a second transport counts
    /// once) and when.
    private var heard: [(counter: UInt32, at: Double)] = []
    private var trips: [Double] = []
    package private(set) var current: Proximity
    private var candidate: Proximity?
    private var candidateCount = 0
    package private(set) var lastBeacon: Double

    package init(joinedAt: Double, interval: Double) {
        self.joinedAt = joinedAt
        self.interval = interval
        lastBeacon = joinedAt
        current = .immediate
    }

    package mutating func beacon(counter: UInt32, at now: Double) {
        lastBeacon = max(lastBeacon, now)
        guard !heard.contains(where: { $0.counter == counter }) else { return }
        heard.append((counter, now))
        forget(before: now - Self.window)
    }

    package mutating func roundTrip(_ seconds: Double) {
        trips.append(max(0, seconds))
        if trips.count > Self.roundTrips { trips.removeFirst(trips.count - Self.roundTrips) }
    }

    /// The share of the beacons sent in the window (or since joining, if later) that arrived.
    package func share(now: Double) -> Double {
        let span = min(Self.window, max(interval, now - joinedAt))
        let expected = max(1, (span / interval + 1e-9).rounded(.down))
        let received = heard.filter { $0.at > now - Self.window && $0.at <= now }.count
        return min(1, Double(received) / expected)
    }

    /// The median of the last round trips, if any probe was answered.
    package var roundTrip: Double? {
        guard !trips.isEmpty else { return nil }
        return trips.sorted()[trips.count / 2]
    }

    /// The class the observations point to just now, before settling.
    package func estimate(now: Double) -> Proximity {
        let share = share(now: now), trip = roundTrip ?? 0
        if share >= Self.immediateShare && trip <= Self.immediateRoundTrip { return .immediate }
        if share >= Self.nearShare && trip <= Self.nearRoundTrip { return .near }
        return .far
    }

    /// Called once a second: the new class when it has just settled, else nil.
    package mutating func evaluate(now: Double) -> Proximity? {
        forget(before: now - Self.window)
        let estimate = estimate(now: now)
        guard estimate != current else {
            candidate = nil
            candidateCount = 0
            return nil
        }
        if candidate == estimate { candidateCount += 1 } else { candidate = estimate; candidateCount = 1 }
        guard candidateCount >= Self.settle else { return nil }
        current = estimate
        candidate = nil
        candidateCount = 0
        return estimate
    }

    /// Seconds since the last beacon arrived (or since joining).
    package func silence(now: Double) -> Double { now - lastBeacon }

    private mutating func forget(before time: Double) { heard.removeAll { $0.at <= time } }
}
