import Foundation
import Synchronization

/// Where a packet came from, or goes: which transport, and an address only that transport
/// understands. Above the transports only its host is read, to know what came from one host.
package struct Route: Hashable, Sendable, CustomStringConvertible {
    package let transport: String
    package let address: String

    package init(transport: String, address: String) {
        self.transport = transport
        self.address = address
    }

    package var description: String { transport + ":" + address }

    /// The address split at its last colon (an IPv6 host has colons of its own) when what
    /// follows is a port: a socket's address. A broker's topic has none.
    package var hostAndPort: (host: Substring, port: UInt16)? {
        // By bytes: by characters (a `Character`'s `isNumber` asks Unicode's tables) it was some
        // 6,000 instructions, asked for every broadcast received.
        let bytes = address.utf8
        guard let colon = bytes.lastIndex(of: UInt8(ascii: ":")) else { return nil }
        let digits = bytes[bytes.index(after: colon)...]
        guard (1...5).contains(digits.count), digits.allSatisfy({ $0 >= UInt8(ascii: "0") && $0 <= UInt8(ascii: "9") }) else { return nil }
        let port = digits.reduce(0) { $0 * 10 + Int($1 - UInt8(ascii: "0")) }
        guard port <= Int(UInt16.max) else { return nil }
        return (address[..<colon], UInt16(port))
    }

    /// The address without its port (every socket of a host sends from the same address), or
    /// all of it when it has none.
    package var host: Substring { hostAndPort?.host ?? address[...] }
}

/// Whether a transport can carry anything just now.
package enum TransportState: Equatable, Sendable {
    case up
    /// Why not: said to the user once, when it happens.
    case down(String)
}

/// What a broadcast frame is to a transport; the LAN treats them all alike.
package enum BroadcastKind: Sendable {
    /// Who we are now: the latest one stands for us until replaced (a broker retains it).
    case presence
    /// We are leaving: what stood for us is withdrawn.
    case farewell
    /// "Who is there?": needless where presence is kept for late comers.
    case question
    /// A frequent broadcast with a topic of its own (`rooms/7.42`): a broker carries it there,
    /// never retained, to those subscribed (`subscribe(topic:)`); the LAN carries it to all.
    case topic(String)
    case other
}

/// Moves signed frames, and nothing else: the LAN's sockets, a broker, or memory in tests.
/// Its thread hands each datagram to `deliver` and returns; all meaning is decided elsewhere.
package protocol Transport: AnyObject, Sendable, CustomStringConvertible {
    /// A short name for routes and `nearby`: `lan`, `broker`, `memory`.
    var name: String { get }
    /// Opens whatever it needs, without waiting on the network; `deliver` is called (on the
    /// transport's own thread) with each datagram and the route it came from, `report` when the
    /// transport becomes usable or stops being (a broker lost, no interface joined). Throws only
    /// for what trying again cannot fix (a bad setting, no interface at all).
    func start(deliver: @escaping @Sendable ([UInt8], Route) -> Void, report: @escaping @Sendable (TransportState) -> Void) throws
    /// To everyone in range (multicast, a topic, every other memory transport). `kind` lets a
    /// transport that keeps state for late comers (a broker's retained presence) keep the
    /// right frames.
    func broadcast(_ bytes: [UInt8], as kind: BroadcastKind)
    /// To one route. True when it went out (on the wire, or to the broker's client); false
    /// when it could not (no connection, no socket): then nothing left this machine.
    @discardableResult
    func send(_ bytes: [UInt8], to route: Route) -> Bool
    /// The port peers send direct packets to, as announced (0 when the transport needs none).
    var directPort: UInt16 { get }
    /// Whether it keeps each sender's latest `.presence` for late comers and withdraws it when
    /// the sender goes (a broker's retained announcement and will): then presence is published
    /// there when it changes, never refreshed, and a withdrawal arrives as an empty datagram
    /// on the route the sender's presence came by.
    var keepsPresence: Bool { get }
    /// The route of a peer's direct packets, from the route its announcement came by, the port
    /// it announced and its signing key (what each transport needs of them differs).
    func directRoute(from source: Route, port: UInt16, signingKey: Data) -> Route
    /// The address a TCP connection reaches the sender of `route` at, when this transport's
    /// peers are hosts of one network (the LAN's); nil otherwise (a broker's).
    func streamHost(of route: Route) -> String?
    /// Broadcasts on `topic` are wanted (a filter: `rooms/+` is every room's): a broker
    /// subscribes to it only then, and again on reconnecting. The LAN hears everything anyway.
    func subscribe(topic: String)
    /// No longer wanted.
    func unsubscribe(topic: String)
    /// The topics (`BrokerTopics`) whose frames are ours, on a transport that keeps presence (a
    /// broker): its mailbox subscribes to them, in a session the broker keeps while we are away,
    /// and no longer to `forgetting` (subscribed to before, perhaps by an earlier run). Elsewhere
    /// nothing: the LAN hears what is sent to us without being told.
    func setInbox(topics: Set<String>, forgetting: Set<String>)
    /// How the inbox's subscriptions stand with the broker (`nearby stats`); nil where there is
    /// no inbox to subscribe (the LAN).
    var inboxStatus: InboxStatus? { get }
    /// Closes everything `start` opened. Safe to call twice.
    func stop()
}

extension Transport {
    package var inboxStatus: InboxStatus? { nil }
}

/// A mailbox's subscriptions as its broker stands on them: what is held for us while we are away
/// is held only on topics the broker has taken.
package struct InboxStatus: Sendable, Equatable {
    /// Topics wanted.
    package var topics = 0
    /// Of those, not yet taken by the broker (asked and unanswered, or refused and asked again).
    package var waiting = 0
    /// Subscriptions the broker refused so far (each asked again).
    package var refusals = 0

    package init(topics: Int = 0, waiting: Int = 0, refusals: Int = 0) {
        (self.topics, self.waiting, self.refusals) = (topics, waiting, refusals)
    }

    /// Several transports' together.
    package static func + (a: InboxStatus, b: InboxStatus) -> InboxStatus {
        InboxStatus(topics: a.topics + b.topics, waiting: a.waiting + b.waiting, refusals: a.refusals + b.refusals)
    }
}

/// A network in memory for tests: every transport made on it hears the others' broadcasts,
/// and gets what is sent to its address. Delivery is synchronous, on the sender's thread.
/// One made to keep presence behaves as a broker does: each member's latest `.presence` is
/// retained and handed to whoever joins later, questions are not carried, and a member's
/// presence is withdrawn (an empty datagram to everyone) by its farewell or, when it leaves
/// without one, as its will.
package final class MemoryNetwork: Sendable {
    private let members = Mutex<[String: @Sendable ([UInt8], Route) -> Void]>([:])
    package let keepsPresence: Bool
    /// Each member's latest presence, by address (when the network keeps presence).
    private let retained = Mutex<[String: (bytes: [UInt8], transport: String)]>([:])
    /// Whom to tell that a member is cut off, or back.
    private let reports = Mutex<[String: @Sendable (TransportState) -> Void]>([:])
    /// Datagrams that did not arrive (for tests that lose some): called for each; true drops it.
    private let loss = Mutex<(@Sendable ([UInt8]) -> Bool)?>(nil)
    /// Members that carry nothing just now, either way (a broker that is down).
    private let down = Mutex<Set<String>>([])
    private let fate = Mutex<(@Sendable ([UInt8]) -> Fate)?>(nil)
    /// Datagrams held back, to arrive after the next one.
    private let held = Mutex<[(bytes: [UInt8], address: String, transport: String, target: String?, anonymous: Bool)]>([])
    /// Which datagrams wait in `kept` until a test lets them go (`take`, `let`), and those waiting.
    private let keeping = Mutex<(@Sendable ([UInt8]) -> Bool)?>(nil)
    private let kept = Mutex<[Datagram]>([])
    /// On a network that keeps presence, as a broker: each member's inbox by its signing key
    /// (`inbox(of:)`, to the member's address), the topics each inbox is subscribed to (which
    /// outlive the member's visit, as a persistent session's), and what came to an inbox while
    /// its member was away or down, held until it is back (the session's queue), at most
    /// `mailboxLimit` each, as mosquitto's `max_queued_messages`.
    private let inboxes = Mutex<[String: String]>([:])
    private let subscribers = Mutex<[String: Set<String>]>([:])
    private let mailboxes = Mutex<[String: [(bytes: [UInt8], transport: String)]]>([:])
    package static let mailboxLimit = 1_000
    /// Every topic a frame was published on, and its size as published, in order (the broker's
    /// log, for tests of what it learns).
    private let published = Mutex<[(topic: String, size: Int)]>([])
    package var publications: [(topic: String, size: Int)] { published.withLock { $0 } }

    /// How many datagrams the inbox of `key` holds for its member, away (tests).
    package func held(for key: Data) -> Int { heldDatagrams(for: key).count }

    /// What the inbox of `key` holds for its member, away (tests: a recording of it).
    package func heldDatagrams(for key: Data) -> [[UInt8]] { mailboxes.withLock { $0[Self.inbox(of: key)]?.map(\.bytes) ?? [] } }

    /// The address of the inbox of the member whose signing key is `key`.
    package static func inbox(of key: Data) -> String { "inbox:" + key.map { String(format: "%02x", $0) }.joined() }

    package init(keepsPresence: Bool = false) { self.keepsPresence = keepsPresence }

    package func setLoss(_ drop: (@Sendable ([UInt8]) -> Bool)?) { loss.withLock { $0 = drop } }

    /// What befalls a datagram on a network that misbehaves (tests): it arrives, is lost, arrives
    /// twice, or is held back and arrives after the next one (reordered).
    package enum Fate: Sendable { case arrives, lost, twice, late }

    /// Decides each datagram's fate (nil: every one arrives, once, in order).
    package func setFate(_ decide: (@Sendable ([UInt8]) -> Fate)?) { fate.withLock { $0 = decide } }

    /// The member at `address` carries nothing while down: what it sends does not leave (its
    /// `send` says so), and nothing reaches it. Its transport is told, as a broker's is; back
    /// up on a network that keeps presence, it is handed every presence kept again.
    /// A datagram on its way: its bytes, who sent it by which transport, and to whom (nil: to
    /// everyone).
    package struct Datagram: Sendable {
        package let bytes: [UInt8]
        package let from: String
        package let transport: String
        package let to: String?
        /// Published on a broker's topic: it arrives from nobody anyone can tell.
        package var anonymous = false
    }

    /// From now on the datagrams `which` picks (nil: none) are kept on their way, in the order
    /// sent, until the test takes them (`take`) and perhaps lets them go (`deliver`): a test's
    /// hand on what arrives, and when, and in which order.
    package func keep(_ which: (@Sendable ([UInt8]) -> Bool)?) { keeping.withLock { $0 = which } }

    /// The datagrams kept so far for `address` (every one for nil), taken out, oldest first.
    package func take(to address: String? = nil) -> [Datagram] {
        kept.withLock { kept in
            let taken = kept.filter { address == nil || $0.to == address }
            kept.removeAll { address == nil || $0.to == address }
            return taken
        }
    }

    /// Lets datagrams taken earlier go on, in the order given.
    package func deliver(_ datagrams: [Datagram]) {
        for datagram in datagrams {
            deliver(datagram.bytes, from: datagram.from, by: datagram.transport, to: datagram.to, fromNonMember: true, anonymous: datagram.anonymous)
        }
    }

    package func setDown(_ address: String, _ isDown: Bool) {
        guard down.withLock({ isDown ? $0.insert(address).inserted : $0.remove(address) != nil }) else { return }
        reports.withLock { $0[address] }?(isDown ? .down("\(address) is cut off") : .up)
        if !isDown, let deliver = members.withLock({ $0[address] }) {
            handRetained(to: address, deliver)
            handHeld(to: address, deliver)
        }
    }

    func join(_ address: String, inbox: String? = nil, deliver: @escaping @Sendable ([UInt8], Route) -> Void,
              report: @escaping @Sendable (TransportState) -> Void = { _ in }) {
        members.withLock { $0[address] = deliver }
        reports.withLock { $0[address] = report }
        if let inbox, keepsPresence { inboxes.withLock { $0[inbox] = address } }
        handRetained(to: address, deliver)
        handHeld(to: address, deliver)
    }

    /// What the inboxes of `address` held while it was away, oldest first (from a topic: no
    /// sender's address).
    private func handHeld(to address: String, _ deliver: @Sendable ([UInt8], Route) -> Void) {
        let boxes = inboxes.withLock { $0.filter { $0.value == address }.map(\.key) }
        for box in boxes {
            for mail in mailboxes.withLock({ $0.removeValue(forKey: box) ?? [] }) { deliver(mail.bytes, Route(transport: mail.transport, address: "")) }
        }
    }

    /// The topics the mailbox of the member whose signing key is `key` listens on (tests).
    package func listening(to key: Data) -> Set<String> {
        let inbox = Self.inbox(of: key)
        return Set(subscribers.withLock { $0.filter { $0.value.contains(inbox) }.keys })
    }

    /// The inbox `inbox` is subscribed to `topics` from now on, and to none of `forgetting`.
    func setInbox(_ inbox: String, topics: Set<String>, forgetting: Set<String>) {
        subscribers.withLock { subscribers in
            for topic in forgetting { subscribers[topic]?.remove(inbox) }
            for topic in topics { subscribers[topic, default: []].insert(inbox) }
        }
    }

    /// A datagram published on `topic`: the addresses of the subscribers present and up; it is
    /// held for the others.
    private func toTopic(_ bytes: [UInt8], by transport: String, topic: String) -> [String] {
        published.withLock { $0.append((topic, bytes.count)) }
        var present: [String] = []
        for inbox in subscribers.withLock({ $0[topic] ?? [] }).sorted() {
            let member = inboxes.withLock { $0[inbox] }
            if let member, members.withLock({ $0[member] != nil }), !down.withLock({ $0.contains(member) }) {
                present.append(member)
                continue
            }
            mailboxes.withLock { boxes in
                if boxes[inbox, default: []].count < Self.mailboxLimit { boxes[inbox, default: []].append((bytes, transport)) }
            }
        }
        return present
    }

    private func handRetained(to address: String, _ deliver: @Sendable ([UInt8], Route) -> Void) {
        for (from, kept) in retained.withLock({ $0 }) where from != address {
            deliver(kept.bytes, Route(transport: kept.transport, address: from))
        }
    }

    func leave(_ address: String) {
        reports.withLock { $0[address] = nil }
        guard members.withLock({ $0.removeValue(forKey: address) }) != nil else { return }
        // The will: what stood for it is withdrawn.
        if let kept = retained.withLock({ $0.removeValue(forKey: address) }) {
            deliver([], from: address, by: kept.transport, to: nil, fromNonMember: true)
        }
    }

    /// A datagram from `address`, which is no member (a host a test plays), to every member;
    /// what befalls datagrams on this network does not befall it.
    package func inject(_ bytes: [UInt8], from address: String, by transport: String) {
        deliver(bytes, from: address, by: transport, to: nil, fromNonMember: true)
    }

    /// A broadcast of `kind`: on a network that keeps presence, the latest presence is kept and
    /// a farewell withdraws it; questions go nowhere.
    @discardableResult
    func broadcast(_ bytes: [UInt8], as kind: BroadcastKind, from address: String, by transport: String) -> Bool {
        guard keepsPresence, members.withLock({ $0[address] != nil }) else { return carry(bytes, from: address, by: transport, to: nil) }
        switch kind {
        case .question: return true
        case .presence: retained.withLock { $0[address] = (bytes, transport) }
        case .farewell:
            let carried = carry(bytes, from: address, by: transport, to: nil)
            if retained.withLock({ $0.removeValue(forKey: address) }) != nil { carry([], from: address, by: transport, to: nil) }
            return carried
        default: break
        }
        return carry(bytes, from: address, by: transport, to: nil)
    }

    /// False when the sender is not on the network (stopped): nothing went. A datagram lost on
    /// the way went all the same.
    @discardableResult
    func carry(_ bytes: [UInt8], from address: String, by transport: String, to target: String?) -> Bool {
        // A stopped transport sends nothing; nor does one that is down.
        guard members.withLock({ $0[address] != nil }), !down.withLock({ $0.contains(address) }) else { return false }
        if loss.withLock({ $0 })?(bytes) == true { return true }
        if keepsPresence, let topic = target, BrokerTopics.isTopic(topic) {
            // A broker's topic: to its subscribers, sent by nobody anyone can tell.
            for member in toTopic(bytes, by: transport, topic: topic) { carry(bytes, from: address, by: transport, to: member, anonymous: true) }
            return true
        }
        return carry(bytes, from: address, by: transport, to: target, anonymous: false)
    }

    @discardableResult
    private func carry(_ bytes: [UInt8], from address: String, by transport: String, to target: String?, anonymous: Bool) -> Bool {
        if keeping.withLock({ $0 })?(bytes) == true {
            kept.withLock { $0.append(Datagram(bytes: bytes, from: address, transport: transport, to: target, anonymous: anonymous)) }
            return true
        }
        switch fate.withLock({ $0 })?(bytes) ?? .arrives {
        case .lost: return true
        case .late:
            held.withLock { $0.append((bytes, address, transport, target, anonymous)) }
            return true
        case .twice: deliver(bytes, from: address, by: transport, to: target, anonymous: anonymous)
        case .arrives: break
        }
        deliver(bytes, from: address, by: transport, to: target, anonymous: anonymous)
        for late in held.withLock({ held in defer { held = [] }; return held }) {
            deliver(late.bytes, from: late.address, by: late.transport, to: late.target, anonymous: late.anonymous)
        }
        return true
    }

    private func deliver(_ bytes: [UInt8], from address: String, by transport: String, to target: String?, fromNonMember: Bool = false,
                         anonymous: Bool = false) {
        let unreachable = down.withLock { $0 }
        let receivers = members.withLock { members -> [@Sendable ([UInt8], Route) -> Void] in
            guard members[address] != nil || fromNonMember else { return [] }
            return members.filter { $0.key != address && (target == nil || $0.key == target) && !unreachable.contains($0.key) }.map(\.value)
        }
        for deliver in receivers { deliver(bytes, Route(transport: transport, address: anonymous ? "" : address)) }
    }
}

/// One member of a `MemoryNetwork`.
package final class MemoryTransport: Transport {
    package let name: String
    package let address: String
    private let network: MemoryNetwork

    /// The signing key whose inbox this member reads, on a network that keeps presence (a broker).
    private let signingKey: Data?

    /// `name` lets a test give one shell two transports (a "lan" and a "broker") on two networks.
    package init(network: MemoryNetwork, address: String, name: String = "memory", signingKey: Data? = nil) {
        self.network = network
        self.address = address
        self.name = name
        self.signingKey = signingKey
    }

    package func start(deliver: @escaping @Sendable ([UInt8], Route) -> Void, report: @escaping @Sendable (TransportState) -> Void) throws {
        // As a broker's client: what comes on a topic (no sender's address) is padded.
        network.join(address, inbox: signingKey.map(MemoryNetwork.inbox(of:)), deliver: { bytes, route in
            guard route.address.isEmpty, !bytes.isEmpty else { return deliver(bytes, route) }
            if let frame = BrokerPadding.unpad(bytes) { deliver(frame, route) }
        }, report: report)
    }
    package func broadcast(_ bytes: [UInt8], as kind: BroadcastKind) { network.broadcast(bytes, as: kind, from: address, by: name) }
    @discardableResult
    package func send(_ bytes: [UInt8], to route: Route) -> Bool {
        guard keepsPresence, BrokerTopics.isTopic(route.address) else { return network.carry(bytes, from: address, by: name, to: route.address) }
        guard let padded = BrokerPadding.pad(bytes) else { return false }
        return network.carry(padded, from: address, by: name, to: route.address)
    }
    package var directPort: UInt16 { 0 }
    package var keepsPresence: Bool { network.keepsPresence }
    package var description: String { "\(name) \(address)" }
    /// Back the way it came (a broker's routes are its topics, which the router names).
    package func directRoute(from source: Route, port: UInt16, signingKey: Data) -> Route { source }
    package func setInbox(topics: Set<String>, forgetting: Set<String>) {
        guard keepsPresence, let signingKey else { return }
        network.setInbox(MemoryNetwork.inbox(of: signingKey), topics: topics, forgetting: forgetting)
    }
    package func stop() { network.leave(address) }
}

extension Transport {
    package func setInbox(topics: Set<String>, forgetting: Set<String>) {}
    package func subscribe(topic: String) {}
    package func unsubscribe(topic: String) {}
    package func streamHost(of route: Route) -> String? { nil }

    /// Starts with nobody told of its state (tests).
    package func start(deliver: @escaping @Sendable ([UInt8], Route) -> Void) throws { try start(deliver: deliver, report: { _ in }) }
}
