import Foundation
import Nearby
import Shell
import Storage

/// The engine's side of the room commands: `Rooms` enters the engine once for each, and what
/// is printed is made back on the shell's thread.
extension RoomsOnline {
    /// `room host MAJOR MINOR`: what to tell the user.
    func host(_ room: RoomID) throws -> String {
        try requireNoRoom()
        if let other = parts.state.value.heard.recent(within: 3, now: now).first(where: { $0.room == room && $0.host != me }) {
            throw UserError("room \(room) is beaconed nearby by \(name(of: other.host)): choose other numbers")
        }
        let stored = try RoomStore(database: context.database).room(room, host: me, hostName: context.profile.name, myKey: me, now: now)
        place = .hosting(Hosting(room: room, stored: stored))
        host.beacon()
        settle()
        let transports = context.network.transports.map(\.name).joined(separator: " and ")
        return "you host room \(room): a beacon every second on \(transports); guests join with room listen"
    }

    /// `room listen`: joins at once if a room was heard just now (the room found last, the
    /// seed's rule, unless forged), else the first one heard.
    func listen() throws {
        try requireNoRoom()
        place = .listening
        parts.state.value.blockedBeaconsAtListen = context.network.blockedBeacons
        settle()
        if let newest = parts.state.value.heard.recent(within: 2, now: now).filter({ !$0.forged }).max(by: { $0.firstHeard < $1.firstHeard }) {
            guest.join(BeaconsHeard.Key(room: newest.room, host: newest.host))
        }
    }

    /// `/leave`: a guest leaves; listening stops; a host is pointed to `/close`. What to say.
    func leave() throws -> String {
        talk.sayHeldNow()
        switch place {
        case .guest(let guest):
            self.guest.leave(guest, saying: nil, tellHost: true)
            return "you left room \(guest.room)"
        case .listening:
            place = .none
            settle()
            return "no longer listening for beacons"
        case .hosting(let hosting): throw UserError("you host room \(hosting.room): /close ends it for everyone")
        case .none: throw UserError("you are in no room")
        }
    }

    /// `/close`: the host ends the room for everyone. What to say.
    func close() throws -> String {
        guard case .hosting(let hosting) = place else {
            throw UserError(currentRoom.map { "only the host can close room \($0.room): /leave leaves it" } ?? "you host no room")
        }
        talk.sayHeldNow()
        host.close()
        return "room \(hosting.room) closed: its guests were told"
    }

    /// `/members`: the host first, then the guests in the order they joined, with proximity;
    /// nil while listening.
    func members() throws -> [(name: String, what: String)]? {
        let rows: [(Data, String)]
        switch place {
        case .hosting(let hosting):
            rows = [(me, "host")] + hosting.members.sorted { $0.value.joined < $1.value.joined }.map { ($0.key, $0.value.proximity.name) }
        case .guest(let guest):
            rows = [(guest.host, "host")] + guest.roster.map { ($0.key, $0.proximity.name) }
        case .listening: return nil
        case .none: throw UserError("you are in no room: room host MAJOR MINOR, or room listen")
        }
        return rows.map { key, what in (key == me ? name(of: key) + " (you)" : name(of: key), what) }
    }

    /// The beacons heard in the last 3 s, by room, the first heard first, each named.
    func beaconsHeard() -> [(beacon: BeaconsHeard.Heard, host: String)] {
        parts.state.value.heard.recent(within: 3, now: now).sorted { ($0.room, $0.firstHeard) < ($1.room, $1.firstHeard) }
            .map { ($0, name(of: $0.host)) }
    }

    /// Whether the broker's room topics are wanted already (listening or in a room).
    var isWatching: Bool { parts.state.value.watching }

    var showing: Bool {
        get { parts.state.value.showing }
        set { parts.state.value.showing = newValue }
    }

    private func requireNoRoom() throws {
        switch place {
        case .hosting(let hosting): throw UserError("you already host room \(hosting.room): /close it first")
        case .guest(let guest): throw UserError("you are in room \(guest.room): /leave it first")
        case .listening: throw UserError("you are listening for a beacon already: /leave stops")
        case .none: break
        }
    }
}
