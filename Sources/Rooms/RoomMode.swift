import ChatViews
import Foundation
import Nearby
import Shell
import Terminal

/// Rooms (SPEC §4.3), as a feature: the `room` mode and its commands here, on the shell's
/// thread; while online, everything a room is lives on the engine (`RoomsOnline`).
package final class Rooms: Feature, RoomInView {
    /// How the terminal draws (known once registered).
    var capabilities = Capabilities.plain
    /// While online: the rooms' part on the engine.
    private(set) var live: RoomsOnline?
    /// The places shown (set when registered): a room shown is one of them.
    private var views = Views()
    /// The shell is in room mode: lines arrive as bubbles, not one-line notices; the views are told.
    package var showing = false {
        didSet {
            live.map { live in live.context.engine.sync { live.showing = showing } }
            views.shown = showing ? .room(self) : nil
        }
    }

    /// Where its notices go (above the prompt).
    let inbox: AsyncInbox

    package init(inbox: AsyncInbox) { self.inbox = inbox }

    /// The name the state row under your line `number` in stored room `room` is printed with.
    package static func stateMark(room: Int64, number: Int64) -> String { "room state \(room) \(number)" }

    package func online(_ context: FeatureContext) throws {
        live = RoomsOnline(context, capabilities: capabilities, inbox: inbox, showing: showing)
    }

    package func offline() {
        live.map { live in live.context.engine.sync { live.stop() } }
        live = nil
    }

    /// Runs `body` on the engine with the rooms' part there (one visit for a command).
    private func onEngine<T>(_ offline: @autoclosure () -> String = "you are in no room (and offline): room host or room listen",
                             _ body: (RoomsOnline) throws -> T) throws -> T {
        guard let live else { throw UserError(offline()) }
        return try live.context.engine.sync { try body(live) }
    }

    /// The same, nil when offline.
    private func ifOnline<T>(_ body: (RoomsOnline) -> T?) -> T? { live.flatMap { live in live.context.engine.sync { body(live) } } }

    /// The room this shell is in, if any, and who hosts it.
    package var currentRoom: (room: RoomID, host: Data)? { ifOnline { $0.currentRoom } }
    /// The stored row of the room this shell is in, while its mode shows it (searched first).
    package var row: Int64? { showing ? ifOnline { $0.storedRoomRow } : nil }
    package var isListening: Bool { ifOnline { $0.isListening } ?? false }
    /// The room shown now as a place `mute` mutes (`room 1.2`), if any.
    package var placeName: String? { showing ? currentRoom.map { RoomsOnline.place($0.room) } : nil }
    /// The beacons heard lately, as `room scan` lists them: room, signer, whether forged.
    package var beaconsHeard: [(room: RoomID, host: Data, forged: Bool)] {
        ifOnline { $0.beaconsHeard().map { ($0.beacon.room, $0.beacon.host, $0.beacon.forged) } } ?? []
    }

    /// While a room is shown: its members our plane reaches.
    package var membersInReach: [Peer] { showing ? ifOnline { $0.talk.reachableMembers } ?? [] : [] }

    @discardableResult
    package func host(_ room: RoomID) throws -> String { try onEngine { try $0.host(room) } }
    package func listen() throws { try onEngine { try $0.listen() } }
    package func members() throws -> [(name: String, what: String)]? { try onEngine { try $0.members() } }
    @discardableResult
    package func leave() throws -> String { try onEngine { try $0.leave() } }
    @discardableResult
    package func close() throws -> String { try onEngine { try $0.close() } }

    /// Says `text` to every member our plane reaches; stored, and its bubble returned.
    package func say(_ text: String, more: Bool = false) throws -> ChatMessage { try said(text, more: more).message }

    /// As `say`, with the mark its bubble's state row is printed with.
    private func said(_ text: String, more: Bool) throws -> (message: ChatMessage, mark: String) {
        try onEngine("you are offline: room host or room listen brings you online") { live in
            let message = try live.talk.say(text, more: more)
            return (message, Rooms.stateMark(room: live.storedRoomRow ?? 0, number: message.number))
        }
    }

    /// `room listen [--wait S]`.
    func listen(wait seconds: Double?, shell: Shell) throws {
        let blockedBefore = try onEngine { $0.context.network.blockedBeacons }
        try listen()
        if currentRoom == nil { shell.console.printProse("listening for beacons: you join the first room heard (/leave to stop)") }
        guard let seconds else { return }
        // Joining posts a notice, which wakes the shell to look again.
        _ = try shell.wait(upTo: seconds) { currentRoom != nil || !isListening }
        guard currentRoom == nil else { return }
        // A room hosted by someone blocked is never joined: its beacons are not even read.
        let blocked = try onEngine { $0.context.network.blockedBeacons } > blockedBefore
        throw UserError("no beacon heard within \(Self.seconds(seconds))" + (blocked ? " but from people you blocked, whose rooms cannot be joined" : "")
                        + " (still listening)")
    }

    static func seconds(_ value: Double) -> String { value == value.rounded() ? "\(Int(value)) s" : "\(value) s" }

    /// `room scan`: the beacons in range (listening a moment if need be), without joining.
    func scan(shell: Shell) throws {
        let (watching, network) = try onEngine { ($0.isWatching, $0.context.network) }
        if !watching {
            // One beacon interval and a little: every room in range beacons once meanwhile. (While
            // listening or in a room, what is heard is current already: no wait.)
            network.subscribe(topic: RoomsOnline.everyRoom, true)
            if shell.isInteractive {
                shell.console.printProse(shell.styler.dim("listening for beacons…"))
                shell.console.flush()
            }
            try shell.pause(RoomsOnline.beaconInterval * 1.2)
            if !(try onEngine { $0.isWatching }) { network.subscribe(topic: RoomsOnline.everyRoom, false) }
        }
        let (heard, current, me, now) = try onEngine { ($0.beaconsHeard(), $0.currentRoom, $0.me, $0.now) }
        guard !heard.isEmpty || current?.host == me else { return shell.console.print("no beacon in range") }
        if let current, current.host == me { shell.console.print("\(DisplayWidth.pad(current.room.description, to: 12)) hosted by you") }
        for (beacon, host) in heard {
            var line = "\(DisplayWidth.pad(beacon.room.description, to: 12)) hosted by \(DisplayWidth.pad(host, to: 24)) "
                + "heard \(Int(now - beacon.lastHeard))s ago"
            if beacon.forged { line += "   " + shell.styler.apply(.yellow + .bold, "! forged: another key beacons this room") }
            if let current, current.room == beacon.room, current.host == beacon.host { line += "   (you are in it)" }
            shell.console.print(line)
        }
    }

    /// `/members`.
    func members(shell: Shell) throws {
        guard let rows = try members(), let room = currentRoom?.room else {
            return shell.console.print("you are listening for a beacon, in no room yet")
        }
        shell.console.print("room \(room): \(rows.count) here")
        for row in rows { shell.console.print("  \(DisplayWidth.pad(row.name, to: 28)) \(row.what)") }
    }

    /// A page of the room's lines before row `before`; nil when not in a room.
    func page(before: Int64?, shell: Shell, reserved: Int) throws -> (room: Int64, page: [ChatMessage], lines: [String])? {
        guard let live, let stored = ifOnline({ $0.storedRoomRow }) else { return nil }
        let store = RoomStore(database: live.context.database)
        let view = ConversationView(capabilities: shell.capabilities, columns: shell.console.columns)
        let (page, lines) = try view.fitting(try store.page(stored, before: before), rows: shell.console.rows, reserved: reserved,
                                             now: shell.session.clock()) { try store.page(stored, before: $0.id, limit: 1).first }
        return (stored, page, lines)
    }

    /// The `room` mode: `room host`, `room listen`, `room scan`; in a room, a plain line goes to
    /// every member and the prompt is `room:MAJOR.MINOR`; `members`, `leave`, `close`, `older`.
    /// The views bring the user online (chat's way) when a command needs the network.
    package func register(in shell: Shell, online: Online, views: Views) {
        capabilities = shell.capabilities
        self.views = views
        online.add(self)
        func goOnline(_ shell: Shell) throws { try views.conversationOwner().goOnline(shell) }
        var oldestShown: Int64?
        let mode = Mode(
            name: "room", summary: "group chat with the people near a beacon (room host, room listen)",
            prompt: { self.currentRoom.map { "room:\($0.room)" } ?? "room" },
            enter: { shell in
                try goOnline(shell)
                self.showing = true
                oldestShown = nil
                if let (room, page, lines) = try self.page(before: nil, shell: shell, reserved: 2) {
                    oldestShown = page.first?.id
                    self.print(lines, of: page, in: room, shell)
                }
            },
            leave: { _ in self.showing = false },
            messages: MessageInput(isActive: { self.currentRoom != nil }, send: { shell, line in
                let text = line.trimmingCharacters(in: .whitespaces)
                guard !text.isEmpty else { return }
                let (message, mark) = try self.said(text, more: shell.hasPendingInput)
                let view = ConversationView(capabilities: shell.capabilities, columns: shell.console.columns)
                let bubble = view.bubble(message)
                // The typed line gives way to its bubble, as in a conversation.
                shell.console.eraseAcceptedLine()
                bubble.dropLast().forEach { shell.console.print($0) }
                shell.console.print(bubble.last!, mark: mark)
            }))
        shell.register(mode)
        /// `room host …` typed in another mode brings the user online and into the room's mode.
        func arrive(_ shell: Shell, _ body: () throws -> Void) throws {
            try goOnline(shell)
            try body()
            if shell.currentMode != mode.name { try shell.enter(mode) }
        }
        shell.register(mode: "room", "host", arguments: [.positional("major", .integer, help: "0 to 65535"),
                                                         .positional("minor", .integer, help: "0 to 65535")],
                       summary: "host room MAJOR MINOR: beacon it every second; guests nearby join by themselves") { shell, arguments in
            let room = try Self.room(arguments)
            try arrive(shell) { shell.console.print(try self.host(room)) }
            oldestShown = nil
        }
        shell.register(mode: "room", "listen",
                       arguments: [.option("--wait", "seconds", help: "wait up to this long to join (scripts); fails if no room is heard")],
                       summary: "join the first room whose beacon is heard (the last found, if several)") { shell, arguments in
            let wait = try arguments.waitSeconds()
            try arrive(shell) { try self.listen(wait: wait, shell: shell) }
            oldestShown = nil
        }
        shell.register(mode: "room", "scan", summary: "the rooms beaconed in range, without joining") { shell, _ in
            try goOnline(shell)
            try self.scan(shell: shell)
        }
        shell.register(mode: "room", "members", summary: "who is in the room, and how near the host each is") { shell, _ in
            try self.members(shell: shell)
        }
        shell.register(mode: "room", "leave", summary: "leave the room (or stop listening)") { shell, _ in
            shell.console.print(try self.leave())
        }
        shell.register(mode: "room", "close", summary: "as its host, end the room for everyone") { shell, _ in
            shell.console.print(try self.close())
        }
        shell.register(mode: "room", "older", summary: "the page of the room's lines before the ones shown") { shell, _ in
            guard let (room, page, lines) = try self.page(before: oldestShown ?? Int64.max, shell: shell, reserved: 1) else {
                throw UserError("you are in no room")
            }
            guard !page.isEmpty else { return shell.console.print("nothing older") }
            oldestShown = page.first?.id
            self.print(lines, of: page, in: room, shell)
        }
    }

    /// A page of the room's lines; the state rows of yours not yet delivered to everyone printed
    /// to be written over when they are.
    private func print(_ lines: [String], of page: [ChatMessage], in room: Int64, _ shell: Shell) {
        ConversationView(capabilities: shell.capabilities, columns: shell.console.columns)
            .print(lines, of: page, on: shell.console, lastState: .delivered) { Rooms.stateMark(room: room, number: $0.number) }
    }

    static func room(_ arguments: Arguments) throws -> RoomID {
        func number(_ name: String) throws -> UInt16 {
            guard let value = try arguments.integer(name), let number = UInt16(exactly: value) else {
                throw ShellError.badArgument("\(name) must be from 0 to 65535, not \(arguments[name] ?? "")")
            }
            return number
        }
        return RoomID(major: try number("major"), minor: try number("minor"))
    }
}
