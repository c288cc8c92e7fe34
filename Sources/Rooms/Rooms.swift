import Accounts
import ChatViews
import Foundation
import Nearby
import Runtime
import Shell
import Storage
import Terminal
import Wire

/// Rooms (SPEC §4.3), as a feature of chat: a host's beacon every second on every transport,
/// guests that join the first room they hear and leave when its beacon has been silent for
/// ten seconds, a roster with each guest's proximity, and lines said to every member, each copy
/// sealed to its recipient with the planes enforced per pair.
///
/// This is the rooms' part while online: its state is the engine's (packets, timers and the
/// writes they cause run there), and the shell's commands run their part there too
/// (`engine.sync`), so one thread at a time changes a room. `Rooms` is the feature that makes it.
final class RoomsOnline: Sendable {
    struct State {
        var place = Place.none
        var heard: [HeardKey: Heard] = [:]
        /// Who owns each room number heard, kept apart from `heard`.
        var owners = RoomOwners()
        var forgeries = ForgeryNotices()
        var timer: Cancellable?
        /// Our lines not yet acknowledged by every member, by id, and each one's row and number.
        var copies = ReliableCopies<RoomLine>(maximumAttempts: RoomsOnline.attempts)
        var lines: [Data: (room: Int64, number: Int64)] = [:]
        var resendTimer: Cancellable?
        /// The shell is in room mode: lines arrive as bubbles, not one-line notices.
        var showing = false
        var random: SeededRandom
        /// Beacons wanted from a broker (watching rooms costs a broker subscription).
        var watching = false
    }

    static let beaconInterval = 1.0

    /// How a room is named as a place that can be muted (`mute` in a room).
    static func place(_ room: RoomID) -> String { "room \(room)" }
    /// A guest leaves when no beacon has come for this long.
    static let silenceLimit = 10.0
    /// A guest probes the host this often (every other second); the host forgets a guest not
    /// heard for `memberLimit`.
    static let probeEvery = 2
    static let memberLimit = 15.0
    /// Beacons remembered at most: a flood of made-up rooms must not grow the table (who owns a
    /// room is kept apart, in `RoomOwners`: what is forgotten here is only no longer listed).
    static let heardLimit = 256
    /// A copy of a line is sent this many times at most, with the backoff messages have, until
    /// acknowledged (`ReliableCopies`).
    static let attempts = 5
    /// A room's beacons travel on a topic of its own (a broker carries them there); listening
    /// takes every room's.
    static func topic(of room: RoomID) -> String { "rooms/\(room)" }
    static let everyRoom = "rooms/+"
    /// Longest line: one sealed copy must fit a datagram.
    static let maximumLine = MessageCrypto.fragmentText

    let context: FeatureContext
    let state: EngineBound<State>
    let styler: Styler
    let capabilities: Capabilities

    /// On the engine: registers the rooms' kinds.
    init(_ context: FeatureContext, capabilities: Capabilities, showing: Bool) {
        self.context = context
        self.capabilities = capabilities
        styler = Styler(capabilities)
        var state = State(random: context.random)
        state.showing = showing
        self.state = EngineBound(state, engine: context.engine)
        let network = context.network
        network.handle(Beacon.self) { [self] beacon, sender, _ in heard(beacon, from: sender) }
        network.handle(RoomProbe.self) { [self] probe, sender, peer in probed(probe, from: sender, peer: peer) }
        network.handle(RoomRoster.self) { [self] roster, sender, _ in received(roster, from: sender) }
        network.handle(RoomMembership.self) { [self] membership, sender, _ in received(membership, from: sender) }
        network.handle(RoomLine.self) { [self] line, sender, peer in received(line, from: sender, peer: peer) }
        network.handle(RoomLineAck.self) { [self] ack, sender, _ in acknowledged(ack, from: sender) }
        context.observe { [self] event in
            if case .blocked(let keys) = event { blocked(keys) }
        }
    }

    /// A host closes its room, a guest says it leaves: the transports still run when this is called.
    func stop() {
        context.engine.sync {
            switch place {
            case .hosting: closeRoom(context)
            case .guest(let guest): leaveRoom(context, guest, saying: nil, tellHost: true)
            case .listening, .none: break
            }
            state.value.timer?.cancel()
            state.value.timer = nil
            state.value.place = .none
            state.value.resendTimer?.cancel()
            state.value.resendTimer = nil
            state.value.copies = ReliableCopies(maximumAttempts: Self.attempts)
            state.value.lines = [:]
            state.value.heard = [:]
        }
    }

    /// Runs `body` on the state, on the engine (at once when already there).
    func withState<T>(_ body: (inout State) throws -> T) rethrows -> T {
        try context.engine.sync { try state.update(body) }
    }

    var place: Place { withState { $0.place } }

    /// The room this shell is in, if any, and who hosts it.
    var currentRoom: (room: RoomID, host: Data)? {
        withState { state in
            guard let room = state.place.room, let host = state.place.hostKey(me: context.me) else {
                return nil
            }
            return (room, host)
        }
    }

    var isListening: Bool { if case .listening = place { return true } else { return false } }

    /// The stored row of the room this shell is in, if any.
    var storedRoomRow: Int64? { withState { audience($0, me: context.identity.signingPublicKey)?.stored.id } }

    // MARK: The second's work (on the engine)

    /// Runs once a second while in a room, listening, or with lines waiting for acknowledgement.
    func ensureTimer(_ context: FeatureContext) {
        let start = withState { state -> Bool in state.timer == nil }
        guard start else { return }
        let timer = context.engine.every(Self.beaconInterval) { [weak self] in self?.tick(context) }
        withState { $0.timer = timer }
        watch(context)
    }

    /// Stops the timer when nothing needs it, and the broker's room topics when nothing watches.
    func settle(_ context: FeatureContext) {
        let timer = withState { state -> Cancellable? in
            guard case .none = state.place, state.copies.isEmpty else { return nil }
            defer { state.timer = nil }
            return state.timer
        }
        timer?.cancel()
        watch(context)
    }

    func watch(_ context: FeatureContext) {
        let change = withState { state -> Bool? in
            let wanted = isInterested(state.place)
            guard wanted != state.watching else { return nil }
            state.watching = wanted
            return wanted
        }
        if let change { context.network.subscribe(topic: Self.everyRoom, change) }
    }

    func tick(_ context: FeatureContext) {
        let now = context.engine.now
        switch place {
        case .hosting(var hosting):
            beacon(context)
            let gone = hosting.members.filter { now - $0.value.lastHeard >= Self.memberLimit }.map(\.key)
            if !gone.isEmpty {
                gone.forEach { hosting.members[$0] = nil }
                withState { $0.place = .hosting(hosting) }
                for key in gone { post(context, "\(name(of: key, context)) left room \(hosting.room) (not heard for \(Int(Self.memberLimit)) s)") }
                sendRoster(context)
            }
        case .guest(var guest):
            if guest.estimator.silence(now: now) >= Self.silenceLimit {
                leaveRoom(context, guest, saying: "no beacon from the host of room \(guest.room) for \(Int(Self.silenceLimit)) s: out of range",
                          tellHost: true)
                break
            }
            let changed = guest.estimator.evaluate(now: now)
            guest.ticks += 1
            withState { $0.place = .guest(guest) }
            if let changed { post(context, "you are now \(changed.name) to the host of room \(guest.room)") }
            if changed != nil || guest.ticks % Self.probeEvery == 0 { probe(context) }
        case .listening, .none:
            break
        }
        settle(context)
    }

    // MARK: Commands (the shell's thread)

    /// `room host MAJOR MINOR`: what to tell the user.
    @discardableResult
    func host(_ room: RoomID) throws -> String {
        let context = try online()
        let me = context.identity.signingPublicKey
        try context.engine.sync {
            try requireNoRoom()
            let now = context.engine.now
            if let other = withState({ $0.heard.values.first { $0.room == room && $0.host != me && now - $0.lastHeard < 3 } }) {
                throw UserError("room \(room) is beaconed nearby by \(name(of: other.host, context)): choose other numbers")
            }
            let stored = try RoomStore(database: context.database).room(room, host: me, hostName: context.profile.name, myKey: me, now: now)
            withState { $0.place = .hosting(Hosting(room: room, stored: stored)) }
            beacon(context)
            ensureTimer(context)
        }
        let transports = context.network.transports.map(\.name).joined(separator: " and ")
        return "you host room \(room): a beacon every second on \(transports); guests join with room listen"
    }

    /// `room listen`: joins at once if a room was heard just now, else the first one heard.
    func listen() throws {
        let context = try online()
        try context.engine.sync {
            try requireNoRoom()
            withState { $0.place = .listening }
            ensureTimer(context)
            // Heard just now already: the room found last (the seed's rule), unless forged.
            let now = context.engine.now
            if let newest = withState({ $0.heard.values.filter { !$0.forged && now - $0.lastHeard < 2 }.max { $0.firstHeard < $1.firstHeard } }) {
                join(HeardKey(room: newest.room, host: newest.host), context)
            }
        }
    }

    /// `room listen [--wait S]`.
    func listen(wait seconds: Double?, shell: Shell) throws {
        let blockedBefore = context.network.blockedBeacons
        try listen()
        if currentRoom == nil { shell.console.printProse("listening for beacons: you join the first room heard (/leave to stop)") }
        guard let seconds else { return }
        // Joining posts a notice, which wakes the shell to look again.
        _ = try shell.wait(upTo: seconds) { currentRoom != nil || !isListening }
        guard currentRoom != nil else {
            // A room hosted by someone blocked is never joined: its beacons are not even read.
            let only = context.network.blockedBeacons > blockedBefore ? " but from people you blocked, whose rooms cannot be joined" : ""
            throw UserError("no beacon heard within \(Self.seconds(seconds))\(only) (still listening)")
        }
    }

    /// The beacons heard in the last 3 s, by room, the first heard first (`room scan`).
    func beaconsHeard() -> [Heard] {
        let now = context.engine.now
        return withState { $0.heard.values.filter { now - $0.lastHeard < 3 } }.sorted { ($0.room, $0.firstHeard) < ($1.room, $1.firstHeard) }
    }

    /// `room scan`: the beacons in range (listening a moment if need be), without joining.
    func scan(shell: Shell) throws {
        let context = try online()
        let watching = withState { $0.watching }
        if !watching {
            // One beacon interval and a little: every room in range beacons once meanwhile. (While
            // listening or in a room, what is heard is current already: no wait.)
            context.network.subscribe(topic: Self.everyRoom, true)
            if shell.isInteractive {
                shell.console.printProse(shell.styler.dim("listening for beacons…"))
                shell.console.flush()
            }
            try shell.pause(Self.beaconInterval * 1.2)
            if !withState({ $0.watching }) { context.network.subscribe(topic: Self.everyRoom, false) }
        }
        let now = context.engine.now, me = context.identity.signingPublicKey
        let heard = beaconsHeard()
        let current = currentRoom
        guard !heard.isEmpty || current?.host == me else { return shell.console.print("no beacon in range") }
        if let current, current.host == me { shell.console.print("\(DisplayWidth.pad(current.room.description, to: 12)) hosted by you") }
        for beacon in heard {
            var line = "\(DisplayWidth.pad(beacon.room.description, to: 12)) hosted by \(DisplayWidth.pad(name(of: beacon.host, context), to: 24)) "
                + "heard \(Int(now - beacon.lastHeard))s ago"
            if beacon.forged { line += "   " + shell.styler.apply(.yellow + .bold, "! forged: another key beacons this room") }
            if let current, current.room == beacon.room, current.host == beacon.host { line += "   (you are in it)" }
            shell.console.print(line)
        }
    }

    /// `/members`: the host first, then the guests in the order they joined, with proximity.
    func members() throws -> [(name: String, what: String)]? {
        let context = try online()
        let me = context.identity.signingPublicKey
        let rows: [(Data, String)]
        switch place {
        case .hosting(let hosting):
            rows = [(me, "host")] + hosting.members.sorted { $0.value.joined < $1.value.joined }.map { ($0.key, $0.value.proximity.name) }
        case .guest(let guest):
            rows = [(guest.host, "host")] + guest.roster.map { ($0.key, $0.proximity.name) }
        case .listening: return nil
        case .none: throw UserError("you are in no room: room host MAJOR MINOR, or room listen")
        }
        return rows.map { key, what in (key == me ? name(of: key, context) + " (you)" : name(of: key, context), what) }
    }

    func members(shell: Shell) throws {
        guard let rows = try members(), let room = currentRoom?.room else {
            return shell.console.print("you are listening for a beacon, in no room yet")
        }
        shell.console.print("room \(room): \(rows.count) here")
        for row in rows { shell.console.print("  \(DisplayWidth.pad(row.name, to: 28)) \(row.what)") }
    }

    /// `/leave`: a guest leaves; listening stops; a host is pointed to `/close`. What to say.
    @discardableResult
    func leave() throws -> String {
        let context = try online()
        return try context.engine.sync {
            switch place {
            case .guest(let guest):
                leaveRoom(context, guest, saying: nil, tellHost: true)
                return "you left room \(guest.room)"
            case .listening:
                withState { $0.place = .none }
                settle(context)
                return "no longer listening for beacons"
            case .hosting(let hosting): throw UserError("you host room \(hosting.room): /close ends it for everyone")
            case .none: throw UserError("you are in no room")
            }
        }
    }

    /// `/close`: the host ends the room for everyone. What to say.
    @discardableResult
    func close() throws -> String {
        let context = try online()
        let room: RoomID = try context.engine.sync {
            guard case .hosting(let hosting) = place else {
                throw UserError(currentRoom.map { "only the host can close room \($0.room): /leave leaves it" } ?? "you host no room")
            }
            closeRoom(context)
            return hosting.room
        }
        return "room \(room) closed: its guests were told"
    }

    /// A page of the room's lines before row `before`; nil when not in a room.
    func page(before: Int64?, shell: Shell, reserved: Int) throws -> ([ChatMessage], [String])? {
        guard let stored = withState({ audience($0, me: context.identity.signingPublicKey)?.stored }) else { return nil }
        let store = RoomStore(database: context.database)
        let view = ConversationView(capabilities: shell.capabilities, columns: shell.console.columns)
        return try view.fitting(try store.page(stored.id, before: before), rows: shell.console.rows, reserved: reserved,
                                now: shell.session.clock()) { try store.page(stored.id, before: $0.id, limit: 1).first }
    }

    func requireNoRoom() throws {
        switch place {
        case .hosting(let hosting): throw UserError("you already host room \(hosting.room): /close it first")
        case .guest(let guest): throw UserError("you are in room \(guest.room): /leave it first")
        case .listening: throw UserError("you are listening for a beacon already: /leave stops")
        case .none: break
        }
    }

    func online() throws -> FeatureContext {
        context
    }

    // MARK: Text

    func name(of key: Data, _ context: FeatureContext) -> String {
        // Ourselves first: amnesia makes strangers of the others only.
        if key == context.identity.signingPublicKey { return SafeText.visible(context.profile.handle) }
        return context.engine.sync { context.rules.shownName(of: key) ?? context.presence.peer(key)?.shownHandle }
            ?? "#" + PeerIdentity.fingerprint(of: key)
    }

    func post(_ context: FeatureContext, _ text: String, alert: Alert? = nil) {
        let line = styler.apply(.cyan, capabilities.ascii ? "@" : "◎") + " " + text
        if let alert { context.inbox.post(line, alert: alert) } else { context.inbox.post(line) }
    }

    func post(_ context: FeatureContext, warning text: String) {
        context.inbox.post(styler.apply(.yellow + .bold, "!") + " " + text)
    }

    static func seconds(_ value: Double) -> String { value == value.rounded() ? "\(Int(value)) s" : "\(value) s" }

    var showing: Bool {
        get { withState { $0.showing } }
        set { withState { $0.showing = newValue } }
    }
}
