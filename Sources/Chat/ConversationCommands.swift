import Accounts
import ChatViews
import Foundation
import Nearby
import Shell
import Storage
import Terminal

/// Conversations inside chat mode: `open`, sending plain lines, `back`, `chats`, `older`, `tap`.
extension ChatMode {
    func registerConversationCommands(in shell: Shell) {
        let peers = ArgumentKind.dynamic {
            var past: [Conversation] = []
            if let me = self.profiles.current?.identity.signingPublicKey, let database = try? shell.session.openDatabase() {
                let blocked = self.blockedKeys(shell)
                past = ((try? MessageStore(database: database).conversations(myKey: me)) ?? []).map(\.conversation)
                    .filter { !blocked.contains($0.peerKey) }
            }
            return Self.peerCandidates(locals: self.localPeers(), present: self.presentPeers(), past: past)
        }
        shell.register(mode: "chat", "open", arguments: [.positional("peer", peers, help: "a name, or name#fingerprint"),
                                                         .option("--wait", "seconds", help: "wait up to this long for them to come into sight (scripts)")],
                summary: "start or resume a conversation (or open search result N); then a plain line sends it") { shell, arguments in
            if let seconds = try arguments.waitSeconds() { try self.waitForPeer(arguments["peer"]!, seconds: seconds, shell) }
            try self.open(arguments["peer"]!, shell)
        }
        shell.register(mode: "chat", "back", summary: "close the conversation (or, with none open, leave chat mode)") { shell, _ in
            if self.openConversation != nil || self.openLocal != nil {
                self.closeConversation()
            } else {
                shell.leaveMode()
            }
        }
        shell.register(mode: "chat", "chats", arguments: [.switch("--all", help: "with those of people you blocked")],
                       summary: "your conversations: last message, time, unread and waiting counts") { shell, arguments in
            try self.listConversations(all: arguments.isSet("--all"), shell)
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
        shell.register(mode: "chat", "tap", arguments: [.positional("number", .integer, help: "the #number under a message")],
                summary: "when message N was sent, delivered and read") { shell, arguments in
            try self.tap(try arguments.integer("number")!, shell)
        }
    }

    // MARK: Actions

    private func requireDelivery() throws -> Delivery {
        guard let delivery else { throw UserError("you are offline: chat brings you online") }
        return delivery
    }

    /// Waits (printing what arrives meanwhile) until a peer called `wanted` is in sight, or
    /// `seconds` have passed; `open` then says what it finds.
    private func waitForPeer(_ wanted: String, seconds: Double, _ shell: Shell) throws {
        _ = try shell.wait(upTo: seconds) { !visiblePeers(matching: wanted).isEmpty }
    }

    /// The present peers `wanted` (a name, or `name#fp`) can mean that this plane lets us see.
    private func visiblePeers(matching wanted: String) -> [Peer] {
        guard let context else { return [] }
        return context.engine.sync { context.presence.peers().filter { $0.answers(to: wanted) && context.rules.canSee($0) } }
    }

    /// Finds the peer: present ones first (`name#fp` picks between equal names), then past
    /// conversations.
    private func open(_ wanted: String, _ shell: Shell) throws {
        // In a conversation, a number is one of its files (a picture drawn large).
        if openConversation != nil, let number = Int64(wanted), let openFile, try openFile(number, shell) { return }
        if isResultNumber(wanted) { return try openResult(Int(wanted)!, shell) }
        let delivery = try requireDelivery()
        if let local = localPeers().first(where: { $0.name.caseInsensitiveCompare(wanted) == .orderedSame }) {
            closeConversation()
            openLocal = local
            shell.console.print(shell.styler.bold(SafeText.visible(local.name)) + " — a \(local.kind); ask it something")
            shell.console.printProse(shell.styler.dim("every line you type is said to it; /back to leave it"))
            return
        }
        let conversation = try self.conversation(named: wanted, shell)
        openConversation = conversation
        try printNewestPage(of: conversation, store: MessageStore(database: try shell.session.openDatabase()), delivery: delivery, shell)
    }

    /// The conversation `wanted` (a name, or `name#fp`) means: with a present peer first, then
    /// a past one; made when it is new. More than one person it could mean is asked about at a
    /// terminal and an error in a script; a person blocked is refused.
    package func conversation(named wanted: String, _ shell: Shell) throws -> Conversation {
        let delivery = try requireDelivery()
        guard let me = profiles.current else { throw ProfileError.notLoggedIn }
        let name = PeerIdentity.split(wanted).name
        let visible = visiblePeers(matching: wanted)
        let store = MessageStore(database: try shell.session.openDatabase())
        let past = try store.conversations(myKey: me.identity.signingPublicKey, peerName: name).filter {
            PeerIdentity.answers(wanted, name: $0.peerName, signingKey: $0.peerKey)
        }
        // Everyone the name could mean, in sight or talked to before: more than one key is a
        // question to ask (at a terminal; a script is told to say which), never a silent pick.
        let trust = TrustStore(database: store.database)
        var choices = visible.map { ($0.handle, $0.shownHandle + Self.trustNote(trust.trustedKey(forName: $0.name), $0.signingKey)) }
        for conversation in past where !visible.contains(where: { $0.signingKey == conversation.peerKey }) {
            choices.append((conversation.handle, conversation.shownHandle + " (not in sight)"))
        }
        guard choices.count <= 1 else {
            guard shell.isInteractive else {
                throw UserError("several peers are called \(SafeText.visible(name)): " + choices.map(\.1).joined(separator: ", ")
                                + "; give name#fingerprint")
            }
            shell.console.print("several peers are called \(SafeText.visible(name)):")
            for (index, choice) in choices.enumerated() { shell.console.print("  \(index + 1)  \(choice.1)") }
            let answer = try shell.ask("which one? (1–\(choices.count), or name#fingerprint) ", field: "peer").trimmingCharacters(in: .whitespaces)
            if let number = Int(answer), choices.indices.contains(number - 1) { return try conversation(named: choices[number - 1].0, shell) }
            guard choices.contains(where: { PeerIdentity.split($0.0).fingerprint == PeerIdentity.split(answer).fingerprint }),
                  PeerIdentity.split(answer).fingerprint != nil else {
                throw UserError("'\(SafeText.visible(answer))' is none of them: give a number from 1 to \(choices.count)")
            }
            return try conversation(named: answer, shell)
        }
        if let key = visible.first?.signingKey ?? past.first?.peerKey, PeerChoiceStore(database: store.database).keys(.blocked).contains(key) {
            let handle = visible.first?.shownHandle ?? past.first!.shownHandle
            throw UserError("you blocked \(handle): unblock \(handle) to talk again")
        }
        if let peer = visible.first { return try context!.engine.sync { try delivery.conversation(with: peer) } }
        if let earlier = past.first { return earlier }
        throw UserError("nobody called \(SafeText.visible(wanted)) is in sight, and you have no conversation with them")
    }

    /// From now on what arrives in `conversation` is drawn below the page (in `view`'s
    /// layout), following `last`, and marked shown.
    func drawArrivals(in conversation: Conversation, after last: ChatMessage?, view: ConversationView, delivery: Delivery) {
        notices?.setOpen(ChatNotices.OpenConversation(
            id: conversation.id, markShown: { [weak delivery] number in delivery?.shown(upTo: number, in: conversation) },
            layout: view.layout, speakers: view.speakers, last: last))
    }

    /// How the open conversation is drawn: the layout, and the names a compact line shows.
    func conversationView(_ shell: Shell) -> ConversationView {
        let me = profiles.current.map { $0.profile.name } ?? "you"
        let them = openLocal?.name ?? openConversation.map { renamed($0) ?? $0.peerName }
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
        guard let conversation = openConversation, let delivery else { return }
        try printNewestPage(of: conversation, store: MessageStore(database: try shell.session.openDatabase()), delivery: delivery, shell)
    }

    /// The conversation's name, the hint, and its newest messages that fit the window: what
    /// `open` shows, and what a resized window shows again.
    private func printNewestPage(of conversation: Conversation, store: MessageStore, delivery: Delivery, _ shell: Shell) throws {
        let hint = shell.styler.dim("every line you type is sent; commands start with / (/back, /older, /tap N, /help); // sends a leading /")
        // The name, the hint (in as many rows as a narrow window breaks it into), the older
        // messages' line and the prompt.
        let hintRows = shell.capabilities.interactive ? DisplayWidth.wrapStyled(hint, width: shell.console.columns).count : 1
        let (page, lines, extras) = try fittingPage(conversation, before: nil, store: store, shell, reserved: 3 + hintRows)
        oldestShown = page.first?.id
        newestShown = nil
        let view = conversationView(shell)
        drawArrivals(in: conversation, after: page.last, view: view, delivery: delivery)
        shell.console.print(shell.styler.bold(renamed(conversation) ?? conversation.shownHandle) + (page.isEmpty ? " — no messages yet" : ""))
        shell.console.printProse(hint)
        printOlder(page, shell)
        view.print(lines, of: page, extras: extras, on: shell.console, lastState: .read) { Self.stateMark(conversation.id, $0.number) }
        if let last = page.last, let context { context.engine.sync { delivery.shown(upTo: last.id, in: conversation) } }
    }

    /// After the window is resized the terminal has cut the bubbles into fragments: the open
    /// conversation is drawn again for the new size, on a cleared screen, as irssi does. False
    /// (nothing drawn) when none is open.
    func redrawAfterResize(_ shell: Shell) -> Bool {
        guard let conversation = openConversation, let delivery else { return false }
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
    func sendLine(_ line: String, _ shell: Shell) throws {
        let text = Self.trimmed(line)
        if let local = openLocal {
            guard !text.isEmpty else { return }
            return talk(to: local, text, shell)
        }
        guard let conversation = openConversation, let delivery, let context else { throw UserError("open a conversation first: open NAME") }
        guard !text.isEmpty else { return }
        // Sent and followed in one visit to the engine: a line typed costs one.
        let (message, previous) = try context.engine.sync {
            let message = try delivery.send(text, in: conversation, more: shell.hasPendingInput)
            return (message, notices?.follow(message))
        }
        tellOfSlash(text, shell)
        let view = conversationView(shell)
        let rows = view.following(message, after: previous ?? nil, now: message.sentAt)
        let own = view.rows(of: message)
        // The typed line gives way to what it became, as in a messaging app.
        shell.console.eraseAcceptedLine()
        for line in rows.dropLast(own.count) { shell.console.print(line) }
        if animate && shell.capabilities.interactive && layout == .bubbles { slide(own, shell) }
        for row in own.dropLast() { shell.console.print(row) }
        shell.console.print(own.last!, mark: Self.stateMark(conversation.id, message.number))
    }

    /// Said after a handle whose name is trusted for another key: possibly an impersonation.
    static func trustNote(_ trusted: Data?, _ key: Data) -> String {
        guard let trusted, trusted != key else { return "" }
        return " (not the one you trust: " + SafeText.visible(PeerIdentity.handle(name: "", signingKey: trusted)) + ")"
    }

    /// How many messages come before the page (numbers run from #1 without gaps), and how to
    /// see them; nothing when the page starts at the first.
    func printOlder(_ page: [ChatMessage], _ shell: Shell) {
        guard let first = page.first, first.number > 1 else { return }
        let count = first.number - 1
        shell.console.printProse(shell.styler.dim(count == 1 ? "1 older message: /older" : "\(count) older messages: /older"))
    }

    /// What `open` completes: the local ones, the peers present, the past conversations, each
    /// once. Names as they are: the completion quotes what it inserts (`'the Girl in the Well'`),
    /// so a name with spaces completes from its first word, quoted or not.
    static func peerCandidates(locals: [LocalPeer], present: [Peer], past: [Conversation]) -> [Candidate] {
        var names = Set<String>()
        var candidates: [Candidate] = []
        for local in locals where names.insert(local.name).inserted { candidates.append(Candidate(local.name, local.kind)) }
        for peer in present where names.insert(peer.shownHandle).inserted {
            candidates.append(Candidate(peer.shownHandle, peer.plane?.name ?? ""))
        }
        for conversation in past where names.insert(conversation.shownHandle).inserted {
            candidates.append(Candidate(conversation.shownHandle, "past conversation"))
        }
        return candidates
    }

    /// A script's line in a conversation that names a command (`sleep 3`) is a message like any
    /// other; the script is told once, on stderr, that commands take a slash there.
    private func tellOfSlash(_ text: String, _ shell: Shell) {
        guard !shell.isInteractive, !toldOfSlash, let word = text.split(separator: " ").first,
              shell.registry.command(named: String(word), inMode: shell.currentMode) != nil else { return }
        toldOfSlash = true
        shell.console.error("note: '\(SafeText.visible(String(text.prefix(40))))' was sent as a message: in a conversation, "
                            + "commands start with / (/\(SafeText.visible(String(word))) …)")
    }

    /// Message numbers as a notice names them: `#3`, or `#3–#7` for a run; nil for none.
    static func span(_ numbers: [Int64]) -> String? {
        guard let first = numbers.min(), let last = numbers.max() else { return nil }
        return first == last ? "#\(last)" : "#\(first)–#\(last)"
    }

    /// The name the state row under message `number` is printed with: written over when the
    /// state changes, where the terminal allows (elsewhere each change is a line of its own).
    static func stateMark(_ conversation: Int64, _ number: Int64) -> String { "state \(conversation) \(number)" }

    /// The line without spaces or tabs at either end. Foundation's trimming costs more than a
    /// sent line's encryption, so the usual line, with none, is not handed to it.
    static func trimmed(_ line: String) -> String {
        func isSpace(_ scalar: Unicode.Scalar) -> Bool { scalar == "\t" || scalar.properties.generalCategory == .spaceSeparator }
        guard let first = line.unicodeScalars.first, let last = line.unicodeScalars.last, !isSpace(first) && !isSpace(last) else {
            return line.trimmingCharacters(in: .whitespaces)
        }
        return line
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
            closeConversation()
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

    private func listConversations(all: Bool, _ shell: Shell) throws {
        guard let me = profiles.current else { throw ProfileError.notLoggedIn }
        if let context { context.engine.sync { context.delivery.settle() } }  // Lines just typed are written by now, and count as waiting.
        let database = try shell.session.openDatabase()
        let choices = PeerChoiceStore(database: database)
        let (blocked, muted) = (choices.keys(.blocked), choices.keys(.muted))
        let everyone = try MessageStore(database: database).conversations(myKey: me.identity.signingPublicKey)
        // Those of people blocked are kept, and shown only when asked for.
        let summaries = all ? everyone : everyone.filter { !blocked.contains($0.conversation.peerKey) }
        guard !summaries.isEmpty else {
            return shell.console.print(everyone.isEmpty ? "no conversations yet: open NAME"
                                                        : "no conversations but with people you blocked: chats --all")
        }
        let view = ConversationView(capabilities: shell.capabilities, columns: shell.console.columns)
        let entries = summaries.map { summary in
            // What is new there, what has not reached them: "2 unread, 1 waiting"; and whether
            // its person is blocked or muted.
            let key = summary.conversation.peerKey
            let counts = [blocked.contains(key) ? "blocked" : nil, muted.contains(key) ? "muted" : nil,
                          summary.unread > 0 ? "\(summary.unread) unread" : nil, summary.waiting > 0 ? "\(summary.waiting) waiting" : nil]
            // Under amnesia the peers of conversations are strangers too.
            return ConversationView.ListEntry(handle: renamed(summary.conversation) ?? summary.conversation.shownHandle,
                                              when: summary.lastTime.map { view.sectionTitle($0, now: shell.session.clock()) } ?? "",
                                              counts: counts.compactMap { $0 }.joined(separator: ", "), unread: summary.unread > 0,
                                              last: summary.lastText)
        }
        for line in view.conversationList(entries) { shell.console.print(line) }
    }

    private func showOlder(_ shell: Shell) throws {
        guard let conversation = openConversation else { throw UserError("open a conversation first: open NAME") }
        guard let oldest = oldestShown else { return shell.console.print("nothing older") }
        let store = MessageStore(database: try shell.session.openDatabase())
        let (page, lines, extras) = try fittingPage(conversation, before: oldest, store: store, shell, reserved: 2)
        guard !page.isEmpty else { return shell.console.print("nothing older") }
        oldestShown = page.first?.id
        printOlder(page, shell)
        conversationView(shell).print(lines, of: page, extras: extras, on: shell.console, lastState: .read) {
            Self.stateMark(conversation.id, $0.number)
        }
    }

    /// The newest messages before `before` (nil: the newest of all) that fit the window with
    /// `reserved` lines to spare, at most a page of them, their rendering, and the pictures and
    /// files among them. At least one message is shown, however tall.
    private func fittingPage(_ conversation: Conversation, before: Int64?, store: MessageStore, _ shell: Shell,
                             reserved: Int) throws -> ([ChatMessage], [String], [ConversationView.Extra]) {
        let view = conversationView(shell)
        // Pictures and files sent in it, at their times; an older page stops at the page after it.
        var extras = pageExtras?(conversation, view, store.database) ?? []
        if let before, let next = try store.message(before: before + 1, in: conversation.id) { extras.removeAll { $0.time >= next.sentAt } }
        let (page, lines) = try view.fitting(try store.page(conversation.id, before: before), rows: shell.console.rows, reserved: reserved,
                                             now: shell.session.clock(), extras: extras) { try store.message(before: $0.id, in: conversation.id) }
        return (page, lines, extras)
    }

    private func tap(_ number: Int, _ shell: Shell) throws {
        guard let conversation = openConversation else { throw UserError("open a conversation first: open NAME") }
        if let context { context.engine.sync { context.delivery.settle() } }  // A line just typed is written by now.
        let store = MessageStore(database: try shell.session.openDatabase())
        guard let message = try store.message(number: Int64(number), in: conversation.id) else {
            throw UserError("there is no message #\(number) with \(conversation.shownHandle)")
        }
        let view = ConversationView(capabilities: shell.capabilities, columns: shell.console.columns)
        let now = shell.session.clock()
        func stamp(_ time: Double) -> String {
            let seconds = Int(time) % 60
            return view.sectionTitle(time, now: now) + String(format: ":%02d", seconds)
        }
        shell.console.print("#\(number): " + Self.times(of: message, stamp).joined(separator: ", "))
    }

    /// What `tap` says of a message: when it was sent, delivered (received, if theirs) and read,
    /// or how far it has come.
    static func times(of message: ChatMessage, _ stamp: (Double) -> String) -> [String] {
        var parts = ["sent " + stamp(message.sentAt)]
        guard let received = message.receivedAt else {
            // Only ours can be on its way (theirs are stored as they arrive).
            return parts + [message.outgoing ? "not delivered yet (\(message.state.rawValue))" : "received"]
        }
        parts.append((message.outgoing ? "delivered " : "received ") + stamp(received))
        if let read = message.readAt {
            parts.append("read " + stamp(read))
        } else if message.state == .read {
            parts.append("read")  // Before read times were kept.
        } else {
            parts.append(message.outgoing ? "not read yet" : "not shown yet")
        }
        return parts
    }
}
