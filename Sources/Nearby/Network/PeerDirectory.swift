import Foundation

/// Who is present: the table presence keeps (`Presence` writes it), which the router reads to
/// find a peer's routes and who sent a packet, and the sessions to find a peer's key. One box,
/// so that none of them has to call another to look someone up. Engine state.
package final class PeerDirectory: Sendable {
    private let state: EngineBound<PresenceTable>

    package init(timing: PresenceTiming, engine: Engine) { state = EngineBound(PresenceTable(timing: timing), engine: engine) }

    /// The table, to read (on the engine).
    package var table: PresenceTable { state.value }

    /// Runs `body` on the table in place (on the engine): presence's changes.
    func update<T>(_ body: (inout PresenceTable) throws -> T) rethrows -> T { try state.update(body) }

    /// The present peer with this signing key: a lookup, whatever the size of the table.
    package func peer(_ key: Data) -> Peer? { state.value.peer(key) }

    /// Whether a peer with this signing key is present (without copying it out).
    package func isPresent(_ key: Data) -> Bool { state.value.peers.contains(key) }
}

/// Counts of what came and went, for `nearby stats` and the benchmarks.
package struct NearbyStatistics: Sendable {
    package var sent = 0
    package var sentBytes = 0
    package var received = 0
    package var dropped: [String: Int] = [:]
    /// Answers to a query from peers heard already, left unread: nothing was wrong with them.
    package var redundant = 0
    /// Refreshes of known keys left unread: a repeat of one read already, or the same
    /// announcement again well before its interval (the start-up's second one, a replay).
    package var repeats = 0
    /// Refreshes proved by a link of the sender's hash chain, no signature checked.
    package var proved = 0
    /// The hosts the flood limits dropped most from, most first (at most three).
    package var flooders: [(source: String, dropped: Int)] = []
    package var sessions = SessionStatistics()
    /// The mailboxes' subscriptions, as their brokers stand on them (nil: no broker).
    package var inbox: InboxStatus?
}
