import Accounts
import ChatViews
import Crypto
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
/// This is the rooms' part while online, on the engine: packets, the second's work (one owner
/// of the engine's alarm) and the writes they cause, and the engine's side of each command
/// (`Rooms` enters it with one `engine.sync`). A host's side is `RoomHost`'s, a guest's
/// `RoomGuest`'s, the lines `RoomTalk`'s; every method runs on the engine.
final class RoomsOnline: RoomPart, Sendable {
    struct State {
        var place = Place.none
        var heard = BeaconsHeard()
        /// When the second's work is next due (nil: in no room and not listening).
        var nextTick: Double?
        /// Our lines not yet acknowledged by every member, by id, and each one's room and number.
        var copies = ReliableCopies<RoomLine>(maximumAttempts: RoomsOnline.attempts)
        var lines: [Data: (room: Int64, number: Int64)] = [:]
        /// The number each stored room's next line takes (read from the database at first).
        var nextNumbers: [Int64: Int64] = [:]
        /// Our lines said while more followed, waiting to be written together (`RoomTalk`).
        var held: [RoomTalk.HeldLine] = []
        /// Lines received (or being written) this session, by sender and id: a copy that comes
        /// again is acknowledged, not numbered again.
        var receivedLines = Set<RoomTalk.LineKey>()
        /// The key agreed with each member for room lines, and the agreement key it was agreed
        /// with (a member that restarts announces a new one).
        var keys: [Data: (agreementKey: Data, key: SymmetricKey)] = [:]
        /// The shell is in room mode: lines arrive as bubbles, not one-line notices.
        var showing = false
        var random: SeededRandom
        /// Beacons wanted from a broker (watching rooms costs a broker subscription).
        var watching = false
        /// While listening: the blocked beacons counted when it began (nil once told that only
        /// blocked hosts' rooms are heard).
        var blockedBeaconsAtListen: Int?
    }

    static let beaconInterval = 1.0
    /// How a room is named as a place that can be muted (`mute` in a room).
    static func place(_ room: RoomID) -> String { "room \(room)" }
    /// A guest leaves when no beacon has come for this long.
    static let silenceLimit = 10.0
    /// A guest probes the host this often (every other second); the host forgets a guest not
    /// heard for `memberLimit`.
    static let probeEvery = 2
    /// A host that has not answered a guest's probes (sent every `probeEvery` s) within this
    /// long is not there for it.
    static let answerLimit = 10.0
    static let memberLimit = 15.0
    /// Beacons remembered at most (`BeaconsHeard`).
    static let heardLimit = BeaconsHeard.limit
    /// A copy of a line is sent this many times at most, with the backoff messages have, until
    /// acknowledged (`ReliableCopies`).
    static let attempts = 5
    /// A room's beacons travel on a topic of its own (a broker carries them there); listening
    /// takes every room's.
    static func topic(of room: RoomID) -> String { "rooms/\(room)" }
    static let everyRoom = "rooms/+"
    /// Longest line: one sealed copy must fit a datagram.
    static let maximumLine = MessageCrypto.fragmentText

    let parts: RoomParts
    let host: RoomHost
    let guest: RoomGuest
    let talk: RoomTalk

    /// On the engine: registers the rooms' kinds and the second's work.
    init(_ context: FeatureContext, capabilities: Capabilities, inbox: AsyncInbox, showing: Bool) {
        var state = State(random: context.random)
        state.showing = showing
        parts = RoomParts(context: context, state: EngineBound(state, engine: context.engine), capabilities: capabilities, inbox: inbox)
        host = RoomHost(parts)
        guest = RoomGuest(parts)
        talk = RoomTalk(parts)
        let network = context.network
        network.handle(Beacon.self) { [self] beacon, sender, _ in heard(beacon, from: sender) }
        network.handle(RoomProbe.self) { [self] probe, sender, peer in host.probed(probe, from: sender, peer: peer) }
        network.handle(RoomRoster.self) { [self] roster, sender, _ in guest.received(roster, from: sender) }
        network.handle(RoomMembership.self) { [self] membership, sender, _ in received(membership, from: sender) }
        network.handle(RoomLine.self) { [self] line, sender, peer in talk.received(line, from: sender, peer: peer) }
        network.handle(RoomLineAck.self) { [self] ack, sender, _ in talk.acknowledged(ack, from: sender) }
        context.observe { [self] event in
            if case .blocked(let keys) = event { blocked(keys) }
        }
        context.deadlines.add("rooms", next: { [self] in
            [parts.state.value.nextTick, parts.state.value.copies.nextDue].compactMap { $0 }.min()
        }) { [self] now in
            if let tick = parts.state.value.nextTick, tick <= now { self.tick(now: now) }
            if (parts.state.value.copies.nextDue ?? .infinity) <= now { talk.resend() }
        }
    }

    /// A host closes its room, a guest says it leaves: the transports still run when this is called.
    func stop() {
        talk.sayHeldNow()
        switch place {
        case .hosting: host.close()
        case .guest(let guest): self.guest.leave(guest, saying: nil, tellHost: true)
        case .listening, .none: break
        }
        parts.state.update { state in
            state.place = .none
            state.nextTick = nil
            state.copies = ReliableCopies(maximumAttempts: Self.attempts)
            state.lines = [:]
            state.heard = BeaconsHeard()
        }
    }

    /// The room this shell is in, if any, and who hosts it.
    var currentRoom: (room: RoomID, host: Data)? {
        guard let room = place.room, let host = place.hostKey(me: me) else { return nil }
        return (room, host)
    }

    var isListening: Bool { if case .listening = place { return true } else { return false } }

    /// The stored row of the room this shell is in, if any.
    var storedRoomRow: Int64? { talk.audience?.stored.id }

    static func isInterested(_ place: Place) -> Bool {
        if case .none = place { return false }
        return true
    }

    /// The second's work: a host beacons and lets go of guests not heard; a guest leaves a
    /// silent room, follows its proximity and probes the host.
    private func tick(now: Double) {
        parts.state.value.nextTick = now + Self.beaconInterval
        switch place {
        case .hosting: host.tick(now: now)
        case .guest(let guest): self.guest.tick(guest, now: now)
        case .listening:
            // Listening, and the only beacons heard are blocked hosts' (dropped unread): said
            // once, rather than silence.
            if let base = parts.state.value.blockedBeaconsAtListen, context.network.blockedBeacons > base {
                parts.state.value.blockedBeaconsAtListen = nil
                post("beacons heard only from people you blocked, whose rooms cannot be joined (still listening: /leave stops)")
            }
        case .none: break
        }
        settle()
    }

    // MARK: Beacons

    /// A beacon heard: listed (or flagged as forged), followed by a guest of its room, joined
    /// by a shell listening for one.
    private func heard(_ beacon: Beacon, from sender: Data) {
        let now = self.now
        let key = BeaconsHeard.Key(room: beacon.room, host: sender)
        let place = self.place
        // Who beacons this room: us when we host it, its host when we are in it, else its
        // owner (the first key heard that still beacons it).
        let hostHere = place.room == beacon.room ? place.hostKey(me: me) : nil
        let told = parts.state.update { $0.heard.heard(beacon, from: sender, hostHere: hostHere, now: now) }
        if let held = told, Self.isInterested(place) {
            let owner = hostHere ?? parts.state.value.heard.owner(of: beacon.room)
            let ownerName = owner.map { $0 == me ? "you" : name(of: $0) } ?? "another key"
            post(warning: "\(name(of: sender)) also beacons room \(beacon.room), which \(ownerName) "
                 + (ownerName == "you" ? "host" : "hosts") + ": a forged beacon, not followed"
                 + (held > 0 ? " (and \(held) more since the last notice)" : ""))
        }
        switch place {
        case .guest(let guest) where guest.room == beacon.room && guest.host == sender:
            self.guest.beacon(beacon, in: guest, now: now)
        case .listening where !beacon.closing && parts.state.value.heard.isFollowed(key):
            self.guest.join(key)
        default:
            break
        }
    }

    private func received(_ membership: RoomMembership, from sender: Data) {
        switch (place, membership.action) {
        case (.guest(let guest), .close) where guest.host == sender && guest.room == membership.room:
            self.guest.leave(guest, saying: "the host closed room \(guest.room)", tellHost: false)
        case (.hosting, .leave): host.left(sender, room: membership.room)
        default: break
        }
    }

    /// The user blocked `keys`: a room we host lets them go (out of its roster, no member
    /// writes to them or expects their lines); a room one of them hosts is left.
    private func blocked(_ keys: Set<Data>) {
        switch place {
        case .hosting: host.letGo(keys)
        case .guest(let guest) where keys.contains(guest.host):
            self.guest.leave(guest, saying: "you blocked the host of room \(guest.room)", tellHost: false)
        default: break
        }
    }
}
