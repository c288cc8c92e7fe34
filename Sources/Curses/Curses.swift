import Accounts
import ChatViews
import Foundation
import GRDB
import Nearby
import Shell
import Storage
import Store
import Terminal

/// Ghost curses (SPEC §4.1), as a feature: two packet kinds, the rules a curse adds (Blind to
/// sight, Silence, Possession and Mirror to what is sent, Amnesia to names), the curses table,
/// the `curse` and `curses` commands, and what a Holy candle lifts.
///
/// The cursed side decides: it checks, by the caster's own signed announcement, that the
/// caster is a Ghost and that it is itself Human, then stores the curse with its end time and
/// answers whether it took hold. Everything the network changes lives on the engine
/// (`CursesOnline`); the shell's commands ask there.
package final class Curses: Feature, CurseBook {
    /// The name every peer gets under amnesia.
    package static let stranger = "a stranger"
    /// How long a caster waits for the answer before saying there was none.
    static let answerWait = 5.0
    /// How long a spell keeps a ghost from cursing the one who cast it.
    package static let repelSeconds = 30.0 * 60

    let login: LoginSession
    /// How notices look (known once registered).
    var styler = Styler(.plain)
    /// While online: the curses' part on the engine.
    private(set) var live: CursesOnline?

    /// Where its notices go (above the prompt).
    package let inbox: AsyncInbox

    package init(login: LoginSession, inbox: AsyncInbox) {
        self.login = login
        self.inbox = inbox
    }

    // MARK: Online

    package func online(_ context: FeatureContext) throws {
        live = try CursesOnline(context, styler: styler, inbox: inbox)
    }

    package func offline() {
        live.map { live in live.context.engine.sync { live.stop() } }
        live = nil
    }

    private func requireOnline() throws -> CursesOnline {
        guard let live else { throw UserError("you are offline: chat brings you online") }
        return live
    }

    // MARK: Commands (the shell's thread)

    /// `curse PEER KIND MINUTES`: checked here first (only a Ghost, only on a Human), then sent;
    /// the answer comes as a notice.
    func cast(_ wanted: String, kind: CurseKind, minutes: Int, shell: Shell) throws {
        let live = try requireOnline()
        let peer = try live.context.engine.sync {
            let peer = try Self.find(wanted, among: live.context.presence.peers())
            try live.send(kind, minutes: minutes, to: peer)
            return peer
        }
        shell.console.print("you cast \(kind.rawValue) on \(peer.shownHandle) for \(minutes) min…")
    }

    /// Casts on a present peer, after the caster's own checks; the answer comes as a notice
    /// (or, after `answerWait`, a notice that none came).
    package func send(_ kind: CurseKind, minutes: Int, to peer: Peer) throws {
        let live = try requireOnline()
        try live.context.engine.sync { try live.send(kind, minutes: minutes, to: peer) }
    }

    /// `spell PEER`: the spell learnt last, to a ghost that cursed us (the one packet a Human may
    /// send a Ghost). Its curses on us end here at once, and it is refused for half an hour.
    func castSpell(_ wanted: String, shell: Shell) throws {
        let live = try requireOnline()
        // Not by sight: a Human cannot see a Ghost. Any present peer that has cursed us.
        let (peer, phrase, lifted) = try live.context.engine.sync {
            let peer = try Self.find(wanted, among: live.context.presence.peers())
            let (phrase, lifted) = try live.speak(to: peer)
            return (peer, phrase, lifted)
        }
        shell.console.printProse("you speak the spell “\(phrase)” at \(peer.shownHandle)\(lifted.isEmpty ? "" : " — " + lifted.map(\.rawValue).joined(separator: ", ") + " lifted"); "
                            + "it cannot curse you for \(Int(Self.repelSeconds / 60)) min")
    }

    /// Speaks the spell learnt last at `peer`: what was said, and the curses it lifted.
    @discardableResult
    package func speak(to peer: Peer) throws -> (phrase: String, lifted: [CurseKind]) {
        let live = try requireOnline()
        return try live.context.engine.sync { try live.speak(to: peer) }
    }

    /// Remembers a spell a spectre taught (the last one learnt is the one `spell` speaks).
    package func learn(spell phrase: String, key: Data, database: SeanceDatabase) throws {
        try CurseStore(database: database).learn(spell: phrase, for: key)
    }

    /// The one present peer `wanted` names (`name` or `name#fp`).
    static func find(_ wanted: String, among peers: [Peer]) throws -> Peer {
        let matches = peers.filter { $0.answers(to: wanted) }
        guard let peer = matches.first else { throw UserError("nobody called \(SafeText.visible(wanted)) is nearby") }
        guard matches.count == 1 else {
            throw UserError("several peers are called \(SafeText.visible(wanted)): " + matches.map(\.shownHandle).joined(separator: ", ")
                            + "; give name#fingerprint")
        }
        return peer
    }

    /// `curses`: what is on this profile, and for how long still.
    func list(_ shell: Shell) throws {
        guard let login = login.current else { throw ProfileError.notLoggedIn }
        let now = shell.session.clock()
        let active = try CurseStore(database: shell.session.openDatabase()).active(on: login.identity.signingPublicKey, now: now)
        guard !active.isEmpty else { return shell.console.print("no curse is on you") }
        for curse in active {
            // Under amnesia the caster too is a stranger.
            let caster = live.map { live in live.context.engine.sync { live.caster(of: curse) } } ?? SafeText.visible(curse.casterHandle)
            shell.console.print("\(DisplayWidth.pad(curse.kind.rawValue, to: 11)) from \(DisplayWidth.pad(caster, to: 22)) "
                                + "\(DisplayWidth.pad(Self.left(curse.endsAt - now), to: 10)) left   (\(curse.kind.effect))")
        }
    }

    // MARK: The store's candle

    /// A Holy candle: the curse on `profile` that ends last is lifted, in the store's
    /// transaction.
    package func liftLatest(on profile: Int64, in db: Database, now: Double) throws -> LiftedCurse? {
        guard let key = try Data.fetchOne(db, sql: "SELECT signingKey FROM profile WHERE id = ?", arguments: [profile]),
              let lifted = try CurseStore.liftLatest(db, on: key, now: now) else { return nil }
        return LiftedCurse(id: lifted.id, description: "the curse of \(lifted.kind.rawValue) from \(SafeText.visible(lifted.casterHandle))")
    }

    /// After the store's transaction committed: the engine stops applying the curse.
    package func lifted(_ curse: LiftedCurse) { live.map { live in live.context.engine.sync { live.lifted(curse.id) } } }

    // MARK: Text

    /// "4 min 10 s", "45 s".
    static func left(_ seconds: Double) -> String {
        let whole = max(0, Int(seconds.rounded(.up)))
        return whole >= 60 ? "\(whole / 60) min \(whole % 60) s" : "\(whole) s"
    }

    // MARK: Registration

    package func register(in shell: Shell, online: Online) {
        online.add(self)
        styler = shell.styler
        let kinds = ArgumentKind.choice(CurseKind.allCases.map { Candidate($0.rawValue, $0.effect) })
        let peers = ArgumentKind.dynamic { [weak self] in
            (self?.live.map { live in live.context.engine.sync { live.context.presence.peers() } } ?? [])
                .filter { $0.plane == .human }
                .map { Candidate($0.shownHandle, "Human") }
        }
        shell.register(Command("curse", scope: .global,
                               arguments: [.positional("peer", peers, help: "a Human nearby: name or name#fingerprint"),
                                           .positional("kind", kinds), .positional("minutes", .integer, help: "1 to 60")],
                               summary: "as a Ghost, curse a Human nearby (blind, silence, possession, amnesia, mirror)") { invocation in
            let arguments = invocation.arguments
            guard let kind = CurseKind(rawValue: arguments["kind"]!.lowercased()) else {
                throw UserError("the curses are " + CurseKind.allCases.map(\.rawValue).joined(separator: ", ") + ", not '\(arguments["kind"]!)'")
            }
            guard let minutes = Int(arguments["minutes"]!) else { throw UserError("minutes must be a number from 1 to 60") }
            try self.cast(arguments["peer"]!, kind: kind, minutes: minutes, shell: invocation.shell)
        })
        shell.register(Command("curses", scope: .global, summary: "the curses on you, and how long each has left") { invocation in
            try self.list(invocation.shell)
        })
        let cursers = ArgumentKind.dynamic { [weak self] in
            guard let self, let login = self.login.current, let database = try? shell.session.openDatabase() else { return [] }
            return ((try? CurseStore(database: database).casters(of: login.identity.signingPublicKey)) ?? []).map {
                Candidate(SafeText.visible(PeerIdentity.handle(name: $0.name, signingKey: $0.key)), "cursed you")
            }
        }
        shell.register(Command("spell", scope: .global,
                               arguments: [.positional("peer", cursers, help: "a ghost that cursed you: name or name#fingerprint")],
                               summary: "speak the spell a spectre taught you at a ghost that cursed you") { invocation in
            try self.castSpell(invocation.arguments["peer"]!, shell: invocation.shell)
        })
    }
}
