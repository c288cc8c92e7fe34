import Foundation

/// Answers to "who is there?" (on the engine).
extension Presence {
    /// The query's answer range in a small group (`PresenceTiming.answerWindow` widens it with
    /// the crowd), and the least time between two of our answers: many queries at once (a crowd
    /// arriving, or a flood) cost one announcement each quarter second, or each answer window
    /// when that is longer.
    package static let answerDelay = PresenceTiming.answerWindow(amongPeers: 0)
    package static let answerGap = 0.25

    /// Someone asked who is there: our announcement goes to them after a random delay in the
    /// answer window (20–120 ms in a small group: a crowd does not answer at once), unless an
    /// answer is already on its way, which then goes to them too. It goes to each asker that
    /// announced itself, at its address, so that a crowd's answers to a newcomer cost the
    /// others nothing (multicast, each arrival brought every member the whole crowd's answers:
    /// N² datagrams on the link); to everyone when an asker is unknown or many asked at once
    /// (newcomers arriving together then share one answer). The gap runs from our last answer
    /// only: a refresh just sent went before the newcomer listened (it asked since), so holding
    /// the answer back for it made one peer in a crowd of 50 answer up to 250 ms late.
    func answer(_ asker: Data, reply: Route, now: Double) {
        let direct = directory.peer(asker) != nil && router.refreshing.contains { $0.name == reply.transport }
        guard state.value.answer == nil else { return state.value.answer!.add(direct ? reply : nil) }
        state.value.answer = PendingAnswer()
        state.value.answer!.add(direct ? reply : nil)
        let window = PresenceTiming.answerWindow(amongPeers: directory.table.refreshedCount)
        let earliest = state.value.lastAnswered + max(Self.answerGap, window.upperBound) - now
        let delay = max(state.update { Double.random(in: window, using: &$0.random) }, earliest)
        engine.after(delay) { [self] in
            guard let answer = state.value.answer else { return }
            state.value.answer = nil
            state.value.lastAnswered = engine.now
            guard let routes = answer.routes else { return announce(as: .answer) }
            if let bytes = router.frame(lanAnnouncement(), flags: .answer, ours: true) { _ = router.send(bytes, by: routes) }
        }
    }
}

/// An answer to queries waiting for its moment: the routes of those who asked, or nil to answer
/// everyone (one asker unknown, or more than `maximumRoutes`).
struct PendingAnswer {
    static let maximumRoutes = 8
    private(set) var routes: [Route]? = []

    mutating func add(_ route: Route?) {
        guard let route, var list = routes, list.count < Self.maximumRoutes else { return routes = nil }
        if !list.contains(route) { list.append(route) }
        routes = list
    }
}
