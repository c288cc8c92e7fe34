import Accounts
import ChatViews
import Foundation
import Nearby
import Shell
import Storage
import Terminal

/// What chat lists of conversations: `chats`, and `tap N` in one. The shell's thread.
struct ConversationList {
    let chat: ChatMode

    /// `chats [--all]`: every conversation, its last line, when, and what is unread or waits.
    func list(all: Bool, _ shell: Shell) throws {
        guard let me = chat.profiles.current else { throw ProfileError.notLoggedIn }
        if let context = chat.context { context.engine.sync { context.delivery.settle() } }  // Lines just typed are written by now, and count as waiting.
        let database = try shell.session.openDatabase()
        let choices = PeerChoiceStore(database: database)
        let (blocked, muted) = (choices.keys(.blocked), choices.keys(.muted))
        let verified = TrustStore(database: database).verifiedKeys()
        let everyone = try MessageStore(database: database).conversations(myKey: me.identity.signingPublicKey)
        // Those of people blocked are kept, and shown only when asked for.
        let summaries = all ? everyone : everyone.filter { !blocked.contains($0.conversation.peerKey) }
        guard !summaries.isEmpty else {
            return shell.console.print(everyone.isEmpty ? "no conversations yet: " + Advice.command("open NAME", mode: "chat")
                                                        : "no conversations but with people you blocked: " + Advice.command("chats --all", mode: "chat"))
        }
        let view = ConversationView(capabilities: shell.capabilities, columns: shell.console.columns)
        let entries = summaries.map { summary in
            // What is new there, what has not reached them: "2 unread, 1 waiting (1 with the
            // broker)"; and whether
            // its person is blocked or muted.
            let key = summary.conversation.peerKey
            let counts = [blocked.contains(key) ? "blocked" : nil, muted.contains(key) ? "muted" : nil,
                          summary.unread > 0 ? "\(summary.unread) unread" : nil, summary.waiting > 0 ? "\(summary.waiting) waiting" + (summary.mailed > 0 ? " (\(summary.mailed) with the broker)" : "") : nil]
            // Under amnesia the peers of conversations are strangers too.
            let handle = chat.renamed(summary.conversation)
                ?? summary.conversation.shownHandle + (verified.contains(key) ? ChatText.verifiedMark(ascii: shell.capabilities.ascii) : "")
            return ConversationView.ListEntry(handle: handle,
                                              when: summary.lastTime.map { view.sectionTitle($0, now: shell.session.clock()) } ?? "",
                                              counts: counts.compactMap { $0 }.joined(separator: ", "), unread: summary.unread > 0,
                                              last: summary.lastText)
        }
        for line in view.conversationList(entries) { shell.console.print(line) }
    }

    /// `tap N`: when message N of `conversation` was sent, delivered and read.
    func tap(_ number: Int, in conversation: Conversation?, _ shell: Shell) throws {
        guard let conversation else { throw UserError("open a conversation first: " + Advice.command("open NAME", mode: "chat")) }
        if let context = chat.context { context.engine.sync { context.delivery.settle() } }  // A line just typed is written by now.
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
        let mailed = try message.outgoing && message.receivedAt == nil && MailRecords.isMailed(store.database, number: Int64(number), in: conversation.id)
        shell.console.print("#\(number): " + ChatText.times(of: message, mailed: mailed, stamp).joined(separator: ", "))
    }
}
