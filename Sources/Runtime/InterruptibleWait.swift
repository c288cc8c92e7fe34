import Dispatch

/// A wait that a thread of its own makes (a transport's backoff before it tries again), and
/// that another thread can cut short (stopping it).
package final class InterruptibleWait: Sendable {
    private let semaphore = DispatchSemaphore(value: 0)

    package init() {}

    /// Waits up to `seconds`; true when `wake` cut it short.
    package func wait(_ seconds: Double) -> Bool { semaphore.wait(timeout: .now() + seconds) == .success }

    /// Ends the wait under way, or the next one at once.
    package func wake() { semaphore.signal() }
}
