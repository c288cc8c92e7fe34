import Dispatch

/// The chat engine's one serial executor. It owns peer, plane and delivery state, every timer,
/// and every database write the network causes; transport threads hand it verified packets and
/// return at once, and the shell thread asks it synchronously. State confined to it lives in
/// `EngineBound` boxes, whose accessors check that they run here: no lock is needed, so none
/// is ever held across database I/O or a callback.
package final class Engine: Sendable {
    package let queue: DispatchQueue
    /// The clock and timers of everything on this engine.
    package let scheduler: Scheduler
    private let marker = DispatchSpecificKey<UInt8>()

    package init(label: String = "seance.engine", scheduler: Scheduler = SystemScheduler()) {
        queue = DispatchQueue(label: label)
        self.scheduler = scheduler
        queue.setSpecific(key: marker, value: 1)
    }

    package var now: Double { scheduler.now }

    /// True on the engine's queue.
    package var isCurrent: Bool { DispatchQueue.getSpecific(key: marker) != nil }

    /// Stops the program when called off the engine's queue (checked in debug builds, which the
    /// tests run, as swift-nio's `assertInEventLoop`; a release build pays nothing per access).
    package func assertCurrent(file: StaticString = #fileID, line: UInt = #line) {
        assert(isCurrent, "engine state touched off the engine's queue", file: file, line: line)
    }

    /// Runs `body` on the engine and waits for it (at once when already there).
    package func sync<T>(_ body: () throws -> T) rethrows -> T {
        isCurrent ? try body() : try queue.sync(execute: body)
    }

    /// Runs `body` on the engine soon, after what it was handed already; the caller does not
    /// wait. Goes through the scheduler, so a test's `ManualScheduler` knows of it.
    package func async(_ body: @escaping @Sendable () -> Void) { scheduler.soon(on: queue, body) }

    /// Runs `body` on the engine after `seconds`, by the engine's scheduler.
    @discardableResult
    package func after(_ seconds: Double, _ body: @escaping @Sendable () -> Void) -> Cancellable {
        scheduler.after(seconds, on: queue, body)
    }

    /// Runs `body` on the engine now and every `seconds`, by the engine's scheduler.
    package func every(_ seconds: Double, _ body: @escaping @Sendable () -> Void) -> Cancellable {
        scheduler.every(seconds, on: queue, body)
    }
}

/// State that belongs to an engine: read and changed only on its queue, which every accessor
/// checks (`Engine.assertCurrent`), as swift-nio's `NIOLoopBound` checks its event loop. The
/// shell thread reaches it through `engine.sync`.
package final class EngineBound<Value>: @unchecked Sendable {
    // Safe to send: `value` is touched only on `engine`'s serial queue, and every access below
    // checks that it is (the box itself is immutable apart from it).
    // Exclusivity is checked at run time in debug builds, which the tests run; release builds
    // leave it to them (Package.swift), as they leave the queue (`assertCurrent`).
    private var storage: Value
    package let engine: Engine

    package init(_ value: Value, engine: Engine) {
        storage = value
        self.engine = engine
    }

    package var value: Value {
        // Lent, not returned: the generic accessor is not specialized across modules, and a
        // getter copied the whole value (every table of a feature retained, then released) to
        // hand back the one field the caller named, some forty times a message.
        _read {
            engine.assertCurrent()
            yield storage
        }
        _modify {
            engine.assertCurrent()
            yield &storage
        }
        set {
            engine.assertCurrent()
            storage = newValue
        }
    }

    /// Runs `body` on the value in place (no copy of a large one).
    @discardableResult
    package func update<T>(_ body: (inout Value) throws -> T) rethrows -> T {
        engine.assertCurrent()
        return try body(&storage)
    }
}
