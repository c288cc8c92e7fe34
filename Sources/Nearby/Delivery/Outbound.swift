import Crypto
import Foundation
import Storage

/// Sending: lines numbered and written, then sealed and sent in as few packets as fit, and
/// again with `OutgoingQueue`'s backoff until acknowledged.
///
/// Engine state: every method runs on the engine.
final class Outbound: DeliveryPart, Sendable {
    let parts: DeliveryParts
    let states: StateWrites
    let mailing: Mailing

    /// The longest a line waits for the lines after it (`take`).
    static let holdLimit = 0.002

    init(_ parts: DeliveryParts, states: StateWrites, mailing: Mailing) {
        self.parts = parts
        self.states = states
        self.mailing = mailing
    }

    /// Numbers `text` in the conversation; the engine writes it (with the other lines taken
    /// meanwhile, in one transaction) and then sends it if the peer is in range and the planes
    /// allow it, or keeps it in the outbox. What is wrong with the line is thrown here; a
    /// database that refuses it is told later (`DeliveryEvent.notStored`). Nothing goes out
    /// before it is written. A line alone (typed) is written and sent before this returns:
    /// waking the engine for it was a tenth of a message's way to the peer. Lines of a burst
    /// are written together, after this returns.
    ///
    /// - Parameter more: more lines follow at once (a pipe holds them): the write waits for
    ///   them, up to a window's worth or `holdLimit` seconds, so a burst is written and sent
    ///   in few transactions and packets. A line typed by a person goes at once.
    func take(_ text: String, in conversation: Conversation, more: Bool) throws -> ChatMessage {
        let text = try checked(text, for: conversation)
        let pieces = UInt32(MessageCrypto.split(text).count)
        let now = clock()
        let (row, writeNow, holdFirst, alone) = try withCounters(of: conversation.id) { intake, counters in
            let row = MessageRow(number: counters.nextNumber, text: text, firstSequence: counters.sentSequence + 1,
                                 lastSequence: counters.sentSequence + pieces, sentAt: now)
            counters.nextNumber += 1
            counters.sentSequence += pieces
            intake.unwritten.append(DeliveryState.Unwritten(conversation: conversation, row: row))
            if more && intake.unwritten.count < OutgoingQueue.window {
                defer { intake.holding = true }
                return (row, false, !intake.holding, false)
            }
            defer { intake.writeScheduled = true }
            return (row, !intake.writeScheduled, false, intake.unwritten.count == 1)
        }
        if writeNow && alone {
            writeOutgoing()
            commits.commit()
        } else if writeNow {
            engine.async { [weak self] in self?.writeOutgoing() }
        }
        if holdFirst { engine.after(Self.holdLimit) { [weak self] in self?.writeOutgoing() } }
        return ChatMessage(number: row.number, outgoing: true, text: text, sentAt: now, state: .sending)
    }

    /// Runs `body` on the intake and the conversation's counters, read from the database when
    /// the intake has none (at first, or after a write that failed).
    func withCounters<T>(of conversation: Int64, _ body: (inout DeliveryState.Intake, inout DeliveryState.Counters) -> T) throws -> T {
        if intake.counters[conversation] == nil { intake.counters[conversation] = DeliveryState.Counters(try store.counters(conversation)) }
        var counters = intake.counters[conversation]!
        defer { intake.counters[conversation] = counters }
        return body(&intake, &counters)
    }

    /// The line as it will be sent, or why it cannot be.
    func checked(_ text: String, for conversation: Conversation) throws -> String {
        guard !text.isEmpty else { throw Delivery.SendError.empty }
        guard !text.utf8.contains(0) else { throw Delivery.SendError.nul }
        guard Delivery.fits(text) else { throw Delivery.SendError.tooLong(text.count) }
        // A feature's rules (a curse) may change the line or refuse it; what they make of it is
        // what is stored and sent.
        let text = try parts.rules.outgoing(text)
        guard !text.isEmpty, Delivery.fits(text) else { throw Delivery.SendError.tooLong(text.count) }
        if let peer = presentPeer(conversation.peerKey), !parts.rules.canWrite(peer) {
            let mine = parts.rules.plane
            throw Delivery.SendError.cannotReach(mine: mine, theirs: peer.plane ?? mine, name: peer.handle)
        }
        return text
    }

    /// Writes the lines taken since the last write (with the engine's turn), then sends them.
    func writeOutgoing() {
        intake.writeScheduled = false
        intake.holding = false
        let batch = intake.unwritten
        intake.unwritten = []
        write(batch, now: clock())
    }

    /// Writes lines taken with the engine's turn (`GroupCommit`); once that is committed, their
    /// fragments are queued and sent (out at once, not at a timer) and their retransmission
    /// armed: nothing goes out before it is written. Lines the database refused are told, and
    /// the numbering starts again from what it holds.
    func write(_ batch: [DeliveryState.Unwritten], now: Double) {
        guard !batch.isEmpty else { return }
        var ids: [Int64] = []
        commits.write(rows: batch.count, { db in
            ids = try MessageStore.storeOutgoing(db, batch.map { ($0.conversation.id, $0.row) }, now: now)
        }, then: { [weak self] error in
            guard let self else { return }
            do {
                if let error { throw error }
                for (line, id) in zip(batch, ids) {
                    try withLink(line.conversation) { $0.queue.enqueue(Self.fragments(line.row), message: id, now: now) }
                }
            } catch {
                return refused(batch, error: error)
            }
            send(now: clock())
            rearm()  // And again when a retransmission is due.
        })
    }

    private func refused(_ batch: [DeliveryState.Unwritten], error: Error) {
        let conversations = Set(batch.map(\.conversation.id))
        conversations.forEach { intake.counters[$0] = nil }
        for conversation in conversations {
            let numbers = batch.filter { $0.conversation.id == conversation }.map(\.row.number)
            parts.onEvent(.notStored(conversation: conversation, numbers: numbers, reason: "\(error)"))
        }
    }

    /// The fragments of a stored message.
    static func fragments(_ message: MessageRow) -> [Fragment] {
        MessageCrypto.fragments(of: message.text, firstSequence: message.firstSequence, sentAt: UInt64(message.sentAt * 1000))
    }

    /// When a fragment waiting for a peer in range is next due. A peer out of range has no
    /// deadline: its arrival sends its queue.
    var nextDue: Double? {
        // By the links' values: walking the map by key made each key's `Data` anew, twice a
        // message. Only a link with something due is looked up.
        var soonest = mailing.nextDue
        for link in links.values {
            guard let due = link.queue.nextDue, due < soonest ?? .infinity, reachablePeer(link.conversationRecord.peerKey) != nil else { continue }
            soonest = due
        }
        return soonest
    }

    /// Asks the engine's alarm to ring when the next fragment is due.
    func rearm() {
        if let deadline = nextDue { parts.deadlines.wake(at: deadline) }
    }

    func send(now: Double) {
        // Most rings have nothing to send: do not even look at who is in range; when something
        // waits, only its peers are looked up, so the cost does not grow with the crowd.
        mailing.retrying(now: now)
        // By the links' values, as `nextDue`: walking the map by key made every key's `Data`.
        let waiting = links.values.compactMap { $0.queue.isEmpty ? nil : $0.conversationRecord.peerKey }
        guard !waiting.isEmpty else { return }
        var outgoing: [(Peer, SymmetricKey, OutgoingQueue.Due)] = []
        for key in waiting {
            guard let peer = reachablePeer(key), links[key] != nil else {
                // Away (heard nowhere): left with a broker, if we have one.
                if mailing.isAway(key) { mailing.mail(key, now: now) }
                continue
            }
            let due = parts.router.peerTiming.update(key) { timer in links[key]!.queue.due(now: now, timing: &timer) }
            if !due.isEmpty { outgoing.append((peer, links[key]!.key, due)) }
        }
        for (peer, key, due) in outgoing {
            // A peer that reads fragments as they are gets them so: the session's frame is their
            // seal. Others get each sealed on its own as well, inside that frame (kinds 5, 18).
            let carried = peer.announcement.reads(SessionFragments.code) ? sendAsTheyAre(due, to: peer) : sendSealed(due, to: peer, key: key)
            // `sent` only for what left this machine: through a broker that is down nothing does,
            // and the messages stay `sending` (their copies sent again make them `delivered`).
            // Changed in place: a copy of the link would copy its queue, thousands long in a burst.
            if carried, let through = due.sentThrough {
                links[peer.signingKey]!.sentThrough = max(links[peer.signingKey]!.sentThrough, through)
                states.schedule()
            }
            parts.box.value.resent += due.repeatedTogether.count + due.repeated.count
        }
    }

    /// `due` as it is, several fragments to a packet (kind 29): first copies by the preferred
    /// route, copies sent again by every route the peer has, in case the preferred one stopped
    /// working (the receiver keeps one copy). True when the first copies left this machine.
    private func sendAsTheyAre(_ due: OutgoingQueue.Due, to peer: Peer) -> Bool {
        // Each behind its 2-byte length.
        let size = { (fragment: Fragment) in 2 + fragment.byteCount }
        var carried = !due.fresh.isEmpty
        for fragments in Self.bundles(due.fresh, size: size) {
            if !transmit(SessionFragments(recipient: peer.signingKey, fragments: fragments), to: peer) { carried = false }
        }
        let again = (due.repeatedTogether + due.repeated).sorted { $0.sequence < $1.sequence }
        for fragments in Self.bundles(again, size: size) {
            transmit(SessionFragments(recipient: peer.signingKey, fragments: fragments), to: peer, everyRoute: true)
        }
        return carried
    }

    /// `due` with each fragment sealed under the conversation's `key`: first copies by the
    /// preferred route, as many to a packet as fit (under a burst one frame covers many
    /// messages). True when they left this machine.
    private func sendSealed(_ due: OutgoingQueue.Due, to peer: Peer, key: SymmetricKey) -> Bool {
        let seal = { (fragments: [Fragment]) in
            fragments.compactMap { fragment in
                (try? MessageCrypto.seal(fragment, key: key, sender: self.myKey, recipient: peer.signingKey)).map { (fragment.sequence, $0) }
            }
        }
        let fresh = seal(due.fresh)
        var position = 0
        var carried = !fresh.isEmpty
        for boxes in Self.bundles(fresh.map(\.1)) {
            if boxes.count > 1 { links[peer.signingKey]!.queue.wentBundled(fresh[position..<position + boxes.count].map(\.0)) }
            position += boxes.count
            if !transmit(boxes, to: peer) { carried = false }
        }
        // A copy sent again goes by every route the peer has; alone, unless the peer has shown
        // it reads packets of several (a reader need not: then it still gets every message).
        // Through a slow clustered broker, copies sent again one to a packet were thousands of
        // publishes, each answered by an acknowledgement, and a burst went at 40 a second.
        let together = Self.bundles(seal(due.repeatedTogether).map(\.1))
        for boxes in together + seal(due.repeated).map({ [$0.1] }) { transmit(boxes, to: peer, everyRoute: true) }
        return carried
    }

    /// Sealed fragments as one packet: one alone (type 5) or several (type 18). True when it
    /// left this machine.
    @discardableResult
    private func transmit(_ boxes: [Data], to peer: Peer, everyRoute: Bool = false) -> Bool {
        boxes.count == 1
            ? transmit(MessageFragment(recipient: peer.signingKey, sealed: boxes[0]), to: peer, everyRoute: everyRoute)
            : transmit(MessageBundle(recipient: peer.signingKey, sealed: boxes), to: peer, everyRoute: everyRoute)
    }

    /// Room for sealed boxes in a bundle: a session frame's payload less the recipient's key.
    static let bundleCapacity = SealedFrame.maximumPayload - 32

    /// Sealed boxes grouped, in order, into as few packets as fit (each box behind its 2-byte
    /// length).
    static func bundles(_ boxes: [Data], capacity: Int = bundleCapacity) -> [[Data]] {
        bundles(boxes, capacity: capacity) { 2 + $0.count }
    }

    /// Items grouped, in order, into as few packets as fit, each taking `size` of a packet's
    /// `capacity`.
    static func bundles<Item>(_ items: [Item], capacity: Int = bundleCapacity, size: (Item) -> Int) -> [[Item]] {
        var groups: [[Item]] = []
        var current: [Item] = [], used = 0
        for item in items {
            if !current.isEmpty && used + size(item) > capacity {
                groups.append(current)
                current = []
                used = 0
            }
            current.append(item)
            used += size(item)
        }
        if !current.isEmpty { groups.append(current) }
        return groups
    }
}
