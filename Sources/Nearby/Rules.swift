import Foundation

/// Who may be seen and written to, in one place both the engine and the views consult: the
/// plane table (SPEC §4), and what features add to it — who may be seen (a curse's blindness),
/// what becomes of a line before it is sent (possession), how a peer is named on screen
/// (amnesia). Features add their rules when going online; each rule decides for itself whether
/// it applies just now. Engine state: the shell's thread asks through `engine.sync`.
package final class Rules: Sendable {
    /// Whether `peer` may be seen (nil: someone who is no network peer, a spectre); every rule
    /// must agree.
    package typealias Sight = @Sendable (Peer?) -> Bool
    /// A line on its way out: changed, or refused with an error the user reads.
    package typealias Outgoing = @Sendable (String) throws -> String
    /// The name to show instead of the handle of the peer with this signing key, or nil to
    /// leave it.
    package typealias Naming = @Sendable (Data) -> String?

    private struct State {
        var plane: Plane
        var sight: [Sight] = []
        var outgoing: [Outgoing] = []
        var naming: [Naming] = []
        /// The user's own choices (`PeerChoiceStore`): keys blocked and muted, places muted.
        var blocked: Set<Data> = []
        /// When keys once blocked were unblocked.
        var unblockedAt: [Data: Double] = [:]
        var muted: Set<Data> = []
        var mutedPlaces: Set<String> = []
        /// Keys the user verified (`TrustStore`), and keys using a verified key's name, to
        /// which nothing is sent until the user decides.
        var verified: Set<Data> = []
        var held: Set<Data> = []
    }

    private let state: EngineBound<State>
    package var engine: Engine { state.engine }

    package init(plane: Plane = .human, engine: Engine) { state = EngineBound(State(plane: plane), engine: engine) }

    /// This shell's plane.
    package var plane: Plane {
        get { state.value.plane }
        set { state.value.plane = newValue }
    }

    package func addSight(_ rule: @escaping Sight) { state.value.sight.append(rule) }
    package func addOutgoing(_ rule: @escaping Outgoing) { state.value.outgoing.append(rule) }
    package func addNaming(_ rule: @escaping Naming) { state.value.naming.append(rule) }
    /// Lets go of the features' rules (they hold the features, which hold this): gone offline.
    func forgetAdded() {
        state.value.sight = []
        state.value.outgoing = []
        state.value.naming = []
    }

    /// Whether the user blocked this key: nothing of theirs is shown, stored or answered.
    package func isBlocked(_ signingKey: Data) -> Bool { state.value.blocked.contains(signingKey) }

    /// Whether a message of this key's, written at `sentAt` (its clock), was written while the
    /// user blocked it: such a message is never shown, even once the key is unblocked.
    package func wroteWhileBlocked(_ signingKey: Data, sentAt: Double) -> Bool {
        state.value.unblockedAt[signingKey].map { sentAt < $0 } ?? false
    }

    /// Whether what this key sends arrives silently: stored, never told above the prompt.
    package func isMuted(_ signingKey: Data) -> Bool { state.value.muted.contains(signingKey) }

    /// Whether the user compared this key's safety number (`verify`).
    package func isVerified(_ signingKey: Data) -> Bool { state.value.verified.contains(signingKey) }

    /// Whether this key uses the name of a key the user verified: what is written to it waits
    /// until the user decides.
    package func isHeld(_ signingKey: Data) -> Bool { state.value.held.contains(signingKey) }

    /// Holds a key that just arrived under a verified name.
    package func hold(_ signingKey: Data) { state.value.held.insert(signingKey) }

    /// The verifications as stored; returns the keys no longer held.
    func verifications(verified: Set<Data>, held: Set<Data>) -> Set<Data> {
        defer {
            state.value.verified = verified
            state.value.held = held
        }
        return state.value.held.subtracting(held)
    }

    /// Whether a place (`room 1.2`) is muted.
    package func isMuted(place: String) -> Bool { state.value.mutedPlaces.contains(place) }

    /// The choices as stored; returns the keys newly blocked.
    func choose(blocked: Set<Data>, muted: Set<Data>, mutedPlaces: Set<String>, unblockedAt: [Data: Double] = [:]) -> Set<Data> {
        defer {
            state.value.blocked = blocked
            state.value.unblockedAt = unblockedAt
            state.value.muted = muted
            state.value.mutedPlaces = mutedPlaces
        }
        return blocked.subtracting(state.value.blocked)
    }

    /// Whether our plane reaches the peer's (what we may send it).
    package func canWrite(_ peer: Peer) -> Bool { peer.plane.map(plane.canReach) ?? false }

    /// Whether the peer's plane reaches ours (what we may take from it: the table binds the
    /// receiver too).
    package func canHear(from peer: Peer) -> Bool { peer.plane?.canReach(plane) ?? false }

    /// Whether the peer is in sight: our plane reaches it and every sight rule agrees.
    package func canSee(_ peer: Peer) -> Bool { canWrite(peer) && allowsSight(of: peer) }

    /// True when every sight rule lets `peer` be seen (the planes are checked apart); nil asks
    /// about someone who is no network peer (a spectre).
    package func allowsSight(of peer: Peer?) -> Bool { state.value.sight.allSatisfy { $0(peer) } }

    /// The line as it is to be sent, after every outgoing rule in the order they were added.
    package func outgoing(_ line: String) throws -> String {
        try state.value.outgoing.reduce(line) { text, rule in try rule(text) }
    }

    /// What to call the peer with this signing key on screen, if a rule renames it.
    package func shownName(of signingKey: Data) -> String? {
        for rule in state.value.naming { if let name = rule(signingKey) { return name } }
        return nil
    }
}
