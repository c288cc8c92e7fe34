import Dispatch
import Foundation
import Synchronization
import Testing
@testable import Runtime

/// The engine's queue and what is bound to it.
@Suite struct EngineQueueTests {
    @Test func theEngineKnowsItsOwnQueue() {
        let engine = Engine(label: "test")
        #expect(!engine.isCurrent)
        #expect(engine.sync { engine.isCurrent })
        // Another queue is not the engine, even inside the engine's work.
        let other = DispatchQueue(label: "other")
        #expect(engine.sync { other.sync { engine.isCurrent } } == false)
    }

    @Test func syncOnTheEngineRunsAtOnceAndAsyncRunsAfterWhatWasGiven() {
        let scheduler = ManualScheduler()
        let engine = Engine(scheduler: scheduler)
        let order = Mutex<[String]>([])
        engine.async { order.withLock { $0.append("first") } }
        engine.async {
            // Already on the engine: no deadlock, and it runs in place.
            engine.sync { order.withLock { $0.append("nested") } }
            order.withLock { $0.append("second") }
        }
        #expect(order.withLock { $0 }.isEmpty)
        scheduler.runUntilIdle()
        #expect(order.withLock { $0 } == ["first", "nested", "second"])
    }

    @Test func boundStateIsReadAndChangedOnTheEngine() {
        let engine = Engine()
        let bound = EngineBound([1, 2], engine: engine)
        engine.sync {
            bound.value.append(3)
            #expect(bound.update { values -> Int in values.removeFirst() } == 1)
        }
        #expect(engine.sync { bound.value } == [2, 3])
    }
}

/// The manual clock: time moves only when told, timers fire in order of their time.
@Suite struct ManualSchedulerTests {
    @Test func timersFireInOrderOfTheirTimeAndTheClockFollows() {
        let scheduler = ManualScheduler(now: 100)
        let queue = DispatchQueue(label: "timers")
        let fired = Mutex<[(String, Double)]>([])
        scheduler.after(2, on: queue) { fired.withLock { $0.append(("two", scheduler.now)) } }
        scheduler.after(1, on: queue) { fired.withLock { $0.append(("one", scheduler.now)) } }
        let cancelled = scheduler.after(1.5, on: queue) { fired.withLock { $0.append(("never", scheduler.now)) } }
        cancelled.cancel()
        scheduler.advance(by: 1.9)
        #expect(fired.withLock { $0.map(\.0) } == ["one"])
        #expect(scheduler.now == 101.9)
        scheduler.advance(by: 0.1)
        #expect(fired.withLock { $0.map(\.0) } == ["one", "two"])
        #expect(fired.withLock { $0.map(\.1) } == [101, 102])
        #expect(scheduler.waiting == 0)
    }

    @Test func aRepeatingTimerFiresEachIntervalUntilCancelled() {
        let scheduler = ManualScheduler()
        let count = Mutex(0)
        let timer = scheduler.every(1, on: DispatchQueue(label: "every")) { count.withLock { $0 += 1 } }
        scheduler.advance(by: 3.5)
        #expect(count.withLock { $0 } == 4)  // At 0, 1, 2 and 3.
        timer.cancel()
        scheduler.advance(by: 10)
        #expect(count.withLock { $0 } == 4)
    }

    @Test func whatATimerHandsOnRunsBeforeAnythingLater() {
        let scheduler = ManualScheduler()
        let queue = DispatchQueue(label: "chain")
        let order = Mutex<[String]>([])
        scheduler.after(1, on: queue) {
            order.withLock { $0.append("timer") }
            scheduler.soon(on: queue) { order.withLock { $0.append("handed on") } }
        }
        scheduler.after(1.5, on: queue) { order.withLock { $0.append("later") } }
        scheduler.advance(by: 2)
        #expect(order.withLock { $0 } == ["timer", "handed on", "later"])
    }
}

/// The engine's one alarm.
@Suite struct DeadlinesTests {
    final class Owner: Sendable {
        let due = Mutex<Double?>(nil)
        let fired = Mutex<[Double]>([])
        func register(_ name: String, on deadlines: Deadlines, then: (@Sendable (Owner) -> Void)? = nil) {
            deadlines.add(name, next: { self.due.withLock { $0 } }) { now in
                self.fired.withLock { $0.append(now) }
                self.due.withLock { $0 = nil }
                then?(self)
            }
        }
    }

    func make() -> (ManualScheduler, Engine, Deadlines) {
        let scheduler = ManualScheduler(now: 0)
        let engine = Engine(scheduler: scheduler)
        return (scheduler, engine, Deadlines(engine: engine))
    }

    @Test func eachOwnerIsFiredAtItsOwnTimeAndOnlyThen() {
        let (scheduler, engine, deadlines) = make()
        let soon = Owner(), later = Owner()
        soon.due.withLock { $0 = 0.3 }
        later.due.withLock { $0 = 0.7 }
        engine.sync {
            soon.register("soon", on: deadlines)
            later.register("later", on: deadlines)
            deadlines.start()
        }
        scheduler.advance(by: 0.5)
        #expect(soon.fired.withLock { $0 } == [0.3] && later.fired.withLock { $0 }.isEmpty)
        scheduler.advance(by: 0.5)
        #expect(later.fired.withLock { $0 } == [0.7] && soon.fired.withLock { $0 } == [0.3])
    }

    @Test func aWakeForSoonerWorkMovesTheAlarm() {
        let (scheduler, engine, deadlines) = make()
        let owner = Owner()
        owner.due.withLock { $0 = 0.9 }
        engine.sync {
            owner.register("owner", on: deadlines)
            deadlines.start()
        }
        scheduler.advance(by: 0.1)
        // Work queued now, for 0.2: the alarm moves there.
        owner.due.withLock { $0 = 0.2 }
        engine.sync { deadlines.wake(at: 0.2) }
        scheduler.advance(by: 0.15)
        #expect(owner.fired.withLock { $0 } == [0.2])
    }

    @Test func anIdleEngineSleepsALongestSleepAtATime() {
        let (scheduler, engine, deadlines) = make()
        let owner = Owner()
        engine.sync {
            owner.register("idle", on: deadlines)
            deadlines.start()
        }
        scheduler.advance(by: 10)
        // Nothing due: the backstop rings once a second, and fires nobody.
        #expect(engine.sync { deadlines.rings } == 10)
        #expect(owner.fired.withLock { $0 }.isEmpty)
        #expect(scheduler.waiting == 1)
    }

    @Test func anOwnerDueAgainAtTheSameInstantWaitsAMillisecond() {
        let (scheduler, engine, deadlines) = make()
        let owner = Owner()
        owner.due.withLock { $0 = 0.5 }
        engine.sync {
            // It says it is due at 0.5 again after firing (work met only strictly after it).
            owner.register("stubborn", on: deadlines) { $0.due.withLock { $0 = 0.5 } }
            deadlines.start()
        }
        scheduler.advance(by: 0.5035)
        #expect(owner.fired.withLock { $0 }.count == 4)  // 0.5, then a millisecond apart.
    }

    @Test func nothingRingsOnceStopped() {
        let (scheduler, engine, deadlines) = make()
        let owner = Owner()
        owner.due.withLock { $0 = 0.5 }
        engine.sync {
            owner.register("owner", on: deadlines)
            deadlines.start()
            deadlines.stop()
            deadlines.wake(at: 0.2)
        }
        scheduler.advance(by: 5)
        #expect(owner.fired.withLock { $0 }.isEmpty)
        #expect(scheduler.waiting == 0)
    }
}

extension DeadlinesTests {
    /// An owner that asks to be woken at the ring's own instant while it is fired (its work
    /// just queued more) is fired again a millisecond on, not for ever at that instant.
    @Test func aWakeWhileFiringIsNoLoop() {
        let (scheduler, engine, deadlines) = make()
        let owner = Owner()
        owner.due.withLock { $0 = 0.5 }
        let fired = Mutex<[Double]>([])
        engine.sync {
            deadlines.add("eager", next: { fired.withLock { $0.count } < 3 ? owner.due.withLock { $0 } : nil }) { now in
                fired.withLock { $0.append(now) }
                deadlines.wake(at: now)
            }
            deadlines.start()
        }
        scheduler.advance(by: 0.5025)
        // Not three times at 0.5: each ring a millisecond after the last.
        #expect(fired.withLock { $0 }.map { ($0 * 1000).rounded() } == [500, 501, 502])
    }
}

/// A thread the system knows by its name from its first instruction on (`ps -L`, gdb).
@Suite struct NamedThreadTests {
    /// The names of this process's threads, as the system keeps them.
    func threadNames() -> [String] {
        ((try? FileManager.default.contentsOfDirectory(atPath: "/proc/self/task")) ?? []).compactMap { task in
            try? String(contentsOfFile: "/proc/self/task/\(task)/comm", encoding: .utf8).trimmingCharacters(in: .whitespacesAndNewlines)
        }
    }

    @Test func theThreadIsNamedBeforeItsBodyRuns() {
        let running = DispatchSemaphore(value: 0), release = DispatchSemaphore(value: 0), ended = DispatchSemaphore(value: 0)
        let seen = Mutex<[String]>([])
        Thread.start(named: "named-test-thread-long") {
            seen.withLock { $0 = self.threadNames() }
            running.signal()
            release.wait()
            ended.signal()
        }
        #expect(running.wait(timeout: .now() + 5) == .success)
        // Cut to the system's 15 bytes.
        #expect(seen.withLock { $0 }.contains("named-test-thre"))
        #expect(threadNames().contains("named-test-thre"))
        release.signal()
        #expect(ended.wait(timeout: .now() + 5) == .success)
    }
}
