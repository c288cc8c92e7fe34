import ChatViews
import Foundation
import Nearby
import Runtime
import Shell
import Terminal

/// Chat's part of being online: what it prints above the prompt as things happen — arrivals,
/// departures and changes of those in sight, a name used by another key, our own plane's
/// change, messages and the states of ours. Made on the engine when going online; it hears
/// the engine's events there and posts the lines. Every method runs on the engine (chat enters
/// it with `engine.sync`).
final class ChatNotices: Sendable {
    /// The conversation open in the shell: how to mark its messages shown, how it is drawn,
    /// and the last message shown (one joining it gets the header or gap a page would show).
    struct OpenConversation: Sendable {
        var id: Int64
        var markShown: @Sendable (Int64) -> Void
        var layout: ConversationLayout
        var speakers: Speakers
        var last: ChatMessage?
    }

    private struct State {
        var open: OpenConversation?
        var limiter = NoticeLimiter(what: "presence notices", seeAll: Advice.command("nearby", mode: "chat") + " lists who is here")
        /// The warning about an arriving key that uses a trusted name, printed with its arrival.
        var impostor: (key: Data, trusted: String, verified: Bool)?
        /// Arrivals are not told while `chat` waits to list everyone: the list names them.
        var holdingArrivals = false
        /// When the last arrival was heard (engine time).
        var lastArrival = -Double.infinity
        /// The last sender's "(open NAME)", made once for a stream of their messages.
        var openAdvice: (sender: String, advice: String)?
    }

    private let state: EngineBound<State>
    private let context: FeatureContext
    private let capabilities: Capabilities
    /// The terminal can write over lines already printed (delivery states change in place).
    private let overwrites: Bool
    /// Where the lines go: the console's, printed above the prompt.
    private let inbox: AsyncInbox

    init(_ context: FeatureContext, capabilities: Capabilities, inbox: AsyncInbox, overwrites: Bool, holdingArrivals: Bool = false) {
        self.inbox = inbox
        self.context = context
        self.capabilities = capabilities
        self.overwrites = overwrites
        var state = State()
        state.holdingArrivals = holdingArrivals
        self.state = EngineBound(state, engine: context.engine)
        context.observe { [self] event in self.hear(event) }
    }

    /// The conversation open now (nil: none).
    func setOpen(_ open: OpenConversation?) { state.value.open = open }

    /// `message`, just sent in the open conversation, is the last one shown there now; returns
    /// the one before it.
    func follow(_ message: ChatMessage) -> ChatMessage? {
        defer { state.value.open?.last = message }
        return state.value.open?.last
    }

    /// While true, arrivals are not told (the list `chat` is about to print names them).
    func holdArrivals(_ holding: Bool) { state.value.holdingArrivals = holding }

    /// Seconds since the last arrival was heard.
    var sinceLastArrival: Double { context.engine.now - state.value.lastArrival }

    private var styler: Styler { Styler(capabilities) }

    private func hear(_ event: OnlineEvent) {
        let rules = context.rules
        switch event {
        case .impostor(let peer, let trusted, let verified):
            state.value.impostor = (peer.signingKey, trusted, verified)
        case .presence(let presence):
            var trusted: String?
            if case .arrived(let peer) = presence, let warning = state.value.impostor, warning.key == peer.signingKey {
                trusted = warning.trusted
                // A key using a verified name: said loudly, with the bell, past any limit.
                if warning.verified {
                    state.value.impostor = nil
                    trusted = nil
                    inbox.post(PresenceLines.verifiedWarning(peer, verified: warning.trusted, styler: styler),
                               alert: Alert(who: peer.shownHandle, what: "uses the name of someone you verified"))
                }
            }
            state.value.impostor = nil
            if case .arrived = presence {
                state.value.lastArrival = context.engine.now
                if state.value.holdingArrivals && trusted == nil { return }
            }
            let lines = PresenceLines.liveLines(for: presence, trusted: trusted, myPlane: rules.plane, styler: styler, ascii: capabilities.ascii,
                                           allowsSight: rules.allowsSight, shownName: rules.shownName)
            // Comings and goings are limited (a crowd, a flood); a warning told once is not.
            switch presence {
            case .arrived, .changed, .left:
                for line in state.value.limiter.admit(lines, now: context.engine.now) { inbox.post(line) }
            case .transport, .alsoOnlineElsewhere, .olderSeance, .flooded, .clockOff, .restarted:
                lines.forEach(inbox.post)
            }
        case .planeChanged(let old, let new):
            // Blind (a curse) sees nobody come or go, whatever the planes.
            let seen = context.presence.peers().filter(rules.allowsSight)
            for line in PresenceLines.sightLines(from: old, to: new, peers: seen, styler: styler, ascii: capabilities.ascii) {
                inbox.post(line)
            }
        case .delivery(let delivery):
            hear(delivery)
        case .blocked, .reachable:
            break
        }
    }

    private func hear(_ event: DeliveryEvent) {
        let capabilities = self.capabilities
        switch event {
        case .received(let conversation, let message, let from):
            if let open = state.value.open, open.id == conversation {
                state.value.open?.last = message
                var speakers = open.speakers
                speakers.them = context.rules.shownName(of: from.signingKey) ?? speakers.them  // Amnesia, from now on.
                let (layout, now) = (open.layout, context.engine.now)
                inbox.post(.lines { [speakers] columns in
                    ConversationView(capabilities: capabilities, columns: columns, layout: layout, speakers: speakers)
                        .following(message, after: open.last, now: now)
                })
                open.markShown(message.number)
            } else if !context.rules.isMuted(from.signingKey) {
                let preview = ConversationView.preview(message.text, width: 40)
                let sender = context.rules.shownName(of: from.signingKey) ?? from.shownHandle
                if state.value.openAdvice?.sender != sender {
                    state.value.openAdvice = (sender, Advice.command("open " + Tokenizer.quote(sender), mode: "chat"))
                }
                inbox.post(LineBuilder.joined(styler.apply(.magenta, "✉"), " ", sender, ": ", preview, "   (", state.value.openAdvice!.advice, ")"),
                           alert: Alert(who: sender, what: "wrote to you", text: message.text))
            }
        case .stateChanged(let conversation, let numbers, let state):
            guard self.state.value.open?.id == conversation, !numbers.isEmpty else { return }
            @Sendable func line(_ numbers: [Int64]) -> String? {
                ChatText.span(numbers).map { Styler(capabilities).dim("\($0) \(state.rawValue)") }
            }
            guard overwrites else { return inbox.post(line(numbers)!) }
            // Written over the state under each bubble still on the screen (decided when
            // printed: the bubble may not be drawn yet); a line for the others.
            inbox.post(.update(numbers.map { number in
                Overwrite(mark: ChatText.stateMark(conversation, number), id: number) { columns in
                    ConversationView(capabilities: capabilities, columns: columns).statusTail(number: number, state: state)
                }
            }) { missed in line(missed.map(\.id)) })
        case .awaitedArrived(let conversation, let peer, let waiting):
            // Whoever has the conversation open sees its states change; a muted person comes quietly.
            guard state.value.open?.id != conversation, !context.rules.isMuted(peer.signingKey),
                  context.rules.allowsSight(of: peer) else { return }
            let name = context.rules.shownName(of: peer.signingKey) ?? peer.shownHandle
            let what = waiting == 1 ? "your waiting message goes now" : "your \(waiting) waiting messages go now"
            inbox.post(styler.apply(.magenta, "✉") + " \(name) is here: \(what)", alert: Alert(who: name, what: "is here"))
        case .mailFrom(let peer):
            // Its name flagged (`OnlineEvent.impostor`, just before): said before its mail.
            guard let warning = state.value.impostor, warning.key == peer.signingKey else { return }
            state.value.impostor = nil
            if warning.verified {
                inbox.post(PresenceLines.verifiedWarning(peer, verified: warning.trusted, styler: styler),
                           alert: Alert(who: peer.shownHandle, what: "uses the name of someone you verified"))
            } else {
                inbox.post(PresenceLines.trustWarning(peer, trusted: warning.trusted, styler: styler))
            }
        case .mailFull(_, let handle, let held):
            inbox.post(styler.apply(.magenta, "✉") + " \(SafeText.visible(handle)) is away: \(held) messages wait with the broker for them, "
                       + "as many as it holds for one reader; the rest wait here until they have read those, or you are both online")
        case .mailCannotSeal(_, let handle):
            inbox.post(styler.apply(.magenta, "✉") + " \(SafeText.visible(handle)) is away, and has announced no key for mail in the "
                       + "last week: what you write waits here until you are both online")
        case .mailExpired(_, let handle, let numbers):
            guard let which = ChatText.span(numbers) else { return }
            inbox.post(styler.apply(.magenta, "✉") + " \(which) to \(SafeText.visible(handle)) waited a week with the broker unread: "
                       + "no longer held there, they wait here until you are both online")
        case .notStored(_, let numbers, let reason):
            // Said wherever the user is: a line they typed was neither kept nor sent.
            guard let which = ChatText.span(numbers) else { return }
            inbox.post(styler.error("\(which) could not be stored (\(reason)); it was not sent"))
        }
    }
}
