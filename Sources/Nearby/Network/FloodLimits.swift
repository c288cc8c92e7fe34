import Foundation

/// A token bucket: `rate` tokens a second, at most `burst` at once, full to begin with.
package struct TokenBucket: Sendable, Equatable {
    package let rate: Double
    package let burst: Double
    private var tokens: Double
    private var updated: Double

    package init(rate: Double, burst: Double, now: Double) {
        self.rate = rate
        self.burst = burst
        tokens = burst
        updated = now
    }

    /// How full it is at `now`, from 0 to 1.
    package mutating func level(now: Double) -> Double {
        refill(now)
        return tokens / burst
    }

    /// Gives back a token taken for something that proved false (never past the burst).
    package mutating func giveBack() { tokens = min(burst, tokens + 1) }

    /// Takes a token if there is one.
    package mutating func take(now: Double) -> Bool {
        refill(now)
        guard tokens >= 1 else { return false }
        tokens -= 1
        return true
    }

    private mutating func refill(_ now: Double) {
        guard now > updated else { return }
        tokens = min(burst, tokens + (now - updated) * rate)
        updated = now
    }
}

/// What a signed datagram must pass before its signature is checked (some 80 µs of CPU each):
/// limits that cost a dictionary lookup, sized from what honest peers send under the crowd
/// rules, so that one host on the link cannot make everyone check signatures for it, and a
/// crowd of honest peers never meets them. As WireGuard limits handshakes per source and DNS
/// servers limit responses per source, and as mDNS suppresses what is known already:
///
/// | limit | on | allows | an honest peer sends |
/// |---|---|---|---|
/// | per source (host) | every signed frame, every handshake message and refresh proof | 20 a second, 60 at once | a refresh every 5 s or more (every 0.2 s at the quickest the tests set), answers 4 a second at most, a beacon a second per room |
/// | per known key | every signed frame in its name, given back when its signature fails | 16 a second, 32 at once | the same, from one key |
/// | per source and known key | every frame in its name that proves nothing until later (a handshake message, a refresh proof) | 16 a second, 32 at once | the same, from one key on its own host |
/// | refresh too soon | an unchanged announcement of a known key, not an answer | none before 0.7 of its interval | its next refresh 0.8–1.2 intervals later |
/// | new keys | frames of keys not in the table, all sources together | 1,000 a second, 2,000 at once | one announcement each; a newcomer hears a crowd of 500 answer within half a second, a broker hands a site of 1,000 at once |
///
/// The new keys' budget is shared fairly: its last half goes only to sources that have not
/// spent their own allowance, so a flooding host (whatever its keys) leaves room for an honest
/// newcomer. A frame that proves nothing spends nothing an honest frame needs: one whose claim
/// of a key is checked only later (or never) is charged to where it comes from, its source and
/// the pair of source and key, never to the key's own allowance; and a signed frame whose
/// signature fails gives the key's token back (`refund`). Someone on another host who knows a
/// friend's key cannot silence the friend. Everything here is bounded: at most
/// `maximumSources` sources and pairs, and the table's keys.
package struct FloodLimits: Sendable {
    package struct Settings: Sendable {
        package var sourceRate = 20.0, sourceBurst = 60.0
        package var keyRate = 16.0, keyBurst = 32.0
        package var newKeyRate = 1_000.0, newKeyBurst = 2_000.0
        /// The share of the new keys' budget kept for sources that have not spent their own.
        package var reserved = 0.5
        /// An unchanged refresh earlier than this share of its interval is dropped (the
        /// jitter brings it no earlier than 0.8).
        package var earliestRefresh = 0.7
        package var maximumSources = 4_096
        package init() {}
    }

    /// Why a datagram was dropped unchecked, as `nearby stats` counts it (a repeat, which an
    /// honest peer sends too, as skipped).
    package enum Reason: String, Sendable, CaseIterable {
        case source = "flood: a host's allowance"
        case key = "flood: a key's allowance"
        case pair = "flood: a key's allowance from one host"
        case newKeys = "flood: new keys' budget"
        case tooSoon = "refresh too soon"
        case duplicate = "duplicate"
    }

    /// What the engine accepted last of a key on one transport: its announcement refreshes
    /// there.
    struct Refresh: Sendable {
        var at: Double
        var interval: Double
        var payload: Int
        var timestamp: UInt64
        var sequence: UInt32
    }

    struct KnownKey: Sendable {
        var allowance: TokenBucket
        var refreshes: [String: Refresh] = [:]
    }

    /// What a frame proves of the key it claims as it comes in.
    package enum Claim: Sendable {
        /// Signed: checked right after it is admitted; refused, it gives its token back.
        case signed
        /// Nothing yet: a handshake message (the key is proved by its third step) or a refresh
        /// proof (checked against the chain on the engine).
        case unverified
    }

    struct Pair: Hashable {
        var source: String
        var key: Data
    }

    package let settings: Settings
    private var sources: [String: TokenBucket] = [:]
    private var pairs: [Pair: TokenBucket] = [:]
    private var newKeys: TokenBucket
    private var keys: [Data: KnownKey] = [:]

    package init(settings: Settings = Settings(), now: Double) {
        self.settings = settings
        newKeys = TokenBucket(rate: settings.newKeyRate, burst: settings.newKeyBurst, now: now)
    }

    /// A frame from `sender`, by `transport`, from `source` (its host), that claims its key as
    /// `claim` says: nil to check it, else why it is dropped unchecked. `refresh` describes an
    /// announcement that is no answer to a query: its time, sequence and payload's hash.
    package mutating func admit(sender: Data, source: String, transport: String,
                                refresh: (timestamp: UInt64, sequence: UInt32, payload: Int)?, claim: Claim = .signed,
                                now: Double) -> Reason? {
        if var known = keys[sender] {
            if let refresh, let last = known.refreshes[transport] {
                // The same again, or an older one (captured and replayed): nothing new to check.
                if (refresh.timestamp, refresh.sequence) <= (last.timestamp, last.sequence) { return .duplicate }
                if now < last.at + last.interval * settings.earliestRefresh, refresh.payload == last.payload { return .tooSoon }
            }
            // Its source first: what its own host may not send spends nothing of the key's.
            guard takeFromSource(source, now: now) else { return .source }
            switch claim {
            case .signed:
                guard known.allowance.take(now: now) else { return .key }
                keys[sender] = known
            case .unverified:
                guard takeFromPair(Pair(source: source, key: sender), now: now) else { return .pair }
            }
            return nil
        }
        var host = sources[source] ?? TokenBucket(rate: settings.sourceRate, burst: settings.sourceBurst, now: now)
        // A source that has spent half its own allowance gets only the unreserved part.
        let thrifty = host.level(now: now) >= 0.5
        guard host.take(now: now) else {
            keep(source, host)
            return .source
        }
        keep(source, host)
        guard thrifty || newKeys.level(now: now) > settings.reserved else { return .newKeys }
        return newKeys.take(now: now) ? nil : .newKeys
    }

    /// The engine accepted an announcement of `key` by `transport` (`isRefresh`: not an answer,
    /// so it says when the next one is due): the key is known from now on.
    package mutating func accepted(_ key: Data, transport: String, interval: Double, payload: Int, timestamp: UInt64, sequence: UInt32,
                                   isRefresh: Bool, now: Double) {
        var known = keys[key] ?? KnownKey(allowance: TokenBucket(rate: settings.keyRate, burst: settings.keyBurst, now: now))
        if isRefresh {
            known.refreshes[transport] = Refresh(at: now, interval: interval, payload: payload, timestamp: timestamp, sequence: sequence)
        }
        keys[key] = known
    }

    /// A payload's hash, to tell an unchanged refresh from a change without reading it.
    package static func hash(_ payload: ArraySlice<UInt8>) -> Int {
        var hasher = Hasher()
        payload.withUnsafeBytes { hasher.combine(bytes: $0) }
        return hasher.finalize()
    }

    /// A signed frame admitted in `key`'s name did not verify: the key's token comes back, so
    /// that forgeries spend nothing of the key's own allowance.
    package mutating func refund(_ key: Data) { keys[key]?.allowance.giveBack() }

    /// The key left the table.
    package mutating func forget(_ key: Data) { keys[key] = nil }

    package func isKnown(_ key: Data) -> Bool { keys[key] != nil }

    private mutating func takeFromPair(_ pair: Pair, now: Double) -> Bool {
        var bucket = pairs[pair] ?? TokenBucket(rate: settings.keyRate, burst: settings.keyBurst, now: now)
        defer {
            if pairs[pair] == nil, pairs.count >= settings.maximumSources, let any = pairs.keys.first { pairs[any] = nil }
            pairs[pair] = bucket
        }
        return bucket.take(now: now)
    }

    private mutating func takeFromSource(_ source: String, now: Double) -> Bool {
        var host = sources[source] ?? TokenBucket(rate: settings.sourceRate, burst: settings.sourceBurst, now: now)
        defer { keep(source, host) }
        return host.take(now: now)
    }

    /// Keeps a source's bucket; past the bound, one is forgotten (it comes back full: only ever
    /// in a source's favour, so an attacker who cycles sources gains nothing a new one had not).
    private mutating func keep(_ source: String, _ bucket: TokenBucket) {
        if sources[source] == nil, sources.count >= settings.maximumSources, let any = sources.keys.first { sources[any] = nil }
        sources[source] = bucket
    }
}
