import Foundation

/// Our "who is there?" (a `Query`, mDNS-style): asked once, just after saying who we are, and
/// then of a peer whose refresh proofs we cannot check (we lost track of it), directly, a few
/// a minute. Everyone answers with their announcement (`Presence.answer`).
///
/// Engine state: every method runs on the engine.
package final class Questions: Sendable {
    struct State {
        var random: SeededRandom
        /// Whether our "who is there?" went out (once, right after the first announcement).
        var queried = false
        /// Questions to peers whose refresh proofs we cannot check: a few a minute, whoever
        /// sends proofs, none in our first seconds online.
        var askingLost: TokenBucket
        /// In our first seconds online, the senders of proofs we could not check and where to
        /// ask them (`askUnknownProvers`, when those seconds end); nil once they are over.
        var unknownProvers: [Data: Route]? = [:]
        /// Keys not listed yet whose announcement was too old to be live, and the newest such
        /// announcement of each: something newer of theirs lists them (`confirms`).
        var notLive: [Data: Freshness] = [:]
    }

    /// The most keys waiting to be confirmed live (a flood of old announcements forgets them first).
    static let notLiveKept = 256

    let router: Router
    let directory: PeerDirectory
    private let state: EngineBound<State>
    var engine: Engine { router.engine }

    /// How long a newcomer waits after its first announcement before it asks who is there.
    package static let queryDelay = 0.02...0.05
    /// Peers whose refresh proofs we cannot check are asked who they are one every 5 s (4 at
    /// once), and not in our first seconds online, while the crowd's answers to our query come:
    /// in a crowd of 250 on one bridge, newcomers asking 2 a second each (and the address
    /// resolutions each question to a new host broadcast) overflowed the hosts' links, and
    /// the proofs lost made everyone ask more.
    static let lostAskRate = 0.2, lostAskBurst = 4.0
    static let firstAskAfter = 3.0
    /// The most senders of unchecked proofs remembered in our first seconds online.
    static let unknownProversKept = 64
    init(router: Router, directory: PeerDirectory, random: SeededRandom) {
        self.router = router
        self.directory = directory
        state = EngineBound(State(random: random, askingLost: TokenBucket(rate: Self.lostAskRate, burst: Self.lostAskBurst,
                                                                          now: router.engine.now)), engine: router.engine)
    }

    /// Our first seconds online begin: proofs we cannot check are remembered until they end.
    func start() {
        state.value.unknownProvers = [:]
        engine.after(Self.firstAskAfter) { [weak self] in self?.askUnknownProvers() }
    }

    /// Our announcement went out: the first time, a newcomer asks who is there just after
    /// saying who it is, and everyone in range answers within a fraction of a second instead of
    /// at their next refresh, at the address the announcement gave. The question waits a
    /// random 20–50 ms (RFC 6762 §5.2 has a newcomer wait too), so that newcomers starting
    /// together do not ask at once, and the announcement is in everywhere first: back to back,
    /// on a bridge of 500 hosts the two were a thousand frames at once, over what the kernel
    /// queues, and some asked without having been heard.
    func announced() {
        guard !state.value.queried else { return }
        state.value.queried = true
        let delay = state.update { Double.random(in: Self.queryDelay, using: &$0.random) }
        engine.after(delay) { [weak self] in self?.router.broadcast(Query()) }
    }

    /// A proof from `key` we cannot check, whose sender `route` reaches directly: asked who it
    /// is, a few a minute at most (past our first seconds online, when the crowd's answers come
    /// anyway; until then remembered). True when a question went.
    func untracked(_ key: Data, at route: Route, now: Double) -> Bool {
        if let provers = state.value.unknownProvers {
            if provers.count < Self.unknownProversKept { state.value.unknownProvers?[key] = route }
            return false
        }
        guard state.update({ $0.askingLost.take(now: now) }), let bytes = router.frame(Query()) else { return false }
        _ = router.send(bytes, by: [route])
        return true
    }

    /// An announcement of `key`, not listed yet, too old to be live (a replay, or a peer whose
    /// clock is behind ours): it is remembered, and its sender asked who it is (as the sender of
    /// a proof we cannot check is) at `direct`; its answer, newer, lists it. A replay gets no
    /// newer answer: captured after a goodbye we never heard, it lists nobody.
    func notLive(_ key: Data, _ freshness: Freshness, asking direct: Route?, now: Double) {
        if state.value.notLive[key].map({ $0 < freshness }) ?? true {
            if state.value.notLive[key] == nil, state.value.notLive.count >= Self.notLiveKept, let any = state.value.notLive.keys.first {
                state.value.notLive[any] = nil
            }
            state.value.notLive[key] = freshness
        }
        if let direct { _ = untracked(key, at: direct, now: now) }
    }

    /// Whether `freshness` is newer than an announcement of `key` that was too old to be live:
    /// then it is (and is forgotten here).
    func confirms(_ key: Data, _ freshness: Freshness) -> Bool {
        guard let old = state.value.notLive[key], old < freshness else { return false }
        state.value.notLive[key] = nil
        return true
    }

    /// Our first seconds online are over: whoever sent a proof we could not check then and has
    /// not answered since is asked now, directly, within the questions' budget; more of them
    /// than that budget means our query, not their answers, was lost (mDNS asks again, RFC 6762
    /// §5.2): we ask everyone once more. The rest list themselves at their next signed refresh.
    private func askUnknownProvers() {
        guard router.isOpen, let provers = state.value.unknownProvers else { return }
        state.value.unknownProvers = nil
        let now = engine.now
        let unknown = provers.filter { directory.peer($0.key) == nil }
        if unknown.count > Int(Self.lostAskBurst) { return router.broadcast(Query()) }
        for route in unknown.values {
            guard state.update({ $0.askingLost.take(now: now) }), let bytes = router.frame(Query()) else { return }
            _ = router.send(bytes, by: [route])
        }
    }
}
