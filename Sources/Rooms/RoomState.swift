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
