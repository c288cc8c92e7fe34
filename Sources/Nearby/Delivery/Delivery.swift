import Foundation
import Storage
import Wire

/// Reliable, encrypted 1:1 delivery, the first feature: every message is stored first, sent in
/// fragments, sent again until acknowledged, and kept in the outbox while the peer is away
/// (`Outbound`). Incoming fragments are checked (recipient, plane, decryption) and reassembled
/// in order before they are stored and acknowledged (`Inbound`); acknowledgements, first
/// transmissions and what was shown are written together (`StateWrites`).
///
/// Engine state: every method runs on the engine (the shell's commands enter it with one
/// `engine.sync`).
package final class Delivery: Feature, DeliveryPart, Sendable {
    let parts: DeliveryParts
    let outbound: Outbound
    let inbound: Inbound
    let states: StateWrites

    package static let maximumLength = 4_000

    /// Whether `text` is at most `maximumLength` characters. They are counted only when its
    /// bytes are more (a character is a byte at least): counting them was a third of checking
    /// a line, at both ends of every message.
    package static func fits(_ text: String) -> Bool {
        text.utf8.count <= maximumLength || text.count <= maximumLength
    }

    package init(store: MessageStore, commits: GroupCommit, identity: Identity, rules: Rules, router: Router, directory: PeerDirectory,
                 deadlines: Deadlines, onEvent: @escaping @Sendable (DeliveryEvent) -> Void) throws {
        // Prekeys only with a mailbox: no mail can reach us without one.
        let prekeys = router.holdsMail ? try Prekeys(database: store.database, identity: identity, engine: router.engine) : nil
        parts = DeliveryParts(box: EngineBound(DeliveryState(), engine: router.engine), store: store, commits: commits, identity: identity,
                              rules: rules, router: router, directory: directory, deadlines: deadlines, prekeys: prekeys, onEvent: onEvent)
        states = StateWrites(parts)
        outbound = Outbound(parts, states: states, mailing: Mailing(parts, states: states))
        inbound = Inbound(parts, outbound: outbound, states: states)
    }

    /// Registers delivery's kinds and its deadline, follows who comes into reach, and loads
    /// every outbox, so messages written while away go when their peer appears.
    package func online(_ context: FeatureContext) throws {
        inbound.register(on: parts.router)
        parts.deadlines.add("delivery", next: { [unowned self] in outbound.nextDue }) { [unowned self] now in
            outbound.writeOutgoing()
            outbound.send(now: now)
            states.flush(now: now)
        }
        context.observe { [unowned self] event in
            // Gone: what waits for it (unacknowledged, or written since) is mailed.
            if case .presence(.left) = event { return outbound.send(now: clock()) }
            guard case .reachable(let peer, let returned) = event else { return }
            if let peer { peerArrived(peer, returned: returned) } else { transportReturned() }
        }
        if let prekeys = parts.prekeys {
            // Announced from the first announcement on, and again whenever it is replaced.
            context.presence.setSignedPrekey(prekeys.current)
            let post = parts.router.post
            parts.deadlines.add("prekeys", next: { prekeys.nextDue }) { now in
                guard prekeys.rotate(now: now) else { return }
                context.presence.setSignedPrekey(prekeys.current)
                post.mailChanged()
            }
            serveMail(post, prekeys: prekeys)
        }
        try loadOutboxes()
        // Once every feature is online (the engine's next turn), so that chat's notices hear it.
        engine.async { [weak self] in self.map { $0.outbound.mailing.tellExpired(now: $0.clock()) } }
        // What waits for someone away is mailed once a broker takes it (`Mailing`'s retry).
        outbound.send(now: clock())
    }

    package func offline() {}

    /// What the broker's post needs of mail: the topics mail comes on (each conversation's for
    /// each prekey of ours still usable, and their rendezvous), our prekeys to open envelopes,
    /// and where the topics listened on are kept across runs.
    private func serveMail(_ post: BrokerPost, prekeys: Prekeys) {
        let (database, me, rules) = (parts.store.database, myKey, parts.rules)
        post.serve(mailTopics: { [unowned self] in
            let listened = prekeys.listened(now: clock())
            var mailbox = BrokerPost.Mailbox(topics: Set(listened.map { BrokerTopics.rendezvous(prekey: $0) }))
            for peer in (try? MailRecords.correspondents(database, me: me)) ?? [] where !rules.isBlocked(peer.key) {
                guard let pair = post.pairKey(peer.key, agreement: peer.agreement) else { continue }
                mailbox.correspondents[peer.key] = peer.agreement
                if peer.answered { mailbox.answered.insert(peer.key) }
                for prekey in listened { mailbox.topics.insert(BrokerTopics.mail(pair, to: me, prekey: prekey)) }
            }
            return mailbox
        }, prekeys: { prekeys.kept }, previous: (try? MailRecords.listenedTopics(database, me: me)) ?? [], remember: { topics in
            try? MailRecords.rememberTopics(database, me: me, topics)
        })
    }

    package enum SendError: Error, Equatable, CustomStringConvertible {
        case tooLong(Int)
        case empty
        case nul
        case cannotReach(mine: Plane, theirs: Plane, name: String)

        package var description: String {
            switch self {
            case .tooLong(let count): return "the message has \(count) characters; at most \(Delivery.maximumLength) can be sent"
            case .empty: return "nothing to send"
            case .nul: return "the message contains a NUL character, which cannot be sent"
            case .cannotReach(let mine, let theirs, let name):
                return "you are \(mine.name) and \(name) is \(theirs.name): your words cannot reach them"
            }
        }
    }

    /// Takes a line to send in `conversation` (`Outbound.take`): written and sent before this
    /// returns when it is alone, with the lines after it when `more` follow at once.
    package func send(_ text: String, in conversation: Conversation, more: Bool = false) throws -> ChatMessage {
        try outbound.take(text, in: conversation, more: more)
    }

    /// The conversation with a peer, made if new.
    package func conversation(with peer: Peer) throws -> Conversation { try makeConversation(with: peer) }

    /// The signed prekey we announce, when we keep a mailbox.
    package var signedPrekey: SignedPrekey? { parts.prekeys?.current }

    /// Writes every line taken and every state change, with every message received, and sends
    /// what that lets go.
    package func settle() {
        outbound.writeOutgoing()
        states.flush(now: clock())
        commits.commit()
    }

    /// Incoming messages up to message #`number` were shown: they are marked read and the peer is
    /// told (a read receipt), with the state writes: a stream of messages shown one by one
    /// costs a write and a receipt per interval, not one each.
    package func shown(upTo number: Int64, in conversation: Conversation) {
        guard (try? withLink(conversation, { $0.shownUpTo = max($0.shownUpTo, number) })) != nil else { return }
        states.schedule()
    }

    // MARK: Mail for features

    /// What mail brings of a feature's `kind` (one `Mail.carried` lists) goes to `handler`, with
    /// its writer: present, or as its mail's announcement describes it.
    package func handleMail<Kind: PacketKind>(_ kind: Kind.Type, _ handler: @escaping @Sendable (Kind, Peer) -> Void) {
        parts.box.value.mailHandlers[Kind.code] = { body, peer in
            guard let value = try? Kind.read(body) else { return false }
            handler(value, peer)
            return true
        }
    }

    /// Lets go of the features' handlers (they hold their feature, which holds this): gone offline.
    func forgetMailHandlers() { parts.box.value.mailHandlers = [:] }

    /// Whether what waits for `key` goes by mail now: they are heard on no transport, and a
    /// broker of ours holds mail.
    package func isAway(_ key: Data) -> Bool { outbound.mailing.isAway(key) }

    /// A feature's `packet`, left with the brokers for `key`, who is away and has a conversation
    /// with us: sealed to their prekey. False when nothing can be sealed to them, or no broker
    /// took it.
    package func mail<Kind: PacketKind>(_ packet: Kind, to key: Data) -> Bool { outbound.mailing.mail([packet], to: key) == 1 }

    /// Several, each a mail, in order (their reader looked up once): how many went.
    package func mail<Kind: PacketKind>(_ packets: [Kind], to key: Data) -> Int { outbound.mailing.mail(packets, to: key) }

    /// The most bytes a packet mailed by `mail` may have (a mail frame less its own fields).
    package static let mailCapacity = Mailing.bundleCapacity

    /// A peer came (back) into reach (`returned`: it was out of sight, not just changed): its
    /// outbox is loaded and everything goes at once.
    func peerArrived(_ peer: Peer, returned: Bool) {
        outbound.mailing.learn(peer)
        let waiting = loadOutbox(of: peer)
        if returned, waiting > 0, let conversation = links[peer.signingKey]?.conversation {
            parts.onEvent(.awaitedArrived(conversation: conversation, peer: peer, waiting: waiting))
        }
    }

    /// Queues what the outbox holds for `peer`; how many messages that is.
    @discardableResult
    private func loadOutbox(of peer: Peer) -> Int {
        guard let conversation = try? store.existingConversation(myKey: myKey, peerKey: peer.signingKey),
              let outbox = try? store.outbox(conversation.id), !outbox.isEmpty else { return 0 }
        let now = clock()
        try? withLink(conversation) { link in
            link.queue.enqueue(outbox.map { (Outbound.fragments($0.row), $0.id) }, now: now)
            link.queue.restart(now: now)
        }
        outbound.rearm()
        return outbox.count
    }

    /// A transport came back (a broker reconnected): what waits for an acknowledgement goes
    /// again at once, rather than when its backoff, up to `maximumBackoff`, would have it.
    private func transportReturned() {
        let now = clock()
        for key in Array(links.keys) { links[key]?.queue.restart(now: now) }
        outbound.send(now: now)
        outbound.rearm()
    }

    /// Messages shown but not yet stored (they are, within the engine's turn): unread, and not
    /// yet in the stored count. Those of muted peers and of `besides` (the conversation on the
    /// screen) are not counted, as the stored count leaves theirs out.
    package func unreadNotYetStored(besides shown: Int64?) -> Int {
        parts.box.value.shownNotStored.reduce(0) { sum, entry in
            parts.rules.isMuted(entry.key) || links[entry.key]?.conversation == shown ? sum : sum + entry.value
        }
    }

    /// Whether a message written waits for the acknowledgement of a peer in reach (one out of
    /// reach waits in the outbox, however long one waits here).
    package var awaitsAcknowledgement: Bool {
        // Written first: a line's fragments are queued once its row is committed.
        outbound.writeOutgoing()
        commits.commit()
        return links.contains { key, link in !link.queue.isEmpty && reachablePeer(key) != nil }
    }

    /// What waits in the outboxes once every line taken is written: the conversations with
    /// messages their peer has not acknowledged (none if the database cannot say).
    package func waiting() -> [ConversationSummary] {
        settle()
        return ((try? store.conversations(myKey: myKey)) ?? []).filter { $0.waiting > 0 }
    }

    /// Loads every outbox.
    private func loadOutboxes() throws {
        let now = clock()
        for conversation in try store.conversationsWithOutbox(myKey: myKey) {
            let outbox = try store.outbox(conversation.id)
            try withLink(conversation) { link in
                link.queue.enqueue(outbox.map { (Outbound.fragments($0.row), $0.id) }, now: now)
            }
        }
        outbound.rearm()
    }

    /// Packets dropped by delivery's checks, by reason.
    package var droppedCounts: [String: Int] { parts.box.value.dropped }

    /// Fragments sent again for want of an acknowledgement in time (each copy counted once,
    /// whatever routes it took): losses, or a peer or broker slower than the measured round trip.
    package var resentCount: Int { parts.box.value.resent }
}
