import Crypto
import Foundation
@_exported import Wire

/// Timing of presence, mDNS-like: announce at once and again after `startupGap`, then every
/// `interval` give or take `jitter` (a fraction), so peers do not fall into step. A peer that
/// misses three refreshes in a row is gone.
package struct PresenceTiming: Sendable, Equatable {
    /// The least refresh interval: a small group refreshes this often.
    package var interval: Double
    package var jitter: Double
    package var startupGap: Double
    package var missedBeforeExpiry: Double
    /// Refreshes a second the whole group may send on a link (RFC 3550 §6.2's share of the
    /// session's bandwidth, as RTCP keeps it): each shell stretches its interval with the crowd.
    package var linkBudget: Double

    package init(interval: Double = 5, jitter: Double = 0.2, startupGap: Double = 1, missedBeforeExpiry: Double = 3,
                 linkBudget: Double = 20) {
        self.interval = interval
        self.jitter = jitter
        self.startupGap = startupGap
        self.missedBeforeExpiry = missedBeforeExpiry
        self.linkBudget = linkBudget
    }

    /// The refresh interval among `peers` others: `interval`, or longer, so that everyone's
    /// refreshes together stay within `linkBudget` a second (each of the n + 1 refreshes once
    /// an interval). Advertised in the announcement, by which the others expire us.
    /// Rounded up to a whole number of `interval`s, so that it changes (and the announcement
    /// with it, which a broker keeps) once every few dozen arrivals, not with each.
    package func interval(amongPeers peers: Int) -> Double {
        (max(interval, Double(peers + 1) / linkBudget) / interval).rounded(.up) * interval
    }

    /// The range answers to a query are delayed over: 20–120 ms in a small group; in a crowd
    /// wide enough that the answers come about 1,000 a second, but within 0.8 s (a newcomer
    /// lists everyone within a second).
    package static func answerWindow(amongPeers peers: Int) -> ClosedRange<Double> { 0.02...min(0.8, max(0.12, Double(peers) / 1000)) }

    /// How long after its last announcement a peer announcing every `interval` expires: half an
    /// interval more than the allowed misses, so jitter alone never expires anyone.
    package func lifetime(ofInterval interval: Double) -> Double { interval * (missedBeforeExpiry + 0.5) }
}

/// When to announce next.
package struct AnnounceSchedule: Sendable {
    package let timing: PresenceTiming
    package private(set) var nextAt: Double
    private var sent = 0
    /// The interval the next announcement was scheduled with.
    private var scheduledInterval: Double?

    /// The first announcement is due at once.
    package init(timing: PresenceTiming, now: Double) {
        self.timing = timing
        nextAt = now
    }

    /// True when an announcement is due; the next one is then scheduled, `interval` (the one
    /// this announcement advertises) later, give or take the jitter.
    package mutating func isDue(now: Double, interval: Double? = nil, using rng: inout some RandomNumberGenerator) -> Bool {
        guard now >= nextAt else { return false }
        sent += 1
        if sent < 2 {
            nextAt = now + timing.startupGap
        } else {
            let spread = timing.jitter > 0 ? Double.random(in: -timing.jitter...timing.jitter, using: &rng) : 0
            scheduledInterval = interval ?? timing.interval
            nextAt = now + scheduledInterval! * (1 + spread)
        }
        return true
    }

    /// The crowd shrank and the interval with it: the next announcement comes as much sooner
    /// (RFC 3550 §6.3.4's reverse reconsideration), else those who stay would wait out the
    /// crowd's long interval.
    package mutating func shrink(to interval: Double, now: Double) {
        guard let scheduled = scheduledInterval, interval < scheduled, nextAt > now else { return }
        nextAt = now + (nextAt - now) * interval / scheduled
        scheduledInterval = interval
    }

    /// Past the start-up's two announcements, which are signed whatever else holds.
    package var isPastStartUp: Bool { sent > 2 }

    /// Something changed (the plane): announce at the next check.
    package mutating func announceSoon(now: Double) { nextAt = min(nextAt, now) }
}

/// How a signed broadcast's own time is read against this machine's clock. Clocks differ: a
/// frame stamped within `allowance` of now, either way, counts as made now. One stamped earlier
/// counts as made at its own time plus the allowance (a broker's retained announcement, or a
/// replay, is as old as it says, give or take the allowance); one stamped later is from the
/// future, and dropped.
package enum FrameTime {
    package static let allowance = 120.0

    /// When a frame stamped `stamp` (seconds) arriving at `now` counts as heard; nil when it is
    /// from the future beyond the allowance.
    package static func heard(stamp: Double, now: Double) -> Double? {
        guard stamp <= now + allowance else { return nil }
        return now - stamp <= allowance ? now : stamp + allowance
    }

    /// When it says it was made, as `nearby` shows it: its own time when older than the
    /// allowance, else its arrival.
    package static func said(stamp: Double, now: Double) -> Double { now - stamp <= allowance ? now : min(now, stamp) }
}

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
    package func expiry(_ timing: PresenceTiming) -> Double { lastSeen + timing.lifetime(ofInterval: interval) }
}

/// Someone nearby, as their last announcement described them: one entry per signing key,
/// whichever transports it was heard on (the LAN, a broker, both).
package struct Peer: Equatable, Sendable {
    package init(signingKey: Data, announcement: Announcement, route: Route, lastSeen: Double, isKept: Bool = false) {
        self.signingKey = signingKey
        self.announcement = announcement
        self.routes = [PeerRoute(source: route, lastSeen: lastSeen, interval: PresenceTable.interval(of: announcement), isKept: isKept)]
        self.lastSeen = lastSeen
        self.newest = Freshness(timestamp: 0, sequence: 0)
    }

    package var signingKey: Data
    package var announcement: Announcement
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
    package var fingerprint: String { PeerIdentity.fingerprint(of: signingKey) }
    package var handle: String { PeerIdentity.handle(name: name, signingKey: signingKey) }

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

/// Everyone heard from, kept from announcements and goodbyes. Everything in it came from the
/// network, so it is bounded: at most `capacity` peers (a newcomer evicts the stalest peer heard
/// only once, else the stalest of all), an advertised interval of at most `maximumInterval`,
/// and replay memory for departed keys that outlives their departure (`retiredCapacity` keys).
package struct PresenceTable: Sendable {
    package let timing: PresenceTiming
    package let capacity: Int
    package private(set) var peers: [Data: Peer] = [:]
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
            nextExpiry = min(nextExpiry, now + timing.lifetime(ofInterval: Self.interval(of: announcement)))
            guard let known else { return events + [.arrived(peer)] }
            var old = known.announcement, new = announcement
            old.intervalMilliseconds = 0; new.intervalMilliseconds = 0
            old.unicastPort = 0; new.unicastPort = 0
            return old == new ? [] : [.changed(from: known, to: peer)]
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

extension Route {
    /// The address without its port (every socket of a host sends from the same address), or
    /// all of it when it has none (a broker's topic).
    var host: Substring {
        guard let colon = address.lastIndex(of: ":"), address[address.index(after: colon)...].allSatisfy(\.isNumber) else {
            return address[...]
        }
        return address[..<colon]
    }
}

/// Which of two packets from one sender is newer: timestamp first, then sequence number.
struct Freshness: Comparable, Sendable {
    var timestamp: UInt64
    var sequence: UInt32

    static func < (a: Freshness, b: Freshness) -> Bool { (a.timestamp, a.sequence) < (b.timestamp, b.sequence) }
}
