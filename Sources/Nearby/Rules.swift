import Foundation
import Synchronization

/// What features add to the plane table, in one place both the engine and the views consult:
/// who may be seen (on top of the planes), what becomes of a line before it is sent, and how a
/// peer is named on screen. A feature adds its rules when going online and they stay until
/// `clear` (going offline); each rule decides for itself whether it applies just now.
public final class Rules: Sendable {
    /// Whether `peer` may be seen (nil: someone who is no network peer, a spectre); every rule
    /// must agree.
    public typealias Sight = @Sendable (Peer?) -> Bool
    /// A line on its way out: changed, or refused with an error the user reads.
    public typealias Outgoing = @Sendable (String) throws -> String
    /// The name to show instead of the handle of the peer with this signing key, or nil to
    /// leave it.
    public typealias Naming = @Sendable (Data) -> String?

    private struct State {
        var sight: [Sight] = []
        var outgoing: [Outgoing] = []
        var naming: [Naming] = []
    }

    private let state = Mutex(State())

    public init() {}

    public func addSight(_ rule: @escaping Sight) { state.withLock { $0.sight.append(rule) } }
    public func addOutgoing(_ rule: @escaping Outgoing) { state.withLock { $0.outgoing.append(rule) } }
    public func addNaming(_ rule: @escaping Naming) { state.withLock { $0.naming.append(rule) } }

    public func clear() { state.withLock { $0 = State() } }

    /// True when every sight rule lets `peer` be seen (the planes are checked apart); nil asks
    /// about someone who is no network peer (a spectre).
    public func allowsSight(of peer: Peer?) -> Bool {
        state.withLock { $0.sight }.allSatisfy { $0(peer) }
    }

    /// The line as it is to be sent, after every outgoing rule in the order they were added.
    public func outgoing(_ line: String) throws -> String {
        try state.withLock { $0.outgoing }.reduce(line) { text, rule in try rule(text) }
    }

    /// What to call the peer with this signing key on screen, if a rule renames it.
    public func shownName(of signingKey: Data) -> String? {
        for rule in state.withLock({ $0.naming }) { if let name = rule(signingKey) { return name } }
        return nil
    }
}
