/// The engine's one alarm. Whoever has work at times of its own (presence's next announcement,
/// a message's retransmission, a room's beacon, a transfer's timeout) registers once, saying
/// when it next needs waking (`next`) and what to do then (`fire`); one timer is armed for the
/// earliest of them, and at its ring each owner whose time has come is fired, in the order they
/// registered. An owner whose work moves sooner than it said (a line just queued) calls
/// `wake(at:)`. Nothing ticks: an idle engine wakes once a `longestSleep` at most, a backstop
/// should an owner change its mind without saying so.
///
/// Engine state: every method runs on the engine (its owners' `next` and `fire` too).
package final class Deadlines: Sendable {
    package struct Owner: Sendable {
        let name: String
        let next: @Sendable () -> Double?
        let fire: @Sendable (_ now: Double) -> Void
    }

    private struct State {
        var owners: [Owner] = []
        var running = false
        /// When the timer armed rings (infinity: none), and which arming it is: a ring of one
        /// replaced by an earlier one is stale.
        var at = Double.infinity
        var timer: Cancellable?
        var generation = 0
        /// Rings so far (tests check that an idle engine sleeps).
        var rings = 0
        /// Owners are being fired: the alarm is armed afresh from their deadlines afterwards, so
        /// a wake meanwhile changes nothing (at the ring's own instant, it would ring again for
        /// ever).
        var firing = false
    }

    package let engine: Engine
    private let state: EngineBound<State>
    /// The longest the engine sleeps: a backstop, should a deadline be missed.
    package static let longestSleep = 1.0

    package init(engine: Engine) {
        self.engine = engine
        state = EngineBound(State(), engine: engine)
    }

    /// Registers an owner: `next` says when it next has work (nil: none now), `fire` does it.
    /// `name` tells it apart in tests.
    package func add(_ name: String, next: @escaping @Sendable () -> Double?, fire: @escaping @Sendable (_ now: Double) -> Void) {
        state.value.owners.append(Owner(name: name, next: next, fire: fire))
        wake(at: next() ?? .infinity)
    }

    /// Arms the alarm; until then `wake` only notes nothing.
    package func start() {
        state.value.running = true
        wake(at: earliest)
    }

    /// Disarms it for good: nothing rings after this, and its owners (who hold it) are let go.
    package func stop() {
        state.value.owners = []
        state.value.timer?.cancel()
        state.value.timer = nil
        state.value.running = false
        state.value.at = .infinity
    }

    /// Makes sure the engine is woken at `deadline` (or sooner): someone has work then.
    package func wake(at deadline: Double) {
        guard state.value.running, !state.value.firing else { return }
        let now = engine.now
        let target = min(max(deadline, now), now + Self.longestSleep)
        guard target < state.value.at else { return }
        state.value.timer?.cancel()
        state.value.generation += 1
        let generation = state.value.generation
        state.value.at = target
        state.value.timer = engine.after(target - now) { [weak self] in self?.rang(generation) }
    }

    /// The earliest time any owner has work.
    package var earliest: Double { state.value.owners.lazy.compactMap { $0.next() }.min() ?? .infinity }

    /// How many times the alarm has rung.
    package var rings: Int { state.value.rings }

    private func rang(_ generation: Int) {
        guard state.value.generation == generation, state.value.running else { return }
        state.value.at = .infinity
        state.value.timer = nil
        state.value.rings += 1
        let now = engine.now
        state.value.firing = true
        for owner in state.value.owners where (owner.next() ?? .infinity) <= now {
            owner.fire(now)
            guard state.value.running else { break }
        }
        state.value.firing = false
        if state.value.running { rearm() }
    }

    /// Arms the timer for the earliest deadline, at least a millisecond on: a deadline met only
    /// strictly after it (an expiry) must not ring again at the same instant.
    private func rearm() { wake(at: max(earliest, engine.now + 0.001)) }
}
