import Foundation
import Synchronization

/// The transports' threads: every datagram's checks before its signature (some 80 µs of CPU
/// each; dropping is all a forged header can get), and what is let through handed to the
/// engine as an `Arrival`. It knows our own broadcasts coming back, since when we are online,
/// whether another seance in our name was heard, which keys' refreshes reach us on time (their
/// answers to others' queries tell us nothing), the keys blocked, and the flood limits
/// (`FloodLimits`). The engine keeps it up to date; the lock is held for no I/O and nothing else.
final class Gate: Sendable {
    /// What the gate lets through to the engine.
    enum Arrival: Sendable {
        /// A signed frame, its signature checked.
        case packet(Packet, Route)
        /// A frame of version 3 (a handshake message or a sealed frame), for the sessions.
        case session([UInt8], Route)
        /// A direct kind signed, as an older seance sends them: never worth its signature.
        case older(Data)
        /// The flood limits dropped something for the first time, from this source.
        case flooded(String)
        case news(NetworkNews)
        /// A frame sealed to us (`Envelope`), from a broker: the engine, which holds the keys,
        /// opens it and hands what it holds back here.
        case envelope([UInt8], Route)
    }

    private struct State {
        /// Every broadcast we made online, as its sequence and timestamp, and since when (ms):
        /// what in our name we did not send is another seance's.
        var ownBroadcasts = OwnBroadcasts()
        var onlineSince: UInt64 = 0
        var alsoOnlineElsewhere = false
        var limits: FloodLimits
        /// Until when each present key's refreshes on each transport are on time.
        var onTime: [Data: [String: Double]] = [:]
        /// Drops decided here, by reason, and answers skipped.
        var dropped: [String: Int] = [:]
        var redundant = 0, repeats = 0
        /// The sources the flood limits dropped most from (a bounded few), and whether the
        /// user was told.
        var flooders = Flooders()
        /// Keys the user blocked: every frame in their name is dropped first, unread; how
        /// many of those were room beacons (a room they host cannot be joined: `room listen`
        /// says so).
        var blocked: Set<Data> = []
        var blockedBeacons = 0
        /// Mail's signature checks, all senders together (`mailBudget`).
        var mail: TokenBucket
    }

    /// Mail comes through the broker's inbox, which anyone may publish to, and a reader coming
    /// back is handed everything held at once (up to 1,000 fragments from each writer, in as
    /// many frames as they were mailed in): it has a budget of its own, large enough for that,
    /// which bounds what forged mail costs, rather than a host's or a key's allowance, which
    /// held mail would overrun. A flood of forged mail can still take the budget from real mail
    /// for as long as it lasts (the next stage's topics, which only the pair knows, end that).
    static let mailBudget = (rate: 200.0, burst: 4_000.0)

    private let state: Mutex<State>

    /// Our signing key, raw: every datagram's sender is compared with it.
    private let myKey: Data

    /// The transports that hold mail (brokers): the only ones an envelope may come by.
    let brokers: Set<String>

    init(myKey: Data, brokers: Set<String> = [], limits: FloodLimits.Settings = FloodLimits.Settings(), now: Double) {
        self.myKey = myKey
        self.brokers = brokers
        state = Mutex(State(limits: FloodLimits(settings: limits, now: now),
                            mail: TokenBucket(rate: Self.mailBudget.rate, burst: Self.mailBudget.burst, now: now)))
    }

    func cameOnline(at milliseconds: UInt64) { state.withLock { $0.onlineSince = milliseconds } }

    func sent(sequence: UInt32, timestamp: UInt64) { state.withLock { $0.ownBroadcasts.insert(sequence: sequence, timestamp: timestamp) } }

    /// The engine accepted `key`'s announcement by `transport` (`refresh`: on a transport that
    /// refreshes presence, so its next one is due an interval later; nil for an answer or a
    /// broker's kept copy): the key is known, and until its next refresh is due its answers to
    /// others' queries tell us nothing.
    func accepted(_ key: Data, on transport: String, packet: Packet, interval: Double, isRefresh: Bool, now: Double) {
        state.withLock { state in
            state.limits.accepted(key, transport: transport, interval: interval, payload: FloodLimits.hash(packet.body[...]),
                                  timestamp: packet.timestamp, sequence: packet.sequence, isRefresh: isRefresh, now: now)
            if isRefresh { state.onTime[key, default: [:]][transport] = now + interval * 1.5 }
        }
    }

    /// A refresh proof of `key`'s by `transport` was accepted: as a refresh, its answers to
    /// others' queries tell us nothing until its next one is due.
    func proved(_ key: Data, on transport: String, interval: Double, now: Double) {
        state.withLock { $0.onTime[key, default: [:]][transport] = now + interval * 1.5 }
    }

    func forget(_ key: Data) {
        state.withLock { state in
            state.onTime[key] = nil
            state.limits.forget(key)
        }
    }

    func block(_ keys: Set<Data>) { state.withLock { $0.blocked = keys } }

    /// Whether a frame (of kind `type`) in `sender`'s name is dropped because the user blocked
    /// the key (counted).
    func dropsBlocked(_ sender: some Sequence<UInt8>, type: UInt8? = nil) -> Bool {
        state.withLock { state in
            // Nobody blocked (the usual case): no copy of the key for every datagram.
            guard !state.blocked.isEmpty, state.blocked.contains(Data(sender)) else { return false }
            state.dropped["blocked", default: 0] += 1
            if type == KindTable.beacon { state.blockedBeacons += 1 }
            return true
        }
    }

    var blockedBeacons: Int { state.withLock { $0.blockedBeacons } }

    /// Whether `key` is in the table (an announcement of it was accepted).
    func knows(_ key: Data) -> Bool { state.withLock { $0.limits.isKnown(key) } }

    /// An answer to someone's query from a key whose refreshes reach us on time anyway: skipped
    /// (and counted) when true.
    func isRedundant(_ key: ArraySlice<UInt8>, on transport: String, now: Double) -> Bool {
        state.withLock { state in
            guard let until = state.onTime[Data(key)]?[transport], now <= until else { return false }
            state.redundant += 1
            return true
        }
    }

    /// Whether a frame that needs its signature checked (or a handshake message) is within
    /// the flood limits; when not, it is counted, by reason and by source, and the first time
    /// a limit drops anything the source is named (the user is told once).
    private func admit(sender: Data, from route: Route, refresh: (timestamp: UInt64, sequence: UInt32, payload: Int)?,
                       claim: FloodLimits.Claim = .signed, now: Double) -> (admitted: Bool, firstFlood: String?) {
        let source = Self.source(of: route)
        return state.withLock { state in
            guard let reason = state.limits.admit(sender: sender, source: source, transport: route.transport, refresh: refresh,
                                                  claim: claim, now: now) else {
                return (true, nil)
            }
            // A repeat is no flood (the start-up's second announcement is one): skipped, as
            // answers meant for others are, and nobody named.
            guard reason != .duplicate, reason != .tooSoon else {
                state.repeats += 1
                return (false, nil)
            }
            state.dropped[reason.rawValue, default: 0] += 1
            return (false, state.flooders.count(source))
        }
    }

    /// Which host a route's datagrams come from: the LAN's address without its port (every
    /// shell of a host multicasts from the same one), a broker's topic as it is.
    static func source(of route: Route) -> String { route.transport + " " + route.host }

    /// Whether a datagram in our name is worth its signature check: not one we sent, made since
    /// we came online, and nobody else in our name heard yet.
    func isUnknownOurs(_ header: UncheckedHeader) -> Bool {
        state.withLock { state in
            guard !state.alsoOnlineElsewhere, !state.ownBroadcasts.contains(sequence: header.sequence, timestamp: header.timestamp) else {
                return false
            }
            // Counted (`nearby stats`): a copy of this profile whose frames all predate our
            // coming online is never told of here, and this says why.
            guard header.timestamp >= state.onlineSince else {
                state.dropped["in our name, made before we came online", default: 0] += 1
                return false
            }
            return true
        }
    }

    /// True the first time another seance in our name is heard.
    func heardOursElsewhere() -> Bool {
        state.withLock { state in
            defer { state.alsoOnlineElsewhere = true }
            return !state.alsoOnlineElsewhere
        }
    }

    /// Adds what was decided here to the engine's counts.
    func add(to statistics: inout NearbyStatistics) {
        let (dropped, redundant, repeats, flooders) = state.withLock { ($0.dropped, $0.redundant, $0.repeats, $0.flooders.worst) }
        statistics.dropped.merge(dropped, uniquingKeysWith: +)
        statistics.redundant += redundant
        statistics.repeats += repeats
        statistics.flooders = flooders
    }

    // MARK: On a transport's thread

    /// A datagram from a transport: only the checks of the frame and its signature; what passes
    /// goes to the engine. Two kinds of datagram are dropped before their signature is checked:
    /// our own, looped back by multicast, and answers to someone else's query from peers we
    /// hear anyway — in a crowd of *n* every arrival brings each of the others *n* of them.
    /// `prepaid`: what an envelope held, whose key agreement was paid from mail's budget.
    func receive(_ bytes: [UInt8], from route: Route, now: Double, prepaid: Bool = false) -> Arrival? {
        // Nothing at all: a presence withdrawn, from a transport that keeps presence.
        if bytes.isEmpty { return .news(.withdrawn(route)) }
        // Session frames carry no signature: the engine, which holds the sessions, opens them.
        // A handshake message costs key agreements: the flood limits first.
        if bytes.count > 5, bytes[4] == SessionWire.version, bytes[0..<4].elementsEqual(Wire.magic) {
            // An envelope costs a key agreement, whoever it claims to be from: mail's budget (it
            // holds mail, or a handshake message, which has its own limits too).
            if bytes[5] == KindTable.envelope {
                guard !prepaid else { return drop(DecodeError.malformedPayload("envelope").counterName) }
                // Only a broker carries them: one on the LAN spends nothing of mail's budget.
                guard brokers.contains(route.transport) else { return drop("envelope not by a broker") }
                guard bytes.count <= Wire.maximumMail + Envelope.overhead else { return drop(DecodeError.oversized.counterName) }
                guard state.withLock({ $0.mail.take(now: now) }) else { return drop("flood: mail's budget") }
                return .envelope(bytes, route)
            }
            guard bytes.count <= Wire.maximumDatagram else { return drop(DecodeError.oversized.counterName) }
            if bytes[5] == KindTable.refreshProof { return receiveProof(bytes, from: route, now: now) }
            if bytes[5] == KindTable.handshake, bytes.count >= HandshakeFrame.headerSize {
                let sender = Data(bytes[8..<40])
                guard !dropsBlocked(sender) else { return nil }
                // Only announced peers get an answer (the engine checks the key it proves): a
                // stranger's message goes without touching anyone's allowance.
                guard knows(sender) else { return drop(SessionTable.HandshakeError.unannounced.counterName) }
                let (admitted, flooder) = admit(sender: sender, from: route, refresh: nil, claim: .unverified, now: now)
                guard admitted else { return flooder.map(Arrival.flooded) }
            }
            return .session(bytes, route)
        }
        if let header = UncheckedHeader(bytes) {
            // Someone the user blocked: nothing of theirs is read, answered or checked.
            guard !dropsBlocked(header.sender, type: header.type) else { return nil }
            if header.sender.elementsEqual(myKey) {
                // Our own mail, which anyone on the broker could publish back to us, tells nothing.
                return KindTable.signedDirect.contains(header.type) ? nil : receiveInOurName(header, bytes, from: route)
            }
            if header.flags.contains(.answer), header.type == KindTable.announce,
               isRedundant(header.sender, on: route.transport, now: now) { return nil }
            // A direct kind of the days before sessions, signed: an older seance's (or a
            // forgery). Never worth its signature.
            if header.type < KindTable.handshake, !KindTable.broadcasts.contains(header.type) { return .older(Data(header.sender)) }
            // Mail is held by a broker, not of its moment (delivery reads its week), and has a
            // budget of its own (`mailBudget`).
            if KindTable.signedDirect.contains(header.type) {
                guard prepaid || state.withLock({ $0.mail.take(now: now) }) else { return drop("flood: mail's budget") }
                return decode(bytes, route)
            }
            // A broadcast other than an announcement is of its moment: one stamped far from our
            // clock is a replay (or a forgery) whatever its signature says.
            if header.type != KindTable.announce {
                let age = now - Double(header.timestamp) / 1000
                if abs(age) > FrameTime.allowance { return drop(age < 0 ? "from the future" : "stale") }
            }
            let end = min(bytes.count, Wire.headerSize + header.payloadLength)
            let refresh = header.type == KindTable.announce && !header.flags.contains(.answer)
                ? (header.timestamp, header.sequence, FloodLimits.hash(bytes[Wire.headerSize..<end])) : nil
            let (admitted, flooder) = admit(sender: Data(header.sender), from: route, refresh: refresh, now: now)
            guard admitted else { return flooder.map(Arrival.flooded) }
        }
        return decode(bytes, route)
    }

    /// A signed frame checked (its signature last); one that proves false gives back what it
    /// took of its key's allowance.
    private func decode(_ bytes: [UInt8], _ route: Route) -> Arrival? {
        do {
            return .packet(try Packet.decode(bytes), route)
        } catch {
            if let header = UncheckedHeader(bytes) { refund(Data(header.sender)) }
            return drop(error.counterName)
        }
    }

    /// A frame admitted in `key`'s name proved false: the key's token comes back.
    private func refund(_ key: Data) { state.withLock { $0.limits.refund(key) } }

    /// A refresh proof: no signature to check, but a visit to the engine and a few hashes
    /// there, so blocked keys, our own (looped back) and the flood limits first.
    private func receiveProof(_ bytes: [UInt8], from route: Route, now: Double) -> Arrival? {
        let proof: RefreshProof
        do {
            proof = try RefreshProof(decoding: bytes)
        } catch {
            return drop(error.counterName)
        }
        guard proof.sender != myKey, !dropsBlocked(proof.sender) else { return nil }
        let (admitted, flooder) = admit(sender: proof.sender, from: route, refresh: nil, claim: .unverified, now: now)
        guard admitted else { return flooder.map(Arrival.flooded) }
        return .news(.proof(proof, route))
    }

    /// A datagram in our own name: our own broadcast, looped back by multicast or by a broker
    /// (its retained presence, after a reconnection; a replay), a forgery — or this profile
    /// online in another seance, from a copy of its data (the lock file sees one machine only).
    /// Only a datagram we did not send, made since we came online, is worth its signature check;
    /// a valid one is the other seance's.
    private func receiveInOurName(_ header: UncheckedHeader, _ bytes: [UInt8], from route: Route) -> Arrival? {
        guard isUnknownOurs(header) else { return nil }
        do {
            _ = try Packet.decode(bytes)
        } catch {
            return drop(error.counterName)
        }
        guard heardOursElsewhere() else { return nil }
        return .news(.oursElsewhere(transport: route.transport))
    }

    /// Counts a datagram dropped here, by reason: nothing goes to the engine.
    private func drop(_ reason: String) -> Arrival? {
        state.withLock { $0.dropped[reason, default: 0] += 1 }
        return nil
    }
}
