import Crypto
import Foundation
import Storage

/// Receiving: sealed fragments checked, opened and put in order; whole messages stored together
/// and acknowledged once per sender; acknowledgements and read receipts of ours taken in.
///
/// Engine state: every method runs on the engine.
final class Inbound: DeliveryPart, Sendable {
    let parts: DeliveryParts
    let outbound: Outbound
    let states: StateWrites

    /// Fragments held for all peers together, at most: a crowd of strangers cannot make this
    /// shell buffer more than a few megabytes.
    static let totalBufferLimit = 2_048
    /// A sender's clock may be a little ahead; a time further in the future is not believed.
    static let allowedClockSkew = 300.0

    init(_ parts: DeliveryParts, outbound: Outbound, states: StateWrites) {
        self.parts = parts
        self.outbound = outbound
        self.states = states
    }

    /// Delivery's four kinds, read where the network hands them.
    func register(on router: Router) {
        router.handlePacket(MessageFragment.self) { [weak self] fragment, packet, route in
            self?.receive([fragment.sealed], for: fragment.recipient, from: packet.sender, by: route)
        }
        router.handlePacket(MessageBundle.self) { [weak self] bundle, packet, route in
            self?.receive(bundle.sealed, for: bundle.recipient, from: packet.sender, by: route)
        }
        router.handlePacket(Acknowledgement.self) { [weak self] ack, packet, _ in self?.acknowledged(ack, from: packet.sender) }
        router.handlePacket(ReadReceipt.self) { [weak self] receipt, packet, _ in self?.read(receipt, from: packet.sender) }
    }

    /// The peer has every fragment up to the acknowledged one.
    func acknowledged(_ ack: Acknowledgement, from sender: Data) {
        guard ack.recipient == myKey, links[sender] != nil else { return }
        parts.router.peerTiming.update(sender) { timer in links[sender]!.queue.acknowledge(upTo: ack.sequence, now: clock(), timing: &timer) }
        links[sender]!.acknowledged = max(links[sender]!.acknowledged, ack.sequence)
        states.schedule()
        // The window moved: what waited behind it goes now, not at the next alarm — once half
        // the window is free, so a burst goes in full packets rather than one fragment per
        // acknowledgement (each answered by its own acknowledgement, and so on).
        if links[sender]!.queue.inFlight <= OutgoingQueue.window / 2 { outbound.send(now: clock()) }
        // Fragments it brought among the oldest may be overdue (only the oldest go again):
        // the alarm is set for them, else they would wait for the next one, up to seconds.
        outbound.rearm()
    }

    /// The peer has shown our messages up to the receipt's fragment.
    func read(_ receipt: ReadReceipt, from sender: Data) {
        guard receipt.recipient == myKey, let conversation = links[sender]?.conversation else { return }
        if let numbers = try? store.markRead(conversation, upTo: receipt.sequence, now: clock()), !numbers.isEmpty {
            parts.onEvent(.stateChanged(conversation: conversation, numbers: numbers, state: .read))
        }
    }

    /// Sealed fragments from `sender` (one packet's): checked, then taken in together.
    func receive(_ sealed: [Data], for recipient: Data, from sender: Data, by route: Route) {
        guard recipient == myKey else { return drop("not for us") }
        // The plane table binds the receiver too: only a sender whose plane reaches ours.
        guard let peer = presentPeer(sender) else { return drop("unknown sender") }
        guard parts.rules.canHear(from: peer) else { return drop("plane") }
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
        guard let key = try? MessageCrypto.key(mine: parts.identity.agreement, theirs: peer.announcement.agreementKey,
                                               mySigningKey: myKey, theirSigningKey: peer.signingKey) else { return false }
        return (try? MessageCrypto.open(sealed, key: key, sender: peer.signingKey, recipient: myKey)) != nil
    }

    /// Why a whole message from a peer is skipped rather than stored, if it is.
    static func refusal(of message: AssembledMessage) -> String? {
        if !message.isWhole || message.text.count > Delivery.maximumLength { return "too long" }
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
            let held = parts.box.value.bufferedTotal + link.assembler.bufferedCount - heldBefore
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
        parts.box.value.bufferedTotal += link.assembler.bufferedCount - heldBefore
        links[peer.signingKey] = link
        guard accepted else { return }
        guard !whole.isEmpty else { return acknowledge(peer, reply: route) }
        parts.box.update { state in
            if let index = state.unstored.firstIndex(where: { $0.peer.signingKey == peer.signingKey }) {
                state.unstored[index].messages += whole
                state.unstored[index].route = route
            } else {
                state.unstored.append(DeliveryState.Unstored(peer: peer, route: route, conversation: conversation, messages: whole))
            }
        }
        guard !parts.box.value.storeScheduled else { return }
        parts.box.value.storeScheduled = true
        engine.async { [weak self] in self?.storeReceived() }
    }

    /// Stores the messages received since the last time, in one transaction per sender, then
    /// tells of them and acknowledges them (once per sender, whatever the number of packets).
    /// If the database refuses, nothing of that sender's is kept: its assembler goes back to
    /// what is stored and, unacknowledged, the messages come again — the conversation never
    /// sticks.
    func storeReceived() {
        parts.box.value.storeScheduled = false
        let batches = parts.box.value.unstored
        parts.box.value.unstored = []
        for batch in batches {
            let key = batch.peer.signingKey
            do {
                let stored = try keep(batch.messages, in: batch.conversation)
                links[key]?.stored = batch.messages.last!.lastSequence
                for message in stored { parts.onEvent(.received(conversation: batch.conversation.id, message: message, from: batch.peer)) }
            } catch {
                drop("storage")
                if let link = links[key] {
                    parts.box.value.bufferedTotal -= link.assembler.bufferedCount
                    links[key]!.assembler = IncomingAssembler(delivered: link.stored)
                }
            }
            parts.box.value.acknowledgements[key] = nil  // This one covers what a pending one would.
            sendAcknowledgement(to: batch.peer, by: batch.route)
        }
    }

    /// Acknowledges what is stored from `peer`, after whatever the engine was already given to
    /// do: packets that came together are then acknowledged once, a packet alone at once.
    private func acknowledge(_ peer: Peer, reply route: Route) {
        guard parts.box.value.acknowledgements.updateValue((peer, route), forKey: peer.signingKey) == nil else { return }
        engine.async { [weak self] in
            guard let self, let (peer, route) = parts.box.value.acknowledgements.removeValue(forKey: peer.signingKey) else { return }
            sendAcknowledgement(to: peer, by: route)
        }
    }

    private func sendAcknowledgement(to peer: Peer, by route: Route) {
        guard let stored = links[peer.signingKey]?.stored else { return }
        transmit(Acknowledgement(recipient: peer.signingKey, sequence: stored), to: peer, reply: route)
    }

    /// Stores whole messages (or, for one that breaks the limits, only its sequence numbers),
    /// numbered after the link's last, in one transaction. Returns the messages stored.
    private func keep(_ messages: [AssembledMessage], in conversation: Conversation) throws -> [ChatMessage] {
        let now = clock()
        var kept: [AssembledMessage] = []
        for message in messages {
            // Written while the user blocked its sender, and sent again once unblocked: taken
            // (acknowledged, so the sender stops) and never stored or shown. A time further
            // ahead than clocks drift is not believed to be after the unblock.
            let sentAt = Double(message.sentAt) / 1000
            if parts.rules.wroteWhileBlocked(conversation.peerKey, sentAt: sentAt > now + Self.allowedClockSkew ? -.infinity : sentAt) {
                drop("written while blocked")
            } else if let reason = Self.refusal(of: message) { drop(reason) } else { kept.append(message) }
        }
        // Numbered after every line taken so far, and written after them, so rows keep the
        // order of their numbers.
        let (ours, first) = try outbound.withCounters(of: conversation.id) { intake, counters in
            defer {
                counters.nextNumber += Int64(kept.count)
                intake.unwritten = []
            }
            return (intake.unwritten, counters.nextNumber)
        }
        if !ours.isEmpty {
            outbound.write(ours, now: now)
            outbound.send(now: now)
            outbound.rearm()
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
            intake.counters[conversation.id] = nil
            throw error
        }
        return zip(rows, ids).map { row, id in
            ChatMessage(id: id, number: row.number, outgoing: false, text: row.text, sentAt: row.sentAt, receivedAt: now, state: .received)
        }
    }
}
