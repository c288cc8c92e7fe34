import Foundation
import Nearby

/// The beacons heard lately, by room and signer, bounded; who owns each room number (kept apart,
/// `RoomOwners`); and how often a forgery is told (`ForgeryNotices`). A pure value.
struct BeaconsHeard: Sendable {
    /// A beacon heard lately, by room and signer.
    struct Heard: Sendable {
        var room: RoomID
        var host: Data
        var firstHeard: Double
        var lastHeard: Double
        /// Another key was heard beaconing this room first: not followed.
        var forged = false
    }

    struct Key: Hashable, Sendable {
        var room: RoomID
        var host: Data
    }

    /// Beacons remembered at most: a flood of made-up rooms must not grow the list (who owns a
    /// room is kept apart, in `RoomOwners`: what is forgotten here is only no longer listed).
    static let limit = 256

    private(set) var heard: [Key: Heard] = [:]
    private var owners = RoomOwners()
    private var forgeries = ForgeryNotices()

    /// A beacon of `sender`'s at `now`; `hostHere` is who hosts its room when we are in it (we,
    /// or the host we are a guest of), which makes any other key a forger. When a forgery is
    /// to be told now, how many were held back since the last notice.
    mutating func heard(_ beacon: Beacon, from sender: Data, hostHere: Data?, now: Double) -> Int? {
        let key = Key(room: beacon.room, host: sender)
        heard = heard.filter { now - $0.value.lastHeard < RoomsOnline.silenceLimit }
        if beacon.closing {
            heard[key] = nil
            owners.closed(beacon.room, by: sender)
            return nil
        }
        let owned = owners.heard(beacon.room, host: sender, now: now, silence: RoomsOnline.silenceLimit)
        // Not owned: the table is full of rooms still beaconing; this one is not listed.
        guard let owner = hostHere ?? owned else { return nil }
        let forged = owner != sender
        guard heard[key] == nil else {
            heard[key]!.lastHeard = now
            heard[key]!.forged = forged
            return nil
        }
        if heard.count >= Self.limit {
            // The stalest forgery goes first, else the stalest beacon (one pass): ownership is
            // kept in `owners`, so what is forgotten here is only no longer listed (and an
            // owner's next beacon lists it again). Among beacons heard at the same moment the
            // one first heard most recently goes, so a flood displaces itself rather than the
            // rooms heard before it (a tie left to the table's order evicted those too).
            let owners = owners
            func rank(_ heard: (key: Key, value: Heard)) -> (Int, Double, Double) {
                (owners.owner(of: heard.key.room) == heard.key.host ? 1 : 0, heard.value.lastHeard, -heard.value.firstHeard)
            }
            if let stalest = heard.min(by: { rank($0) < rank($1) }) { heard[stalest.key] = nil }
        }
        heard[key] = Heard(room: beacon.room, host: sender, firstHeard: now, lastHeard: now, forged: forged)
        // A forgery is told at most once a room every half minute (the rest counted).
        return forged ? forgeries.admit(beacon.room, now: now) : nil
    }

    /// Who owns `room`: the first key heard beaconing it that still does.
    func owner(of room: RoomID) -> Data? { owners.owner(of: room) }

    /// Whether the beacon heard by `key` is its room's owner's (one a guest may follow).
    func isFollowed(_ key: Key) -> Bool { heard[key]?.forged == false }

    /// Those heard within `seconds` of `now`.
    func recent(within seconds: Double, now: Double) -> [Heard] { heard.values.filter { now - $0.lastHeard < seconds } }
}
