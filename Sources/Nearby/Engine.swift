import Dispatch
@_exported import Runtime

/// The chat engine's one serial executor. It owns peer, plane and delivery state, every timer,
/// and every database write the network causes; transport threads hand it verified packets and
/// return at once, and the shell thread asks it synchronously. State confined to it needs no
/// lock, so no lock is ever held across database I/O or a callback.
public final class Engine: Sendable {
    public let queue: DispatchQueue
    /// The clock and timers of everything on this engine.
    public let scheduler: Scheduler
    private let marker = DispatchSpecificKey<UInt8>()

    public init(label: String = "seance.engine", scheduler: Scheduler = SystemScheduler()) {
        queue = DispatchQueue(label: label)
        self.scheduler = scheduler
        queue.setSpecific(key: marker, value: 1)
    }

    public var now: Double { scheduler.now }

    /// True on the engine's queue.
    public var isCurrent: Bool { DispatchQueue.getSpecific(key: marker) != nil }

    /// Runs `body` on the engine and waits for it (at once when already there).
    public func sync<T>(_ body: () throws -> T) rethrows -> T {
        isCurrent ? try body() : try queue.sync(execute: body)
    }

    /// Runs `body` on the engine later; the caller does not wait.
    public func async(_ body: @escaping @Sendable () -> Void) { queue.async(execute: body) }

    /// Runs `body` on the engine after `seconds`, by the engine's scheduler.
    @discardableResult
    public func after(_ seconds: Double, _ body: @escaping @Sendable () -> Void) -> Cancellable {
        scheduler.after(seconds, on: queue, body)
    }

    /// Runs `body` on the engine now and every `seconds`, by the engine's scheduler.
    public func every(_ seconds: Double, _ body: @escaping @Sendable () -> Void) -> Cancellable {
        scheduler.every(seconds, on: queue, body)
    }
}
