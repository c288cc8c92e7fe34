import Accounts
import ChatViews
import Foundation
import Nearby
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
    /// A beacon heard lately, by room and signer.
    struct Heard {
        var room: RoomID
        var host: Data
        var firstHeard: Double
        var lastHeard: Double
        /// Another key was heard beaconing this room first: not followed.
        var forged = false
    }

    struct HeardKey: Hashable {
        var room: RoomID
        var host: Data
    }

    struct Member {
        var proximity: Proximity
        var lastHeard: Double
        var joined: Double
    }

    struct Hosting {
        var room: RoomID
        var stored: StoredRoom
        var counter: UInt32 = 0
        var members: [Data: Member] = [:]
    }

    struct Guest {
        var room: RoomID
        var host: Data
        var stored: StoredRoom
        var estimator: ProximityEstimator
        var roster: [RoomRoster.Member] = []
        /// The probe waiting for its answer: its nonce, and when it went.
        var probe: (nonce: UInt64, at: Double)?
        var ticks = 0
    }

    enum Place {
        case none, listening
        case hosting(Hosting)
        case guest(Guest)
    }

    /// A line of ours not yet acknowledged by every member: the copy each still waits for.
    struct Pending {
        var room: Int64
        var number: Int64
        var copies: [Data: RoomLine]
        var tries = 0
    }

    struct State {
        var place = Place.none
        var heard: [HeardKey: Heard] = [:]
        var timer: Cancellable?
        var pending: [Data: Pending] = [:]
        /// The shell is in room mode: lines arrive as bubbles, not one-line notices.
        var showing = false
        var random: SeededRandom
        /// Beacons wanted from a broker (watching rooms costs a broker subscription).
        var watching = false
    }

    /// The host's beacon interval (SPEC: every second).
    static let beaconInterval = 1.0
    /// A guest leaves when no beacon has come for this long.
    static let silenceLimit = 10.0
    /// A guest probes the host this often (every other second); the host forgets a guest not
    /// heard for `memberLimit`.
    static let probeEvery = 2
    static let memberLimit = 15.0
    /// Beacons remembered at most: a flood of made-up rooms must not grow the table.
    static let heardLimit = 64
    /// A copy of a line is sent this many times at most, a second apart, until acknowledged.
    static let attempts = 5
    /// A room's beacons travel on a topic of its own (a broker carries them there); listening
    /// takes every room's.
    static func topic(of room: RoomID) -> String { "rooms/\(room)" }
    static let everyRoom = "rooms/+"
    /// Longest line: one sealed copy must fit a datagram.
    static let maximumLine = MessageCrypto.fragmentText

    let context: FeatureContext
    private let state: EngineBound<State>
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
        let presence = context.presence
        presence.handle(Beacon.self) { [self] beacon, sender, _ in heard(beacon, from: sender) }
        presence.handle(RoomProbe.self) { [self] probe, sender, peer in probed(probe, from: sender, peer: peer) }
        presence.handle(RoomRoster.self) { [self] roster, sender, _ in received(roster, from: sender) }
        presence.handle(RoomMembership.self) { [self] membership, sender, _ in received(membership, from: sender) }
        presence.handle(RoomLine.self) { [self] line, sender, peer in received(line, from: sender, peer: peer) }
        presence.handle(RoomLineAck.self) { [self] ack, sender, _ in acknowledged(ack, from: sender) }
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
            state.value.pending = [:]
            state.value.heard = [:]
        }
    }

    /// Runs `body` on the state, on the engine (at once when already there).
    private func withState<T>(_ body: (inout State) throws -> T) rethrows -> T {
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

    // MARK: Beacons (on the engine)

    private func heard(_ beacon: Beacon, from sender: Data) {
                let now = context.engine.now
        let me = context.identity.signingPublicKey
        let key = HeardKey(room: beacon.room, host: sender)
        // Who beacons this room: the first key heard that is still beaconing (or us, hosting it).
        let (forgedNow, place) = withState { state -> (Bool, Place) in
            state.heard = state.heard.filter { now - $0.value.lastHeard < Self.silenceLimit }
            if beacon.closing {
                state.heard[key] = nil
                return (false, state.place)
            }
            if state.heard[key] == nil {
                if state.heard.count >= Self.heardLimit, let stalest = state.heard.min(by: { $0.value.lastHeard < $1.value.lastHeard }) {
                    state.heard[stalest.key] = nil
                }
                let owner: Data?
                switch state.place {
                case .hosting(let hosting) where hosting.room == beacon.room: owner = me
                case .guest(let guest) where guest.room == beacon.room: owner = guest.host
                default: owner = state.heard.values.filter { $0.room == beacon.room }.min { $0.firstHeard < $1.firstHeard }?.host
                }
                state.heard[key] = Heard(room: beacon.room, host: sender, firstHeard: now, lastHeard: now,
                                         forged: owner.map { $0 != sender } ?? false)
                return (state.heard[key]!.forged, state.place)
            }
            state.heard[key]!.lastHeard = now
            return (false, state.place)
        }
        if forgedNow, isInterested(place) {
            let owner = place.room == beacon.room ? place.hostKey(me: me) : nil
            let ownerName = owner.map { $0 == me ? "you" : name(of: $0, context) } ?? "another key"
            post(context, warning: "\(name(of: sender, context)) also beacons room \(beacon.room), which \(ownerName) "
                 + (ownerName == "you" ? "host" : "hosts") + ": a forged beacon, not followed")
        }
        switch place {
        case .guest(var guest) where guest.room == beacon.room && guest.host == sender:
            if beacon.closing { return leaveRoom(context, guest, saying: "the host closed room \(guest.room)", tellHost: false) }
            guest.estimator.interval = Self.interval(of: beacon)
            guest.estimator.beacon(counter: beacon.counter, at: now)
            withState { $0.place = .guest(guest) }
        case .listening where !beacon.closing && withState({ $0.heard[key]?.forged == false }):
            join(key, context)
        default:
            break
        }
    }

    static func interval(of beacon: Beacon) -> Double { min(10, max(0.1, Double(beacon.intervalMilliseconds) / 1000)) }

    private func isInterested(_ place: Place) -> Bool {
        if case .none = place { return false }
        return true
    }

    // MARK: Guest (on the engine)

    /// Joins the room of a beacon heard; the host must be present (its announcement gives the
    /// key to seal to and the way to reach it).
    private func join(_ key: HeardKey, _ context: FeatureContext) {
        guard let host = context.presence.peer(key.host),
              let stored = try? RoomStore(database: context.database).room(key.room, host: key.host, hostName: host.name,
                                                                            myKey: context.identity.signingPublicKey, now: context.engine.now)
        else { return }
        let now = context.engine.now
        var guest = Guest(room: key.room, host: key.host, stored: stored,
                          estimator: ProximityEstimator(joinedAt: now, interval: Self.beaconInterval))
        guest.estimator.beacon(counter: 0, at: now)
        withState { $0.place = .guest(guest) }
        post(context, "you joined room \(key.room), hosted by \(name(of: key.host, context)): what you type goes to everyone in it "
             + "(/members, /leave)")
        probe(context)
        ensureTimer(context)
    }

    /// Tells the host we are here and how near, and times its answer.
    private func probe(_ context: FeatureContext) {
        let sent = withState { state -> (RoomProbe, Data)? in
            guard case .guest(var guest) = state.place else { return nil }
            let nonce = UInt64.random(in: 1...UInt64.max, using: &state.random)
            guest.probe = (nonce, context.engine.now)
            state.place = .guest(guest)
            return (RoomProbe(room: guest.room, nonce: nonce, proximity: guest.estimator.current), guest.host)
        }
        guard let (probe, host) = sent, let peer = context.presence.peer(host) else { return }
        context.presence.send(probe, to: peer)
    }

    private func received(_ roster: RoomRoster, from sender: Data) {
                let now = context.engine.now, me = context.identity.signingPublicKey
        let change = withState { state -> (old: [Data], new: [Data])? in
            guard case .guest(var guest) = state.place, guest.host == sender, guest.room == roster.room else { return nil }
            let old = guest.roster.map(\.key)
            guest.roster = roster.members
            if let probe = guest.probe, roster.echo == probe.nonce {
                guest.estimator.roundTrip(now - probe.at)
                guest.probe = nil
            }
            state.place = .guest(guest)
            return (old, roster.members.map(\.key))
        }
        guard let change, !change.old.isEmpty || change.new.count > 1 else { return }
        // Others coming and going (not the first roster, which is everyone already there).
        let room = roster.room
        if !change.old.isEmpty {
            for key in change.new where !change.old.contains(key) && key != me { post(context, "\(name(of: key, context)) joined room \(room)") }
        }
        for key in change.old where !change.new.contains(key) && key != me { post(context, "\(name(of: key, context)) left room \(room)") }
    }

    private func received(_ membership: RoomMembership, from sender: Data) {
                switch (place, membership.action) {
        case (.guest(let guest), .close) where guest.host == sender && guest.room == membership.room:
            leaveRoom(context, guest, saying: "the host closed room \(guest.room)", tellHost: false)
        case (.hosting(var hosting), .leave) where hosting.room == membership.room:
            guard hosting.members.removeValue(forKey: sender) != nil else { return }
            withState { $0.place = .hosting(hosting) }
            post(context, "\(name(of: sender, context)) left room \(hosting.room)")
            sendRoster(context)
        default:
            break
        }
    }

    /// Leaves the room we are a guest of (`saying` why, as a notice, unless the user asked).
    private func leaveRoom(_ context: FeatureContext, _ guest: Guest, saying reason: String?, tellHost: Bool) {
        if tellHost, let host = context.presence.peer(guest.host) {
            context.presence.send(RoomMembership(room: guest.room, action: .leave), to: host)
        }
        withState { $0.place = .none }
        settle(context)
        if let reason { post(context, reason + "; you left it") }
    }

    // MARK: Host (on the engine)

    private func probed(_ probe: RoomProbe, from sender: Data, peer: Peer?) {
        guard let peer else { return }
        let now = context.engine.now
        enum Change { case none, joined, moved }
        let change = withState { state -> Change? in
            guard case .hosting(var hosting) = state.place, hosting.room == probe.room else { return nil }
            var change = Change.none
            if var member = hosting.members[sender] {
                if member.proximity != probe.proximity { change = .moved }
                member.proximity = probe.proximity
                member.lastHeard = now
                hosting.members[sender] = member
            } else {
                guard hosting.members.count < RoomRoster.capacity else { return nil }
                hosting.members[sender] = Member(proximity: probe.proximity, lastHeard: now, joined: now)
                change = .joined
            }
            state.place = .hosting(hosting)
            return change
        }
        guard let change else { return }
        switch change {
        case .joined: post(context, "\(name(of: sender, context)) joined room \(probe.room) (\(probe.proximity.name))")
        case .moved: post(context, "\(name(of: sender, context)) is now \(probe.proximity.name) in room \(probe.room)")
        case .none: break
        }
        if let roster = roster() { context.presence.send(RoomRoster(room: roster.room, echo: probe.nonce, members: roster.members), to: peer) }
        if change != .none { sendRoster(context, except: sender) }
    }

    /// The roster as the host has it: guests in the order they joined.
    private func roster() -> RoomRoster? {
        withState { state in
            guard case .hosting(let hosting) = state.place else { return nil }
            let members = hosting.members.sorted {
                $0.value.joined != $1.value.joined ? $0.value.joined < $1.value.joined : $0.key.lexicographicallyPrecedes($1.key)
            }.map { RoomRoster.Member(key: $0.key, proximity: $0.value.proximity) }
            return RoomRoster(room: hosting.room, echo: 0, members: members)
        }
    }

    /// The roster to every guest (but `except`).
    private func sendRoster(_ context: FeatureContext, except: Data? = nil) {
        guard let roster = roster() else { return }
        for member in roster.members where member.key != except {
            if let peer = context.presence.peer(member.key) { context.presence.send(roster, to: peer) }
        }
    }

    private func beacon(_ context: FeatureContext, closing: Bool = false) {
        let beacon = withState { state -> Beacon? in
            guard case .hosting(var hosting) = state.place else { return nil }
            hosting.counter &+= 1
            state.place = .hosting(hosting)
            return Beacon(room: hosting.room, counter: hosting.counter, intervalMilliseconds: UInt16(Self.beaconInterval * 1000),
                          closing: closing)
        }
        guard let beacon else { return }
        context.presence.broadcast(beacon, as: .topic(RoomsOnline.topic(of: beacon.room)))
    }

    /// Ends the room for everyone: each guest is told, and the last beacon says so too.
    private func closeRoom(_ context: FeatureContext) {
        guard case .hosting(let hosting) = place else { return }
        beacon(context, closing: true)
        for key in hosting.members.keys {
            if let peer = context.presence.peer(key) { context.presence.send(RoomMembership(room: hosting.room, action: .close), to: peer) }
        }
        withState { $0.place = .none }
        settle(context)
    }

    // MARK: The second's work (on the engine)

    /// Runs once a second while in a room, listening, or with lines waiting for acknowledgement.
    private func ensureTimer(_ context: FeatureContext) {
        let start = withState { state -> Bool in state.timer == nil }
        guard start else { return }
        let timer = context.engine.every(Self.beaconInterval) { [weak self] in self?.tick(context) }
        withState { $0.timer = timer }
        watch(context)
    }

    /// Stops the timer when nothing needs it, and the broker's room topics when nothing watches.
    private func settle(_ context: FeatureContext) {
        let timer = withState { state -> Cancellable? in
            guard case .none = state.place, state.pending.isEmpty else { return nil }
            defer { state.timer = nil }
            return state.timer
        }
        timer?.cancel()
        watch(context)
    }

    private func watch(_ context: FeatureContext) {
        let change = withState { state -> Bool? in
            let wanted = isInterested(state.place)
            guard wanted != state.watching else { return nil }
            state.watching = wanted
            return wanted
        }
        if let change { context.presence.subscribe(topic: Self.everyRoom, change) }
    }

    private func tick(_ context: FeatureContext) {
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
        resend(context)
        settle(context)
    }

    // MARK: Lines

    /// The members of the room we are in (the host included, us excluded), and the stored room.
    private func audience(_ state: State, me: Data) -> (room: RoomID, host: Data, stored: StoredRoom, members: [Data])? {
        switch state.place {
        case .hosting(let hosting): return (hosting.room, me, hosting.stored, Array(hosting.members.keys))
        case .guest(let guest): return (guest.room, guest.host, guest.stored, [guest.host] + guest.roster.map(\.key).filter { $0 != me })
        case .none, .listening: return nil
        }
    }

    /// Says `text` to every member our plane reaches; stored, and its bubble returned.
    func say(_ text: String) throws -> ChatMessage {
        let size = text.utf8.count
        guard size <= Self.maximumLine else {
            throw UserError("a room line is at most \(Self.maximumLine) bytes (this one is \(size)): say it in parts, or open a conversation")
        }
        let me = context.identity.signingPublicKey
        return try context.engine.sync {
            guard let audience = withState({ audience($0, me: me) }) else {
                throw UserError("you are in no room: room host MAJOR MINOR, or room listen")
            }
            let mine = context.rules.plane
            let present = audience.members.compactMap(context.presence.peer)
            let reachable = present.filter { Plane(wireValue: $0.announcement.plane).map(mine.canReach) ?? false }
            guard !reachable.isEmpty else {
                throw UserError(present.isEmpty ? "nobody else is in room \(audience.room) yet"
                                : "nobody in room \(audience.room) is on a plane you reach (you are \(mine.name))")
            }
            let now = context.engine.now
            let id = Data((0..<16).map { _ in UInt8.random(in: 0...255) })
            let fragment = Fragment(sequence: 0, isLast: true, sentAt: UInt64(now * 1000), text: Data(text.utf8))
            var copies: [Data: RoomLine] = [:]
            for peer in reachable {
                let key = try MessageCrypto.key(mine: context.identity.agreement, theirs: peer.announcement.agreementKey, mySigningKey: me,
                                                theirSigningKey: peer.signingKey, purpose: .room)
                let sealed = try MessageCrypto.seal(fragment, key: key, sender: me, recipient: peer.signingKey)
                copies[peer.signingKey] = RoomLine(room: audience.room, host: audience.host, id: id, recipient: peer.signingKey, sealed: sealed)
            }
            let message = try RoomStore(database: context.database).sent(in: audience.stored.id, id: id, me: me, myName: context.profile.name,
                                                                          text: text, copies: copies.count, now: now)
            withState { $0.pending[id] = Pending(room: audience.stored.id, number: message.number, copies: copies) }
            for peer in reachable { context.presence.send(copies[peer.signingKey]!, to: peer) }
            ensureTimer(context)
            return message
        }
    }

    private func received(_ line: RoomLine, from sender: Data, peer: Peer?) {
                let me = context.identity.signingPublicKey
        guard line.recipient == me, let audience = withState({ audience($0, me: me) }),
              audience.room == line.room, audience.host == line.host, audience.members.contains(sender) else { return }
        // The plane table binds the receiver too: only a sender whose plane reaches ours.
        guard let peer, let theirs = Plane(wireValue: peer.announcement.plane), theirs.canReach(context.rules.plane),
              let key = try? MessageCrypto.key(mine: context.identity.agreement, theirs: peer.announcement.agreementKey, mySigningKey: me,
                                               theirSigningKey: sender, purpose: .room),
              let fragment = try? MessageCrypto.open(line.sealed, key: key, sender: sender, recipient: me),
              let text = String(data: fragment.text, encoding: .utf8) else { return }
        let now = context.engine.now
        let stored = try? RoomStore(database: context.database).received(in: audience.stored.id, id: line.id, sender: sender,
                                                                         senderName: peer.name, text: text,
                                                                         sentAt: min(Double(fragment.sentAt) / 1000, now), now: now)
        // Acknowledged whether new or a copy sent again (our first acknowledgement may be lost).
        context.presence.send(RoomLineAck(room: line.room, host: line.host, id: line.id), to: peer)
        guard var message = stored ?? nil else { return }
        message.sender = context.rules.shownName(of: sender) ?? peer.shownHandle
        if withState({ $0.showing }) {
            let capabilities = capabilities
            context.inbox.post(.lines { [message] columns in ConversationView(capabilities: capabilities, columns: columns).bubble(message) })
        } else {
            let preview = ConversationView.preview(text, width: 40)
            post(context, "room \(line.room) · \(message.sender!): \(preview)   (room, to read it there)")
        }
    }

    private func acknowledged(_ ack: RoomLineAck, from sender: Data) {
                let pending = withState { state -> Pending? in
            guard var pending = state.pending[ack.id], pending.copies.removeValue(forKey: sender) != nil else { return nil }
            state.pending[ack.id] = pending.copies.isEmpty ? nil : pending
            return pending
        }
        guard let pending,
              let result = try? RoomStore(database: context.database).acknowledged(in: pending.room, id: ack.id,
                                                                                   me: context.identity.signingPublicKey, now: context.engine.now),
              result.all, withState({ $0.showing }) else { return }
        // Written over the state under the line's bubble while it is on screen.
        let capabilities = capabilities
        context.inbox.post(.update([Overwrite(mark: Rooms.stateMark(result.row), id: result.number) { columns in
            ConversationView(capabilities: capabilities, columns: columns).statusRow(number: result.number, state: .delivered)
        }]) { missed in missed.isEmpty ? nil : Styler(capabilities).dim("#\(result.number) delivered to everyone") })
    }


    /// Copies not yet acknowledged go again, a second apart, `attempts` times in all.
    private func resend(_ context: FeatureContext) {
        let (again, lost) = withState { state -> ([RoomLine], [(Int64, Data)]) in
            var again: [RoomLine] = [], lost: [(Int64, Data)] = []
            for (id, var pending) in state.pending {
                pending.tries += 1
                if pending.tries >= Self.attempts {
                    lost += pending.copies.keys.map { (pending.number, $0) }
                    state.pending[id] = nil
                } else {
                    again += pending.copies.values
                    state.pending[id] = pending
                }
            }
            return (again, lost)
        }
        for line in again { if let peer = context.presence.peer(line.recipient) { context.presence.send(line, to: peer) } }
        for (number, key) in lost { post(context, "#\(number) did not reach \(name(of: key, context))") }
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
        let transports = context.presence.transports.map(\.name).joined(separator: " and ")
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
        try listen()
        if currentRoom == nil { shell.console.print("listening for beacons: you join the first room heard (/leave to stop)") }
        guard let seconds else { return }
        // Joining posts a notice, which wakes the shell to look again.
        _ = try shell.wait(upTo: seconds) { currentRoom != nil || !isListening }
        guard currentRoom != nil else { throw UserError("no beacon heard within \(Self.seconds(seconds)) (still listening)") }
    }

    /// `room scan`: the beacons in range (listening a moment if need be), without joining.
    func scan(shell: Shell) throws {
        let context = try online()
        let watching = withState { $0.watching }
        if !watching { context.presence.subscribe(topic: Self.everyRoom, true) }
        // One beacon interval and a little: every room in range beacons once meanwhile.
        try shell.pause(Self.beaconInterval * 1.2)
        if !withState({ $0.watching }) { context.presence.subscribe(topic: Self.everyRoom, false) }
        let now = context.engine.now, me = context.identity.signingPublicKey
        let heard = withState { $0.heard.values.filter { now - $0.lastHeard < 3 } }.sorted { ($0.room, $0.firstHeard) < ($1.room, $1.firstHeard) }
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

    private func requireNoRoom() throws {
        switch place {
        case .hosting(let hosting): throw UserError("you already host room \(hosting.room): /close it first")
        case .guest(let guest): throw UserError("you are in room \(guest.room): /leave it first")
        case .listening: throw UserError("you are listening for a beacon already: /leave stops")
        case .none: break
        }
    }

    private func online() throws -> FeatureContext {
        context
    }

    // MARK: Text

    func name(of key: Data, _ context: FeatureContext) -> String {
        if let renamed = context.engine.sync({ context.rules.shownName(of: key) }) { return renamed }
        if key == context.identity.signingPublicKey { return SafeText.visible(context.profile.handle) }
        if let peer = context.presence.peer(key) { return peer.shownHandle }
        return "#" + PeerIdentity.fingerprint(of: key)
    }

    func post(_ context: FeatureContext, _ text: String) {
        context.inbox.post(styler.apply(.cyan, capabilities.ascii ? "@" : "◎") + " " + text)
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

extension RoomsOnline.Place {
    var room: RoomID? {
        switch self {
        case .hosting(let hosting): return hosting.room
        case .guest(let guest): return guest.room
        case .none, .listening: return nil
        }
    }

    func hostKey(me: Data) -> Data? {
        switch self {
        case .hosting: return me
        case .guest(let guest): return guest.host
        case .none, .listening: return nil
        }
    }
}
