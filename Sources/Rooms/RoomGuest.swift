import Accounts
import Foundation
import Nearby
import Storage
import Wire

/// A guest's side of a room: joining the room of a beacon heard, following how near the host
/// is, probing it, hearing its roster, leaving. Every method runs on the engine.
final class RoomGuest: RoomPart, Sendable {
    let parts: RoomParts

    init(_ parts: RoomParts) { self.parts = parts }

    /// Joins the room of a beacon heard; the host must be present (its announcement gives the
    /// key to seal to and the way to reach it).
    func join(_ key: BeaconsHeard.Key) {
        guard let host = context.presence.peer(key.host),
              let stored = try? RoomStore(database: context.database).room(key.room, host: key.host, hostName: host.name, myKey: me, now: now)
        else { return }
        var guest = RoomsOnline.Guest(room: key.room, host: key.host, stored: stored,
                                      estimator: ProximityEstimator(joinedAt: now, interval: RoomsOnline.beaconInterval))
        guest.estimator.beacon(counter: 0, at: now)
        guest.since = now
        place = .guest(guest)
        // Joined once the host answers (`received(_ roster:)`).
        probe()
        settle()
    }

    /// Its host's beacon: closing, or how near the host is.
    func beacon(_ beacon: Beacon, in guest: RoomsOnline.Guest, now: Double) {
        if beacon.closing { return leave(guest, saying: "the host closed room \(guest.room)", tellHost: false) }
        var guest = guest
        guest.estimator.interval = Self.interval(of: beacon)
        guest.estimator.beacon(counter: beacon.counter, at: now)
        place = .guest(guest)
    }

    static func interval(of beacon: Beacon) -> Double { min(10, max(0.1, Double(beacon.intervalMilliseconds) / 1000)) }

    /// The second's work: a room silent for `silenceLimit` is left; proximity is judged anew
    /// and the host told of a change, and probed every other second.
    func tick(_ guest: RoomsOnline.Guest, now: Double) {
        if !guest.answered, now - guest.since >= RoomsOnline.answerLimit {
            return leave(guest, saying: "no answer from the host of room \(guest.room)", tellHost: false, joined: false)
        }
        if guest.estimator.silence(now: now) >= RoomsOnline.silenceLimit {
            return leave(guest, saying: "no beacon from the host of room \(guest.room) for \(Int(RoomsOnline.silenceLimit)) s: out of range",
                         tellHost: true)
        }
        var guest = guest
        let changed = guest.estimator.evaluate(now: now)
        guest.ticks += 1
        place = .guest(guest)
        if let changed { post("you are now \(changed.name) to the host of room \(guest.room)") }
        if changed != nil || guest.ticks % RoomsOnline.probeEvery == 0 { probe() }
    }

    /// Tells the host we are here and how near, and times its answer.
    func probe() {
        guard case .guest(var guest) = place else { return }
        let nonce = parts.state.update { UInt64.random(in: 1...UInt64.max, using: &$0.random) }
        guest.probe = (nonce, now)
        place = .guest(guest)
        send(RoomProbe(room: guest.room, nonce: nonce, proximity: guest.estimator.current), to: guest.host)
    }

    /// The host's roster: who is in the room, and (echoing our probe) the round trip to it.
    func received(_ roster: RoomRoster, from sender: Data) {
        guard case .guest(var guest) = place, guest.host == sender, guest.room == roster.room else { return }
        let old = guest.roster.map(\.key), new = roster.members.map(\.key)
        guest.roster = roster.members
        if !guest.answered {
            guest.answered = true
            post("you joined room \(guest.room), hosted by \(name(of: guest.host)): what you type goes to everyone in it (/members, /leave)")
        }
        if let probe = guest.probe, roster.echo == probe.nonce {
            guest.estimator.roundTrip(now - probe.at)
            guest.probe = nil
        }
        place = .guest(guest)
        guard !old.isEmpty || new.count > 1 else { return }
        // Others coming and going (not the first roster, which is everyone already there);
        // those blocked are counted once as they come, never named.
        let room = roster.room, rules = context.rules
        let blockedNew = new.filter { rules.isBlocked($0) && !old.contains($0) }
        if !blockedNew.isEmpty {
            post((blockedNew.count == 1 ? "someone you blocked is" : "\(blockedNew.count) people you blocked are")
                 + " in room \(room): their lines do not reach you, nor yours them")
        }
        if !old.isEmpty {
            for key in new where !old.contains(key) && key != me && !rules.isBlocked(key) { post("\(name(of: key)) joined room \(room)") }
        }
        for key in old where !new.contains(key) && key != me && !rules.isBlocked(key) { post("\(name(of: key)) left room \(room)") }
    }

    /// Leaves the room we are a guest of (`saying` why, as a notice, unless the user asked).
    func leave(_ guest: RoomsOnline.Guest, saying reason: String?, tellHost: Bool, joined: Bool = true) {
        if tellHost { send(RoomMembership(room: guest.room, action: .leave), to: guest.host) }
        place = .none
        settle()
        if let reason { post(reason + (joined ? "; you left it" : ": not joined")) }
    }
}
