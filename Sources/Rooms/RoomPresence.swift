import Accounts
import ChatViews
import Foundation
import Nearby
import Shell
import Storage
import Terminal
import Wire

/// Beacons heard, a guest's side of a room and a host's, as the engine handles their packets.
extension RoomsOnline {
    // MARK: Beacons (on the engine)

    func heard(_ beacon: Beacon, from sender: Data) {
        let now = context.engine.now
        let me = context.identity.signingPublicKey
        let key = HeardKey(room: beacon.room, host: sender)
        // Who beacons this room: us when we host it, its host when we are in it, else its
        // owner (the first key heard that still beacons it, `RoomOwners`).
        let (told, place) = withState { state -> (Int?, Place) in
            state.heard = state.heard.filter { now - $0.value.lastHeard < Self.silenceLimit }
            if beacon.closing {
                state.heard[key] = nil
                state.owners.closed(beacon.room, by: sender)
                return (nil, state.place)
            }
            let owned = state.owners.heard(beacon.room, host: sender, now: now, silence: Self.silenceLimit)
            let owner: Data?
            switch state.place {
            case .hosting(let hosting) where hosting.room == beacon.room: owner = me
            case .guest(let guest) where guest.room == beacon.room: owner = guest.host
            default: owner = owned
            }
            // Not owned: the table is full of rooms still beaconing; this one is not listed.
            guard let owner else { return (nil, state.place) }
            let forged = owner != sender
            if state.heard[key] == nil {
                if state.heard.count >= Self.heardLimit {
                    // The stalest forgery goes first, else the stalest beacon (one pass): ownership
                    // is kept in `owners`, so what is forgotten here is only no longer listed (and
                    // an owner's next beacon lists it again). Among beacons heard at the same moment
                    // the one first heard most recently goes, so a flood displaces itself rather than
                    // the rooms heard before it (a tie left to the table's order evicted those too).
                    let owners = state.owners
                    func rank(_ heard: (key: HeardKey, value: Heard)) -> (Int, Double, Double) {
                        (owners.owner(of: heard.key.room) == heard.key.host ? 1 : 0, heard.value.lastHeard, -heard.value.firstHeard)
                    }
                    if let stalest = state.heard.min(by: { rank($0) < rank($1) }) { state.heard[stalest.key] = nil }
                }
                state.heard[key] = Heard(room: beacon.room, host: sender, firstHeard: now, lastHeard: now, forged: forged)
                // A forgery is told at most once a room every half minute (the rest counted).
                return (forged ? state.forgeries.admit(beacon.room, now: now) : nil, state.place)
            }
            state.heard[key]!.lastHeard = now
            state.heard[key]!.forged = forged
            return (nil, state.place)
        }
        if let held = told, isInterested(place) {
            let owner = place.room == beacon.room ? place.hostKey(me: me) : withState { $0.owners.owner(of: beacon.room) }
            let ownerName = owner.map { $0 == me ? "you" : name(of: $0, context) } ?? "another key"
            post(context, warning: "\(name(of: sender, context)) also beacons room \(beacon.room), which \(ownerName) "
                 + (ownerName == "you" ? "host" : "hosts") + ": a forged beacon, not followed"
                 + (held > 0 ? " (and \(held) more since the last notice)" : ""))
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

    func isInterested(_ place: Place) -> Bool {
        if case .none = place { return false }
        return true
    }

    // MARK: Guest (on the engine)

    /// Joins the room of a beacon heard; the host must be present (its announcement gives the
    /// key to seal to and the way to reach it).
    func join(_ key: HeardKey, _ context: FeatureContext) {
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
    func probe(_ context: FeatureContext) {
        let sent = withState { state -> (RoomProbe, Data)? in
            guard case .guest(var guest) = state.place else { return nil }
            let nonce = UInt64.random(in: 1...UInt64.max, using: &state.random)
            guest.probe = (nonce, context.engine.now)
            state.place = .guest(guest)
            return (RoomProbe(room: guest.room, nonce: nonce, proximity: guest.estimator.current), guest.host)
        }
        guard let (probe, host) = sent, let peer = context.presence.peer(host) else { return }
        context.network.send(probe, to: peer)
    }

    func received(_ roster: RoomRoster, from sender: Data) {
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
        // Others coming and going (not the first roster, which is everyone already there);
        // those blocked are counted once as they come, never named.
        let room = roster.room, rules = context.rules
        let blockedNew = change.new.filter { rules.isBlocked($0) && !change.old.contains($0) }
        if !blockedNew.isEmpty {
            post(context, (blockedNew.count == 1 ? "someone you blocked is" : "\(blockedNew.count) people you blocked are")
                 + " in room \(room): their lines do not reach you, nor yours them")
        }
        if !change.old.isEmpty {
            for key in change.new where !change.old.contains(key) && key != me && !rules.isBlocked(key) {
                post(context, "\(name(of: key, context)) joined room \(room)")
            }
        }
        for key in change.old where !change.new.contains(key) && key != me && !rules.isBlocked(key) {
            post(context, "\(name(of: key, context)) left room \(room)")
        }
    }

    /// The user blocked `keys`: a room we host lets them go (out of its roster, no member
    /// writes to them or expects their lines); a room one of them hosts is left.
    func blocked(_ keys: Set<Data>) {
        switch place {
        case .hosting(var hosting):
            let gone = hosting.members.keys.filter(keys.contains)
            guard !gone.isEmpty else { return }
            gone.forEach { hosting.members[$0] = nil }
            withState { $0.place = .hosting(hosting) }
            sendRoster(context)
        case .guest(let guest) where keys.contains(guest.host):
            leaveRoom(context, guest, saying: "you blocked the host of room \(guest.room)", tellHost: false)
        default:
            break
        }
    }

    func received(_ membership: RoomMembership, from sender: Data) {
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
    func leaveRoom(_ context: FeatureContext, _ guest: Guest, saying reason: String?, tellHost: Bool) {
        if tellHost, let host = context.presence.peer(guest.host) {
            context.network.send(RoomMembership(room: guest.room, action: .leave), to: host)
        }
        withState { $0.place = .none }
        settle(context)
        if let reason { post(context, reason + "; you left it") }
    }

    // MARK: Host (on the engine)

    func probed(_ probe: RoomProbe, from sender: Data, peer: Peer?) {
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
        if let roster = roster() { context.network.send(RoomRoster(room: roster.room, echo: probe.nonce, members: roster.members), to: peer) }
        if change != .none { sendRoster(context, except: sender) }
    }

    /// The roster as the host has it: guests in the order they joined.
    func roster() -> RoomRoster? {
        withState { state in
            guard case .hosting(let hosting) = state.place else { return nil }
            let members = hosting.members.sorted {
                $0.value.joined != $1.value.joined ? $0.value.joined < $1.value.joined : $0.key.lexicographicallyPrecedes($1.key)
            }.map { RoomRoster.Member(key: $0.key, proximity: $0.value.proximity) }
            return RoomRoster(room: hosting.room, echo: 0, members: members)
        }
    }

    /// The roster to every guest (but `except`).
    func sendRoster(_ context: FeatureContext, except: Data? = nil) {
        guard let roster = roster() else { return }
        for member in roster.members where member.key != except {
            if let peer = context.presence.peer(member.key) { context.network.send(roster, to: peer) }
        }
    }

    func beacon(_ context: FeatureContext, closing: Bool = false) {
        let beacon = withState { state -> Beacon? in
            guard case .hosting(var hosting) = state.place else { return nil }
            hosting.counter &+= 1
            state.place = .hosting(hosting)
            return Beacon(room: hosting.room, counter: hosting.counter, intervalMilliseconds: UInt16(Self.beaconInterval * 1000),
                          closing: closing)
        }
        guard let beacon else { return }
        context.network.broadcast(beacon, as: .topic(RoomsOnline.topic(of: beacon.room)))
    }

    /// Ends the room for everyone: each guest is told, and the last beacon says so too.
    func closeRoom(_ context: FeatureContext) {
        guard case .hosting(let hosting) = place else { return }
        beacon(context, closing: true)
        for key in hosting.members.keys {
            if let peer = context.presence.peer(key) { context.network.send(RoomMembership(room: hosting.room, action: .close), to: peer) }
        }
        withState { $0.place = .none }
        settle(context)
    }
}
