import Chat
import Curses
import Foundation
import Nearby
import Shell
import Synchronization
import Terminal

/// When spectres come and go. Arrivals are a Poisson process: the gaps between them are
/// exponential with a mean of 10 minutes (5 with the gift, so twice as many); each spectre
/// lingers 2 to 5 minutes. Pure: the same generator gives the same times.
public enum SpectreSchedule {
    public static func meanGap(gift: Bool) -> Double { gift ? 300 : 600 }
    public static let lingering = 120.0...300.0

    /// Seconds until the next spectre.
    public static func gap(gift: Bool, using random: inout some RandomNumberGenerator) -> Double {
        let uniform = Double.random(in: Double.ulpOfOne..<1, using: &random)
        return -meanGap(gift: gift) * log(uniform)
    }

    public static func linger(using random: inout some RandomNumberGenerator) -> Double {
        Double.random(in: lingering, using: &random)
    }
}

/// What a spectre understands, and says.
public enum SpectreMind {
    public enum Topic: Equatable, Sendable { case ghosts, afterlife, spell, other }

    /// What a question in plain words is about.
    public static func topic(of question: String) -> Topic {
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
    public static func answer(_ question: String, ghosts: Int, using random: inout some RandomNumberGenerator) -> (text: String, spell: String?) {
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
public struct Spectre: Equatable, Sendable {
    public var id: Int
    public var name: String
    public var arrivedAt: Double
    public var fadesAt: Double
}

/// Spectres (SPEC §4.2): local spirits, not network peers, that drift into a Human's nearby list
/// now and then while it is online, linger, and fade. Opened like a peer, they answer plain
/// questions; a spell one teaches is kept for `spell`.
public final class Spectres: ChatFeature, LocalPresence, @unchecked Sendable {
    private struct State {
        var context: OnlineContext?
        var present: [Spectre] = []
        /// The next arrival, and each present spectre's fading (removed as it fires).
        var next: Cancellable?
        var fades: [Int: Cancellable] = [:]
        var random = SeededRandom(seed: 0)
        var nextID = 1
        /// Arrivals so far this time online (tests count them).
        var arrivals = 0
    }

    private let state = Mutex(State())
    let curses: Curses

    public init(curses: Curses) { self.curses = curses }

    public func register(in chat: ChatMode) {
        chat.features.append(self)
        chat.localPresences.append(self)
    }

    public func online(_ context: OnlineContext) throws {
        state.withLock { state in
            state = State()
            state.context = context
            state.random = context.random
        }
        context.engine.sync { scheduleNext(context) }
    }

    public func offline() {
        let timers = state.withLock { state -> [Cancellable] in
            defer { state.next = nil; state.fades = [:]; state.present = []; state.context = nil }
            return Array(state.fades.values) + [state.next].compactMap { $0 }
        }
        timers.forEach { $0.cancel() }
    }

    /// How many have come since going online.
    public var arrivals: Int { state.withLock { $0.arrivals } }

    // MARK: On the engine

    private func scheduleNext(_ context: OnlineContext) {
        let gap = state.withLock { state in SpectreSchedule.gap(gift: context.profile.gift, using: &state.random) }
        let timer = context.engine.after(gap) { [weak self] in
            guard let self else { return }
            self.arrive(context)
            self.scheduleNext(context)
        }
        state.withLock { $0.next = timer }
    }

    /// A spectre comes, if this shell is Human (the dying see other things).
    private func arrive(_ context: OnlineContext) {
        guard state.withLock({ $0.context != nil }), context.myPlane() == .human else { return }
        let now = context.engine.now
        let spectre = state.withLock { state -> Spectre in
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
            context.inbox.post(glyph(context) + " \(spectre.name) drifts into sight (a spectre: open \(Tokenizer.quote(spectre.name)) to ask it something)")
        }
        let timer = context.engine.after(spectre.fadesAt - now) { [weak self] in
            guard let self else { return }
            let gone = self.state.withLock { state -> Bool in
                state.fades[spectre.id] = nil
                guard let index = state.present.firstIndex(where: { $0.id == spectre.id }) else { return false }
                state.present.remove(at: index)
                return true
            }
            if gone, context.rules.allowsSight(of: nil) { context.inbox.post(self.glyph(context) + " \(spectre.name) fades away") }
        }
        state.withLock { $0.fades[spectre.id] = timer }
    }

    // MARK: Answers (the shell's thread)

    public func present() -> [LocalPeer] {
        let (present, context) = state.withLock { ($0.present, $0.context) }
        guard let context, context.myPlane() == .human else { return [] }
        return present.map { spectre in
            LocalPeer(name: spectre.name, kind: "spectre", glyph: "👻") { [weak self] question in
                self?.answer(question, from: spectre.id)
            }
        }
    }

    /// A spectre's answer, or nil when it has faded. The count of ghosts is the real one: every
    /// Ghost peer in range, whether or not this shell can see it.
    func answer(_ question: String, from id: Int) -> String? {
        guard let context = state.withLock({ state in state.present.contains { $0.id == id } ? state.context : nil }) else { return nil }
        let ghosts = context.service.peers().filter { Plane(wireValue: $0.announcement.plane) == .ghost }.count
        let (text, spell) = state.withLock { state in SpectreMind.answer(question, ghosts: ghosts, using: &state.random) }
        if let spell { try? curses.learn(spell: spell, key: context.identity.signingPublicKey, database: context.database) }
        return text
    }

    private func glyph(_ context: OnlineContext) -> String { context.styler.apply(.cyan + .bold, "👻") }
}
