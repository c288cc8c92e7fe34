import Crypto
import Foundation
import Storage
import Synchronization

/// What the conversation view hears about.
package enum DeliveryEvent: Sendable {
    /// A whole message arrived, in order, and is stored.
    case received(conversation: Int64, message: ChatMessage, from: Peer)
    /// Your messages changed state (sent, delivered, read).
    case stateChanged(conversation: Int64, numbers: [Int64], state: ChatMessage.State)
    /// Your messages could not be written (the database refused): they were not sent.
    case notStored(conversation: Int64, numbers: [Int64], reason: String)
    /// A peer that messages of yours waited for came into reach: they go now.
    case awaitedArrived(conversation: Int64, peer: Peer, waiting: Int)
}

/// What delivery sends: a packet of one of its four kinds.
package enum DeliveryPacket: Equatable, Sendable {
    case fragment(MessageFragment)
    case bundle(MessageBundle)
    case acknowledgement(Acknowledgement)
    case receipt(ReadReceipt)
}

/// What delivery needs of the network: who is in range, and a way to send them a packet.
package struct DeliveryNetwork: Sendable {
    /// The present peer with a signing key (a lookup: the table of peers can be large).
    package var peer: @Sendable (Data) -> Peer?
    /// Sends a packet to a peer: by every route it has when `everyRoute`, back by `reply` when
    /// that is one of its routes, else by the preferred one. True when it left this machine.
    package var send: @Sendable (_ packet: DeliveryPacket, _ to: Peer, _ everyRoute: Bool, _ reply: Route?) -> Bool
    /// Asks to be ticked at a time (a retransmission is due then).
    package var wake: @Sendable (Double) -> Void

    package init(peer: @escaping @Sendable (Data) -> Peer?,
                send: @escaping @Sendable (_ packet: DeliveryPacket, _ to: Peer, _ everyRoute: Bool, _ reply: Route?) -> Bool,
                wake: @escaping @Sendable (Double) -> Void = { _ in }) {
        self.peer = peer
        self.send = send
        self.wake = wake
    }

    /// A network of a few peers, listed, each with one route (tests).
    package init(peers: @escaping @Sendable () -> [Peer], send: @escaping @Sendable (DeliveryPacket, Peer) -> Void) {
        self.init(peer: { key in peers().first { $0.signingKey == key } }, send: { packet, peer, _, _ in
            send(packet, peer)
            return true
        })
    }
}

/// Reliable, encrypted 1:1 delivery on top of the nearby service: every message is stored
/// first, sent in fragments over unicast, retransmitted until acknowledged, and kept in the
/// outbox while the peer is away (`Outgoing.swift`). Incoming fragments are checked (recipient,
/// plane, decryption) and reassembled in order before they are stored and acknowledged
/// (`Incoming.swift`); acknowledgements, first transmissions and what was shown are written
/// together (`StateFlush.swift`).
///
/// Everything is the engine's: the methods others call hop there (the shell thread waits; the network
/// has handed its packets over already), and the state lives in an engine-bound box.
package final class DeliveryService: Sendable {
    struct Link {
        var conversationRecord: Conversation
        var key: SymmetricKey
        var queue = OutgoingQueue()
        var assembler: IncomingAssembler
        /// Acknowledged and first-sent state not yet written (`scheduleFlush` writes it).
        var acknowledged: UInt32 = 0
        var sentThrough: UInt32 = 0
        /// Incoming messages shown up to this row, not yet marked read (`scheduleFlush`).
        var shownUpTo: Int64 = 0
        /// The last fragment received whose message is stored: what is acknowledged. The
        /// assembler may be ahead, by messages waiting for `storeReceived`.
        var stored: UInt32

        var conversation: Int64 { conversationRecord.id }
    }

    /// A conversation's next message number and last fragment sequence given out, written or
    /// not: messages are numbered here, so `send` need not wait for the database.
    struct Counters {
        var nextNumber: Int64
        var sentSequence: UInt32

        init(_ stored: (sentSequence: UInt32, nextNumber: Int64)) {
            nextNumber = stored.nextNumber
            sentSequence = stored.sentSequence
        }
    }

    struct Unwritten {
        var conversation: Conversation
        var row: MessageRow
    }

    /// What the thread that sends (the shell's) shares with the engine, behind a lock held for
    /// no I/O: the numbering, and the lines taken but not yet written. The engine writes them
    /// together (`writeOutgoing`), so a burst of lines costs one transaction, and `send` never
    /// waits for the engine.
    struct Intake {
        var counters: [Int64: Counters] = [:]
        var unwritten: [Unwritten] = []
        /// A write is queued on the engine; a hold (`send(more:)`) has its timer running.
        var writeScheduled = false
        var holding = false
    }

    struct Unstored {
        var peer: Peer
        var route: Route
        var conversation: Conversation
        var messages: [AssembledMessage] = []
    }

    /// Everything delivery changes, on the engine.
    struct State {
        var links: [Data: Link] = [:]
        var network: DeliveryNetwork?
        var dropped: [String: Int] = [:]
        var resent = 0
        /// Peers owed an acknowledgement, and the route to send it by (`acknowledge`).
        var acknowledgements: [Data: (Peer, Route)] = [:]
        /// Whole messages received and not yet stored, by sender in the order they first came:
        /// `storeReceived` stores them once the engine has handled the packets it was already
        /// given, so packets that came together (a burst) cost one transaction, not one each.
        var unstored: [Unstored] = []
        var storeScheduled = false
        /// Fragments held by every link's assembler together.
        var bufferedTotal = 0
        /// The numbering, and the lines taken but not yet written (`writeOutgoing` writes them
        /// together, so a burst of lines costs one transaction).
        var intake = Intake()
        /// A state write is queued on the engine; when the last one was made.
        var flushScheduled = false
        var lastFlush = -Double.infinity
    }

    let store: MessageStore
    let identity: Identity
    /// What features do to a line before it goes (a curse's), checked where it is sent.
    let rules: Rules
    let myPlane: @Sendable () -> Plane
    let onEvent: @Sendable (DeliveryEvent) -> Void
    let engine: Engine
    let clock: @Sendable () -> Double
    private let state: EngineBound<State>

    // The state's parts by name: each access checks that it runs on the engine.
    var links: [Data: Link] { get { state.value.links } _modify { yield &state.value.links } }
    var network: DeliveryNetwork? { state.value.network }
    var dropped: [String: Int] { get { state.value.dropped } _modify { yield &state.value.dropped } }
    var resent: Int { get { state.value.resent } _modify { yield &state.value.resent } }
    var acknowledgements: [Data: (Peer, Route)] { get { state.value.acknowledgements } _modify { yield &state.value.acknowledgements } }
    var unstored: [Unstored] { get { state.value.unstored } _modify { yield &state.value.unstored } }
    var storeScheduled: Bool { get { state.value.storeScheduled } _modify { yield &state.value.storeScheduled } }
    var bufferedTotal: Int { get { state.value.bufferedTotal } _modify { yield &state.value.bufferedTotal } }
    var intake: Intake { get { state.value.intake } _modify { yield &state.value.intake } }
    var flushScheduled: Bool { get { state.value.flushScheduled } _modify { yield &state.value.flushScheduled } }
    var lastFlush: Double { get { state.value.lastFlush } _modify { yield &state.value.lastFlush } }

    /// Under a stream of acknowledgements, states are written at most this often.
    static let flushInterval = 0.05

    package static let maximumLength = 4_000

    package init(store: MessageStore, identity: Identity, myPlane: @escaping @Sendable () -> Plane,
                rules: Rules? = nil, engine: Engine = Engine(), clock: (@Sendable () -> Double)? = nil,
                onEvent: @escaping @Sendable (DeliveryEvent) -> Void) {
        self.engine = engine
        self.rules = rules ?? Rules(engine: engine)
        self.store = store
        self.identity = identity
        self.myPlane = myPlane
        self.clock = clock ?? { engine.now }
        self.onEvent = onEvent
        state = EngineBound(State(), engine: engine)
    }

    var myKey: Data { identity.signingPublicKey }

    /// Connects to a started nearby service: delivery's kinds are read there, its work joins
    /// the one alarm.
    package func attach(_ nearby: NearbyService) {
        connect(DeliveryNetwork(peer: { [weak nearby] key in nearby?.engine.sync { nearby?.state.value.table.peer(key) } },
                                send: { [weak nearby] packet, peer, everyRoute, reply in
                                    guard let nearby else { return false }
                                    switch packet {
                                    case .fragment(let value): return nearby.send(value, to: peer, everyRoute: everyRoute, reply: reply)
                                    case .bundle(let value): return nearby.send(value, to: peer, everyRoute: everyRoute, reply: reply)
                                    case .acknowledgement(let value): return nearby.send(value, to: peer, everyRoute: everyRoute, reply: reply)
                                    case .receipt(let value): return nearby.send(value, to: peer, everyRoute: everyRoute, reply: reply)
                                    }
                                },
                                wake: { [weak nearby] deadline in nearby?.wake(at: deadline) }))
        nearby.handlePacket(MessageFragment.self) { [weak self] fragment, packet, route in
            self?.receive([fragment.sealed], for: fragment.recipient, from: packet.sender, by: route)
        }
        nearby.handlePacket(MessageBundle.self) { [weak self] bundle, packet, route in
            self?.receive(bundle.sealed, for: bundle.recipient, from: packet.sender, by: route)
        }
        nearby.handlePacket(Acknowledgement.self) { [weak self] ack, packet, _ in self?.acknowledged(ack, from: packet.sender) }
        nearby.handlePacket(ReadReceipt.self) { [weak self] receipt, packet, _ in self?.read(receipt, from: packet.sender) }
        nearby.setAlarmHooks(.init(tick: { [weak self] now in self?.tick(now: now) },
                                   deadline: { [weak self] in self?.dueDeadline() }))
    }

    /// Uses `network` for peers and sending (tests give an in-memory one).
    package func connect(_ network: DeliveryNetwork) { engine.sync { state.value.network = network } }

    /// True when the packet left this machine.
    @discardableResult
    func transmit(_ packet: DeliveryPacket, to peer: Peer, everyRoute: Bool = false, reply: Route? = nil) -> Bool {
        network?.send(packet, peer, everyRoute, reply) ?? false
    }

    package var droppedCounts: [String: Int] { engine.sync { dropped } }

    /// Fragments sent again for want of an acknowledgement in time (each copy counted once,
    /// whatever routes it took): losses, or a peer or broker slower than the measured round trip.
    package var resentCount: Int { engine.sync { resent } }

    func drop(_ reason: String) { dropped[reason, default: 0] += 1 }

    package enum SendError: Error, Equatable, CustomStringConvertible {
        case tooLong(Int)
        case empty
        case nul
        case cannotReach(mine: Plane, theirs: Plane, name: String)

        package var description: String {
            switch self {
            case .tooLong(let count): return "the message has \(count) characters; at most \(DeliveryService.maximumLength) can be sent"
            case .empty: return "nothing to send"
            case .nul: return "the message contains a NUL character, which cannot be sent"
            case .cannotReach(let mine, let theirs, let name):
                return "you are \(mine.name) and \(name) is \(theirs.name): your words cannot reach them"
            }
        }
    }

    /// The conversation with a peer, made if new.
    package func conversation(with peer: Peer) throws -> Conversation {
        try engine.sync { try makeConversation(with: peer) }
    }

    func makeConversation(with peer: Peer) throws -> Conversation {
        try store.conversation(myKey: myKey, peerKey: peer.signingKey, peerName: peer.name,
                               peerAgreementKey: peer.announcement.agreementKey, now: clock())
    }

    /// Waits until every line taken is written and sent, every message received stored, and
    /// every state change written.
    package func settle() {
        engine.sync {
            storeReceived()
            writeOutgoing()
            flushStates(now: clock())
        }
    }

    /// A peer came (back) into range (`returned`: it was out of sight, not just changed): its
    /// outbox is loaded and everything is sent at once.
    package func peerArrived(_ peer: Peer, returned: Bool = false) {
        engine.sync {
            let waiting = loadOutbox(of: peer)
            if returned, waiting > 0, let conversation = links[peer.signingKey]?.conversation {
                onEvent(.awaitedArrived(conversation: conversation, peer: peer, waiting: waiting))
            }
        }
    }

    /// Queues what the outbox holds for `peer`; how many messages that is.
    @discardableResult
    func loadOutbox(of peer: Peer) -> Int {
        guard let conversation = try? store.existingConversation(myKey: myKey, peerKey: peer.signingKey),
              let outbox = try? store.outbox(conversation.id), !outbox.isEmpty else { return 0 }
        let now = clock()
        try? withLink(conversation) { link in
            for message in outbox { link.queue.enqueue(Self.fragments(message.row), message: message.id, now: now) }
            link.queue.restart(now: now)
        }
        rearm()
        return outbox.count
    }

    /// A transport came back (a broker reconnected): what waits for an acknowledgement goes
    /// again at once, rather than when its backoff, up to `maximumBackoff`, would have it.
    package func transportReturned() {
        engine.sync {
            let now = clock()
            for key in Array(links.keys) { links[key]?.queue.restart(now: now) }
            send(now: now)
            rearm()
        }
    }

    /// Whether a message written waits for the acknowledgement of a peer in reach (one out of
    /// reach waits in the outbox, however long one waits here).
    package var awaitsAcknowledgement: Bool {
        engine.sync {
            writeOutgoing()
            return links.contains { key, link in !link.queue.isEmpty && reachablePeer(key) != nil }
        }
    }

    /// What waits in the outboxes once every line taken is written: the conversations with
    /// messages their peer has not acknowledged (none if the database cannot say).
    package func waiting() -> [ConversationSummary] {
        settle()
        return ((try? store.conversations(myKey: myKey)) ?? []).filter { $0.waiting > 0 }
    }

    /// Loads every outbox at start, so messages written while away go when their peer appears.
    package func loadOutboxes() throws {
        try engine.sync { try loadAllOutboxes() }
    }

    func loadAllOutboxes() throws {
        let now = clock()
        for conversation in try store.conversationsWithOutbox(myKey: myKey) {
            let outbox = try store.outbox(conversation.id)
            try withLink(conversation) { link in
                for message in outbox { link.queue.enqueue(Self.fragments(message.row), message: message.id, now: now) }
            }
        }
        rearm()
    }

    /// Sends what is due to the peers in range, and writes the state changes gathered since the
    /// last write (callers that drive delivery by hand rely on it; `scheduleFlush` writes them
    /// otherwise).
    package func tick(now: Double) {
        engine.sync {
            writeOutgoing()
            send(now: now)
            flushStates(now: now)
        }
    }

    /// When a fragment waiting for a peer in range is next due. A peer out of range has no
    /// deadline: its arrival sends its queue (`peerArrived`).
    package func nextDeadline() -> Double? {
        engine.sync { dueDeadline() }
    }

    // MARK: Links

    func presentPeer(_ key: Data) -> Peer? { network?.peer(key) }

    func knownConversation(_ peerKey: Data) -> Int64? { links[peerKey]?.conversation }

    /// The link of `conversation`, created (key derived, assembler resumed from the stored
    /// delivered sequence) on first use.
    func link(for conversation: Conversation) throws -> Link {
        if let link = links[conversation.peerKey] { return link }
        let key = try MessageCrypto.key(mine: identity.agreement, theirs: conversation.peerAgreementKey,
                                        mySigningKey: myKey, theirSigningKey: conversation.peerKey)
        let link = Link(conversationRecord: conversation, key: key, assembler: IncomingAssembler(delivered: conversation.deliveredSequence),
                        acknowledged: conversation.acknowledgedSequence, stored: conversation.deliveredSequence)
        links[conversation.peerKey] = link
        return link
    }

    /// Runs `body` on the link of `conversation` and keeps what it changed.
    @discardableResult
    func withLink<T>(_ conversation: Conversation, _ body: (inout Link) throws -> T) throws -> T {
        _ = try link(for: conversation)
        // In place: a copy would copy the link's queue.
        return try body(&links[conversation.peerKey]!)
    }
}
