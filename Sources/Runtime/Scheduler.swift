import Dispatch
import Synchronization

/// Something scheduled that can be called off.
package protocol Cancellable: Sendable {
    func cancel()
}

/// The one source of time and timers: the real one in the program, a manual one in tests
/// (where time moves only when the test says, and every timer fires in order).
package protocol Scheduler: Sendable {
    /// Seconds since 1970.
    var now: Double { get }
    /// Runs `body` on `queue` once, `seconds` from now.
    @discardableResult
    func after(_ seconds: Double, on queue: DispatchQueue, _ body: @escaping @Sendable () -> Void) -> Cancellable
    /// Runs `body` on `queue` now and then every `seconds`, until cancelled.
    func every(_ seconds: Double, on queue: DispatchQueue, _ body: @escaping @Sendable () -> Void) -> Cancellable
    /// Runs `body` on `queue` as soon as it is free (after what it was given already).
    func soon(on queue: DispatchQueue, _ body: @escaping @Sendable () -> Void)
}

/// Wall-clock time and Dispatch timers.
package final class SystemScheduler: Scheduler {
    package init() {}

    package var now: Double { SystemTime.wall() }

    package func soon(on queue: DispatchQueue, _ body: @escaping @Sendable () -> Void) { queue.async(execute: body) }

    private final class Timer: Cancellable, @unchecked Sendable {
        let source: DispatchSourceTimer
        init(_ source: DispatchSourceTimer) { self.source = source }
        func cancel() { source.cancel() }
    }

    @discardableResult
    package func after(_ seconds: Double, on queue: DispatchQueue, _ body: @escaping @Sendable () -> Void) -> Cancellable {
        let source = DispatchSource.makeTimerSource(queue: queue)
        source.schedule(deadline: .now() + seconds, leeway: .milliseconds(1))
        source.setEventHandler { body(); source.cancel() }
        source.resume()
        return Timer(source)
    }

    package func every(_ seconds: Double, on queue: DispatchQueue, _ body: @escaping @Sendable () -> Void) -> Cancellable {
        let source = DispatchSource.makeTimerSource(queue: queue)
        source.schedule(deadline: .now(), repeating: seconds, leeway: .milliseconds(max(1, Int(seconds * 100))))
        source.setEventHandler(handler: body)
        source.resume()
        return Timer(source)
    }
}

/// Time that moves only by `advance`: every timer due by then fires, in order of its time, on
/// its queue (the caller waits for each), with `now` set to its time. Work handed to a queue with
/// `soon` (an engine's `async`: a packet arriving, a write queued) is a timer due at once, so
/// `runUntilIdle` runs everything that follows from what the test did, however many hops it
/// takes. For deterministic tests of presence, expiry, retransmission and every feature.
package final class ManualScheduler: Scheduler {
    private struct Task {
        var id: Int
        var due: Double
        var interval: Double?
        var queue: DispatchQueue
        var body: @Sendable () -> Void
    }

    private struct State {
        var now: Double
        var tasks: [Task] = []
        var nextID = 0
    }

    private let state: Mutex<State>

    package init(now: Double = 1_800_000_000) { state = Mutex(State(now: now)) }

    package var now: Double { state.withLock { $0.now } }

    /// Timers not fired or cancelled yet (a test checks that nothing is left to wake up for).
    package var waiting: Int { state.withLock { $0.tasks.count } }

    private final class Handle: Cancellable {
        let id: Int
        let scheduler: ManualScheduler?
        init(id: Int, scheduler: ManualScheduler) {
            self.id = id
            self.scheduler = scheduler
        }
        func cancel() { scheduler?.state.withLock { $0.tasks.removeAll { $0.id == self.id } } }
    }

    private func add(_ delay: Double, interval: Double?, queue: DispatchQueue, body: @escaping @Sendable () -> Void) -> Cancellable {
        let id = state.withLock { state in
            state.nextID += 1
            state.tasks.append(Task(id: state.nextID, due: state.now + delay, interval: interval, queue: queue, body: body))
            return state.nextID
        }
        return Handle(id: id, scheduler: self)
    }

    @discardableResult
    package func after(_ seconds: Double, on queue: DispatchQueue, _ body: @escaping @Sendable () -> Void) -> Cancellable {
        add(seconds, interval: nil, queue: queue, body: body)
    }

    package func every(_ seconds: Double, on queue: DispatchQueue, _ body: @escaping @Sendable () -> Void) -> Cancellable {
        add(0, interval: seconds, queue: queue, body: body)
    }

    package func soon(on queue: DispatchQueue, _ body: @escaping @Sendable () -> Void) {
        _ = add(0, interval: nil, queue: queue, body: body)
    }

    /// Runs everything due now, and everything that causes at once, until nothing is left to do
    /// before the clock moves.
    package func runUntilIdle() { advance(by: 0) }

    /// Moves time forward by `seconds`, firing what falls due on the way (what a task hands on
    /// runs at the task's time, before anything later), then runs until idle.
    package func advance(by seconds: Double) {
        let end = now + seconds
        while true {
            let next = state.withLock { state -> Task? in
                guard let index = state.tasks.indices.filter({ state.tasks[$0].due <= end })
                    .min(by: { (state.tasks[$0].due, state.tasks[$0].id) < (state.tasks[$1].due, state.tasks[$1].id) }) else { return nil }
                let task = state.tasks[index]
                state.now = max(state.now, task.due)
                if let interval = task.interval {
                    state.tasks[index].due += interval
                } else {
                    state.tasks.remove(at: index)
                }
                return task
            }
            guard let next else { break }
            next.queue.sync(execute: next.body)
        }
        state.withLock { $0.now = end }
    }
}
