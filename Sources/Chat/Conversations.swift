import Accounts
import ChatViews
import Foundation
import Nearby
import Shell
import Storage
import Terminal

/// Conversations inside chat mode: the one open (or the local one, a spectre), and `open`,
/// `back`, `chats`, `older`, `newer`, `compact`, `tap`, plain lines sent. The shell's thread;
/// each command visits the engine once where it needs it.
final class Conversations {
    unowned let chat: ChatMode
    /// The local one `open` chose, if any (instead of a conversation).
    var openLocal: LocalPeer?
    /// The conversation `open` chose; the views are told of it.
    private(set) var current: Conversation? {
        didSet {
            if current == nil, let notices = chat.notices, let engine = chat.context?.engine { engine.sync { notices.setOpen(nil) } }
            if current?.id != oldValue?.id { chat.views.shown = current.map(Place.conversation) }
        }
    }
    /// How conversations are drawn: bubbles, or compact (`/compact`, `conversation` in seance.conf).
    var layout: ConversationLayout
    /// The number of the oldest message shown (for `older`), and the newest when a page other than the
    /// newest is (`open N` of a search result): `newer` pages on from it.
    var oldestShown: Int64?
    var newestShown: Int64?
    /// A script has been told once that a line looking like a command was sent as a message.
    var toldOfSlash = false

    init(chat: ChatMode, layout: ConversationLayout) {
        self.chat = chat
        self.layout = layout
    }

    var profiles: Profiles { chat.profiles }
    var context: FeatureContext? { chat.context }
    var delivery: Delivery? { chat.delivery }
    var notices: ChatNotices? { chat.notices }
    var isOpen: Bool { current != nil || openLocal != nil }

    /// The prompt's place: `chat:ben`, or `chat`.
    var promptLabel: String {
        if let local = openLocal { return "chat:" + SafeText.visible(local.name) }
        return current.map { "chat:" + (chat.renamed($0) ?? SafeText.visible($0.peerName)) } ?? "chat"
    }

    func close() {
        current = nil
        openLocal = nil
        oldestShown = nil
        newestShown = nil
    }

    func renamed(_ conversation: Conversation) -> String? { chat.renamed(conversation) }

    func register(in shell: Shell) {
        let peers = ArgumentKind.dynamic {
            var past: [Conversation] = []
            var verified: Set<Data> = []
            if let me = self.profiles.current?.identity.signingPublicKey, let database = try? shell.session.openDatabase() {
                let blocked = BlockCommands(chat: self.chat).blockedKeys(shell)
                past = ((try? MessageStore(database: database).conversations(myKey: me)) ?? []).map(\.conversation)
                    .filter { !blocked.contains($0.peerKey) }
                verified = TrustStore(database: database).verifiedKeys()
            }
            return ChatText.peerCandidates(locals: self.chat.localPeers(), present: self.chat.presentPeers(), past: past, verified: verified)
        }
        shell.register(mode: "chat", "open", arguments: [.positional("peer", peers, help: "a name, or name#fingerprint"),
                                                         .option("--wait", "seconds", help: "wait up to this long for them to come into sight (scripts)")],
                summary: "start or resume a conversation (or open search result N); then a plain line sends it") { shell, arguments in
            if let seconds = try arguments.waitSeconds() { try PeerFinder(chat: self.chat).wait(for: arguments["peer"]!, seconds: seconds, shell) }
            try self.open(arguments["peer"]!, shell)
        }
        shell.register(mode: "chat", "back", summary: "close the conversation (or, with none open, leave chat mode)") { shell, _ in
            if self.isOpen {
                self.close()
            } else {
                shell.leaveMode()
            }
        }
        shell.register(mode: "chat", "chats", arguments: [.switch("--all", help: "with those of people you blocked")],
                       summary: "your conversations: last message, time, unread and waiting counts") { shell, arguments in
            try ConversationList(chat: self.chat).list(all: arguments.isSet("--all"), shell)
        }
        shell.register(mode: "chat", "older", summary: "the page of messages before the ones shown") { shell, _ in
            try self.showOlder(shell)
        }
        shell.register(mode: "chat", "compact",
                       arguments: [.positional("choice", .choice([Candidate("on", "a line a message"), Candidate("off", "bubbles")]),
                                               optional: true, help: "on or off (default: the other of the two)")],
                       summary: "draw conversations a line a message, IRC-like (again: bubbles)") { shell, arguments in
            try self.chooseLayout(arguments["choice"], shell)
        }
        shell.register(mode: "chat", "newer", summary: "the page of messages after the ones shown (after open N)") { shell, _ in
            try self.showNewer(shell)
        }
        shell.register(mode: "chat", "tap", arguments: [.positional("number", .integer, help: "the #number under a message")],
                summary: "when message N was sent, delivered and read") { shell, arguments in
            try ConversationList(chat: self.chat).tap(try arguments.integer("number")!, in: self.current, shell)
        }
    }

    // MARK: Actions

    private func requireDelivery() throws -> Delivery {
        guard let delivery else { throw UserError("you are offline: chat brings you online") }
        return delivery
    }

    /// Finds the peer: present ones first (`name#fp` picks between equal names), then past
    /// conversations.
    private func open(_ wanted: String, _ shell: Shell) throws {
        // A number is an extension's, when one claims it: in a conversation one of its files
        // (a picture drawn large), after a search one of its results.
        if wanted.allSatisfy(\.isASCII), let number = Int64(wanted), try chat.views.open(number, shell) { return }
        // From anywhere, as `room host` does: online first.
        try chat.goOnline(shell)
        let delivery = try requireDelivery()
        if let local = chat.localPeers().first(where: { $0.name.caseInsensitiveCompare(wanted) == .orderedSame }) {
            close()
            shell.move(into: "chat")
            openLocal = local
            shell.console.print(shell.styler.bold(SafeText.visible(local.name)) + " — a \(local.kind); ask it something")
            shell.console.printProse(shell.styler.dim("every line you type is said to it; /back to leave it"))
            return
        }
        let conversation = try PeerFinder(chat: chat).conversation(named: wanted, shell)
        // Wherever it was typed, the prompt is in the conversation after: a plain line is sent.
        shell.move(into: "chat")
        current = conversation
        try printNewestPage(of: conversation, store: MessageStore(database: try shell.session.openDatabase()), delivery: delivery, shell)
    }

    /// From now on what arrives in `conversation` is drawn below the page (in `view`'s
    /// layout), following `last`, and marked shown.
    func drawArrivals(in conversation: Conversation, after last: ChatMessage?, view: ConversationView, delivery: Delivery) {
        guard let notices, let engine = context?.engine else { return }
        let open = ChatNotices.OpenConversation(id: conversation.id, markShown: { [weak delivery] number in delivery?.shown(upTo: number, in: conversation) },
                                                layout: view.layout, speakers: view.speakers, last: last)
        engine.sync { notices.setOpen(open) }
    }

    /// How the open conversation is drawn: the layout, and the names a compact line shows.
    /// `them`: the peer's name as the rules show it, when known already (asked on the engine,
    /// else here with a visit of its own).
    func conversationView(_ shell: Shell, them known: String? = nil) -> ConversationView {
        let me = profiles.current.map { $0.profile.name } ?? "you"
        let them = known ?? openLocal?.name ?? current.map { renamed($0) ?? $0.peerName }
        return ConversationView(capabilities: shell.capabilities, columns: shell.console.columns, layout: layout,
                                speakers: Speakers(me: me, them: them))
    }

    /// `compact [on|off]`: the layout from now on (this session; `conversation = compact` in
    /// seance.conf for every one), the open conversation drawn again in it.
    private func chooseLayout(_ choice: String?, _ shell: Shell) throws {
        switch choice?.lowercased() {
        case nil: layout = layout == .compact ? .bubbles : .compact
        case "on": layout = .compact
        case "off": layout = .bubbles
        default: throw UserError("compact takes on or off, not '\(SafeText.visible(choice!))'")
        }
        shell.console.printProse(shell.styler.dim(layout == .compact ? "compact: a line a message (/compact again for bubbles)"
                                                                      : "bubbles (/compact for a line a message)"))
        guard let conversation = current, let delivery else { return }
        try printNewestPage(of: conversation, store: MessageStore(database: try shell.session.openDatabase()), delivery: delivery, shell)
    }

    /// The conversation's name, the hint, and its newest messages that fit the window: what
    /// `open` shows, and what a resized window shows again.
    private func printNewestPage(of conversation: Conversation, store: MessageStore, delivery: Delivery, _ shell: Shell) throws {
        let hint = shell.styler.dim("every line you type is sent; commands start with / (/back, /older, /tap N, /help); // sends a leading /")
        // The name, the hint (in as many rows as a narrow window breaks it into), the older
        // messages' line and the prompt.
        let hintRows = shell.capabilities.interactive ? DisplayWidth.wrapStyled(hint, width: shell.console.columns).count : 0
        let (page, lines, extras) = try fittingPage(conversation, before: nil, store: store, shell, reserved: 3 + hintRows)
        oldestShown = page.first?.number
        newestShown = nil
        let view = conversationView(shell)
        drawArrivals(in: conversation, after: page.last, view: view, delivery: delivery)
        shell.console.print(shell.styler.bold(renamed(conversation) ?? conversation.shownHandle) + (page.isEmpty ? " — no messages yet" : ""))
        // How to type here is for a person at the prompt: a script's output is the page.
        if shell.capabilities.interactive { shell.console.printProse(hint) }
        printOlder(page, shell)
        view.print(lines, of: page, extras: extras, on: shell.console, lastState: .read) { ChatText.stateMark(conversation.id, $0.number) }
        if let last = page.last, let context { context.engine.sync { delivery.shown(upTo: last.number, in: conversation) } }
    }

    /// After the window is resized the terminal has cut the bubbles into fragments: the open
    /// conversation is drawn again for the new size, on a cleared screen, as irssi does. False
    /// (nothing drawn) when none is open.
    func redrawAfterResize(_ shell: Shell) -> Bool {
        guard let conversation = current, let delivery else { return false }
        guard let database = try? shell.session.openDatabase() else { return false }
        shell.console.write("\u{1B}[H\u{1B}[2J")
        do {
            try printNewestPage(of: conversation, store: MessageStore(database: database), delivery: delivery, shell)
        } catch {
            shell.report(error, lineNumber: 0)
        }
        return true
    }

    /// A line typed in an open conversation is a message.
    func send(_ line: String, _ shell: Shell) throws {
        let text = ChatText.trimmed(line)
        if let local = openLocal {
            guard !text.isEmpty else { return }
            return talk(to: local, text, shell)
        }
        guard let conversation = current, let delivery, let context else { throw UserError("open a conversation first: " + Advice.command("open NAME", mode: "chat")) }
        guard !text.isEmpty else { return }
        // Sent and followed in one visit to the engine: a line typed costs one.
        let (message, previous, held, shownName) = try context.engine.sync {
            let message = try delivery.send(text, in: conversation, more: shell.hasPendingInput)
            let rules = context.rules
            return (message, notices?.follow(message), rules.isHeld(conversation.peerKey), rules.shownName(of: conversation.peerKey))
        }
        tellOfSlash(text, shell)
        if held {
            shell.console.printProse(shell.styler.apply(.red, "\(conversation.shownHandle) uses the name of someone you verified, with another key: "
                                                           + "this waits until you decide (verify or trust \(conversation.shownHandle))"))
        }
        let view = conversationView(shell, them: shownName ?? conversation.peerName)
        let own = view.rows(of: message)
        // The typed line gives way to what it became, as in a messaging app.
        shell.console.eraseAcceptedLine()
        for line in view.lead(message, after: previous ?? nil, now: message.sentAt) { shell.console.print(line) }
        if chat.animate && shell.capabilities.interactive && layout == .bubbles { slide(own, shell) }
        for row in own.dropLast() { shell.console.print(row) }
        shell.console.print(own.last!, mark: ChatText.stateMark(conversation.id, message.number))
    }

    /// How many messages come before the page (numbers run from #1 without gaps), and how to
    /// see them; nothing when the page starts at the first.
    func printOlder(_ page: [ChatMessage], _ shell: Shell) {
        guard let first = page.first, first.number > 1 else { return }
        let count = first.number - 1
        shell.console.printProse(shell.styler.dim(count == 1 ? "1 older message: /older" : "\(count) older messages: /older"))
    }

    /// A script's line in a conversation that names a command (`sleep 3`) is a message like any
    /// other; the script is told once, on stderr, that commands take a slash there.
    private func tellOfSlash(_ text: String, _ shell: Shell) {
        guard !shell.isInteractive, !toldOfSlash else { return }
        // The first word by its bytes: walking characters cost more than the lookup.
        let word = String(decoding: text.utf8.prefix { $0 != UInt8(ascii: " ") }, as: UTF8.self)
        guard !word.isEmpty, shell.registry.command(named: word, inMode: shell.currentMode) != nil else { return }
        toldOfSlash = true
        shell.console.error("note: '\(SafeText.visible(String(text.prefix(40))))' was sent as a message: in a conversation, "
                            + "commands start with / (/\(SafeText.visible(word)) …)")
    }

    /// A line said to a local one (a spectre), and its answer: on screen only, never stored.
    private func talk(to local: LocalPeer, _ text: String, _ shell: Shell) {
        let view = conversationView(shell)
        let now = shell.session.clock()
        shell.console.eraseAcceptedLine()
        // Without numbers or states: nothing here is stored or delivered.
        for row in view.rows(of: ChatMessage(number: 0, outgoing: true, text: text, sentAt: now, state: .read), numbered: false) {
            shell.console.print(row)
        }
        guard let answer = local.answer(text) else {
            shell.console.printProse(shell.styler.dim("\(SafeText.visible(local.name)) has faded; nobody answers"))
            close()
            return
        }
        for row in view.rows(of: ChatMessage(number: 0, outgoing: false, text: answer, sentAt: now, receivedAt: now, state: .received),
                             numbered: false) {
            shell.console.print(row)
        }
    }

    /// The bubble travels from the left (where it was typed) to the right in a few frames.
    private func slide(_ bubble: [String], _ shell: Shell) {
        let console = shell.console
        let lead = bubble.map { $0.prefix { $0 == " " }.count }.min() ?? 0
        guard lead > 4 else { return }
        for step in [0, lead / 3, 2 * lead / 3] {
            for row in bubble { console.print(String(repeating: " ", count: step) + String(row.dropFirst(lead))) }
            console.flush()
            // Ctrl-C cuts the slide short; the message is sent already and its bubble is drawn.
            guard (try? shell.pause(0.04, showNotices: false)) != nil else {
                console.write("\u{1B}[\(bubble.count)A\u{1B}[J")
                return
            }
            console.write("\u{1B}[\(bubble.count)A\u{1B}[J")
        }
    }

    private func showOlder(_ shell: Shell) throws {
        guard let conversation = current else { throw UserError("open a conversation first: " + Advice.command("open NAME", mode: "chat")) }
        let store = MessageStore(database: try shell.session.openDatabase())
        // Opened empty, the conversation has grown since (what came is drawn below): older is
        // what scrolled away, before the newest page the window holds.
        if oldestShown == nil {
            oldestShown = try fittingPage(conversation, before: nil, store: store, shell, reserved: 2).0.first?.number
        }
        guard let oldest = oldestShown else { return shell.console.print("nothing older") }
        let (page, lines, extras) = try fittingPage(conversation, before: oldest, store: store, shell, reserved: 2)
        guard !page.isEmpty else { return shell.console.print("nothing older") }
        oldestShown = page.first?.number
        printOlder(page, shell)
        conversationView(shell).print(lines, of: page, extras: extras, on: shell.console, lastState: .read) {
            ChatText.stateMark(conversation.id, $0.number)
        }
    }

    /// The newest messages before `before` (nil: the newest of all) that fit the window with
    /// `reserved` lines to spare, at most a page of them, their rendering, and the pictures and
    /// files among them. At least one message is shown, however tall.
    private func fittingPage(_ conversation: Conversation, before: Int64?, store: MessageStore, _ shell: Shell,
                             reserved: Int) throws -> ([ChatMessage], [String], [ConversationView.Extra]) {
        let view = conversationView(shell)
        // Pictures and files sent in it, at their times; an older page stops at the page after it.
        var extras = chat.views.extras(in: conversation, view: view, database: store.database)
        if let before, let next = try store.message(before: before + 1, in: conversation.id) { extras.removeAll { $0.time >= next.sentAt } }
        let candidates = try store.page(conversation.id, before: before)
        // On the newest page, a line where what has not been read yet begins.
        let unreadOnes = candidates.filter { !$0.outgoing && $0.state == .received }
        let unread = before == nil ? unreadOnes.first.map { (from: $0.number, count: unreadOnes.count) } : nil
        let (page, lines) = try view.fitting(candidates, rows: shell.console.rows, reserved: reserved,
                                             now: shell.session.clock(), extras: extras, unread: unread) {
            try store.message(before: $0.number, in: conversation.id)
        }
        return (page, lines, extras)
    }

    /// Conversation `id` opened at message `number` (a search result), with the messages around it.
    func open(_ id: Int64, around number: Int64, _ shell: Shell) throws {
        guard let delivery else { throw UserError("you are offline: chat brings you online") }
        let store = MessageStore(database: try shell.session.openDatabase())
        guard let conversation = try store.conversation(id: id) else { throw UserError("that conversation is gone") }
        close()
        shell.move(into: "chat")
        current = conversation
        try printPage(around: number, of: conversation, store: store, delivery: delivery, shell)
    }

    /// The conversation's name and the messages around #`number` that fit the window.
    private func printPage(around number: Int64, of conversation: Conversation, store: MessageStore, delivery: Delivery,
                           _ shell: Shell) throws {
        let view = conversationView(shell)
        // One more before than shown at most: the message before the page decides its header.
        let nearby = try store.messages(conversation.id, numbers: max(1, number - 21)...(number + 20))
        var page = nearby.first.map { $0.number < number - 20 } == true ? Array(nearby.dropFirst()) : nearby
        let now = shell.session.clock()
        func lines() -> [String] {
            view.render(page, previous: page.first.flatMap { first in nearby.last { $0.number < first.number } }, now: now)
        }
        // As many before and after as fit, the result in the middle.
        while page.count > 1, lines().count + 5 > shell.console.rows {
            let before = page.prefix { $0.number < number }.count
            if before > page.count - before - 1 { page.removeFirst() } else { page.removeLast() }
        }
        oldestShown = page.first?.number
        let newest = try store.page(conversation.id, limit: 1).last?.number ?? number
        newestShown = page.last.map { $0.number >= newest ? nil : $0.number } ?? nil
        // Until the newest page is reached again, what arrives is told as a notice.
        if let notices, let engine = context?.engine { engine.sync { notices.setOpen(nil) } }
        shell.console.print(shell.styler.bold(renamed(conversation) ?? conversation.shownHandle) + ", around #\(number)")
        shell.console.printProse(shell.styler.dim("/older and /newer page from here; /back, then open, for the newest"))
        printOlder(page, shell)
        view.print(lines(), of: page, on: shell.console, lastState: .read) { ChatText.stateMark(conversation.id, $0.number) }
        if let last = page.last, let context { context.engine.sync { delivery.shown(upTo: last.number, in: conversation) } }
    }

    /// The page after the newest shown: the newest page, once it is reached.
    private func showNewer(_ shell: Shell) throws {
        guard let conversation = current, let delivery else { throw UserError("open a conversation first: " + Advice.command("open NAME", mode: "chat")) }
        guard let after = newestShown else { return shell.console.print("nothing newer") }
        let store = MessageStore(database: try shell.session.openDatabase())
        let view = conversationView(shell)
        let now = shell.session.clock()
        var page = try store.messages(conversation.id, numbers: (after + 1)...(after + Int64(MessageStore.pageSize)))
        let previous = try store.message(number: after, in: conversation.id)
        while page.count > 1, view.render(page, previous: previous, now: now).count + 2 > shell.console.rows { page.removeLast() }
        guard let last = page.last else {
            newestShown = nil
            return shell.console.print("nothing newer")
        }
        let newest = try store.page(conversation.id, limit: 1).last?.number ?? last.number
        newestShown = last.number >= newest ? nil : last.number
        // The newest page: what arrives is drawn below it again.
        if newestShown == nil { drawArrivals(in: conversation, after: last, view: view, delivery: delivery) }
        view.print(view.render(page, previous: previous, now: now), of: page, on: shell.console, lastState: .read) {
            ChatText.stateMark(conversation.id, $0.number)
        }
        context?.engine.sync { delivery.shown(upTo: last.number, in: conversation) }
    }
}
