/// Notices of one kind above the prompt (arrivals, offers), at most `burst` at once and
/// `perSecond` after that: a crowd of made-up keys must not scroll everything else away. What is
/// held back is counted in one line when notices flow again.
package struct NoticeLimiter: Sendable {
    private var tokens: Double
    private var last: Double?
    private var held = 0
    let burst: Double
    let perSecond: Double
    /// What the notices are, and where to see them all: "… 12 more offers not shown
    /// (transfers lists them)".
    let what: String, seeAll: String

    package init(burst: Double = 20, perSecond: Double = 2, what: String, seeAll: String) {
        self.burst = burst
        self.perSecond = perSecond
        self.what = what
        self.seeAll = seeAll
        tokens = burst
    }

    /// Whether a notice may be shown now; when it may, the line counting those held back
    /// before it, if any.
    package mutating func admit(now: Double) -> (shown: Bool, heldLine: String?) {
        tokens = min(burst, tokens + perSecond * max(0, now - (last ?? now)))
        last = now
        guard tokens >= 1 else {
            held += 1
            return (false, nil)
        }
        tokens -= 1
        defer { held = 0 }
        return (true, held > 0 ? "… \(held) more \(what) not shown (\(seeAll))" : nil)
    }

    /// The lines to print now (possibly none, possibly after a count of those held back).
    package mutating func admit(_ lines: [String], now: Double) -> [String] {
        guard !lines.isEmpty else { return [] }
        let (shown, heldLine) = admit(now: now)
        guard shown else {
            held += lines.count - 1
            return []
        }
        return (heldLine.map { [$0] } ?? []) + lines
    }
}
