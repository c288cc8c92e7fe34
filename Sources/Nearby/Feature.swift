import Accounts
@_exported import Runtime
import Foundation
import Storage

/// A feature that lives while the user is online (curses, spectres, rooms, chat's own notices):
/// told when the engine exists, before the first packet, and when it stops. Features plug in
/// here, never into each other.
package protocol Feature: AnyObject {
    /// On the engine, before any transport starts: the feature registers its packet kinds
    /// (`context.network.handle`), its rules, its observers and its deadlines, and keeps its
    /// engine-bound state for this time online.
    func online(_ context: FeatureContext) throws
    /// On the shell's thread, with the transports still up (a host tells its guests): the
    /// feature lets go of what `online` took.
    func offline()
}

/// What a feature may use while online: the running engine and what it owns. Packet handlers,
/// deadlines and the database writes the network causes run on `engine`. (What a feature
/// tells the user goes through its own view side: the engine knows no terminal.)
package struct FeatureContext: Sendable {
    package let engine: Engine
    /// Where kinds are registered (`handle`) and packets sent.
    package let network: Router
    /// Who is present, and how we are announced.
    package let presence: Presence
    /// The engine's one alarm: a feature with work at times of its own registers there.
    package let deadlines: Deadlines
    package let delivery: Delivery
    package let profile: Profile
    package let identity: Identity
    package let database: SeanceDatabase
    /// Where the database writes the network causes go: one transaction per engine turn.
    package let commits: GroupCommit
    /// Who may be seen and written to, and what features add to that (on the engine).
    package let rules: Rules
    /// Seeded from `--seed`, like every other random choice: each feature takes its own copy.
    package let random: SeededRandom
    private let events: EngineBound<[@Sendable (OnlineEvent) -> Void]>

    init(node: NearbyNode, delivery: Delivery, commits: GroupCommit, profile: Profile, identity: Identity,
         database: SeanceDatabase, rules: Rules, random: SeededRandom,
         events: EngineBound<[@Sendable (OnlineEvent) -> Void]>) {
        engine = node.engine
        network = node.router
        presence = node.presence
        deadlines = node.deadlines
        self.delivery = delivery
        self.profile = profile
        self.identity = identity
        self.database = database
        self.commits = commits
        self.rules = rules
        self.random = random
        self.events = events
    }

    /// This profile's signing key, as peers know it.
    package var me: Data { identity.signingPublicKey }

    /// `observer` hears every presence, delivery and plane event, on the engine, in order.
    package func observe(_ observer: @escaping @Sendable (OnlineEvent) -> Void) { events.value.append(observer) }

    /// Lets go of what the features registered here (it holds them, and they hold this):
    /// gone offline.
    func release() {
        events.value = []
        rules.forgetAdded()
        delivery.forgetMailHandlers()
    }

    /// Tells every observer (on the engine).
    func tellObservers(_ event: OnlineEvent) { for observer in events.value { observer(event) } }
}

/// What happens while online, as features hear of it (on the engine).
package enum OnlineEvent: Sendable {
    case presence(PresenceEvent)
    /// `peer` arrived with the name of another key, the one trusted for it (`trusted`, its
    /// handle; `verified`: the user compared its safety number, and what is written to `peer`
    /// waits): possibly an impersonation. Told every time it appears.
    case impostor(Peer, trusted: String, verified: Bool)
    /// What waits for a peer may go now: it came into reach (`returned`: it was out of sight,
    /// not just changed), or, with no peer, a transport came back and everyone it carries is
    /// reachable again. Everything that sends again until acknowledged listens for this.
    case reachable(Peer?, returned: Bool)
    case delivery(DeliveryEvent)
    /// Our own plane changed (the battery): who is in sight changes with it.
    case planeChanged(from: Plane, to: Plane)
    /// The user blocked these keys just now (a room's host lets them go).
    case blocked(Set<Data>)
}

/// Someone to talk to who is no network peer (a spectre): listed by `nearby`, opened like a
/// peer, and answering on this machine.
package struct LocalPeer: Sendable {
    package let name: String
    /// What it is, shown after its name: `spectre`.
    package let kind: String
    package let glyph: String
    /// Its answer to a line; nil once it has gone.
    package let answer: @Sendable (String) -> String?

    package init(name: String, kind: String, glyph: String, answer: @escaping @Sendable (String) -> String?) {
        self.name = name
        self.kind = kind
        self.glyph = glyph
        self.answer = answer
    }
}

/// A feature with local ones to talk to.
package protocol LocalPresence: AnyObject {
    /// Those present now (asked from the shell's thread).
    func present() -> [LocalPeer]
}
