import Foundation
import Nearby
import Storage
import Wire

/// A host's side of a room: its beacon every second, guests joining by their probes and told
/// of each other by the roster, guests let go when silent, left or blocked, the room closed.
/// Every method runs on the engine.
final class RoomHost: RoomPart, Sendable {
    let parts: RoomParts

    init(_ parts: RoomParts) { self.parts = parts }

    /// The second's work: the beacon, and guests not heard for `memberLimit` let go.
    func tick(now: Double) {
        beacon()
        guard case .hosting(var hosting) = place else { return }
        let gone = hosting.members.filter { now - $0.value.lastHeard >= RoomsOnline.memberLimit }.map(\.key)
        guard !gone.isEmpty else { return }
        gone.forEach { hosting.members[$0] = nil }
        place = .hosting(hosting)
        for key in gone { post("\(name(of: key)) left room \(hosting.room) (not heard for \(Int(RoomsOnline.memberLimit)) s)") }
        sendRoster()
    }

    /// A guest's probe: it joins, or says how near it is now; the roster answers, echoing the
    /// probe, and goes to the others when something changed.
    func probed(_ probe: RoomProbe, from sender: Data, peer: Peer?) {
        guard let peer, case .hosting(var hosting) = place, hosting.room == probe.room else { return }
        enum Change { case none, joined, moved }
        var change = Change.none
        if var member = hosting.members[sender] {
            if member.proximity != probe.proximity { change = .moved }
            member.proximity = probe.proximity
            member.lastHeard = now
            hosting.members[sender] = member
        } else {
            guard hosting.members.count < RoomRoster.capacity else { return }
            hosting.members[sender] = RoomsOnline.Member(proximity: probe.proximity, lastHeard: now, joined: now)
            change = .joined
        }
        place = .hosting(hosting)
        switch change {
        case .joined: post("\(name(of: sender)) joined room \(probe.room) (\(probe.proximity.name))")
        case .moved: post("\(name(of: sender)) is now \(probe.proximity.name) in room \(probe.room)")
        case .none: break
        }
        if let roster { context.network.send(RoomRoster(room: roster.room, echo: probe.nonce, members: roster.members), to: peer) }
        if change != .none { sendRoster(except: sender) }
    }

    /// A guest says it leaves.
    func left(_ sender: Data, room: RoomID) {
        guard case .hosting(var hosting) = place, hosting.room == room, hosting.members.removeValue(forKey: sender) != nil else { return }
        place = .hosting(hosting)
        post("\(name(of: sender)) left room \(hosting.room)")
        sendRoster()
    }

    /// The user blocked `keys`: those among the guests are let go.
    func letGo(_ keys: Set<Data>) {
        guard case .hosting(var hosting) = place else { return }
        let gone = hosting.members.keys.filter(keys.contains)
        guard !gone.isEmpty else { return }
        gone.forEach { hosting.members[$0] = nil }
        place = .hosting(hosting)
        sendRoster()
    }

    /// The roster as the host has it: guests in the order they joined.
    var roster: RoomRoster? {
        guard case .hosting(let hosting) = place else { return nil }
        let members = hosting.members.sorted {
            $0.value.joined != $1.value.joined ? $0.value.joined < $1.value.joined : $0.key.lexicographicallyPrecedes($1.key)
        }.map { RoomRoster.Member(key: $0.key, proximity: $0.value.proximity) }
        return RoomRoster(room: hosting.room, echo: 0, members: members)
    }

    /// The roster to every guest (but `except`).
    func sendRoster(except: Data? = nil) {
        guard let roster else { return }
        for member in roster.members where member.key != except { send(roster, to: member.key) }
    }

    func beacon(closing: Bool = false) {
        guard case .hosting(var hosting) = place else { return }
        hosting.counter &+= 1
        place = .hosting(hosting)
        let beacon = Beacon(room: hosting.room, counter: hosting.counter, intervalMilliseconds: UInt16(RoomsOnline.beaconInterval * 1000),
                            closing: closing)
        context.network.broadcast(beacon, as: .topic(RoomsOnline.topic(of: beacon.room)))
    }

    /// Ends the room for everyone: each guest is told, and the last beacon says so too.
    func close() {
        guard case .hosting(let hosting) = place else { return }
        beacon(closing: true)
        for key in hosting.members.keys { send(RoomMembership(room: hosting.room, action: .close), to: key) }
        place = .none
        settle()
    }
}
