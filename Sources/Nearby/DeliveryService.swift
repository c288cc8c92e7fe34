import Crypto
import Foundation
import Storage
import Synchronization

/// What the conversation view hears about.
public enum DeliveryEvent: Sendable {
    /// A whole message arrived, in order, and is stored.
    case received(conversation: Int64, message: ChatMessage, from: Peer)
    /// Your messages changed state (sent, delivered, read).
    case stateChanged(conversation: Int64, numbers: [Int64], state: ChatMessage.State)
    /// Your messages could not be written (the database refused): they were not sent.
    case notStored(conversation: Int64, numbers: [Int64], reason: String)
}

/// What delivery needs of the network: who is in range, and a way to send them a packet.
public struct DeliveryNetwork: Sendable {
    /// The present peer with a signing key (a lookup: the table of peers can be large).
    public var peer: @Sendable (Data) -> Peer?
    /// Sends a packet to a peer: by every route it has when `everyRoute`, back by `reply` when
    /// that is one of its routes, else by the preferred one.
    public var send: @Sendable (_ payload: Payload, _ to: Peer, _ everyRoute: Bool, _ reply: Route?) -> Void
    /// Asks to be ticked at a time (a retransmission is due then).
    public var wake: @Sendable (Double) -> Void

    public init(peer: @escaping @Sendable (Data) -> Peer?,
                send: @escaping @Sendable (_ payload: Payload, _ to: Peer, _ everyRoute: Bool, _ reply: Route?) -> Void,
                wake: @escaping @Sendable (Double) -> Void = { _ in }) {
        self.peer = peer
        self.send = send
        self.wake = wake
    }

    /// A network of a few peers, listed, each with one route (tests).
    public init(peers: @escaping @Sendable () -> [Peer], send: @escaping @Sendable (Payload, Peer) -> Void) {
        self.init(peer: { key in peers().first { $0.signingKey == key } }, send: { payload, peer, _, _ in send(payload, peer) })
    }
}

/// Reliable, encrypted 1:1 delivery on top of the nearby service: every message is stored
/// first, sent in fragments over unicast, retransmitted until acknowledged, and kept in the
/// outbox while the peer is away. Incoming fragments are checked (signature, recipient, plane,
/// decryption) and reassembled in order before they are stored and acknowledged.
///
/// Everything runs on the engine's serial queue: public methods hop there (the shell thread
/// waits; the network has handed its packets over already), so the state below is confined to
/// it and takes no lock.
public final class DeliveryService: @unchecked Sendable {
    private struct Link {
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
    private struct Counters {
        var nextNumber: Int64
        var sentSequence: UInt32

        init(_ stored: (sentSequence: UInt32, nextNumber: Int64)) {
            nextNumber = stored.nextNumber
            sentSequence = stored.sentSequence
        }
    }

    private struct Unwritten {
        var conversation: Conversation
        var row: MessageRow
    }

    /// What the thread that sends (the shell's) shares with the engine, behind a lock held for
    /// no I/O: the numbering, and the lines taken but not yet written. The engine writes them
    /// together (`writeOutgoing`), so a burst of lines costs one transaction, and `send` never
    /// waits for the engine.
    private struct Intake {
        var counters: [Int64: Counters] = [:]
        var unwritten: [Unwritten] = []
        /// A write is queued on the engine; a hold (`send(more:)`) has its timer running.
        var writeScheduled = false
        var holding = false
    }

    private let store: MessageStore
    private let identity: Identity
    /// What features do to a line before it goes (a curse's), checked where it is sent.
    private let rules: Rules
    private let myPlane: @Sendable () -> Plane
    private let onEvent: @Sendable (DeliveryEvent) -> Void
    private let engine: Engine
    // Confined to `engine`.
    private var links: [Data: Link] = [:]
    /// Set once by `connect`; read by `send` on the caller's thread too.
    private let networkLock = Mutex<DeliveryNetwork?>(nil)
    private var network: DeliveryNetwork? { networkLock.withLock { $0 } }
    private var dropped: [String: Int] = [:]
    private var resent = 0
    /// Peers owed an acknowledgement, and the route to send it by (`acknowledge`).
    private var acknowledgements: [Data: (Peer, Route)] = [:]
    /// Whole messages received and not yet stored, by sender in the order they first came:
    /// `storeReceived` stores them once the engine has handled the packets it was already
    /// given, so packets that came together (a burst) cost one transaction, not one each.
    private var unstored: [Unstored] = []
    private var storeScheduled = false

    private struct Unstored {
        var peer: Peer
        var route: Route
        var conversation: Conversation
        var messages: [AssembledMessage] = []
    }
    /// Fragments held by every link's assembler together.
    private var bufferedTotal = 0
    /// Lines `send` took and numbered, not yet written: written together by `writeOutgoing`
    /// (queued on the engine), then sent. A burst of lines costs one transaction.
    private let intake = Mutex(Intake())
    /// A state write is queued on the engine; when the last one was made.
    private var flushScheduled = false
    private var lastFlush = -Double.infinity
    /// Under a stream of acknowledgements, states are written at most this often.
    static let flushInterval = 0.05
    private let clock: @Sendable () -> Double

    public static let maximumLength = 4_000

    public init(store: MessageStore, identity: Identity, myPlane: @escaping @Sendable () -> Plane,
                rules: Rules? = nil, engine: Engine = Engine(), clock: (@Sendable () -> Double)? = nil,
                onEvent: @escaping @Sendable (DeliveryEvent) -> Void) {
        self.engine = engine
        self.rules = rules ?? Rules(engine: engine)
        self.store = store
        self.identity = identity
        self.myPlane = myPlane
        self.clock = clock ?? { engine.now }
        self.onEvent = onEvent
    }

    var myKey: Data { identity.signingPublicKey }

    /// Connects to a started nearby service.
    public func attach(_ nearby: NearbyService) {
        connect(DeliveryNetwork(peer: { [weak nearby] key in nearby?.peer(key) },
                                send: { [weak nearby] payload, peer, everyRoute, reply in
                                    nearby?.sendDirect(payload, to: peer, everyRoute: everyRoute, reply: reply)
                                },
                                wake: { [weak nearby] deadline in nearby?.wake(at: deadline) }))
        nearby.setDirectHooks(.init(packet: { [weak self] packet, route in self?.receive(packet, from: route) },
                                    tick: { [weak self] now in self?.tick(now: now) },
                                    deadline: { [weak self] in self?.nextDeadline() }))
    }

    /// Uses `network` for peers and sending (tests give an in-memory one).
    public func connect(_ network: DeliveryNetwork) { networkLock.withLock { $0 = network } }

    private func transmit(_ payload: Payload, to peer: Peer, everyRoute: Bool = false, reply: Route? = nil) {
        network?.send(payload, peer, everyRoute, reply)
    }

    public var droppedCounts: [String: Int] { engine.sync { dropped } }

    /// Fragments sent again for want of an acknowledgement in time (each copy counted once,
    /// whatever routes it took): losses, or a peer or broker slower than the measured round trip.
    public var resentCount: Int { engine.sync { resent } }

    private func drop(_ reason: String) { dropped[reason, default: 0] += 1 }

    // MARK: Sending

    public enum SendError: Error, Equatable, CustomStringConvertible {
        case tooLong(Int)
        case empty
        case nul
        case cannotReach(mine: Plane, theirs: Plane, name: String)

        public var description: String {
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
    public func conversation(with peer: Peer) throws -> Conversation {
        try engine.sync { try makeConversation(with: peer) }
    }

    private func makeConversation(with peer: Peer) throws -> Conversation {
        try store.conversation(myKey: myKey, peerKey: peer.signingKey, peerName: peer.name,
                               peerAgreementKey: peer.announcement.agreementKey, now: clock())
    }

    /// Numbers `text` in the conversation and hands it to the engine, which writes it (with
    /// the other lines taken meanwhile, in one transaction) and then sends it if the peer is in
    /// range and the planes allow it, or keeps it in the outbox. What is wrong with the line is
    /// thrown here; a database that refuses it is told later (`DeliveryEvent.notStored`).
    /// Nothing goes out before it is written. A line alone (typed) is written and sent before
    /// this returns, on this thread in the engine's turn: waking the engine for it was a tenth of
    /// a message's way to the peer. Lines of a burst return at once.
    ///
    /// - Parameter more: more lines follow at once (a pipe holds them): the write waits for
    ///   them, up to a window's worth or `holdLimit` seconds, so a burst is written and sent
    ///   in few transactions and packets. A line typed by a person goes at once.
    public func send(_ text: String, in conversation: Conversation, more: Bool = false) throws -> ChatMessage {
        // The rules and the plane are the engine's.
        let text = try engine.sync { try checked(text, for: conversation) }
        let pieces = UInt32(MessageCrypto.split(text).count)
        let now = clock()
        let (row, writeNow, holdFirst, alone) = try withCounters(of: conversation.id) { intake, counters in
            let row = MessageRow(number: counters.nextNumber, text: text, firstSequence: counters.sentSequence + 1,
                                 lastSequence: counters.sentSequence + pieces, sentAt: now)
            counters.nextNumber += 1
            counters.sentSequence += pieces
            intake.unwritten.append(Unwritten(conversation: conversation, row: row))
            if more && intake.unwritten.count < OutgoingQueue.window {
                defer { intake.holding = true }
                return (row, false, !intake.holding, false)
            }
            defer { intake.writeScheduled = true }
            return (row, !intake.writeScheduled, false, intake.unwritten.count == 1)
        }
        if writeNow && alone {
            engine.sync { writeOutgoing() }
        } else if writeNow {
            engine.async { [weak self] in self?.writeOutgoing() }
        }
        if holdFirst { engine.after(Self.holdLimit) { [weak self] in self?.writeOutgoing() } }
        return ChatMessage(number: row.number, outgoing: true, text: text, sentAt: now, state: .sending)
    }

    /// Runs `body` on the intake and the conversation's counters. When the intake has none they
    /// are read from the database first, outside the lock (no lock is held across I/O), and
    /// whoever puts them there first keeps theirs; if they were dropped meanwhile (a write that
    /// failed), they are read again.
    private func withCounters<T>(of conversation: Int64, _ body: (inout Intake, inout Counters) -> T) throws -> T {
        while true {
            let stored = intake.withLock { $0.counters[conversation] } == nil ? try store.counters(conversation) : nil
            let result: T? = intake.withLock { intake in
                guard var counters = intake.counters[conversation] ?? stored.map(Counters.init) else { return nil }
                defer { intake.counters[conversation] = counters }
                return body(&intake, &counters)
            }
            if let result { return result }
        }
    }

    /// The longest a line waits for the lines after it (`send(_:in:more:)`).
    static let holdLimit = 0.002

    /// Waits until every line taken is written and sent, every message received stored, and
    /// every state change written.
    public func settle() {
        engine.sync {
            storeReceived()
            writeOutgoing()
            flushStates(now: clock())
        }
    }

    /// The line as it will be sent, or why it cannot be.
    private func checked(_ text: String, for conversation: Conversation) throws -> String {
        guard !text.isEmpty else { throw SendError.empty }
        guard !text.unicodeScalars.contains("\0") else { throw SendError.nul }
        guard text.count <= Self.maximumLength else { throw SendError.tooLong(text.count) }
        // A feature's rules (a curse) may change the line or refuse it; what they make of it is
        // what is stored and sent.
        let text = try rules.outgoing(text)
        guard !text.isEmpty, text.count <= Self.maximumLength else { throw SendError.tooLong(text.count) }
        if let peer = presentPeer(conversation.peerKey), let theirs = Plane(wireValue: peer.announcement.plane),
           !myPlane().canReach(theirs) {
            throw SendError.cannotReach(mine: myPlane(), theirs: theirs, name: peer.handle)
        }
        return text
    }

    /// Writes the lines taken since the last write in one transaction, then sends them (out at
    /// once, not at a timer) and arms their retransmission.
    private func writeOutgoing() {
        let batch = intake.withLock { intake in
            intake.writeScheduled = false
            intake.holding = false
            defer { intake.unwritten = [] }
            return intake.unwritten
        }
        guard !batch.isEmpty else { return }
        let now = clock()
        write(batch, now: now)
        send(now: now)
        rearm()  // And again when a retransmission is due.
    }

    /// Writes lines taken, in one transaction, and queues their fragments. Lines the database
    /// refused are told, and the numbering starts again from what it holds.
    private func write(_ batch: [Unwritten], now: Double) {
        guard !batch.isEmpty else { return }
        do {
            let ids = try store.storeOutgoing(batch.map { ($0.conversation.id, $0.row) }, now: now)
            for (line, id) in zip(batch, ids) {
                try withLink(line.conversation) { $0.queue.enqueue(Self.fragments(line.row), message: id, now: now) }
            }
        } catch {
            let conversations = Set(batch.map(\.conversation.id))
            intake.withLock { intake in conversations.forEach { intake.counters[$0] = nil } }
            for conversation in conversations {
                let numbers = batch.filter { $0.conversation.id == conversation }.map(\.row.number)
                onEvent(.notStored(conversation: conversation, numbers: numbers, reason: "\(error)"))
            }
        }
    }

    /// The fragments of a stored message.
    static func fragments(_ message: MessageRow) -> [Fragment] {
        MessageCrypto.fragments(of: message.text, firstSequence: message.firstSequence, sentAt: UInt64(message.sentAt * 1000))
    }

    /// A peer came (back) into range: its outbox is loaded and everything is sent at once.
    public func peerArrived(_ peer: Peer) {
        engine.sync { loadOutbox(of: peer) }
    }

    private func loadOutbox(of peer: Peer) {
        guard let conversation = try? store.existingConversation(myKey: myKey, peerKey: peer.signingKey),
              let outbox = try? store.outbox(conversation.id), !outbox.isEmpty else { return }
        let now = clock()
        try? withLink(conversation) { link in
            for message in outbox { link.queue.enqueue(Self.fragments(message.row), message: message.id, now: now) }
            link.queue.restart(now: now)
        }
        rearm()
    }

    /// A transport came back (a broker reconnected): what waits for an acknowledgement goes
    /// again at once, rather than when its backoff, up to `maximumBackoff`, would have it.
    public func transportReturned() {
        engine.sync {
            let now = clock()
            for key in Array(links.keys) { links[key]?.queue.restart(now: now) }
            send(now: now)
            rearm()
        }
    }

    /// What waits in the outboxes once every line taken is written: the conversations with
    /// messages their peer has not acknowledged (none if the database cannot say).
    public func waiting() -> [ConversationSummary] {
        settle()
        return ((try? store.conversations(myKey: myKey)) ?? []).filter { $0.waiting > 0 }
    }

    /// Loads every outbox at start, so messages written while away go when their peer appears.
    public func loadOutboxes() throws {
        try engine.sync { try loadAllOutboxes() }
    }

    private func loadAllOutboxes() throws {
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
    public func tick(now: Double) {
        engine.sync {
            writeOutgoing()
            send(now: now)
            flushStates(now: now)
        }
    }

    /// Writes the states gathered so far: at once (once the engine has handled what is already
    /// queued) when nothing was written in the last `flushInterval`, else when it has passed.
    /// A lone acknowledgement waits for nothing; a stream of them costs one transaction per
    /// interval, not one each.
    private func scheduleFlush() {
        guard !flushScheduled else { return }
        flushScheduled = true
        let write: @Sendable () -> Void = { [weak self] in
            guard let self else { return }
            self.flushScheduled = false
            self.lastFlush = self.clock()
            self.flushStates(now: self.lastFlush)
        }
        let wait = lastFlush + Self.flushInterval - clock()
        if wait <= 0 { engine.async(write) } else { _ = engine.after(wait, write) }
    }

    /// When a fragment waiting for a peer in range is next due. A peer out of range has no
    /// deadline: its arrival sends its queue (`peerArrived`).
    public func nextDeadline() -> Double? {
        engine.sync { dueDeadline() }
    }

    private func dueDeadline() -> Double? {
        links.compactMap { key, link in link.queue.nextDue.flatMap { reachablePeer(key) == nil ? nil : $0 } }.min()
    }

    /// The present peer with this key, if our plane reaches it: the only ones sent to.
    private func reachablePeer(_ key: Data) -> Peer? {
        guard let peer = network?.peer(key), let theirs = Plane(wireValue: peer.announcement.plane), myPlane().canReach(theirs) else {
            return nil
        }
        return peer
    }

    /// Asks the engine to tick when the next fragment is due.
    private func rearm() {
        if let deadline = dueDeadline() { network?.wake(deadline) }
    }

    /// Records acknowledgements, first transmissions and what was shown in the store, and
    /// sends the read receipts.
    private func flushStates(now: Double) {
        var work: [(key: Data, conversation: Int64, acknowledged: UInt32?, before: UInt32, sentThrough: UInt32?)] = []
        var shown: [(Int64, Data, Int64)] = []
        for (key, var link) in links {
            let acknowledged = link.acknowledged > link.conversationRecord.acknowledgedSequence ? link.acknowledged : nil
            let statesChanged = acknowledged != nil || link.sentThrough > 0
            guard statesChanged || link.shownUpTo > 0 else { continue }
            if statesChanged {
                work.append((key, link.conversation, acknowledged, link.conversationRecord.acknowledgedSequence,
                             link.sentThrough > 0 ? link.sentThrough : nil))
            }
            if link.shownUpTo > 0 { shown.append((link.conversation, key, link.shownUpTo)) }
            link.conversationRecord.acknowledgedSequence = link.acknowledged
            link.sentThrough = 0
            link.shownUpTo = 0
            links[key] = link
        }
        for (conversation, peerKey, number) in shown {
            guard let sequence = try? store.markShown(conversation, upTo: number, now: now), let peer = presentPeer(peerKey) else { continue }
            transmit(.read(recipient: peer.signingKey, sequence: sequence), to: peer)
        }
        for (key, conversation, acknowledged, before, sentThrough) in work {
            // Only messages still `sending` become `sent`: one acknowledged or read meanwhile
            // never goes back.
            guard let changed = try? store.recordStates(conversation, sentThrough: sentThrough, acknowledgedUpTo: acknowledged, now: now) else {
                // Not written (the database refused): the acknowledgement is written next time.
                links[key]?.conversationRecord.acknowledgedSequence = before
                continue
            }
            if !changed.sent.isEmpty { onEvent(.stateChanged(conversation: conversation, numbers: changed.sent, state: .sent)) }
            if !changed.delivered.isEmpty { onEvent(.stateChanged(conversation: conversation, numbers: changed.delivered, state: .delivered)) }
        }
    }

    private func send(now: Double) {
        // Most ticks have nothing to send: do not even look at who is in range; when something
        // waits, only its peers are looked up, so the cost does not grow with the crowd.
        let waiting = links.compactMap { $0.value.queue.isEmpty ? nil : $0.key }
        guard !waiting.isEmpty, network != nil else { return }
        var outgoing: [(Peer, SymmetricKey, OutgoingQueue.Due)] = []
        for key in waiting {
            guard let peer = reachablePeer(key), let due = links[key]?.queue.due(now: now) else { continue }
            // Changed in place: a copy of the link would copy its queue, thousands long in a burst.
            if let through = due.sentThrough {
                links[key]!.sentThrough = max(links[key]!.sentThrough, through)
                scheduleFlush()
            }
            if !due.isEmpty { outgoing.append((peer, links[key]!.key, due)) }
        }
        for (peer, key, due) in outgoing {
            let seal = { (fragments: [Fragment]) in
                fragments.compactMap { fragment in
                    (try? MessageCrypto.seal(fragment, key: key, sender: self.myKey, recipient: peer.signingKey)).map { (fragment.sequence, $0) }
                }
            }
            // First copies go by the preferred route, as many to a packet as fit: under a burst
            // one signature covers many messages.
            let fresh = seal(due.fresh)
            var position = 0
            for boxes in Self.bundles(fresh.map(\.1)) {
                if boxes.count > 1 { links[peer.signingKey]!.queue.wentBundled(fresh[position..<position + boxes.count].map(\.0)) }
                position += boxes.count
                transmit(Self.payload(boxes, to: peer), to: peer)
            }
            // A copy sent again goes by every route the peer has, in case the preferred one
            // stopped working (the receiver keeps one copy); alone, unless the peer has shown it
            // reads packets of several (a reader need not: then it still gets every message).
            // Through a slow clustered broker, copies sent again one to a packet were thousands
            // of publishes, each answered by an acknowledgement, and a burst went at 40 a second.
            resent += due.repeatedTogether.count + due.repeated.count
            let together = Self.bundles(seal(due.repeatedTogether).map(\.1))
            for boxes in together + seal(due.repeated).map({ [$0.1] }) {
                transmit(Self.payload(boxes, to: peer), to: peer, everyRoute: true)
            }
        }
    }

    /// One sealed fragment alone (type 5) or several (type 18).
    private static func payload(_ boxes: [Data], to peer: Peer) -> Payload {
        boxes.count == 1 ? .message(recipient: peer.signingKey, sealed: boxes[0]) : .messages(recipient: peer.signingKey, sealed: boxes)
    }

    /// Room for sealed boxes in a bundle: a datagram less the header, the signature and the
    /// recipient's key.
    static let bundleCapacity = Wire.maximumDatagram - Wire.headerSize - Wire.signatureSize - 32

    /// Sealed boxes grouped, in order, into as few packets as fit (each box behind its 2-byte
    /// length).
    static func bundles(_ boxes: [Data]) -> [[Data]] {
        var groups: [[Data]] = []
        var current: [Data] = [], used = 0
        for box in boxes {
            if !current.isEmpty && used + 2 + box.count > bundleCapacity {
                groups.append(current)
                current = []
                used = 0
            }
            current.append(box)
            used += 2 + box.count
        }
        if !current.isEmpty { groups.append(current) }
        return groups
    }

    // MARK: Receiving

    /// A direct packet that came by `route` (an acknowledgement goes back the same way). On the
    /// engine (the network's packets), the messages it completes are stored with those of the
    /// packets queued behind it; from another thread, before this returns.
    public func receive(_ packet: Packet, from route: Route) {
        if engine.isCurrent { return handle(packet, from: route) }
        engine.sync {
            handle(packet, from: route)
            storeReceived()
        }
    }

    private func handle(_ packet: Packet, from route: Route) {
        switch packet.payload {
        case .message(let recipient, let sealed):
            receive([sealed], for: recipient, from: packet.sender, by: route)
        case .messages(let recipient, let sealed):
            receive(sealed, for: recipient, from: packet.sender, by: route)
        case .ack(let recipient, let sequence):
            guard recipient == myKey, links[packet.sender] != nil else { return }
            links[packet.sender]!.queue.acknowledge(upTo: sequence, now: clock())
            links[packet.sender]!.acknowledged = max(links[packet.sender]!.acknowledged, sequence)
            scheduleFlush()
            // The window moved: what waited behind it goes now, not at the next alarm — once half
            // the window is free, so a burst goes in full packets rather than one fragment per
            // acknowledgement (each answered by its own acknowledgement, and so on).
            if links[packet.sender]!.queue.inFlight <= OutgoingQueue.window / 2 { send(now: clock()) }
            // Fragments it brought among the oldest may be overdue (only the oldest go again):
            // the alarm is set for them, else they would wait for the next one, up to seconds.
            rearm()
        case .read(let recipient, let sequence):
            guard recipient == myKey, let conversation = knownConversation(packet.sender) else { return }
            if let numbers = try? store.markRead(conversation, upTo: sequence, now: clock()), !numbers.isEmpty {
                onEvent(.stateChanged(conversation: conversation, numbers: numbers, state: .read))
            }
        default:
            return
        }
    }

    /// Sealed fragments from `sender` (one packet's): checked, then taken in together.
    private func receive(_ sealed: [Data], for recipient: Data, from sender: Data, by route: Route) {
        guard recipient == myKey else { return drop("not for us") }
        // The plane table binds the receiver too: only a sender whose plane reaches ours.
        guard let peer = presentPeer(sender), let theirs = Plane(wireValue: peer.announcement.plane) else {
            return drop("unknown sender")
        }
        guard theirs.canReach(myPlane()) else { return drop("plane") }
        // The conversation is looked up once per peer, not for every fragment; a stranger's
        // is made only for a fragment that decrypts, so noise creates nothing.
        let known = links[sender]?.conversationRecord
        if known == nil {
            guard (try? store.existingConversation(myKey: myKey, peerKey: peer.signingKey)) ?? nil != nil
                    || sealed.contains(where: { opens($0, from: peer) }) else { return drop("cannot decrypt") }
        }
        guard let conversation = known ?? (try? makeConversation(with: peer)) else { return drop("storage") }
        receiveFragments(sealed, from: peer, by: route, conversation: conversation)
    }

    /// True when `sealed` decrypts with the key agreed with `peer` (checked before anything is
    /// made for a stranger).
    private func opens(_ sealed: Data, from peer: Peer) -> Bool {
        guard let key = try? MessageCrypto.key(mine: identity.agreement, theirs: peer.announcement.agreementKey,
                                               mySigningKey: myKey, theirSigningKey: peer.signingKey) else { return false }
        return (try? MessageCrypto.open(sealed, key: key, sender: peer.signingKey, recipient: myKey)) != nil
    }

    /// Fragments held for all peers together, at most: a crowd of strangers cannot make this
    /// shell buffer more than a few megabytes.
    static let totalBufferLimit = 2_048
    /// A sender's clock may be a little ahead; a time further in the future is not believed.
    static let allowedClockSkew = 300.0

    /// Why a whole message from a peer is skipped rather than stored, if it is.
    static func refusal(of message: AssembledMessage) -> String? {
        if !message.isWhole || message.text.count > maximumLength { return "too long" }
        if message.text.unicodeScalars.contains("\0") { return "NUL character" }
        return nil
    }

    /// One packet's fragments: each opened and put in order. The messages they complete wait for
    /// `storeReceived` (queued behind the packets the engine was already given); a packet that
    /// completes none is acknowledged at once.
    private func receiveFragments(_ sealed: [Data], from peer: Peer, by route: Route, conversation: Conversation) {
        guard var link = try? link(for: conversation) else { return drop("storage") }
        let heldBefore = link.assembler.bufferedCount
        var whole: [AssembledMessage] = []
        var accepted = false
        for box in sealed {
            guard let fragment = try? MessageCrypto.open(box, key: link.key, sender: peer.signingKey, recipient: myKey) else {
                drop("cannot decrypt")
                continue
            }
            let held = bufferedTotal + link.assembler.bufferedCount - heldBefore
            if fragment.sequence > link.assembler.delivered && held >= Self.totalBufferLimit {
                drop("out of window")
                continue
            }
            switch link.assembler.receive(fragment) {
            case .outOfWindow: drop("out of window")
            case .messages(let messages):
                whole += messages
                accepted = true
            case .duplicate, .buffered: accepted = true
            }
        }
        bufferedTotal += link.assembler.bufferedCount - heldBefore
        links[peer.signingKey] = link
        guard accepted else { return }
        guard !whole.isEmpty else { return acknowledge(peer, reply: route) }
        if let index = unstored.firstIndex(where: { $0.peer.signingKey == peer.signingKey }) {
            unstored[index].messages += whole
            unstored[index].route = route
        } else {
            unstored.append(Unstored(peer: peer, route: route, conversation: conversation, messages: whole))
        }
        guard !storeScheduled else { return }
        storeScheduled = true
        engine.async { [weak self] in self?.storeReceived() }
    }

    /// Stores the messages received since the last time, in one transaction per sender, then
    /// tells of them and acknowledges them (once per sender, whatever the number of packets).
    /// If the database refuses, nothing of that sender's is kept: its assembler goes back to
    /// what is stored and, unacknowledged, the messages come again — the conversation never
    /// sticks.
    private func storeReceived() {
        storeScheduled = false
        let batches = unstored
        unstored = []
        for batch in batches {
            let key = batch.peer.signingKey
            do {
                let stored = try keep(batch.messages, in: batch.conversation)
                links[key]?.stored = batch.messages.last!.lastSequence
                for message in stored { onEvent(.received(conversation: batch.conversation.id, message: message, from: batch.peer)) }
            } catch {
                drop("storage")
                if let link = links[key] {
                    bufferedTotal -= link.assembler.bufferedCount
                    links[key]!.assembler = IncomingAssembler(delivered: link.stored)
                }
            }
            acknowledgements[key] = nil  // This one covers what a pending one would.
            sendAcknowledgement(to: batch.peer, by: batch.route)
        }
    }

    /// Acknowledges what is stored from `peer`, after whatever the engine was already given to
    /// do: packets that came together are then acknowledged once, a packet alone at once.
    /// Each acknowledgement is a signature made here and checked there.
    private func acknowledge(_ peer: Peer, reply route: Route) {
        guard acknowledgements.updateValue((peer, route), forKey: peer.signingKey) == nil else { return }
        engine.async { [weak self] in
            guard let self, let (peer, route) = self.acknowledgements.removeValue(forKey: peer.signingKey) else { return }
            self.sendAcknowledgement(to: peer, by: route)
        }
    }

    private func sendAcknowledgement(to peer: Peer, by route: Route) {
        guard let stored = links[peer.signingKey]?.stored else { return }
        transmit(.ack(recipient: peer.signingKey, sequence: stored), to: peer, reply: route)
    }

    /// Stores whole messages (or, for one that breaks the limits, only its sequence numbers),
    /// numbered after the link's last, in one transaction. Returns the messages stored.
    private func keep(_ messages: [AssembledMessage], in conversation: Conversation) throws -> [ChatMessage] {
        let now = clock()
        var kept: [AssembledMessage] = []
        for message in messages {
            if let reason = Self.refusal(of: message) { drop(reason) } else { kept.append(message) }
        }
        // Numbered after every line taken so far, and written after them, so rows keep the
        // order of their numbers.
        let (ours, first) = try withCounters(of: conversation.id) { intake, counters in
            defer {
                counters.nextNumber += Int64(kept.count)
                intake.unwritten = []
            }
            return (intake.unwritten, counters.nextNumber)
        }
        if !ours.isEmpty {
            write(ours, now: now)
            send(now: now)
            rearm()
        }
        let rows = kept.enumerated().map { index, message in
            let sentAt = Double(message.sentAt) / 1000
            return MessageRow(number: first + Int64(index), text: message.text, firstSequence: message.firstSequence,
                               lastSequence: message.lastSequence, sentAt: sentAt > now + Self.allowedClockSkew ? now : sentAt)
        }
        let ids: [Int64]
        do {
            ids = try store.storeIncoming(rows, deliveredUpTo: messages.last!.lastSequence, in: conversation.id, now: now)
        } catch {
            intake.withLock { $0.counters[conversation.id] = nil }
            throw error
        }
        return zip(rows, ids).map { row, id in
            ChatMessage(id: id, number: row.number, outgoing: false, text: row.text, sentAt: row.sentAt, receivedAt: now, state: .received)
        }
    }

    /// Incoming messages up to row `number` were shown: they are marked read and the peer is
    /// told (a read receipt), with the state writes (`scheduleFlush`): a stream of messages
    /// shown one by one costs a write and a receipt per interval, not one each.
    public func shown(upTo number: Int64, in conversation: Conversation) {
        engine.sync {
            guard (try? withLink(conversation, { $0.shownUpTo = max($0.shownUpTo, number) })) != nil else { return }
            scheduleFlush()
        }
    }

    // MARK: Links

    private func presentPeer(_ key: Data) -> Peer? { network?.peer(key) }

    private func knownConversation(_ peerKey: Data) -> Int64? { links[peerKey]?.conversation }

    /// The link of `conversation`, created (key derived, assembler resumed from the stored
    /// delivered sequence) on first use.
    private func link(for conversation: Conversation) throws -> Link {
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
    private func withLink<T>(_ conversation: Conversation, _ body: (inout Link) throws -> T) throws -> T {
        _ = try link(for: conversation)
        // In place: a copy would copy the link's queue.
        return try body(&links[conversation.peerKey]!)
    }
}
