import Foundation

/// One way a peer was heard: by which transport, from where, and when last.
package struct PeerRoute: Equatable, Sendable {
    /// The route its announcements came by (the transport turns it into a direct route).
    package var source: Route
    /// When it was last heard by this route, as its expiry counts (`FrameTime.heard`).
    package var lastSeen: Double
    /// When its last announcement by this route says it was made (`FrameTime.said`).
    package var saidAt: Double
    /// The interval the announcements on this route advertise, by which it expires: a broker's
    /// copy, published only when it changes, advertises a longer one than the LAN's refreshes.
    package var interval: Double
    /// Heard by a transport that keeps presence (a broker): withdrawn there rather than expired.
    package var isKept: Bool
    /// The newest announcement heard by this transport: a copy of it again is a duplicate.
    var newest = Freshness(timestamp: 0, sequence: 0)
    /// The last link of the peer's refresh chain heard by this route (the LAN's), from its
    /// signed announcement or a proof since: the next proof must follow it.
    var chain: ChainLink?

    package init(source: Route, lastSeen: Double, interval: Double = PresenceTiming().interval, isKept: Bool = false) {
        self.source = source
        self.lastSeen = lastSeen
        saidAt = lastSeen
        self.interval = interval
        self.isKept = isKept
    }

    package var transport: String { source.transport }

    /// When it expires, as `timing` counts missed refreshes.
    package func expiry(_ timing: PresenceTiming) -> Double {
        lastSeen + (isKept ? timing.keptLifetime(ofInterval: interval) : timing.lifetime(ofInterval: interval))
    }
}

/// Someone nearby, as their last announcement described them: one entry per signing key,
/// whichever transports it was heard on (the LAN, a broker, both).
package struct Peer: Equatable, Sendable {
    package init(signingKey: Data, announcement: Announcement, route: Route, lastSeen: Double, isKept: Bool = false) {
        self.signingKey = signingKey
        fingerprint = PeerIdentity.fingerprint(of: signingKey)
        self.announcement = announcement
        plane = Self.plane(of: announcement)
        self.routes = [PeerRoute(source: route, lastSeen: lastSeen, interval: PresenceTable.interval(of: announcement), isKept: isKept)]
        self.lastSeen = lastSeen
        self.newest = Freshness(timestamp: 0, sequence: 0)
    }

    package let signingKey: Data
    /// Its key's fingerprint, worked out once (a hash): every message shown names it.
    package let fingerprint: String
    /// Its last announcement; its plane is read from it once, here (`plane`).
    package var announcement: Announcement { didSet { plane = Self.plane(of: announcement) } }
    /// The plane it announced; nil for a number no plane has (such a peer reaches no one and
    /// is reached by no one).
    package private(set) var plane: Plane?

    /// The plane an announcement gives: the one place a plane's wire number is read.
    private static func plane(of announcement: Announcement) -> Plane? { Plane(wireValue: announcement.plane) }
    /// Each transport it was heard on, at most one route each, in the order first heard.
    package var routes: [PeerRoute]
    /// The last time it was heard on any transport.
    package var lastSeen: Double
    /// When its latest announcement on any transport says it was made: "seen" in `nearby`.
    package var lastSaid: Double { routes.map(\.saidAt).max() ?? lastSeen }
    /// The newest packet seen from them: anything not newer is a replay.
    var newest: Freshness
    /// How many announcements it has made here while present (1: not yet confirmed).
    var announcements = 1

    package var name: String { announcement.name }
    package var handle: String { name + "#" + fingerprint }

    /// Whether `wanted` (a name, any case, or `name#fp`) can mean this peer.
    package func answers(to wanted: String) -> Bool { PeerIdentity.answers(wanted, name: name, signingKey: signingKey) }

    /// The routes not expired at `now` (as `timing` counts), ranked by `preference` (transport
    /// names, the preferred first); a route still live is never passed over for a stale one.
    package func liveRoutes(now: Double, timing: PresenceTiming, preference: [String]) -> [PeerRoute] {
        let rank = { (route: PeerRoute) in preference.firstIndex(of: route.transport) ?? preference.count }
        let live = routes.filter { now <= $0.expiry(timing) }
        return (live.isEmpty ? routes : live).sorted { rank($0) < rank($1) }
    }

    /// Whether a transport that refreshes presence (the LAN) hears it: it counts in that link's
    /// crowd.
    package var isRefreshed: Bool { routes.contains { !$0.isKept } }

    /// Records that the announcement `freshness`, advertising `interval`, came by `route`,
    /// heard at `now` (`FrameTime.heard`), saying it was made at `said`.
    mutating func heard(by route: Route, freshness: Freshness, interval: Double, isKept: Bool, now: Double, said: Double,
                        chain: ChainLink?) {
        var entry = PeerRoute(source: route, lastSeen: now, interval: interval, isKept: isKept)
        entry.saidAt = said
        entry.newest = freshness
        entry.chain = isKept ? nil : chain
        if let index = routes.firstIndex(where: { $0.transport == route.transport }) {
            routes[index] = entry
        } else {
            routes.append(entry)
        }
        lastSeen = max(lastSeen, now)
    }
}

/// What a packet tells the table of peers.
package enum PresenceNews: Equatable, Sendable {
    case announce(Announcement)
    case goodbye
}

package enum PresenceEvent: Equatable, Sendable {
    case arrived(Peer)
    /// The peer's plane, name or avatar changed.
    case changed(from: Peer, to: Peer)
    case left(Peer, LeaveReason)
    /// The peer went online again without leaving first (its shell was killed and started
    /// again): its sessions are forgotten, and what waits for it goes now.
    case restarted(Peer)
    /// A transport stopped carrying anything, or carries again (named as in `Transport.name`).
    case transport(String, TransportState)
    /// This profile is online in another seance too (a copy of its data elsewhere), heard by
    /// that transport: both number their messages alike, and peers drop some. Told once.
    case alsoOnlineElsewhere(transport: String)
    /// The peer runs an older seance, which makes no sessions: nothing direct passes between
    /// us. Told once a peer.
    case olderSeance(Peer)
    /// The flood limits dropped what a host sent, unchecked (`source`: the first host they
    /// stopped). Told once.
    case flooded(source: String)
    /// A peer's announcement, heard live, is stamped further from our clock than
    /// `FrameTime.allowance` (`offset` seconds: negative when it is behind ours): one of the
    /// two clocks is off, and that peer is not listed. Told once.
    case clockOff(name: String, handle: String, offset: Double)

    /// `evicted`: the table was full and this peer was the least established and stalest.
    /// `blocked`: the user blocked the key (said by the command, not as a departure).
    package enum LeaveReason: Sendable { case goodbye, expired, evicted, blocked }
}
