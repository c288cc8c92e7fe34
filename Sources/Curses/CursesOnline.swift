import ChatViews
import Foundation
import Nearby
import Runtime
import Shell
import Storage
import Store
import Terminal

/// The curses' part while online, on the engine: the curses in force on this shell until
/// their ends, the castings waiting for an answer, the packets of both, and the rules a curse
/// adds. Its times (a curse's end, an answer given up on) are one owner of the engine's alarm.
/// Made on the engine by `Curses.online`; the shell's commands enter it with `engine.sync`, and
/// every method runs on the engine.
final class CursesOnline: Sendable {
    private struct State {
        var active: [ActiveCurse] = []
        var random: SeededRandom
        /// Curses this shell cast and has not heard about yet, by casting id.
        var pending: [Data: Casting] = [:]
    }

    struct Casting {
        var target: String
        var kind: CurseKind
        var minutes: Int
        /// When the answer is given up on.
        var until: Double
    }

    let context: FeatureContext
    private let state: EngineBound<State>
    private let styler: Styler
    private let inbox: AsyncInbox

    /// On the engine: loads the curses in force, arms their ends, registers the kinds and rules.
    init(_ context: FeatureContext, styler: Styler, inbox: AsyncInbox) throws {
        self.context = context
        self.styler = styler
        self.inbox = inbox
        let active = try CurseStore(database: context.database).active(on: context.me, now: context.engine.now)
        state = EngineBound(State(active: active, random: context.random), engine: context.engine)
        context.deadlines.add("curses", next: { [self] in
            (state.value.active.map(\.endsAt) + state.value.pending.values.map(\.until)).min()
        }) { [self] now in expire(now: now) }
        context.network.handle(CurseCast.self) { [self] cast, sender, peer in received(cast, from: sender, peer: peer) }
        context.network.handle(CurseAnswer.self) { [self] answer, _, peer in answered(answer, from: peer) }
        context.network.handle(SpellCast.self) { [self] spell, _, peer in received(spell, from: peer) }
        context.rules.addSight { [self] _ in !isActive(.blind) }
        context.rules.addOutgoing { [self] line in try outgoing(line) }
        context.rules.addNaming { [self] _ in isActive(.amnesia) ? Curses.stranger : nil }
        for curse in active {
            post("you are still cursed: \(describe(curse)), \(Curses.left(curse.endsAt - context.engine.now)) left")
        }
    }

    /// Going offline: no curse ends here meanwhile (they are stored, and come back online).
    func stop() {
        state.value.active = []
        state.value.pending = [:]
    }

    /// Whether a curse of `kind` is on this shell just now.
    func isActive(_ kind: CurseKind) -> Bool {
        let now = context.engine.now
        return state.value.active.contains { $0.kind == kind && $0.endsAt > now }
    }

    /// A line on its way out: refused under silence, turned to gibberish under possession,
    /// mirrored under the mirror (both, in that order, when both are on).
    func outgoing(_ line: String) throws -> String {
        let now = context.engine.now
        if let silence = state.value.active.first(where: { $0.kind == .silence && $0.endsAt > now }) {
            throw UserError("you are silenced by \(caster(of: silence)) (\(Curses.left(silence.endsAt - now)) left)")
        }
        var text = line
        if isActive(.possession) { text = state.update { Gibberish.possess(text, using: &$0.random) } }
        if isActive(.mirror) { text = Gibberish.mirror(text) }
        return text
    }

    // MARK: Packets

    /// A curse cast on us. Checked here, answered to the caster.
    private func received(_ cast: CurseCast, from sender: Data, peer: Peer?) {
        guard cast.target == context.me else { return context.network.drop("curse for another") }
        // The caster must be present (so its plane is known, from its own signed announcement)
        // and a Ghost; this shell must be Human.
        guard let peer else { return context.network.drop("curse from a stranger") }
        let now = context.engine.now
        let outcome: CurseAnswer.Outcome
        let store = CurseStore(database: context.database)
        if peer.plane != .ghost {
            outcome = .notAGhost
        } else if context.rules.plane != .human {
            outcome = .notAHuman
        } else if (try? store.repelled(peer.signingKey, from: context.me, now: now)) ?? nil != nil {
            outcome = .repelled
        } else if (try? Ledger(database: context.database).protectingMedallion(profile: context.profile.id, now: now)) ?? nil != nil {
            outcome = .bounced
            post("\(name(of: peer)) tried to curse you with \(cast.kind.rawValue): it bounced off your Saint's medallion")
        } else {
            guard let curse = try? store.add(on: context.me, casterKey: peer.signingKey, casterName: peer.name,
                                             kind: cast.kind, castID: cast.id, startedAt: now, endsAt: now + Double(cast.minutes) * 60) else {
                // The same casting again (a replay), or the database refused: nothing takes hold twice.
                return context.network.drop("curse replayed")
            }
            state.value.active.append(curse)
            context.deadlines.wake(at: curse.endsAt)
            outcome = .tookHold
            post("\(name(of: peer)) cursed you with \(cast.kind.rawValue) for \(cast.minutes) min: \(cast.kind.effect)",
                 alert: Alert(who: name(of: peer), what: "cursed you with \(cast.kind.rawValue)"))
        }
        context.network.send(CurseAnswer(caster: peer.signingKey, id: cast.id, outcome: outcome), to: peer)
    }

    /// What became of a curse we cast.
    private func answered(_ answer: CurseAnswer, from peer: Peer?) {
        guard answer.caster == context.me, let casting = state.value.pending.removeValue(forKey: answer.id) else {
            return context.network.drop("curse answer to nothing asked")
        }
        let target = casting.target
        let text: String
        switch answer.outcome {
        case .tookHold: text = "your curse took hold: \(target) suffers \(casting.kind.rawValue) for \(casting.minutes) min"
        case .bounced: text = "your curse bounced off \(target)'s Saint's medallion"
        case .repelled: text = "\(target) repelled you with a spell: you cannot curse them yet"
        case .notAGhost: text = "\(target) would not take your curse: to them you are not a Ghost"
        case .notAHuman: text = "your curse found no hold: \(target) is not Human"
        }
        post(text)
    }

    /// A spell from a Human we cursed: we may not curse it for half an hour, and are told so.
    private func received(_ spell: SpellCast, from peer: Peer?) {
        guard spell.target == context.me else { return context.network.drop("spell for another") }
        guard let peer else { return context.network.drop("spell from a stranger") }
        guard Spells.phrases.contains(spell.phrase) else { return context.network.drop("spell unknown") }
        let now = context.engine.now
        try? CurseStore(database: context.database).repel(context.me, from: peer.signingKey, until: now + Curses.repelSeconds)
        post("\(peer.shownHandle) repelled you with a spell (“\(SafeText.visible(spell.phrase))”): "
             + "you cannot curse them for \(Int(Curses.repelSeconds / 60)) min")
    }

    /// Curses whose time is up end, with a notice (those a candle or a spell ended went
    /// already); castings not answered in `answerWait` are given up, and said so.
    private func expire(now: Double) {
        let ended = state.value.active.filter { $0.endsAt <= now }
        state.value.active.removeAll { $0.endsAt <= now }
        for curse in ended {
            try? CurseStore(database: context.database).end(curse.id, how: "expired", at: now)
            post("the curse of \(curse.kind.rawValue) from \(caster(of: curse)) has ended")
        }
        let unanswered = state.value.pending.filter { $0.value.until <= now }
        for (id, casting) in unanswered {
            state.value.pending[id] = nil
            post("no answer from \(casting.target): the curse may not have reached them")
        }
    }

    // MARK: Asked by the shell

    /// Casts on a present peer, after the caster's own checks.
    func send(_ kind: CurseKind, minutes: Int, to peer: Peer) throws {
        guard CurseKind.minutes.contains(minutes) else { throw UserError("a curse lasts 1 to 60 minutes, not \(minutes)") }
        let mine = context.rules.plane
        guard mine == .ghost else { throw UserError("only a Ghost can curse, and you are \(mine.name)") }
        let theirs = peer.plane ?? .ghost
        guard theirs == .human else { throw UserError("\(peer.shownHandle) is \(theirs.name): only the living (Human) can be cursed") }
        let now = context.engine.now
        if let until = try CurseStore(database: context.database).repelled(context.me, from: peer.signingKey, now: now) {
            throw UserError("\(peer.shownHandle) repelled you with a spell: you cannot curse them for \(Curses.left(until - now)) more")
        }
        // Unique whatever the seed: the cursed side refuses a casting id it has seen.
        let id = Data((0..<16).map { _ in UInt8.random(in: 0...255) })
        state.value.pending[id] = Casting(target: peer.shownHandle, kind: kind, minutes: minutes, until: now + Curses.answerWait)
        context.deadlines.wake(at: now + Curses.answerWait)
        context.network.send(CurseCast(target: peer.signingKey, kind: kind, minutes: UInt8(minutes), id: id), to: peer)
    }

    /// Speaks the spell learnt last at `peer`: what was said, and the curses it lifted.
    func speak(to peer: Peer) throws -> (phrase: String, lifted: [CurseKind]) {
        let me = context.me
        let store = CurseStore(database: context.database)
        guard let phrase = try store.lastSpell(of: me) else {
            throw UserError("you know no spell yet: ask a spectre for one (open one in chat and ask it)")
        }
        guard try store.hasCursed(me, from: peer.signingKey) else {
            throw UserError("\(peer.shownHandle) has never cursed you: a spell is only for a ghost that did")
        }
        let now = context.engine.now
        let ended = try store.endAll(from: peer.signingKey, on: me, how: "spell", at: now)
        try store.repel(peer.signingKey, from: me, until: now + Curses.repelSeconds)
        state.value.active.removeAll { $0.casterKey == peer.signingKey }
        context.network.send(SpellCast(target: peer.signingKey, phrase: phrase), to: peer)
        return (phrase, ended.map(\.kind))
    }

    /// A candle lifted curse `id` (its transaction committed): it stops applying.
    func lifted(_ id: Int64) { state.value.active.removeAll { $0.id == id } }

    // MARK: Text

    func describe(_ curse: ActiveCurse) -> String {
        "\(curse.kind.rawValue) from \(caster(of: curse))"
    }

    /// A peer as this shell names it now: under amnesia, a stranger (on the engine).
    func name(of peer: Peer) -> String { context.rules.shownName(of: peer.signingKey) ?? peer.shownHandle }

    /// The caster of a curse as this shell names it now (on the engine).
    func caster(of curse: ActiveCurse) -> String {
        context.rules.shownName(of: curse.casterKey) ?? SafeText.visible(curse.casterHandle)
    }

    private func post(_ text: String, alert: Alert? = nil) {
        let line = styler.apply(.magenta + .bold, "☠") + " " + text
        if let alert { inbox.post(line, alert: alert) } else { inbox.post(line) }
    }
}
