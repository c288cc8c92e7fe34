import Foundation
import Storage
import Wire

/// Mail: what waits for someone away (heard on no transport) is left with a broker, which holds
/// it until they connect (`Router.sendMail`); their acknowledgement comes back the same way if
/// we are away by then. Each fragment is mailed once (the conversation's `mailedSequence` keeps
/// how far, across restarts); once both are online, the session sends again whatever is still
/// unacknowledged, and the receiver keeps one copy. At most `heldLimit` fragments from us wait
/// with the brokers for one reader: what is written beyond waits in the outbox. "Mailed" is
/// handed to the broker's client (libmosquitto queues it, and sends it at QoS 1).
///
/// Engine state: every method runs on the engine.
package final class Mailing: DeliveryPart, Sendable {
    let parts: DeliveryParts
    let states: StateWrites

    /// Fragments we mailed to one reader and not yet acknowledged, at most (each at most 941
    /// bytes sealed: about a megabyte).
    package static let heldLimit = 1_000
    /// Mail no broker took (it was down, or not yet connected) is tried again this often.
    static let retry = 5.0
    /// Room for sealed fragments in one mail: a mail frame less its header, signature, the
    /// recipient's key and our announcement (at most a few hundred bytes).
    static let bundleCapacity = Wire.maximumMail - Wire.headerSize - Wire.signatureSize - 1_024

    init(_ parts: DeliveryParts, states: StateWrites) {
        self.parts = parts
        self.states = states
    }

    /// When mail no broker took is tried again; nil when none waits for that.
    var nextDue: Double? { parts.box.value.mailRetry }

    /// Whether what waits for `key` goes by mail: they are heard on no transport, one of ours
    /// holds mail (a broker), and nothing else holds it back (a block; a verified name's impostor).
    func isAway(_ key: Data) -> Bool {
        parts.router.holdsMail && !isPresent(key) && !parts.rules.isHeld(key) && !parts.rules.isBlocked(key)
    }

    /// Leaves with the brokers what waits for `key`, who is away, and was never mailed, up to
    /// `heldLimit` unacknowledged; the messages it completes become `sent`.
    func mail(_ key: Data, now: Double) {
        guard let link = links[key] else { return }
        let from = max(link.mailedThrough, link.acknowledged)
        // Nothing written since the last mail (most calls: `send` runs at every write and
        // acknowledgement): the queue is not walked.
        guard let newest = link.queue.entries.last?.fragment.sequence, newest > from else { return }
        let room = Self.heldLimit - Int(link.mailedThrough > link.acknowledged ? link.mailedThrough - link.acknowledged : 0)
        guard room > 0 else { return full(link) }
        guard let prekey = usablePrekey(link.conversationRecord, now: now) else { return cannotSeal(link.conversationRecord) }
        let waiting = link.queue.entries.lazy.map(\.fragment).filter { $0.sequence > from }
        let fresh = Array(waiting.prefix(room))
        guard !fresh.isEmpty else { return }
        let overflows = fresh.count == room && waiting.dropFirst(room).first != nil
        let sealed = fresh.compactMap { try? MessageCrypto.seal($0, key: link.key, sender: myKey, recipient: key) }
        guard sealed.count == fresh.count else { return drop("cannot seal") }
        var through = link.mailedThrough, position = 0
        for boxes in Outbound.bundles(sealed, capacity: Self.bundleCapacity) {
            // Someone who never wrote or answered us may have no conversation with us, and so
            // not listen on the pair's topic: their rendezvous.
            let firstContact = link.acknowledged == 0 && link.stored == 0
            let carried = boxes.count == 1
                ? post(MessageFragment(recipient: key, sealed: boxes[0]), to: link.conversationRecord, prekey: prekey, firstContact: firstContact)
                : post(MessageBundle(recipient: key, sealed: boxes), to: link.conversationRecord, prekey: prekey, firstContact: firstContact)
            guard carried else {
                retryLater(now)
                break
            }
            position += boxes.count
            through = fresh[position - 1].sequence
        }
        guard through > link.mailedThrough else { return }
        links[key]!.mailedThrough = through
        // Left this machine: `sent`, as what goes to a peer in reach.
        links[key]!.sentThrough = max(links[key]!.sentThrough, through)
        states.schedule()
        let conversation = link.conversation
        commits.write({ db in try MailRecords.recordMailed(db, conversation, through: through, now: now) }, then: { _ in })
        if overflows { full(links[key]!) }
    }

    /// A feature's `packets` for `key`, who is away (`Delivery.mail`), each a mail, in order: to
    /// the pair's mail topic, which a reader with a conversation with us listens on. How many
    /// went (the rest, from the first no broker took, did not).
    func mail<Kind: PacketKind>(_ packets: [Kind], to key: Data) -> Int {
        guard isAway(key),
              let conversation = links[key]?.conversationRecord ?? (try? store.existingConversation(myKey: myKey, peerKey: key)) ?? nil,
              let prekey = usablePrekey(conversation, now: clock()) else { return 0 }
        return packets.prefix { post($0, to: conversation, prekey: prekey, firstContact: false) }.count
    }

    /// The prekey of `conversation`'s peer, when one it announced is still fresh enough to seal
    /// to (`Prekeys.usable`).
    private func usablePrekey(_ conversation: Conversation, now: Double) -> SignedPrekey? {
        guard let prekey = conversation.peerPrekey, Prekeys.isUsable(prekey, now: now) else { return nil }
        return prekey
    }

    /// `packet`, sealed to `prekey` of `conversation`'s peer (X3DH), left with the brokers on the
    /// pair's mail topic, or at the peer's rendezvous on `firstContact`; true when one took it.
    private func post<Kind: PacketKind>(_ packet: Kind, to conversation: Conversation, prekey: SignedPrekey, firstContact: Bool) -> Bool {
        let router = parts.router
        guard let announcement = router.announcement,
              let pair = router.post.pairKey(conversation.peerKey, agreement: conversation.peerAgreementKey),
              let mail = try? Mail.seal(packet, for: conversation.peerKey, agreementKey: conversation.peerAgreementKey,
                                        prekey: prekey.publicKey, from: announcement, identity: parts.identity.agreement, sender: myKey)
        else { return false }
        let topic = firstContact ? BrokerTopics.rendezvous(prekey: prekey.publicKey)
                                 : BrokerTopics.mail(pair, to: conversation.peerKey, prekey: prekey.publicKey)
        return router.sendMail(mail, prekey: prekey.publicKey, topic: topic)
    }

    /// Nothing can be sealed to the peer of `conversation` (no fresh prekey): told once a session.
    private func cannotSeal(_ conversation: Conversation) {
        guard parts.box.value.mailCannotSealTold.insert(conversation.peerKey).inserted else { return }
        parts.onEvent(.mailCannotSeal(conversation: conversation.id, handle: conversation.handle))
    }

    /// The prekey `peer` announces, kept with its conversation when new (mail to it is sealed to
    /// it once it is away).
    func learn(_ peer: Peer) {
        guard let prekey = peer.announcement.signedPrekey else { return }
        let known = links[peer.signingKey]?.conversationRecord ?? (try? store.existingConversation(myKey: myKey, peerKey: peer.signingKey))
        guard let conversation = known, conversation.peerPrekey != prekey else { return }
        links[peer.signingKey]?.conversationRecord.peerPrekey = prekey
        parts.box.value.mailCannotSealTold.remove(peer.signingKey)
        commits.write({ db in try MailRecords.recordPrekey(db, conversation.id, prekey) }, then: { _ in })
    }

    /// What the brokers hold for the reader of `link` is full: told once a session.
    private func full(_ link: DeliveryState.Link) {
        guard parts.box.value.mailFullTold.insert(link.conversationRecord.peerKey).inserted else { return }
        let conversation = link.conversationRecord, acknowledged = link.acknowledged, mailed = link.mailedThrough
        let held = (try? MailRecords.messagesBetween(store.database, conversation.id, after: acknowledged, through: mailed).count) ?? 0
        parts.onEvent(.mailFull(conversation: conversation.id, handle: conversation.handle, held: held))
    }

    /// Messages still unacknowledged of conversations whose last mail went at least
    /// `Mail.lifetime` ago (so every one of them did): told once (as this shell comes online).
    func tellExpired(now: Double) {
        for link in links.values where link.mailedThrough > link.acknowledged {
            let conversation = link.conversationRecord
            guard let mailedAt = conversation.mailedAt, now - mailedAt >= Mail.lifetime,
                  let numbers = try? MailRecords.messagesBetween(store.database, conversation.id, after: link.acknowledged, through: link.mailedThrough),
                  !numbers.isEmpty else { continue }
            parts.onEvent(.mailExpired(conversation: conversation.id, handle: conversation.handle, numbers: numbers))
            try? MailRecords.forgetMailedTime(store.database, conversation.id)
        }
    }

    /// Our acknowledgement to `key`, who is away: mailed, or kept and tried again with the rest
    /// when no broker took it.
    func acknowledge(_ key: Data, sequence: UInt32) {
        parts.box.value.mailedAcknowledgements[key] = nil
        // No broker (a LAN alone), the peer is back (its session acknowledges), or nothing can be
        // sealed to it (it has its acknowledgement when both are online): nothing kept.
        guard parts.router.holdsMail, !isPresent(key), let conversation = links[key]?.conversationRecord,
              let prekey = usablePrekey(conversation, now: clock()),
              !post(Acknowledgement(recipient: key, sequence: sequence), to: conversation, prekey: prekey, firstContact: false) else { return }
        parts.box.value.mailedAcknowledgements[key] = sequence
        retryLater(clock())
    }

    private func retryLater(_ now: Double) {
        let due = min(parts.box.value.mailRetry ?? .infinity, now + Self.retry)
        parts.box.value.mailRetry = due
        parts.deadlines.wake(at: due)
    }

    /// Before sending: a retry that is due is forgotten (sending sets it again if need be), and
    /// the acknowledgements no broker took go again.
    func retrying(now: Double) {
        guard let due = parts.box.value.mailRetry, due <= now else { return }
        parts.box.value.mailRetry = nil
        for (key, sequence) in parts.box.value.mailedAcknowledgements { acknowledge(key, sequence: sequence) }
    }
}
