import Accounts
import ChatViews
import Foundation
import Nearby
import Shell
import Storage
import Terminal

/// Chat mode: its commands and views. Being online is `Online`'s (Nearby); chat brings the user
/// online, lists who is nearby (`NearbyCommands`), shows conversations (`Conversations`) and
/// prints what happens (`ChatNotices`, its feature part). It owns conversations among the
/// shell's places (`Views`): what extends them plugs in there, not here.
package final class ChatMode: ConversationOwner {
    let profiles: Profiles
    package let online: Online
    let views: Views
    /// The conversation (or local one) open, and its commands.
    private(set) var conversations: Conversations!
    /// Sent messages slide into place at a terminal, unless `--no-anim`.
    let animate: Bool
    /// How long a script's end waits for what it sent to be acknowledged (`--linger`).
    let linger: Double
    /// Going online to list who is there (`chat`): arrivals are not told until the list is out.
    private var holdFirstArrivals = false
    /// What chat prints while online; made when going online.
    var notices: ChatNotices?
    /// How the terminal draws, known once the mode is registered; the console, whose line
    /// reader (made after registration) decides whether lines can be written over.
    private var capabilities = Capabilities.plain
    private var console: Console?

    package init(profiles: Profiles, online: Online, views: Views, animate: Bool = true, linger: Double = 2,
                 layout: ConversationLayout = .bubbles) {
        self.profiles = profiles
        self.online = online
        self.views = views
        self.animate = animate
        self.linger = linger
        conversations = Conversations(chat: self, layout: layout)
    }

    /// While online: the engine and what runs on it.
    var context: FeatureContext? { online.context }
    var delivery: Delivery? { context?.delivery }

    /// The peers present now, from the shell's thread (one visit to the engine).
    func presentPeers() -> [Peer] {
        guard let context else { return [] }
        return context.engine.sync { context.presence.peers() }
    }

    package func register(in shell: Shell) {
        capabilities = shell.capabilities
        console = shell.console
        views.conversations = self
        // First of the features: its notices of arrivals come before any feature's own.
        online.add(self)
        let conversations = conversations!
        shell.register(Mode(
            name: "chat", summary: "find people nearby (and the dead), on the local network or through a broker",
            prompt: { conversations.promptLabel },
            enter: { shell in try self.enter(shell) },
            // Leaving chat mode closes the conversation; you stay online in every mode until
            // `offline`, `logout` or the end of the session.
            leave: { _ in conversations.close() },
            messages: MessageInput(isActive: { conversations.isOpen && self.delivery != nil },
                                   send: { shell, line in try conversations.send(line, shell) })))
        conversations.register(in: shell)
        NearbyCommands(chat: self).register(in: shell)
        shell.register(Command("offline", scope: .global, summary: "stop being announced and reachable (chat brings you back)") { invocation in
            guard self.online.isOnline else { return invocation.shell.console.print("you are not online") }
            self.takeOffline(invocation.shell)
        })
        shell.onEndOfInput.append { [unowned self, unowned shell] in
            if !shell.isInteractive { self.awaitAcknowledgements(shell) }
        }
        shell.onExit.append { [unowned self, unowned shell] in self.goOffline(telling: shell.console) }
        let ascii = shell.capabilities.ascii
        // Online, and at a terminal how many messages wait to be read (`chat●2>`), as a phone's badge.
        let interactive = shell.capabilities.interactive
        shell.promptMarks.append { [unowned self] in
            guard let context = self.context else { return "" }
            guard interactive else { return ascii ? "*" : "●" }
            // What is stored, and what was shown as it came and is being stored: read together
            // on the engine, which stores them, so nothing is counted twice or missed.
            let besides = conversations.current?.id
            let unread = context.engine.sync {
                ((try? MessageStore(database: context.database).unreadCount(myKey: context.me, besides: besides)) ?? 0)
                    + context.delivery.unreadNotYetStored(besides: besides)
            }
            return (ascii ? "*" : "●") + (unread > 0 ? String(unread) : "")
        }
        shell.console.redrawAfterResize = { [unowned shell] in conversations.redrawAfterResize(shell) }
        shell.register(Command("trust", scope: .mode("chat"),
                               arguments: [.positional("peer", help: "name#fingerprint of the key to trust for that name")],
                               summary: "trust this key for its name (others using the name are flagged)") { invocation in
            let store = TrustStore(database: try invocation.shell.session.openDatabase())
            let shown = SafeText.visible(try store.trust(invocation.arguments["peer"]!))
            invocation.shell.console.print("\(shown) is now the trusted key for its name")
        })
        BatteryCommand(online: online).register(in: shell)
        BlockCommands(chat: self).register(in: shell)
        VerifyCommands(chat: self).register(in: shell)
        // Another profile, or none: this one is no longer announced.
        profiles.session.onChange.append { [unowned self, unowned shell] in
            if self.online.isOnline { self.takeOffline(shell) }
        }
    }

    // MARK: Entering and leaving

    private func enter(_ shell: Shell) throws {
        let wasOnline = online.isOnline
        // Arrivals are held from the first packet on: the list names those already there.
        holdFirstArrivals = !wasOnline
        defer { holdFirstArrivals = false }
        try goOnline(shell)
        if !wasOnline { try awaitFirstAnswers(shell) }
        try NearbyCommands(chat: self).list(shell, page: 1)
    }

    /// Just online: everyone in range answers our question within a fraction of a second (up to
    /// `Presence.answerDelay` after it, spread so a crowd does not answer at once). The list
    /// waits for them, arrivals untold meanwhile (the list names them): at least
    /// `firstListing`, longer while answers still come, never more than `firstListingLimit`.
    private func awaitFirstAnswers(_ shell: Shell) throws {
        guard let notices, let engine = context?.engine else { return }
        defer { engine.sync { notices.holdArrivals(false) } }
        let start = SystemTime.monotonic()
        _ = try shell.wait(upTo: Self.firstListing) { false }
        while engine.sync({ notices.sinceLastArrival }) < Self.answersStopped, SystemTime.monotonic() - start < Self.firstListingLimit {
            _ = try shell.wait(upTo: Self.answersStopped) { false }
        }
    }

    static let firstListing = Presence.answerDelay.upperBound + 0.05
    static let answersStopped = 0.05
    static let firstListingLimit = 1.0

    /// Announces this profile on every transport and brings the features online; a mode that
    /// needs the network (rooms) asks for it through the views (`ConversationOwner`).
    package func goOnline(_ shell: Shell) throws {
        guard !online.isOnline else { return }
        let login = try profiles.requireLogin(shell)
        let context = try online.goOnline(as: login, database: try shell.session.openDatabase(), dataDirectory: shell.session.dataDirectory,
                                          wake: shell.console.inbox.wake, scheduler: shell.session.scheduler, random: &shell.session.random)
        let transports = context.network.transports.map(\.description).joined(separator: " and ")
        let plane = context.engine.sync { context.rules.plane }
        shell.console.status("announcing \(login.profile.handle) as \(plane.name) on \(transports)")
    }

    /// The local ones present now (spectres), when sight allows.
    func localPeers() -> [LocalPeer] {
        guard let context, context.engine.sync({ context.rules.allowsSight(of: nil) }) else { return [] }
        return online.localPresences.flatMap { $0.present() }
    }

    /// `offline`, or a logout: out of chat mode if there, then offline, and say so.
    private func takeOffline(_ shell: Shell) {
        if shell.currentMode == "chat" { shell.leaveMode() }
        goOffline(telling: shell.console)
        shell.console.status("offline")
    }

    /// At the end of a script: what it sent to peers in reach is given up to `linger` seconds to
    /// be acknowledged (the states print as they come), so that what is then said to wait does.
    func awaitAcknowledgements(_ shell: Shell) {
        guard let context, linger > 0 else { return }
        _ = try? shell.wait(upTo: linger) { !context.engine.sync { context.delivery.awaitsAcknowledgement } }
    }

    /// Goes offline and tells `console` (when given) what waits in the outbox. Safe to call
    /// when offline.
    func goOffline(telling console: Console? = nil) {
        let waiting = online.goOffline()
        if let console {
            for summary in waiting { console.print(ChatText.waiting(summary)) }
        }
        conversations.close()
    }

    /// The name a rule gives a conversation's peer instead of its own (a curse may hide it).
    func renamed(_ conversation: Conversation) -> String? {
        context.flatMap { context in context.engine.sync { context.rules.shownName(of: conversation.peerKey) } }
    }

    // MARK: What the views ask of the owner of conversations

    package func conversation(named wanted: String, _ shell: Shell) throws -> Conversation {
        try PeerFinder(chat: self).conversation(named: wanted, shell)
    }

    package func open(conversation id: Int64, around number: Int64, _ shell: Shell) throws {
        try conversations.open(id, around: number, shell)
    }
}

/// Chat's notices come and go with being online.
extension ChatMode: Feature {
    package func online(_ context: FeatureContext) throws {
        notices = ChatNotices(context, capabilities: capabilities, inbox: console?.inbox ?? AsyncInbox(), overwrites: console?.overwrites ?? false,
                              holdingArrivals: holdFirstArrivals)
    }

    package func offline() { notices = nil }
}
