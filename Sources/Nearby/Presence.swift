import Crypto
import Foundation

/// Timing of presence, mDNS-like: announce at once and again after `startupGap`, then every
/// `interval` give or take `jitter` (a fraction), so peers do not fall into step. A peer that
/// misses three refreshes in a row is gone.
public struct PresenceTiming: Sendable, Equatable {
    public var interval: Double
    public var jitter: Double
    public var startupGap: Double
    public var missedBeforeExpiry: Double

    public init(interval: Double = 5, jitter: Double = 0.2, startupGap: Double = 1, missedBeforeExpiry: Double = 3) {
        self.interval = interval
        self.jitter = jitter
        self.startupGap = startupGap
        self.missedBeforeExpiry = missedBeforeExpiry
    }

    /// How long after its last announcement a peer announcing every `interval` expires: half an
    /// interval more than the allowed misses, so jitter alone never expires anyone.
    public func lifetime(ofInterval interval: Double) -> Double { interval * (missedBeforeExpiry + 0.5) }
}

/// When to announce next.
public struct AnnounceSchedule: Sendable {
    public let timing: PresenceTiming
    public private(set) var nextAt: Double
    private var sent = 0

    /// The first announcement is due at once.
    public init(timing: PresenceTiming, now: Double) {
        self.timing = timing
        nextAt = now
    }

    /// True when an announcement is due; the next one is then scheduled.
    public mutating func isDue(now: Double, using rng: inout some RandomNumberGenerator) -> Bool {
        guard now >= nextAt else { return false }
        sent += 1
        if sent < 2 {
            nextAt = now + timing.startupGap
        } else {
            let spread = timing.jitter > 0 ? Double.random(in: -timing.jitter...timing.jitter, using: &rng) : 0
            nextAt = now + timing.interval * (1 + spread)
        }
        return true
    }

    /// Something changed (the plane): announce at the next check.
    public mutating func announceSoon(now: Double) { nextAt = min(nextAt, now) }
}

/// Someone nearby, as their last announcement described them.
public struct Peer: Equatable, Sendable {
    public init(signingKey: Data, announcement: Announcement, host: String, lastSeen: Double) {
        self.signingKey = signingKey
        self.announcement = announcement
        self.host = host
        self.lastSeen = lastSeen
        self.newest = Freshness(timestamp: 0, sequence: 0)
    }

    init(signingKey: Data, announcement: Announcement, host: String, lastSeen: Double, newest: Freshness) {
        self.init(signingKey: signingKey, announcement: announcement, host: host, lastSeen: lastSeen)
        self.newest = newest
    }

    public var signingKey: Data
    public var announcement: Announcement
    /// Where their packets come from (for direct messages).
    public var host: String
    public var lastSeen: Double
    /// The newest packet seen from them: anything not newer is a replay.
    var newest: Freshness

    public var name: String { announcement.name }
    public var fingerprint: String { PeerIdentity.fingerprint(of: signingKey) }
    public var handle: String { name + "#" + fingerprint }
}

public enum PeerIdentity {
    /// The same four hex digits profiles show: the first two bytes of SHA-256 of the key.
    public static func fingerprint(of signingKey: Data) -> String {
        SHA256.hash(data: signingKey).prefix(2).map { String(format: "%02x", $0) }.joined()
    }
}

public enum PresenceEvent: Equatable, Sendable {
    case arrived(Peer)
    /// The peer's plane, name or avatar changed.
    case changed(from: Peer, to: Peer)
    case left(Peer, LeaveReason)

    public enum LeaveReason: Sendable { case goodbye, expired }
}

/// Everyone heard from, kept from announcements and goodbyes.
public struct PresenceTable: Sendable {
    public let timing: PresenceTiming
    public private(set) var peers: [Data: Peer] = [:]

    public init(timing: PresenceTiming) { self.timing = timing }

    /// Takes one verified packet. Packets older than the newest seen from the same sender are
    /// dropped (a replay, or reordering).
    public mutating func receive(_ packet: Packet, from host: String, now: Double) -> [PresenceEvent] {
        let known = peers[packet.sender]
        let freshness = Freshness(timestamp: packet.timestamp, sequence: packet.sequence)
        if let known, freshness <= known.newest { return [] }
        switch packet.payload {
        case .announce(let announcement):
            let peer = Peer(signingKey: packet.sender, announcement: announcement, host: host, lastSeen: now,
                            newest: freshness)
            peers[packet.sender] = peer
            guard let known else { return [.arrived(peer)] }
            var old = known.announcement, new = announcement
            old.intervalMilliseconds = 0; new.intervalMilliseconds = 0
            old.unicastPort = 0; new.unicastPort = 0
            return old == new ? [] : [.changed(from: known, to: peer)]
        case .goodbye:
            guard let known else { return [] }
            peers[packet.sender] = nil
            return [.left(known, .goodbye)]
        case .avatarRequest, .avatar, .message, .ack, .read:
            return []
        }
    }

    /// Removes peers not heard from for too long.
    public mutating func expire(now: Double) -> [PresenceEvent] {
        var events: [PresenceEvent] = []
        for (key, peer) in peers {
            let interval = Double(peer.announcement.intervalMilliseconds) / 1000
            if now - peer.lastSeen > timing.lifetime(ofInterval: interval) {
                peers[key] = nil
                events.append(.left(peer, .expired))
            }
        }
        return events
    }
}

/// Which of two packets from one sender is newer: timestamp first, then sequence number.
struct Freshness: Comparable, Sendable {
    var timestamp: UInt64
    var sequence: UInt32

    static func < (a: Freshness, b: Freshness) -> Bool { (a.timestamp, a.sequence) < (b.timestamp, b.sequence) }
}
