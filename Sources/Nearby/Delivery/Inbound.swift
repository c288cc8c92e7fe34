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
    /// Writers away whose mail was checked this session, at most (`DeliveryEvent.mailFrom`).
    static let mailSendersKept = 4_096
    /// A sender's clock may be a little ahead; a time further in the future is not believed.
    static let allowedClockSkew = 300.0

    init(_ parts: DeliveryParts, outbound: Outbound, states: StateWrites) {
        self.parts = parts
        self.outbound = outbound
        self.states = states
    }

    /// Fragments as a packet carries them: each sealed on its own (kinds 5 and 18, and mail),
    /// or as they are, inside a session's frame (kind 29).
    enum Carried {
        case sealed([Data])
        case asTheyAre([Fragment])
    }

    /// Delivery's kinds, read where the network hands them.
    func register(on router: Router) {
        router.handlePacket(MessageFragment.self) { [weak self] fragment, packet, route in
            self?.receive(.sealed([fragment.sealed]), for: fragment.recipient, from: packet.sender, by: route)
        }
        router.handlePacket(MessageBundle.self) { [weak self] bundle, packet, route in
            self?.receive(.sealed(bundle.sealed), for: bundle.recipient, from: packet.sender, by: route)
        }
        router.handlePacket(SessionFragments.self) { [weak self] carried, packet, route in
            self?.receive(.asTheyAre(carried.fragments), for: carried.recipient, from: packet.sender, by: route)
        }
        router.handlePacket(Acknowledgement.self) { [weak self] ack, packet, _ in self?.acknowledged(ack, from: packet.sender) }
        router.handlePacket(ReadReceipt.self) { [weak self] receipt, packet, _ in self?.read(receipt, from: packet.sender) }
        router.handlePacket(Mail.self) { [weak self] mail, packet, route in
            guard let self else { return }
            // Mail is what a broker held: by any other way (the LAN), it is no mail.
            guard parts.router.reach.isBroker(route) else { return drop("mail not by a broker") }
            // Held longer than mail is (a broker that keeps it past its week): not taken; nor
            // one stamped further ahead than clocks drift, which would never expire.
            let age = clock() - Double(packet.timestamp) / 1000
            guard age >= -FrameTime.allowance else { return drop("from the future") }
            guard age <= Mail.lifetime else { return drop("expired mail") }
            mailed(mail, from: packet.sender, by: route)
        }
    }

    /// Mail from `sender`, written while we were away (a broker held it): opened with the
    /// prekey it was sealed to, what it carries is taken as if it came in a session, from the
    /// peer its announcement describes (or the peer as present now).
    func mailed(_ mail: Mail, from sender: Data, by route: Route) {
        guard mail.recipient == myKey else { return drop("not for us") }
        // Sealed to a prekey we no longer keep (past `Prekeys.kept`), or never made: nothing
        // opens it, by design.
        guard let prekey = parts.prekeys?.privateKey(for: mail.prekey) else { return drop("mail to a retired prekey") }
        guard let (kind, body) = try? mail.open(identity: parts.identity.agreement, prekey: prekey, sender: sender) else {
            return drop("mail that does not open")
        }
        let present = presentPeer(sender)
        let peer = present ?? Peer(signingKey: sender, announcement: mail.announcement, route: route, lastSeen: clock())
        // A writer not here is checked as an arriving peer is, once a session, and only once
        // what it brings opens (a stranger's noise flags nobody).
        func told(_ sealed: [Data]) {
            guard present == nil, !parts.box.value.mailSenders.contains(sender), sealed.contains(where: { opens($0, from: peer) }) else { return }
            if parts.box.value.mailSenders.count >= Self.mailSendersKept { parts.box.value.mailSenders.removeFirst() }
            parts.box.value.mailSenders.insert(sender)
            parts.onEvent(.mailFrom(peer))
        }
        do {
            switch kind {
            case KindTable.message:
                let fragment = try MessageFragment.read(body)
                told([fragment.sealed])
                receive(.sealed([fragment.sealed]), for: fragment.recipient, from: peer, by: route)
            case KindTable.messages:
                let bundle = try MessageBundle.read(body)
                told(bundle.sealed)
                receive(.sealed(bundle.sealed), for: bundle.recipient, from: peer, by: route)
            case KindTable.ack:
                acknowledged(try Acknowledgement.read(body), from: sender)
            default:
                // A feature's (a picture's offer, chunks, answer), from a plane that reaches ours.
                guard let handler = parts.box.value.mailHandlers[kind] else { return drop("type") }
                guard parts.rules.canHear(from: peer) else { return drop("plane") }
                if !handler(body, peer) { drop("malformed") }
            }
        } catch {
            drop("malformed")
        }
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
        let now = clock()
        var numbers: [Int64] = []
        commits.write({ db in numbers = try MessageStore.markRead(db, conversation, upTo: receipt.sequence, now: now) }, then: { [parts] error in
            guard error == nil, !numbers.isEmpty else { return }
            parts.onEvent(.stateChanged(conversation: conversation, numbers: numbers, state: .read))
        })
    }

    /// Fragments from `sender` (one packet's): checked, then taken in together.
    func receive(_ carried: Carried, for recipient: Data, from sender: Data, by route: Route) {
        guard let peer = presentPeer(sender) else { return drop("unknown sender") }
        receive(carried, for: recipient, from: peer, by: route)
    }

    /// Fragments from `peer` (present, or its mail's announcement).
    private func receive(_ carried: Carried, for recipient: Data, from peer: Peer, by route: Route) {
        guard recipient == myKey else { return drop("not for us") }
        // The plane table binds the receiver too: only a sender whose plane reaches ours.
        guard parts.rules.canHear(from: peer) else { return drop("plane") }
        // The conversation is looked up once per peer, not for every fragment; a stranger's
        // is made only for a fragment that decrypts (or came in a session, which proved who
        // wrote it), so noise creates nothing.
        let known = links[peer.signingKey]?.conversationRecord
        if known == nil, case .sealed(let sealed) = carried {
            guard (try? store.existingConversation(myKey: myKey, peerKey: peer.signingKey)) ?? nil != nil
                    || sealed.contains(where: { opens($0, from: peer) }) else { return drop("cannot decrypt") }
        }
        guard let conversation = known ?? (try? makeConversation(with: peer)) else { return drop("storage") }
        receiveFragments(carried, from: peer, by: route, conversation: conversation)
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
        if !message.isWhole || !Delivery.fits(message.text) { return "too long" }
        if message.text.utf8.contains(0) { return "NUL character" }  // As `Outbound.checked` looks.
        return nil
    }

    /// One packet's fragments: each opened and put in order. The messages they complete wait for
    /// `storeReceived` (queued behind the packets the engine was already given); a packet that
    /// completes none is acknowledged at once.
    private func receiveFragments(_ carried: Carried, from peer: Peer, by route: Route, conversation: Conversation) {
        let fragments: [Fragment]
        switch carried {
        case .asTheyAre(let asTheyAre): fragments = asTheyAre
        case .sealed(let sealed):
            guard let key = try? withLink(conversation, { $0.key }) else { return drop("storage") }
            fragments = sealed.compactMap { box in
                guard let fragment = try? MessageCrypto.open(box, key: key, sender: peer.signingKey, recipient: myKey) else {
                    drop("cannot decrypt")
                    return nil
                }
                return fragment
            }
        }
        // Put in order in the link itself: a copy of it, changed, copied its assembler's table
        // at every packet. Nothing else of the engine's is touched meanwhile (it is one box).
        let totalHeld = parts.box.value.bufferedTotal
        var whole: [AssembledMessage] = []
        var accepted = false, outOfWindow = 0, heldChange = 0
        do {
            try withLink(conversation) { (link: inout DeliveryState.Link) in
                let heldBefore = link.assembler.bufferedCount
                for fragment in fragments {
                    let held = totalHeld + link.assembler.bufferedCount - heldBefore
                    if fragment.sequence > link.assembler.delivered && held >= Self.totalBufferLimit {
                        outOfWindow += 1
                        continue
                    }
                    switch link.assembler.receive(fragment) {
                    case .outOfWindow: outOfWindow += 1
                    case .messages(let messages):
                        whole += messages
                        accepted = true
                    case .duplicate, .buffered: accepted = true
                    }
                }
                heldChange = link.assembler.bufferedCount - heldBefore
            }
        } catch {
            return drop("storage")
        }
        for _ in 0..<outOfWindow { drop("out of window") }
        parts.box.value.bufferedTotal += heldChange
        guard accepted else { return }
        guard !whole.isEmpty else { return acknowledge(peer, reply: route) }
        take(whole, from: peer, by: route, in: conversation)
    }

    /// Whole messages, opened and in order: numbered, shown at once, and stored with the rest of
    /// the engine's turn (`GroupCommit`); acknowledged once that is committed. Killed in between,
    /// this shell acknowledged nothing: the sender sends them again and they are stored and
    /// shown once. If the database refuses, nothing of them is kept: the assembler goes back to
    /// what is stored and, unacknowledged, they come again — the conversation never sticks.
    private func take(_ messages: [AssembledMessage], from peer: Peer, by route: Route, in conversation: Conversation) {
        let now = clock()
        var kept: [(message: AssembledMessage, sentAt: Double?)] = []
        for message in messages {
            // Written while the user blocked its sender, and sent again once unblocked: taken
            // (acknowledged, so the sender stops) and never stored or shown. A time further
            // ahead than clocks drift is not believed to be after the unblock.
            let sentAt = believed(message.sentAt, now: now)
            if parts.rules.wroteWhileBlocked(conversation.peerKey, sentAt: sentAt ?? -.infinity) {
                drop("written while blocked")
            } else if let reason = Self.refusal(of: message) { drop(reason) } else { kept.append((message, sentAt)) }
        }
        // Numbered after every line taken so far, and written after them (ours waiting to be
        // written go first), so rows keep the order of their numbers.
        guard let (ours, first) = try? outbound.withCounters(of: conversation.id, { intake, counters in
            defer {
                counters.nextNumber += Int64(kept.count)
                intake.unwritten = []
            }
            return (intake.unwritten, counters.nextNumber)
        }) else { return drop("storage") }
        outbound.write(ours, now: now)
        let rows = kept.enumerated().map { index, taken in
            MessageRow(number: first + Int64(index), text: taken.message.text, firstSequence: taken.message.firstSequence,
                       lastSequence: taken.message.lastSequence, sentAt: taken.sentAt ?? now)
        }
        let key = peer.signingKey, last = messages.last!.lastSequence
        let alreadyShown = links[key]?.shown ?? 0
        let shown = rows.filter { $0.lastSequence > alreadyShown }
        parts.box.value.shownNotStored[key, default: 0] += shown.count
        for row in shown {
            let message = ChatMessage(number: row.number, outgoing: false, text: row.text, sentAt: row.sentAt, receivedAt: now, state: .received)
            parts.onEvent(.received(conversation: conversation.id, message: message, from: peer))
        }
        links[key]?.shown = max(alreadyShown, last)
        commits.write(rows: max(1, rows.count), { db in
            _ = try MessageStore.storeIncoming(db, rows, deliveredUpTo: last, in: conversation.id, now: now)
        }, then: { [weak self] error in
            guard let self else { return }
            parts.box.value.shownNotStored[key, default: 0] -= shown.count
            if parts.box.value.shownNotStored[key] == 0 { parts.box.value.shownNotStored[key] = nil }
            guard error == nil else { return refused(from: key, in: conversation.id) }
            if let stored = links[key]?.stored { links[key]!.stored = max(stored, last) }
            acknowledge(peer, reply: route)
        })
    }

    /// A sender's time in seconds, unless it is further ahead than clocks drift.
    private func believed(_ sentAt: UInt64, now: Double) -> Double? {
        let seconds = Double(sentAt) / 1000
        return seconds > now + Self.allowedClockSkew ? nil : seconds
    }

    /// The database refused what came from `key`: nothing of it is kept, and the numbering and
    /// the assembler start again from what is stored.
    private func refused(from key: Data, in conversation: Int64) {
        drop("storage")
        intake.counters[conversation] = nil
        guard let link = links[key] else { return }
        parts.box.value.bufferedTotal -= link.assembler.bufferedCount
        links[key]!.assembler = IncomingAssembler(delivered: link.stored)
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
        // Its sender away (it came by mail): left with the broker for them too.
        guard isPresent(peer.signingKey) else { return outbound.mailing.acknowledge(peer.signingKey, sequence: stored) }
        transmit(Acknowledgement(recipient: peer.signingKey, sequence: stored), to: peer, reply: route)
    }
}
