import Curses
import Foundation
import Nearby
import Shell
import Terminal

/// When spectres come and go. Arrivals are a Poisson process: the gaps between them are
/// exponential with a mean of 10 minutes (5 with the gift, so twice as many); each spectre
/// lingers 2 to 5 minutes. Pure: the same generator gives the same times.
package enum SpectreSchedule {
    package static func meanGap(gift: Bool) -> Double { gift ? 300 : 600 }
    package static let lingering = 120.0...300.0

    /// Seconds until the next spectre.
    package static func gap(gift: Bool, using random: inout some RandomNumberGenerator) -> Double {
        let uniform = Double.random(in: Double.ulpOfOne..<1, using: &random)
        return -meanGap(gift: gift) * log(uniform)
    }

    package static func linger(using random: inout some RandomNumberGenerator) -> Double {
        Double.random(in: lingering, using: &random)
    }
}

/// What a spectre understands, and says.
package enum SpectreMind {
    package enum Topic: Equatable, Sendable { case ghosts, afterlife, spell, other }

    /// What a question in plain words is about.
    package static func topic(of question: String) -> Topic {
        // Whole words only ("hello" is no "hell"): the question as " word word … ".
        let text = " " + question.lowercased().split(whereSeparator: { !$0.isLetter }).joined(separator: " ") + " "
        func any(_ words: [String]) -> Bool { words.contains { text.contains(" " + $0 + " ") } }
        if any(["spell", "spells", "charm", "incantation", "protect", "protection", "ward"]) { return .spell }
        if any(["how many", "count", "number of", "are there"]) && any(["ghost", "ghosts", "dead", "spirit", "spirits"]) { return .ghosts }
        if any(["afterlife", "after life", "other side", "beyond", "death", "dead", "heaven", "hell", "die", "like there"]) { return .afterlife }
        if any(["ghost", "ghosts"]) { return .ghosts }
        return .other
    }

    /// The answer to `question`, given the real number of Ghost peers in range.
    package static func answer(_ question: String, ghosts: Int, using random: inout some RandomNumberGenerator) -> (text: String, spell: String?) {
        switch topic(of: question) {
        case .ghosts:
            switch ghosts {
            case 0: return ("No ghost is near you. Not one. Enjoy it while it lasts.", nil)
            case 1: return ("One ghost is near you, closer than you think.", nil)
            default: return ("\(ghosts) ghosts are near you. They know you are here.", nil)
            }
        case .afterlife:
            return (Lore.afterlife.randomElement(using: &random)!, nil)
        case .spell:
            let spell = Spells.phrases.randomElement(using: &random)!
            return ("Remember this, and say it to a ghost that has cursed you: “\(spell)” (spell GHOST speaks it).", spell)
        case .other:
            return ("I can tell you how many ghosts are near, what the afterlife is like, or teach you a spell. Ask me.", nil)
        }
    }
}

/// A spectre present now.
package struct Spectre: Equatable, Sendable {
    package var id: Int
    package var name: String
    package var arrivedAt: Double
    package var fadesAt: Double
}

/// Spectres (SPEC §4.2): local spirits, not network peers, that drift into a Human's nearby list
/// now and then while it is online, linger, and fade. Opened like a peer, they answer plain
/// questions; a spell one teaches is kept for `spell`. While online their comings and goings
/// live on the engine (`SpectresOnline`).
package final class Spectres: Feature, LocalPresence {
    let curses: Curses
    /// How notices look (known once registered).
    var styler = Styler(.plain)
    /// While online: the spectres' part on the engine.
    private(set) var live: SpectresOnline?

    /// Where its notices go (above the prompt): the curses' (spectres come with them).
    var inbox: AsyncInbox { curses.inbox }

    package init(curses: Curses) { self.curses = curses }

    package func register(in shell: Shell, online: Online) {
        styler = shell.styler
        online.add(self)
        online.add(local: self)
    }

    package func online(_ context: FeatureContext) throws {
        live = SpectresOnline(context, styler: styler, inbox: inbox)
    }

    package func offline() {
        live.map { live in live.context.engine.sync { live.stop() } }
        live = nil
    }

    /// How many have come since going online.
    package var arrivals: Int { live.map { live in live.context.engine.sync { live.arrivals } } ?? 0 }

    package func present() -> [LocalPeer] { live.map { live in live.context.engine.sync { live.present() } } ?? [] }
}

/// The spectres' part while online, on the engine: who is present, the next arrival and each
/// one's fading (one owner of the engine's alarm), and their answers. Every method runs on the
/// engine.
final class SpectresOnline: Sendable {
    private struct State {
        var present: [Spectre] = []
        /// When the next spectre comes.
        var next: Double
        var random: SeededRandom
        var nextID = 1
        /// Arrivals so far this time online (tests count them).
        var arrivals = 0
        var running = true
    }

    let context: FeatureContext
    private let state: EngineBound<State>
    private let styler: Styler
    private let inbox: AsyncInbox

    /// On the engine: the first arrival is drawn.
    init(_ context: FeatureContext, styler: Styler, inbox: AsyncInbox) {
        self.context = context
        self.styler = styler
        self.inbox = inbox
        var random = context.random
        let first = context.engine.now + SpectreSchedule.gap(gift: context.profile.gift, using: &random)
        state = EngineBound(State(next: first, random: random), engine: context.engine)
        context.deadlines.add("spectres", next: { [self] in
            state.value.running ? ([state.value.next] + state.value.present.map(\.fadesAt)).min() : nil
        }) { [self] now in
            fade(now: now)
            if state.value.next <= now {
                arrive()
                state.update { $0.next = now + SpectreSchedule.gap(gift: context.profile.gift, using: &$0.random) }
            }
        }
    }

    func stop() {
        state.value.present = []
        state.value.running = false
    }

    var arrivals: Int { state.value.arrivals }

    /// Spectres whose time is up fade away.
    private func fade(now: Double) {
        let fading = state.value.present.filter { $0.fadesAt <= now }
        guard !fading.isEmpty else { return }
        state.value.present.removeAll { $0.fadesAt <= now }
        if context.rules.allowsSight(of: nil) { for spectre in fading { post("\(spectre.name) fades away") } }
    }

    /// A spectre comes, if this shell is Human (the dying see other things).
    private func arrive() {
        guard state.value.running, context.rules.plane == .human else { return }
        let now = context.engine.now
        let spectre = state.update { state -> Spectre in
            defer { state.nextID += 1; state.arrivals += 1 }
            // A name not already present, when there is one.
            let taken = Set(state.present.map(\.name))
            let free = Lore.names.filter { !taken.contains($0) }
            let name = (free.isEmpty ? Lore.names : free).randomElement(using: &state.random)!
            let spectre = Spectre(id: state.nextID, name: name, arrivedAt: now, fadesAt: now + SpectreSchedule.linger(using: &state.random))
            state.present.append(spectre)
            return spectre
        }
        if context.rules.allowsSight(of: nil) {
            post("\(spectre.name) drifts into sight (a spectre: \(Advice.command("open " + Tokenizer.quote(spectre.name), mode: "chat")) to ask it something)")
        }
    }

    // MARK: Answers

    /// Those present, each answering on the engine (asked from the shell's thread, it enters
    /// there once).
    func present() -> [LocalPeer] {
        let present = context.rules.plane == .human ? state.value.present : []
        let engine = context.engine
        return present.map { spectre in
            LocalPeer(name: spectre.name, kind: "spectre", glyph: "👻") { [self] question in engine.sync { answer(question, from: spectre.id) } }
        }
    }

    /// A spectre's answer, or nil when it has faded. The count of ghosts is the real one: every
    /// Ghost peer in range, whether or not this shell can see it.
    func answer(_ question: String, from id: Int) -> String? {
        guard state.value.present.contains(where: { $0.id == id }) else { return nil }
        let ghosts = context.presence.peers().filter { $0.plane == .ghost }.count
        let said = state.update { SpectreMind.answer(question, ghosts: ghosts, using: &$0.random) }
        if let spell = said.spell { try? CurseStore(database: context.database).learn(spell: spell, for: context.me) }
        return said.text
    }

    private func post(_ text: String) { inbox.post(styler.apply(.cyan + .bold, "👻") + " " + text) }
}
