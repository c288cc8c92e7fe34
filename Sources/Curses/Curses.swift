import Accounts
import Chat
import Foundation
import GRDB
import Nearby
import Shell
import Storage
import Store
import Synchronization
import Terminal

/// Ghost curses (SPEC §4.1), as a feature of chat: two packet kinds, the rules a curse adds
/// (Blind to sight, Silence, Possession and Mirror to what is sent, Amnesia to names), the
/// curses table, the `curse` and `curses` commands, and what a Holy candle lifts.
///
/// The cursed side decides: it checks, by the caster's own signed announcement, that the
/// caster is a Ghost and that it is itself Human, then stores the curse with its end time and
/// answers whether it took hold. Packets, timers and the writes they cause run on the engine;
/// the rules read the curses in force under a lock (the views ask from the shell thread).
public final class Curses: ChatFeature, CurseBook, @unchecked Sendable {
    private struct State {
        var active: [ActiveCurse] = []
        /// While online: the engine's context, and each curse's end timer.
        var context: OnlineContext?
        var timers: [Int64: Cancellable] = [:]
        var random = SeededRandom(seed: 0)
        /// Curses this shell cast and has not heard about yet, by casting id.
        var pending: [Data: Casting] = [:]
    }

    struct Casting {
        var target: String
        var kind: CurseKind
        var minutes: Int
    }

    /// The name every peer gets under amnesia.
    public static let stranger = "a stranger"
    /// How long a caster waits for the answer before saying there was none.
    static let answerWait = 5.0
    /// How long a spell keeps a ghost from cursing the one who cast it.
    public static let repelSeconds = 30.0 * 60

    private let state = Mutex(State())
    let profiles: Profiles

    public init(profiles: Profiles) { self.profiles = profiles }

    // MARK: Online

    public func online(_ context: OnlineContext) throws {
        let me = context.identity.signingPublicKey
        let active = try CurseStore(database: context.database).active(on: me, now: context.engine.now)
        state.withLock { state in
            state.context = context
            state.active = active
            state.random = context.random
        }
        context.engine.sync { for curse in active { scheduleEnd(curse, context: context) } }
        context.service.handle(CurseCast.self) { [weak self] cast, sender, peer in self?.received(cast, from: sender, peer: peer) }
        context.service.handle(CurseAnswer.self) { [weak self] answer, _, peer in self?.answered(answer, from: peer) }
        context.service.handle(SpellCast.self) { [weak self] spell, _, peer in self?.received(spell, from: peer) }
        context.rules.addSight { [weak self] _ in !(self?.isActive(.blind) ?? false) }
        context.rules.addOutgoing { [weak self] line in try self?.outgoing(line) ?? line }
        context.rules.addNaming { [weak self] _ in self?.isActive(.amnesia) == true ? Self.stranger : nil }
        for curse in active {
            context.inbox.post(notice(context, "you are still cursed: \(describe(curse)), \(Self.left(curse.endsAt - context.engine.now)) left"))
        }
    }

    public func offline() {
        let timers = state.withLock { state -> [Cancellable] in
            defer { state.timers = [:]; state.context = nil; state.pending = [:] }
            return Array(state.timers.values)
        }
        timers.forEach { $0.cancel() }
    }

    /// Whether a curse of `kind` is on this shell just now.
    func isActive(_ kind: CurseKind) -> Bool {
        state.withLock { state in
            guard let now = state.context?.engine.now else { return false }
            return state.active.contains { $0.kind == kind && $0.endsAt > now }
        }
    }

    /// A line on its way out: refused under silence, turned to gibberish under possession,
    /// mirrored under the mirror (both, in that order, when both are on).
    func outgoing(_ line: String) throws -> String {
        let (silence, now) = state.withLock { state -> (ActiveCurse?, Double) in
            let now = state.context?.engine.now ?? .infinity
            return (state.active.first { $0.kind == .silence && $0.endsAt > now }, now)
        }
        if let silence {
            throw UserError("you are silenced by \(SafeText.visible(silence.casterHandle)) (\(Self.left(silence.endsAt - now)) left)")
        }
        var text = line
        if isActive(.possession) { text = state.withLock { state in Gibberish.possess(text, using: &state.random) } }
        if isActive(.mirror) { text = Gibberish.mirror(text) }
        return text
    }

    // MARK: On the engine

    /// A curse cast on us. Checked here, answered to the caster.
    private func received(_ cast: CurseCast, from sender: Data, peer: Peer?) {
        guard let context = state.withLock({ $0.context }), cast.target == context.identity.signingPublicKey else { return }
        // The caster must be present (so its plane is known, from its own signed announcement)
        // and a Ghost; this shell must be Human.
        guard let peer else { return }
        let now = context.engine.now
        let caster = SafeText.visible(peer.handle)
        let outcome: CurseAnswer.Outcome
        let store = CurseStore(database: context.database)
        if Plane(wireValue: peer.announcement.plane) != .ghost {
            outcome = .notAGhost
        } else if context.myPlane() != .human {
            outcome = .notAHuman
        } else if (try? store.repelled(peer.signingKey, from: context.identity.signingPublicKey, now: now)) ?? nil != nil {
            outcome = .repelled
        } else if (try? Ledger(database: context.database).protectingMedallion(profile: context.profile.id, now: now)) ?? nil != nil {
            outcome = .bounced
            context.inbox.post(notice(context, "\(caster) tried to curse you with \(cast.kind.rawValue): it bounced off your Saint's medallion"))
        } else {
            guard let curse = try? store.add(on: context.identity.signingPublicKey, casterKey: peer.signingKey, casterName: peer.name,
                                             kind: cast.kind, castID: cast.id, startedAt: now, endsAt: now + Double(cast.minutes) * 60) else {
                return  // The same casting again (a replay), or the database refused: nothing takes hold twice.
            }
            state.withLock { $0.active.append(curse) }
            scheduleEnd(curse, context: context)
            outcome = .tookHold
            context.inbox.post(notice(context, "\(caster) cursed you with \(cast.kind.rawValue) for \(cast.minutes) min: \(cast.kind.effect)"))
        }
        context.service.send(CurseAnswer(caster: peer.signingKey, id: cast.id, outcome: outcome), to: peer)
    }

    /// What became of a curse we cast.
    private func answered(_ answer: CurseAnswer, from peer: Peer?) {
        guard let context = state.withLock({ $0.context }), answer.caster == context.identity.signingPublicKey,
              let casting = state.withLock({ $0.pending.removeValue(forKey: answer.id) }) else { return }
        let target = casting.target
        let text: String
        switch answer.outcome {
        case .tookHold: text = "your curse took hold: \(target) suffers \(casting.kind.rawValue) for \(casting.minutes) min"
        case .bounced: text = "your curse bounced off \(target)'s Saint's medallion"
        case .repelled: text = "\(target) repelled you with a spell: you cannot curse them yet"
        case .notAGhost: text = "\(target) would not take your curse: to them you are not a Ghost"
        case .notAHuman: text = "your curse found no hold: \(target) is not Human"
        }
        context.inbox.post(notice(context, text))
    }

    /// A spell from a Human we cursed: we may not curse it for half an hour, and are told so.
    private func received(_ spell: SpellCast, from peer: Peer?) {
        guard let context = state.withLock({ $0.context }), spell.target == context.identity.signingPublicKey,
              let peer, Spells.phrases.contains(spell.phrase) else { return }
        let now = context.engine.now
        try? CurseStore(database: context.database).repel(context.identity.signingPublicKey, from: peer.signingKey,
                                                          until: now + Self.repelSeconds)
        context.inbox.post(notice(context, "\(peer.shownHandle) repelled you with a spell (“\(SafeText.visible(spell.phrase))”): "
                                  + "you cannot curse them for \(Int(Self.repelSeconds / 60)) min"))
    }

    /// Ends `curse` at its time, with a notice (unless a candle or a spell ended it first).
    private func scheduleEnd(_ curse: ActiveCurse, context: OnlineContext) {
        let timer = context.engine.after(max(0, curse.endsAt - context.engine.now)) { [weak self] in
            guard let self else { return }
            let ended = self.state.withLock { state -> Bool in
                state.timers[curse.id] = nil
                guard let index = state.active.firstIndex(where: { $0.id == curse.id }) else { return false }
                state.active.remove(at: index)
                return true
            }
            guard ended else { return }
            try? CurseStore(database: context.database).end(curse.id, how: "expired", at: context.engine.now)
            context.inbox.post(self.notice(context, "the curse of \(curse.kind.rawValue) from \(SafeText.visible(curse.casterHandle)) has ended"))
        }
        state.withLock { $0.timers[curse.id] = timer }
    }

    // MARK: Commands (the shell's thread)

    /// `curse PEER KIND MINUTES`: checked here first (only a Ghost, only on a Human), then sent;
    /// the answer comes as a notice.
    func cast(_ wanted: String, kind: CurseKind, minutes: Int, shell: Shell) throws {
        guard let context = state.withLock({ $0.context }) else { throw UserError("you are offline: chat brings you online") }
        let peer = try Self.find(wanted, among: context.service.peers())
        try send(kind, minutes: minutes, to: peer)
        shell.console.print("you cast \(kind.rawValue) on \(peer.shownHandle) for \(minutes) min…")
    }

    /// Casts on a present peer, after the caster's own checks; the answer comes as a notice
    /// (or, after `answerWait`, a notice that none came).
    public func send(_ kind: CurseKind, minutes: Int, to peer: Peer) throws {
        guard let context = state.withLock({ $0.context }) else { throw UserError("you are offline: chat brings you online") }
        guard CurseKind.minutes.contains(minutes) else { throw UserError("a curse lasts 1 to 60 minutes, not \(minutes)") }
        let mine = context.myPlane()
        guard mine == .ghost else { throw UserError("only a Ghost can curse, and you are \(mine.name)") }
        let theirs = Plane(wireValue: peer.announcement.plane) ?? .ghost
        guard theirs == .human else { throw UserError("\(peer.shownHandle) is \(theirs.name): only the living (Human) can be cursed") }
        if let until = try CurseStore(database: context.database).repelled(context.identity.signingPublicKey, from: peer.signingKey,
                                                                            now: context.engine.now) {
            throw UserError("\(peer.shownHandle) repelled you with a spell: you cannot curse them for \(Self.left(until - context.engine.now)) more")
        }
        // Unique whatever the seed: the cursed side refuses a casting id it has seen.
        let id = Data((0..<16).map { _ in UInt8.random(in: 0...255) })
        let casting = Casting(target: peer.shownHandle, kind: kind, minutes: minutes)
        state.withLock { $0.pending[id] = casting }
        context.service.send(CurseCast(target: peer.signingKey, kind: kind, minutes: UInt8(minutes), id: id), to: peer)
        context.engine.after(Self.answerWait) { [weak self] in
            guard let self, self.state.withLock({ $0.pending.removeValue(forKey: id) }) != nil else { return }
            context.inbox.post(self.notice(context, "no answer from \(casting.target): the curse may not have reached them"))
        }
    }

    /// `spell PEER`: the spell learnt last, to a ghost that cursed us (the one packet a Human may
    /// send a Ghost). Its curses on us end here at once, and it is refused for half an hour.
    func castSpell(_ wanted: String, shell: Shell) throws {
        guard let context = state.withLock({ $0.context }) else { throw UserError("you are offline: chat brings you online") }
        // Not by sight: a Human cannot see a Ghost. Any present peer that has cursed us.
        let peer = try Self.find(wanted, among: context.service.peers())
        let (phrase, lifted) = try speak(to: peer)
        shell.console.print("you speak the spell “\(phrase)” at \(peer.shownHandle)\(lifted.isEmpty ? "" : " — " + lifted.map(\.rawValue).joined(separator: ", ") + " lifted"); "
                            + "it cannot curse you for \(Int(Self.repelSeconds / 60)) min")
    }

    /// Speaks the spell learnt last at `peer`: what was said, and the curses it lifted.
    @discardableResult
    public func speak(to peer: Peer) throws -> (phrase: String, lifted: [CurseKind]) {
        guard let context = state.withLock({ $0.context }) else { throw UserError("you are offline: chat brings you online") }
        let me = context.identity.signingPublicKey
        let store = CurseStore(database: context.database)
        guard let phrase = try store.lastSpell(of: me) else {
            throw UserError("you know no spell yet: ask a spectre for one (open one in chat and ask it)")
        }
        guard try store.hasCursed(me, from: peer.signingKey) else {
            throw UserError("\(peer.shownHandle) has never cursed you: a spell is only for a ghost that did")
        }
        let now = context.engine.now
        let ended = try store.endAll(from: peer.signingKey, on: me, how: "spell", at: now)
        try store.repel(peer.signingKey, from: me, until: now + Self.repelSeconds)
        let timers = state.withLock { state -> [Cancellable] in
            state.active.removeAll { $0.casterKey == peer.signingKey }
            return ended.compactMap { state.timers.removeValue(forKey: $0.id) }
        }
        timers.forEach { $0.cancel() }
        context.service.send(SpellCast(target: peer.signingKey, phrase: phrase), to: peer)
        return (phrase, ended.map(\.kind))
    }

    /// Remembers a spell a spectre taught (the last one learnt is the one `spell` speaks).
    public func learn(spell phrase: String, key: Data, database: SeanceDatabase) throws {
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
        guard let login = profiles.current else { throw ProfileError.notLoggedIn }
        let now = shell.session.clock()
        let active = try CurseStore(database: shell.session.openDatabase()).active(on: login.identity.signingPublicKey, now: now)
        guard !active.isEmpty else { return shell.console.print("no curse is on you") }
        for curse in active {
            shell.console.print("\(DisplayWidth.pad(curse.kind.rawValue, to: 11)) from \(DisplayWidth.pad(SafeText.visible(curse.casterHandle), to: 22)) "
                                + "\(DisplayWidth.pad(Self.left(curse.endsAt - now), to: 10)) left   (\(curse.kind.effect))")
        }
    }

    // MARK: The store's candle

    /// A Holy candle: the curse on `profile` that ends last is lifted, in the store's
    /// transaction; the shell hears at once (the rules stop applying it).
    public func liftLatest(on profile: Int64, in db: Database, now: Double) throws -> String? {
        guard let key = try Data.fetchOne(db, sql: "SELECT signingKey FROM profile WHERE id = ?", arguments: [profile]),
              let lifted = try CurseStore.liftLatest(db, on: key, now: now) else { return nil }
        let timer = state.withLock { state -> Cancellable? in
            state.active.removeAll { $0.id == lifted.id }
            return state.timers.removeValue(forKey: lifted.id)
        }
        timer?.cancel()
        return "the curse of \(lifted.kind.rawValue) from \(SafeText.visible(lifted.casterHandle))"
    }

    // MARK: Text

    func describe(_ curse: ActiveCurse) -> String {
        "\(curse.kind.rawValue) from \(SafeText.visible(curse.casterHandle))"
    }

    func notice(_ context: OnlineContext, _ text: String) -> String {
        context.styler.apply(.magenta + .bold, "☠") + " " + text
    }

    /// "4 min 10 s", "45 s".
    static func left(_ seconds: Double) -> String {
        let whole = max(0, Int(seconds.rounded(.up)))
        return whole >= 60 ? "\(whole / 60) min \(whole % 60) s" : "\(whole) s"
    }

    // MARK: Registration

    public func register(in shell: Shell, chat: ChatMode) {
        chat.features.append(self)
        let kinds = ArgumentKind.choice(CurseKind.allCases.map { Candidate($0.rawValue, $0.effect) })
        let peers = ArgumentKind.dynamic { [weak self] in
            (self?.state.withLock { $0.context }?.service.peers() ?? [])
                .filter { Plane(wireValue: $0.announcement.plane) == .human }
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
            guard let self, let login = self.profiles.current, let database = try? shell.session.openDatabase() else { return [] }
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
