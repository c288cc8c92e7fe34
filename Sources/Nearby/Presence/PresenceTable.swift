import Foundation

/// Everyone heard from, kept from announcements and goodbyes. Everything in it came from the
/// network, so it is bounded: at most `capacity` peers (a newcomer evicts the stalest peer heard
/// only once, else the stalest of all), an advertised interval of at most `maximumInterval`,
/// and replay memory for departed keys that outlives their departure (`retiredCapacity` keys).
package struct PresenceTable: Sendable {
    package let timing: PresenceTiming
    package let capacity: Int
    package private(set) var peers = PeerMap<Peer>()
    /// The newest packet seen from keys that left, oldest departure first.
    private var retired: [Data: Freshness] = [:]
    private var retiredOrder: [Data] = []
    private var retiredStart = 0
    /// When the next peer can expire (nothing to scan before): ticks in between cost nothing.
    package private(set) var nextExpiry = Double.infinity
    /// Peers heard on a transport that refreshes presence (the LAN): the crowd whose refreshes
    /// share that link's budget. Peers heard only through a broker cost the link nothing.
    package private(set) var refreshedCount = 0
    /// Full scans made by `expire` (tests check that idle ticks make none).
    package private(set) var expiryScans = 0

    package static let defaultCapacity = 4_096
    package static let retiredCapacity = 4_096
    /// Advertised intervals are clamped to what this program itself may be set to.
    package static let minimumInterval = 0.05
    package static let maximumInterval = 3_600.0

    package init(timing: PresenceTiming, capacity: Int = defaultCapacity) {
        self.timing = timing
        self.capacity = max(1, capacity)
    }

    /// The peer's interval as this table uses it.
    package static func interval(of announcement: Announcement) -> Double {
        min(maximumInterval, max(minimumInterval, Double(announcement.intervalMilliseconds) / 1000))
    }

    /// Takes what one verified packet (an announcement or a goodbye) says, which came by
    /// `route`; `isKept` when its transport keeps presence (a broker). Packets not newer than
    /// the newest seen from the same sender, present or departed, are dropped (a replay, or
    /// reordering), with one exception: an announcement no newer than the newest, arriving by
    /// another transport, adds or refreshes that transport's route (the same frame is broadcast
    /// on every transport, and a broker's copy is republished only when it changes, so it is
    /// often older). An older one may add a route only on a transport that keeps presence, where
    /// the route is named by the key, and no copy may move a route already known, so a replay
    /// cannot redirect anyone's messages. A copy of the newest on a transport that keeps
    /// presence (handed again after a reconnection) confirms its route.
    /// A chain link the announcement carries goes with its route (the peer's announcement is
    /// kept without it: a new link is no change).
    package mutating func receive(_ news: PresenceNews, in packet: Packet, from route: Route, isKept: Bool = false,
                                  now: Double, said: Double? = nil) -> [PresenceEvent] {
        let said = said ?? now
        var news = news, chain: ChainLink?
        if case .announce(var announcement) = news {
            chain = announcement.refreshChain
            announcement.refreshChain = nil
            news = .announce(announcement)
        }
        let known = peers[packet.sender]
        let freshness = Freshness(timestamp: packet.timestamp, sequence: packet.sequence)
        if var peer = known, freshness <= peer.newest, case .announce(let announcement) = news {
            if let index = peer.routes.firstIndex(where: { $0.transport == route.transport }) {
                let existing = peer.routes[index]
                guard existing.source == route, existing.newest <= freshness else { return [] }
                if existing.newest == freshness {
                    guard isKept else { return [] }
                    peer.routes[index].lastSeen = now
                    peer.lastSeen = max(peer.lastSeen, now)
                    store(peer)
                    return []
                }
            } else if freshness < peer.newest, !isKept {
                return []
            }
            peer.heard(by: route, freshness: freshness, interval: Self.interval(of: announcement), isKept: isKept, now: now, said: said,
                       chain: chain)
            store(peer)
            nextExpiry = min(nextExpiry, peer.routes.map { $0.expiry(timing) }.min() ?? now)
            return []
        }
        if let newest = known?.newest ?? retired[packet.sender], freshness <= newest { return [] }
        switch news {
        case .announce(let announcement):
            var peer = known ?? Peer(signingKey: packet.sender, announcement: announcement, route: route, lastSeen: now, isKept: isKept)
            peer.announcement = announcement
            peer.newest = freshness
            peer.heard(by: route, freshness: freshness, interval: Self.interval(of: announcement), isKept: isKept, now: now, said: said,
                       chain: chain)
            var events: [PresenceEvent] = []
            if known == nil, peers.count >= capacity, let victim = evictionCandidate() {
                events.append(.left(remove(victim, newest: peers[victim]!.newest), .evicted))
            }
            peer.announcements = (known?.announcements ?? 0) + 1
            store(peer)
            retired[packet.sender] = nil  // Its order entry goes when it comes round.
            nextExpiry = min(nextExpiry, peer.routes.map { $0.expiry(timing) }.min() ?? now)
            guard let known else { return events + [.arrived(peer)] }
            // A signed announcement on a chain that does not go on from the one heard: the
            // peer's shell went online again (it was killed, say, and said no goodbye), and what
            // it held of sessions is gone with it. (One overtaken by a later proof carries an
            // older link of the same chain: that link leads back to it.)
            if let chain, let before = known.routes.first(where: { $0.transport == route.transport })?.chain,
               chain != before, chain.index <= before.index, !chain.isFollowed(by: before) {
                events.append(.restarted(peer))
            }
            var old = known.announcement, new = announcement
            old.intervalMilliseconds = 0; new.intervalMilliseconds = 0
            old.unicastPort = 0; new.unicastPort = 0
            return old == new ? events : events + [.changed(from: known, to: peer)]
        case .goodbye:
            guard known != nil else {
                // A goodbye from a key not present still moves its replay mark forward.
                if retired[packet.sender] != nil { retired[packet.sender] = freshness }
                return []
            }
            return [.left(remove(packet.sender, newest: freshness), .goodbye)]
        }
    }

    /// What a refresh proof did (`proved`).
    package enum ProofOutcome: Equatable, Sendable {
        /// The route it came by is refreshed; the peer advertises this interval there.
        case refreshed(interval: Double)
        /// A link heard already, or an earlier one: a copy, or a replay.
        case repeated
        /// It does not follow the link heard last: forged.
        case forged
        /// Nothing to check it against: the key is not in the table, or not heard by this
        /// route with a chain, or too many links were missed. Its sender can be asked.
        case untracked
    }

    /// A refresh proof of `key`'s, which came by `route`: when its link follows the one its
    /// route heard last, the route is refreshed as by an unchanged signed announcement. Only
    /// the route of its transport heard from the same host (its port may differ: a route an
    /// answer made has the unicast socket's, proofs come from the multicast socket's), and the
    /// route stays where it was: a proof moves nobody. A proof from another host (the peer's
    /// address changed) cannot be checked: its sender is asked, and its signed answer moves it.
    package mutating func proved(_ link: ChainLink, of key: Data, by route: Route, now: Double) -> ProofOutcome {
        guard var peer = peers[key],
              let index = peer.routes.firstIndex(where: { !$0.isKept && $0.transport == route.transport && $0.source.host == route.host }),
              let chain = peer.routes[index].chain else { return .untracked }
        guard link.index > chain.index else { return .repeated }
        guard chain.isFollowed(by: link) else { return link.index - chain.index > ChainLink.maximumGap ? .untracked : .forged }
        peer.routes[index].chain = link
        peer.routes[index].lastSeen = now
        peer.routes[index].saidAt = now
        peer.lastSeen = max(peer.lastSeen, now)
        peer.announcements += 1
        store(peer)
        return .refreshed(interval: peer.routes[index].interval)
    }

    /// Departed keys whose replay mark is kept.
    package var retiredCount: Int { retired.count }

    /// The peer in the table with this key.
    package func peer(_ key: Data) -> Peer? { peers[key] }

    /// Whether `key`'s refreshes reach us by `transport` on time (its last one came within
    /// its interval, give or take its jitter): an answer of its to someone's query then tells
    /// us nothing.
    package func hears(_ key: Data, on transport: String, now: Double) -> Bool {
        guard let route = peers[key]?.routes.first(where: { $0.transport == transport }) else { return false }
        return now - route.lastSeen <= route.interval * 1.5
    }

    /// Removes peers not heard from for too long. Costs nothing until the first peer can expire.
    package mutating func expire(now: Double) -> [PresenceEvent] {
        guard now >= nextExpiry else { return [] }
        expiryScans += 1
        var events: [PresenceEvent] = []
        var next = Double.infinity
        for (key, var peer) in peers {
            // A transport it went quiet on is forgotten; it stays while another still hears it.
            let live = peer.routes.filter { now <= $0.expiry(timing) }
            if live.isEmpty {
                events.append(.left(remove(key, newest: peer.newest), .expired))
                continue
            }
            if live.count < peer.routes.count {
                peer.routes = live
                store(peer)
            }
            next = min(next, live.map { $0.expiry(timing) }.min()!)
        }
        nextExpiry = next
        return events
    }

    /// What stood for a peer on the route `source` of a transport that keeps presence was
    /// withdrawn (its goodbye, or its will: the broker saw it go). That route goes; with its
    /// last route, the peer.
    package mutating func withdraw(_ source: Route) -> [PresenceEvent] {
        guard let key = peers.first(where: { $0.value.routes.contains { $0.isKept && $0.source == source } })?.key else { return [] }
        var peer = peers[key]!
        peer.routes.removeAll { $0.source == source }
        guard peer.routes.isEmpty else {
            store(peer)
            return []
        }
        return [.left(remove(key, newest: peer.newest), .expired)]
    }

    /// The user blocked this key: it goes at once, if present.
    package mutating func removeBlocked(_ key: Data) -> PresenceEvent? {
        guard let peer = peers[key] else { return nil }
        return .left(remove(key, newest: peer.newest), .blocked)
    }

    /// Routes of `transport` not confirmed since `since` are withdrawn: after a reconnection a
    /// broker hands every presence it keeps again, and those it no longer keeps left meanwhile.
    package mutating func withdrawUnconfirmed(on transport: String, since: Double) -> [PresenceEvent] {
        let stale = peers.values.flatMap { $0.routes.filter { $0.isKept && $0.transport == transport && $0.lastSeen < since }.map(\.source) }
        return stale.flatMap { withdraw($0) }
    }

    /// Puts `peer` in the table, keeping the count of peers a refreshing transport hears.
    private mutating func store(_ peer: Peer) {
        let before = peers.updateValue(peer, forKey: peer.signingKey)?.isRefreshed ?? false
        refreshedCount += (peer.isRefreshed ? 1 : 0) - (before ? 1 : 0)
    }

    /// The stalest peer heard from only once, else the stalest of all: one pass, no copies (a
    /// full table meets a newcomer each time a flood sends a fresh key).
    private func evictionCandidate() -> Data? {
        func rank(_ peer: Peer) -> (Int, Double) { (peer.announcements <= 1 ? 0 : 1, peer.lastSeen) }
        return peers.min { rank($0.value) < rank($1.value) }?.key
    }

    /// Takes a peer out, remembering how far its packets have gone.
    private mutating func remove(_ key: Data, newest: Freshness) -> Peer {
        let peer = peers.removeValue(forKey: key)!
        if peer.isRefreshed { refreshedCount -= 1 }
        retire(key, newest: newest)
        return peer
    }

    private mutating func retire(_ key: Data, newest: Freshness) {
        if retired.updateValue(newest, forKey: key) == nil { retiredOrder.append(key) }
        // Forget the oldest departures beyond the bound. The order may hold stale entries (a
        // key that came back and left again appears twice): they only make a key forgotten a
        // little early, never kept beyond the bound.
        while retired.count > Self.retiredCapacity, retiredStart < retiredOrder.count {
            retired[retiredOrder[retiredStart]] = nil
            retiredStart += 1
        }
        if retiredOrder.count - retiredStart > 2 * Self.retiredCapacity || retiredStart > Self.retiredCapacity {
            var seen = Set<Data>()
            retiredOrder = retiredOrder[retiredStart...].reversed().filter { retired[$0] != nil && seen.insert($0).inserted }.reversed()
            retiredStart = 0
        }
    }
}

/// Which of two packets from one sender is newer: timestamp first, then sequence number.
struct Freshness: Comparable, Sendable {
    var timestamp: UInt64
    var sequence: UInt32

    static func < (a: Freshness, b: Freshness) -> Bool { (a.timestamp, a.sequence) < (b.timestamp, b.sequence) }
}
