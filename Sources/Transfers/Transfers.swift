import Accounts
import ChatViews
import Foundation
import Glibc
import Nearby
import Shell
import Storage
import Terminal

/// Pictures and files in conversations (SPEC §4.5), as a feature: the commands here, on the
/// shell's thread; while online, offers, chunks and acknowledgements on the engine
/// (`TransfersOnline`). A place extension too (`Views`): its pictures and files are drawn among
/// a conversation's messages, `open N` draws one large; what it needs of the places (the
/// conversation shown, a person by name, a room's members) it asks the views, so that it
/// imports neither chat nor rooms.
package final class Transfers: Feature, PlaceExtension {
    private let login: LoginSession
    private var capabilities = Capabilities.plain
    /// Whose line reader (made after registration) decides whether a bar can be written over.
    private var console: Console?
    /// While online: the engine's part.
    private(set) var live: TransfersOnline?
    /// The places shown (set when registered).
    private var views = Views()
    /// Whether bars are written over in place; nil: when the console can (a test sets it).
    package var drawsBars: Bool?
    /// Where `save` puts a file when given no path: `$XDG_DOWNLOAD_DIR`, else `~/Downloads`.
    package var downloads = "Downloads"
    /// `~/` at the start of a path typed means this.
    package var home: String?

    /// Where its notices go (above the prompt).
    let inbox: AsyncInbox

    package init(login: LoginSession, inbox: AsyncInbox) {
        self.login = login
        self.inbox = inbox
    }

    /// The name a transfer's bar is printed with, to be written over as it moves.
    static func progressMark(_ number: Int64) -> String { "transfer \(number)" }

    package func online(_ context: FeatureContext) throws {
        live = TransfersOnline(context, capabilities: capabilities, inbox: inbox, overwrites: drawsBars ?? console?.overwrites ?? false)
    }

    package func offline() {
        if let live { live.context.engine.sync { live.stop() } }
        live = nil
    }

    /// The place shown changed: a picture completing in the conversation shown is drawn in it.
    package func shown(_ place: Place?) {
        guard let live else { return }
        live.context.engine.sync { live.inView.value = place?.conversation?.id }
    }

    private func requireOnline() throws -> TransfersOnline {
        guard let live else { throw UserError("you are offline: chat brings you online") }
        return live
    }

    func myKey() throws -> Data {
        guard let current = login.current else { throw ProfileError.notLoggedIn }
        return current.identity.signingPublicKey
    }

    /// A transfer of this profile by its number.
    func transfer(_ number: Int, _ shell: Shell) throws -> Transfer {
        let store = TransferStore(database: try shell.session.openDatabase())
        let me = try myKey()
        guard let transfer = try store.transfer(Int64(number)),
              try MessageStore(database: store.database).conversation(id: transfer.conversation)?.myKey == me else {
            throw TransferError.noSuchTransfer(Int64(number))
        }
        return transfer
    }

    package func register(in shell: Shell, online: Online, views: Views) {
        capabilities = shell.capabilities
        console = shell.console
        self.views = views
        online.add(self)
        views.add(self)
        shell.register(Command("send", scope: .global,
                               arguments: [.positional("peer|path", .path, help: "who to send it to (in a conversation or a room: the file)"),
                                           .positional("path", .path, optional: true, help: "the file"),
                                           .option("--wait", "seconds", help: "wait up to this long for it to be delivered (scripts)")],
                               summary: "send a picture or a file, end-to-end encrypted (in a conversation: /send PATH)",
                               details: "A picture (PNG, JPEG, GIF, BMP) is drawn in the conversation; another file shows its name,\n"
                                + "type and size. The file is read where it is, never copied: changed or removed before it\n"
                                + "has gone, the transfer fails (send it again).\n"
                                + "It goes on after either of you goes away and comes back. In a room, /send sends it to\n"
                                + "every member. Through a broker, a picture of up to 1 MiB for someone away who wrote to\n"
                                + "you is left with the broker: they get it when they next connect.") { invocation in
            let shell = invocation.shell
            try views.conversationOwner().goOnline(shell)
            try self.send(invocation.arguments, shell)
        })
        registerListAndCleanup(in: shell)
        let number = ArgumentSpec.positional("N", .integer, help: "the file's number (transfers lists them)")
        shell.register(Command("accept", scope: .global, arguments: [number], summary: "take file N offered to you") { invocation in
            let transfer = try self.transfer(try invocation.arguments.integer("N")!, invocation.shell)
            guard !transfer.outgoing, transfer.state == .asking else { throw UserError("file \(transfer.number) waits for no answer of yours") }
            let live = try self.requireOnline()
            try live.context.engine.sync { try live.receiver.accepted(transfer) }
            invocation.console.print("file \(transfer.number) accepted: it comes while you are both online")
        })
        shell.register(Command("decline", scope: .global, arguments: [number], summary: "refuse file N offered to you") { invocation in
            let transfer = try self.transfer(try invocation.arguments.integer("N")!, invocation.shell)
            guard !transfer.outgoing, transfer.state == .asking else { throw UserError("file \(transfer.number) waits for no answer of yours") }
            let live = try self.requireOnline()
            live.context.engine.sync { live.stopped(transfer, as: .declined) }
            invocation.console.print("file \(transfer.number) declined: nothing of it is kept")
        })
        shell.register(Command("cancel", scope: .global, arguments: [number], summary: "stop file N, either way (the other side is told)") { invocation in
            let transfer = try self.transfer(try invocation.arguments.integer("N")!, invocation.shell)
            guard !transfer.state.isFinal else { throw UserError("file \(transfer.number) is \(transfer.state.rawValue) already") }
            let live = try self.requireOnline()
            live.context.engine.sync { live.stopped(transfer, as: .cancelled) }
            invocation.console.print("file \(transfer.number) cancelled")
        })
        shell.register(Command("save", scope: .global,
                               arguments: [number, .positional("path", .path, optional: true, help: "where (default: your downloads folder)")],
                               summary: "write file N to PATH, or to your downloads folder (never over a file)") { invocation in
            let transfer = try self.transfer(try invocation.arguments.integer("N")!, invocation.shell)
            let path = try self.save(transfer, to: invocation.arguments["path"].map(self.expanded), invocation.shell)
            invocation.console.print("saved \(transfer.picture ? "picture" : "file") \(transfer.number) as \(SafeText.visible(path))")
        })
    }

    // MARK: Commands

    private func expanded(_ path: String) -> String {
        guard path.hasPrefix("~/"), let home else { return path }
        return home + path.dropFirst()
    }

    private func send(_ arguments: Arguments, _ shell: Shell) throws {
        let live = try requireOnline()
        let first = arguments["peer|path"]!
        let wait = try arguments.waitSeconds()
        var conversations: [Conversation]
        let path: String
        if let second = arguments["path"] {
            conversations = [try views.conversationOwner().conversation(named: first, shell)]
            path = expanded(second)
        } else if case .room(let room)? = views.shown {
            let members = room.membersInReach
            guard !members.isEmpty else { throw UserError("nobody else is in the room") }
            conversations = try live.context.engine.sync { try members.map { try live.context.delivery.conversation(with: $0) } }
            path = expanded(first)
        } else if let conversation = views.shown?.conversation {
            conversations = [conversation]
            path = expanded(first)
        } else {
            throw UserError("send whom? send PEER PATH (or, in a conversation, /send PATH)")
        }
        let store = TransferStore(database: try shell.session.openDatabase())
        let name = String(path.split(separator: "/").last ?? Substring(path))
        var sent: [Transfer] = []
        for conversation in conversations {
            let id = Data((0..<16).map { _ in UInt8.random(in: 0...255) })
            let transfer = try store.send(path: path, name: name, in: conversation, id: id, now: live.context.engine.now)
            sent.append(transfer)
            live.context.engine.sync { live.send(transfer) }
        }
        let view = TransferView(capabilities: shell.capabilities, columns: shell.console.columns)
        let drawn = sent.first.map { store.drawn($0) }
        for transfer in sent {
            let to = SafeText.visible(conversations.first { $0.id == transfer.conversation }?.shownHandle ?? "them")
            if shell.console.overwrites {
                // In the conversation or room it was sent in: its bubble; elsewhere a line.
                let inPlace = switch views.shown {
                case .conversation(let shown)?: shown.id == transfer.conversation
                case .room?: true
                case nil: false
                }
                if inPlace {
                    var shown = transfer
                    shown.picture = drawn?.transfer.picture ?? transfer.picture
                    view.bubble(shown, picture: drawn?.picture).forEach { shell.console.print($0) }
                } else {
                    shell.console.print("\(transfer.picture ? "picture" : "file") \(transfer.number) (\(TransferView.shownName(transfer.name)), "
                                        + "\(TransferView.size(transfer.size))) to \(to)")
                }
                shell.console.print(view.progressRow(transfer, stored: 0, rate: nil), mark: Self.progressMark(transfer.number))
            } else {
                shell.console.print("sending \(transfer.picture ? "picture" : "file") \(transfer.number) "
                                    + "(\(TransferView.shownName(transfer.name)), \(TransferView.size(transfer.size))) to \(to)")
            }
        }
        guard let wait else { return }
        let numbers = sent.map(\.number)
        _ = try shell.wait(upTo: wait) {
            numbers.allSatisfy { (try? store.transfer($0))??.state.isFinal ?? true }
        }
        for number in numbers {
            guard let transfer = try store.transfer(number) else { continue }
            switch transfer.state {
            case .complete: continue
            case .declined, .cancelled, .failed:
                throw UserError("file \(number) was not delivered: \(transfer.state.rawValue)" + (transfer.reason.map { ", " + $0 } ?? ""))
            default:
                throw UserError("file \(number) is not delivered after \(Int(wait)) s: it goes on while you are both online")
            }
        }
    }

    /// What `nearby stats` adds: transfers moving and waiting, what each person holds of the
    /// disk in unfinished ones against the quota, and the refusals by reason.
    package func statistics() -> [String] {
        guard let live, let unfinished = try? TransferStore(database: live.context.database).transfers(myKey: live.context.me, unfinished: true)
        else { return [] }
        let moving = unfinished.filter { $0.state == .moving }
        let asking = unfinished.filter { !$0.outgoing && $0.state == .asking }.count
        var held: [String: Int] = [:]
        for transfer in moving where !transfer.outgoing { held[SafeText.visible(transfer.peerName), default: 0] += transfer.size }
        let refusals = live.context.engine.sync { live.receiver.refusals }
        var line = "transfers: \(moving.filter(\.outgoing).count) sending, \(moving.filter { !$0.outgoing }.count) receiving, "
            + "\(asking) waiting for your answer"
        if !held.isEmpty {
            line += "; held of your disk: " + held.sorted { $0.key < $1.key }
                .map { "\($0.key) \(TransferView.size($0.value)) of \(TransfersOnline.quota >> 20) MiB" }.joined(separator: ", ")
        }
        let refused = refusals.values.reduce(0, +)
        if refused > 0 { line += "; refused \(refused) (" + refusals.sorted { $0.key < $1.key }.map { "\($0.key) \($0.value)" }.joined(separator: ", ") + ")" }
        return [line]
    }

    func list(_ shell: Shell) throws {
        let store = TransferStore(database: try shell.session.openDatabase())
        let transfers = try store.transfers(myKey: try myKey())
        guard !transfers.isEmpty else {
            return shell.console.print("no files here: " + Advice.command("send NAME PATH") + " sends one")
        }
        let view = TransferView(capabilities: shell.capabilities, columns: shell.console.columns)
        let rows = transfers.map { transfer in
            (transfer, stored: live.map { live in live.context.engine.sync { live.stored(of: transfer) } } ?? transfer.stored)
        }
        for line in view.listLines(rows) { shell.console.print(line) }
    }

    /// The pictures and files of `conversation` as bubbles at their times, for its pages: each
    /// with its number, and for ours how it went.
    package func extras(in conversation: Conversation, view page: ConversationView, database: SeanceDatabase) -> [ConversationView.Extra] {
        let store = TransferStore(database: database)
        let view = TransferView(capabilities: capabilities, columns: page.columns)
        let transfers = ((try? store.transfers(myKey: conversation.myKey, in: conversation.id)) ?? []).filter { $0.state != .storing }
        return transfers.map { transfer in
            let (transfer, picture) = transfer.state == .complete ? store.drawn(transfer) : (transfer, nil)
            let last = transfer.outgoing || transfer.state != .complete ? view.progressRow(transfer, stored: transfer.stored, rate: nil)
                                                                        : view.numberRow(transfer)
            // One still going keeps its bar written over in place on a page drawn again.
            let going = [.moving, .offered, .asking].contains(transfer.state)
            return ConversationView.Extra(time: transfer.sentAt, rows: view.bubble(transfer, picture: picture) + [last],
                                          mark: going ? Self.progressMark(transfer.number) : nil)
        }
    }

    /// `open N` in a conversation: picture N drawn as large as the window holds, or what file N is.
    package func open(_ number: Int64, in place: Place?, _ shell: Shell) throws -> Bool {
        guard let conversation = place?.conversation else { return false }
        let store = TransferStore(database: try shell.session.openDatabase())
        guard let transfer = try store.transfer(number), transfer.conversation == conversation.id else { return false }
        let view = TransferView(capabilities: shell.capabilities, columns: shell.console.columns)
        guard transfer.state == .complete else {
            shell.console.print(view.listLine(transfer, stored: transfer.stored))
            return true
        }
        // Decoded again for the window (in a child process), once it is known to be a picture.
        let rows = max(4, shell.console.rows - 3)
        if store.drawn(transfer).picture != nil,
           let picture = try? PictureProcess.fitted(try store.contents(of: transfer.number), width: shell.console.columns, height: rows * 2) {
            let renderer = ImageRenderer(shell.capabilities)
            for line in renderer.render(picture, columns: shell.console.columns, rows: rows) { shell.console.print(line) }
        }
        shell.console.print(view.listLine(transfer, stored: transfer.chunkCount) + "   (/save \(transfer.number) to keep it as a file)")
        return true
    }

    /// Writes a complete transfer to `path` (a file that must not exist, or a directory), or
    /// to the downloads folder under its own name made safe, numbered when taken: never over
    /// a file. The path written.
    private func save(_ transfer: Transfer, to path: String?, _ shell: Shell) throws -> String {
        guard transfer.state == .complete || transfer.outgoing else {
            throw UserError("file \(transfer.number) is \(transfer.state.rawValue): only a whole file can be saved")
        }
        let store = TransferStore(database: try shell.session.openDatabase())
        var directory = downloads
        var chosen: String?
        if let path {
            var info = stat()
            if stat(path, &info) == 0, (info.st_mode & S_IFMT) == S_IFDIR {
                directory = path
            } else if path.hasSuffix("/") {
                // A folder was meant: it is not made (a typo would make one).
                throw UserError("there is no folder \(SafeText.visible(path)): make it first, or give the file's name")
            } else {
                chosen = path
            }
        } else {
            _ = mkdir(downloads, 0o700)
        }
        if let chosen {
            try store.save(transfer, to: chosen)
            return chosen
        }
        let (stem, suffix) = Self.safeName(transfer.name)
        for attempt in 1...1_000 {
            let candidate = String(directory.reversed().drop { $0 == "/" }.reversed()) + "/" + stem
                + (attempt == 1 ? "" : " (\(attempt))") + suffix
            do {
                try store.save(transfer, to: candidate)
                return candidate
            } catch TransferError.file(.exists) {
                continue
            }
        }
        throw UserError("\(SafeText.visible(directory)) holds a thousand files called \(SafeText.visible(stem + suffix)) already")
    }

    /// A peer's name for a file as a file name here: no directory in it, nothing hidden, no
    /// control or shell-troubling character, at most 100 characters; split before its suffix.
    static func safeName(_ name: String) -> (stem: String, suffix: String) {
        var safe = String(name.unicodeScalars.map { scalar -> Character in
            let unsafe = scalar == "/" || scalar == "\\" || scalar.value < 0x20 || (0x7F...0x9F).contains(scalar.value)
                || SafeText.isBidiControl(scalar.value)
            return unsafe ? "_" : Character(scalar)
        })
        while safe.hasPrefix(".") || safe.hasPrefix("-") { safe.removeFirst() }
        if safe.isEmpty { safe = "file" }
        let dot = safe.lastIndex(of: ".")
        var stem = dot.map { String(safe[..<$0]) } ?? safe
        var suffix = dot.map { String(safe[$0...]) } ?? ""
        if suffix.count > 10 { stem += suffix; suffix = "" }
        if stem.isEmpty { stem = "file" }
        return (String(stem.prefix(100)), suffix)
    }
}
