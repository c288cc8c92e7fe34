import Glibc

/// The machine's clocks, read here and nowhere else: everything else asks a `Scheduler` (which
/// a test replaces), or, for a wait at the terminal, `monotonic`.
package enum SystemTime {
    /// Seconds since 1970.
    package static func wall() -> Double { read(CLOCK_REALTIME) }

    /// Seconds since an arbitrary moment, never set back: for measuring a wait.
    package static func monotonic() -> Double { read(CLOCK_MONOTONIC) }

    /// Blocks the calling thread (a login's growing delay: nothing else may run meanwhile).
    package static func sleep(_ seconds: Double) {
        guard seconds > 0 else { return }
        var request = timespec(tv_sec: Int(seconds), tv_nsec: Int((seconds - seconds.rounded(.down)) * 1e9))
        var left = timespec()
        while nanosleep(&request, &left) != 0 && errno == EINTR { request = left }
    }

    private static func read(_ clock: clockid_t) -> Double {
        var now = timespec()
        clock_gettime(clock, &now)
        return Double(now.tv_sec) + Double(now.tv_nsec) / 1e9
    }
}
