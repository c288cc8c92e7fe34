import Crypto
import Foundation

/// One thing said to several peers at once (a room's line), each copy sealed to its recipient
/// and sent again, with the backoff messages have (each peer's `RetransmissionTimer`, lent by
/// `PeerTiming`), until that peer acknowledges it; a copy that went `maximumAttempts` times
/// without an answer is given up and told. A pure value: the caller sends what it says is due.
package struct ReliableCopies<Copy: Sendable>: Sendable {
    struct Pending: Sendable {
        var copy: Copy
        var attempts = 1
        var nextAt: Double
        /// When it went, while it went once (its acknowledgement measures the round trip).
        var sentAt: Double?
    }

    /// What waits for its acknowledgement, by what was said (its id) and by peer.
    private var pending: [Data: [Data: Pending]] = [:]
    /// No copy is due before this: exact after `due`, a bound after an acknowledgement (a
    /// scan for each line said made a burst quadratic: 35,000 copies waited in a room of 8).
    private var earliest = Double.infinity
    package let maximumAttempts: Int

    package init(maximumAttempts: Int = 5) { self.maximumAttempts = maximumAttempts }

    package var isEmpty: Bool { pending.isEmpty }

    /// Whether a copy of `id` still waits for its acknowledgement.
    package func isWaiting(_ id: Data) -> Bool { pending[id] != nil }

    /// When the next copy is due again, if any waits; perhaps sooner (an alarm then finds
    /// nothing `due`, which sets it right).
    package var nextDue: Double? { pending.isEmpty ? nil : earliest }

    /// `copies` (by recipient) of `id` went just now for the first time.
    package mutating func sent(_ id: Data, copies: [Data: Copy], now: Double, timing timers: PeerTimers) {
        guard !copies.isEmpty else { return }
        pending[id] = copies.mapValues { copy in Pending(copy: copy, nextAt: now, sentAt: now) }
        for peer in copies.keys {
            pending[id]![peer]!.nextAt = now + timers[peer].delay
            earliest = min(earliest, pending[id]![peer]!.nextAt)
        }
    }

    /// What an acknowledgement changed.
    package enum Acknowledged: Equatable, Sendable {
        /// Nothing waited for it (a copy acknowledged twice, or never sent).
        case unknown
        /// That copy is done; others still wait.
        case copy
        /// That was the last copy of `id`.
        case all
    }

    /// `peer` has its copy of `id`.
    package mutating func acknowledge(_ id: Data, from peer: Data, now: Double, timing timers: inout PeerTimers) -> Acknowledged {
        guard let copy = pending[id]?.removeValue(forKey: peer) else { return .unknown }
        if let sentAt = copy.sentAt { timers[peer].measure(now - sentAt) }
        guard pending[id]!.isEmpty else { return .copy }
        pending[id] = nil
        return .all
    }

    /// Copies to send again now, and those given up.
    package struct Due: Sendable {
        package var again: [(peer: Data, copy: Copy)] = []
        package var lost: [(id: Data, peer: Data)] = []
    }

    /// The copies whose time has come: each goes again (and waits longer next time), or, after
    /// `maximumAttempts`, is given up.
    package mutating func due(now: Double, timing timers: inout PeerTimers) -> Due {
        var due = Due()
        var timedOut = Set<Data>()
        earliest = .infinity
        for (id, copies) in pending {
            for (peer, var copy) in copies {
                guard copy.nextAt <= now else {
                    earliest = min(earliest, copy.nextAt)
                    continue
                }
                if copy.attempts >= maximumAttempts {
                    due.lost.append((id, peer))
                    pending[id]![peer] = nil
                    continue
                }
                copy.attempts += 1
                copy.sentAt = nil
                copy.nextAt = now + timers[peer].delay(afterAttempt: copy.attempts)
                earliest = min(earliest, copy.nextAt)
                pending[id]![peer] = copy
                due.again.append((peer, copy.copy))
                timedOut.insert(peer)
            }
            if pending[id]!.isEmpty { pending[id] = nil }
        }
        for peer in timedOut { timers[peer].timedOut() }
        return due
    }

    /// `fragment` sealed to each of `peers` with the key agreed with it (`key`, which the caller
    /// keeps: an agreement costs more than the sealing): the copies, by recipient.
    package static func seal(_ fragment: Fragment, from identity: Identity, to peers: [Peer],
                            key: (Peer) throws -> SymmetricKey) throws -> [Data: Data] {
        var sealed: [Data: Data] = [:]
        for peer in peers {
            sealed[peer.signingKey] = try MessageCrypto.seal(fragment, key: key(peer), sender: identity.signingPublicKey, recipient: peer.signingKey)
        }
        return sealed
    }
}
