import ChatViews
import Nearby
import Search
import Shell
import Terminal

/// Opening a search result where it was said (`open N`, `goto N`), and paging on from there
/// (`older`, `newer`).
extension ChatMode {
    func registerSearchJumps(in shell: Shell) {
        shell.register(mode: "chat", "goto", arguments: [.positional("number", .integer, help: "a result's number in the last search")],
                       summary: "open search result N where it was said, with the lines around it") { shell, arguments in
            try self.openResult(try arguments.integer("number")!, shell)
        }
        shell.register(mode: "chat", "newer", summary: "the page of messages after the ones shown (after open N)") { shell, _ in
            try self.showNewer(shell)
        }
    }

    /// Whether `open WORD` means a search result: a number, after a search.
    func isResultNumber(_ word: String) -> Bool {
        search?.hasResults == true && !word.isEmpty && word.allSatisfy(\.isASCII) && Int(word) != nil
    }

    /// Result `number` of the last search, shown where it was said: its conversation opened
    /// at that line, or the room's lines around it.
    func openResult(_ number: Int, _ shell: Shell) throws {
        guard let search else { throw UserError("search first: search TEXT") }
        let hit = try search.result(number)
        switch hit.place {
        case .conversation(let id, _, _):
            guard let delivery else { throw UserError("you are offline: chat brings you online") }
            let store = MessageStore(database: try shell.session.openDatabase())
            guard let conversation = try store.conversation(id: id) else { throw UserError("that conversation is gone") }
            closeConversation()
            openConversation = conversation
            try printPage(around: hit.number, of: conversation, store: store, delivery: delivery, shell)
        case .room(_, let major, let minor, let host):
            let view = ConversationView(capabilities: shell.capabilities, columns: shell.console.columns)
            shell.console.print(shell.styler.bold("room \(major).\(minor)") + " (hosted by \(SafeText.visible(host))), around #\(hit.number)")
            let lines = try search.roomContext(hit, count: 5)
            for line in view.render(lines, now: shell.session.clock()) { shell.console.print(line) }
        }
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
        oldestShown = page.first?.id
        let newest = try store.page(conversation.id, limit: 1).last?.number ?? number
        newestShown = page.last.map { $0.number >= newest ? nil : $0.number } ?? nil
        // Until the newest page is reached again, what arrives is told as a notice.
        notices?.setOpen(nil)
        shell.console.print(shell.styler.bold(renamed(conversation) ?? conversation.shownHandle) + ", around #\(number)")
        shell.console.printProse(shell.styler.dim("/older and /newer page from here; /back, then open, for the newest"))
        printOlder(page, shell)
        view.print(lines(), of: page, on: shell.console, lastState: .read) { Self.stateMark(conversation.id, $0.number) }
        if let last = page.last, let context { context.engine.sync { delivery.shown(upTo: last.id, in: conversation) } }
    }

    /// The page after the newest shown: the newest page, once it is reached.
    private func showNewer(_ shell: Shell) throws {
        guard let conversation = openConversation, let delivery else { throw UserError("open a conversation first: open NAME") }
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
            Self.stateMark(conversation.id, $0.number)
        }
        context?.engine.sync { delivery.shown(upTo: last.id, in: conversation) }
    }
}
