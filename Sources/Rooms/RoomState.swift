import Accounts
import ChatViews
import Foundation
import Nearby
import Shell
import Storage
import Terminal
import Wire

/// What a room is while online, as plain values: beacons heard, a guest's view, a host's
/// members, where this shell stands. Changed on the engine only (`RoomsOnline`).
extension RoomsOnline {
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
        /// When the beacon was taken up; until the host answers (its first roster), the room
        /// is not joined yet: a host that never answers (it blocked us) is left, and the
        /// guest told only that no answer came.
        var since = 0.0
        var answered = false
    }

    enum Place {
        case none, listening
        case hosting(Hosting)
        case guest(Guest)
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

/// Who owns each room number heard: the first key heard beaconing it that is still beaconing.
/// Kept apart from the bounded list of beacons heard, so that beacons of other rooms (made-up
/// ones, from made-up keys) never push a live owner out; a number whose owner fell silent less
/// than `silence` ago gets no new owner. At most `capacity` rooms: past it, a new room is not
/// owned (nor listed) until an owner falls silent.
struct RoomOwners {
    static let capacity = 1_024

    struct Owner {
        var host: Data
        var lastHeard: Double
    }

    private(set) var owners: [RoomID: Owner] = [:]

    /// A beacon of `room` by `host` at `now`: the room's owner (nil when the table is full of
    /// live owners and this one is new).
    mutating func heard(_ room: RoomID, host: Data, now: Double, silence: Double) -> Data? {
        if let owner = owners[room], now - owner.lastHeard < silence {
            if owner.host == host { owners[room]!.lastHeard = now }
            return owner.host
        }
        if owners[room] == nil, owners.count >= Self.capacity {
            owners = owners.filter { now - $0.value.lastHeard < silence }
            guard owners.count < Self.capacity else { return nil }
        }
        owners[room] = Owner(host: host, lastHeard: now)
        return host
    }

    /// The owner closed the room: its number is free at once.
    mutating func closed(_ room: RoomID, by host: Data) {
        if owners[room]?.host == host { owners[room] = nil }
    }

    func owner(of room: RoomID) -> Data? { owners[room]?.host }
}

/// Forgery notices, at most one a room every `gap` seconds; those held back are counted into
/// the next. Bounded by the rooms told of within the gap.
struct ForgeryNotices {
    static let gap = 30.0
    private var told: [RoomID: (at: Double, held: Int)] = [:]

    /// Whether to tell of a forged beacon of `room` now, and how many were held back before it.
    mutating func admit(_ room: RoomID, now: Double) -> Int? {
        if let last = told[room], now - last.at < Self.gap {
            told[room]!.held += 1
            return nil
        }
        if told.count >= RoomOwners.capacity { told = told.filter { now - $0.value.at < Self.gap } }
        let held = told[room]?.held ?? 0
        told[room] = (now, 0)
        return held
    }
}

