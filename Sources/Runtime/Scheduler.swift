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
        var due: Double
        var interval: Double?
        var queue: DispatchQueue
        var body: @Sendable () -> Void
    }

    /// Tasks by id, and a heap of (due, id) to find the next in logarithmic time (a crowd of
    /// engines keeps thousands of timers). A cancelled task leaves its heap entry behind, to be
    /// skipped when it comes up; a repeating one is pushed again after each run.
    private struct State {
        var now: Double
        var tasks: [Int: Task] = [:]
        var order = TimerHeap()
        var nextID = 0
    }

    private let state: Mutex<State>

    package init(now: Double = 1_800_000_000) { state = Mutex(State(now: now)) }

    package var now: Double { state.withLock { $0.now } }

    /// Timers not fired or cancelled yet (a test checks that nothing is left to wake up for).
    package var waiting: Int { state.withLock { $0.tasks.count } }

    private final class Handle: Cancellable, @unchecked Sendable {
        let id: Int
        // Weak: a task's own work may hold its handle (an alarm re-armed), and the scheduler
        // holds the task.
        weak var scheduler: ManualScheduler?
        init(id: Int, scheduler: ManualScheduler) {
            self.id = id
            self.scheduler = scheduler
        }
        func cancel() { _ = scheduler?.state.withLock { $0.tasks.removeValue(forKey: self.id) } }
    }

    private func add(_ delay: Double, interval: Double?, queue: DispatchQueue, body: @escaping @Sendable () -> Void) -> Cancellable {
        let id = state.withLock { state in
            state.nextID += 1
            let due = state.now + delay
            state.tasks[state.nextID] = Task(due: due, interval: interval, queue: queue, body: body)
            state.order.push(due: due, id: state.nextID)
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

    /// Calls off everything still scheduled: a test's world ends, and work left waiting would
    /// keep the engines it holds for ever (they hold this scheduler).
    package func cancelAll() { state.withLock { $0.tasks = [:]; $0.order = TimerHeap() } }

    /// Runs everything due now, and everything that causes at once, until nothing is left to do
    /// before the clock moves.
    package func runUntilIdle() { advance(by: 0) }

    /// Moves time forward by `seconds`, firing what falls due on the way (what a task hands on
    /// runs at the task's time, before anything later), then runs until idle. Tasks due at the
    /// same time run in the order they were scheduled.
    package func advance(by seconds: Double) {
        let end = now + seconds
        while true {
            let next = state.withLock { state -> Task? in
                while let (due, id) = state.order.first, due <= end {
                    state.order.pop()
                    // Cancelled, or rescheduled since this entry was pushed: skip it.
                    guard let task = state.tasks[id], task.due == due else { continue }
                    state.now = max(state.now, due)
                    if let interval = task.interval {
                        state.tasks[id]!.due += interval
                        state.order.push(due: due + interval, id: id)
                    } else {
                        state.tasks[id] = nil
                    }
                    return task
                }
                return nil
            }
            guard let next else { break }
            next.queue.sync(execute: next.body)
        }
        state.withLock { $0.now = end }
    }
}

/// A binary min-heap of timers by (due, id): the earliest first, the first scheduled first
/// among equals.
private struct TimerHeap {
    private var items: [(due: Double, id: Int)] = []

    var first: (Double, Int)? { items.first.map { ($0.due, $0.id) } }

    private static func earlier(_ a: (due: Double, id: Int), _ b: (due: Double, id: Int)) -> Bool { (a.due, a.id) < (b.due, b.id) }

    mutating func push(due: Double, id: Int) {
        items.append((due, id))
        var child = items.count - 1
        while child > 0 {
            let parent = (child - 1) / 2
            guard Self.earlier(items[child], items[parent]) else { break }
            items.swapAt(child, parent)
            child = parent
        }
    }

    mutating func pop() {
        items.swapAt(0, items.count - 1)
        items.removeLast()
        var parent = 0
        while true {
            let left = 2 * parent + 1, right = left + 1
            var least = parent
            if left < items.count, Self.earlier(items[left], items[least]) { least = left }
            if right < items.count, Self.earlier(items[right], items[least]) { least = right }
            guard least != parent else { return }
            items.swapAt(parent, least)
            parent = least
        }
    }
}
