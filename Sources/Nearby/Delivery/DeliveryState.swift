import Crypto
import Foundation
import Storage

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
    /// Mail came from `peer`, who is not here (told once a session, before what it brings): its
    /// name is checked as an arriving peer's (trust on first use).
    case mailFrom(Peer)
    /// Mail for someone away (`handle`) reached what the broker holds for one reader, `held`
    /// messages: the rest waits in the outbox (told once).
    case mailFull(conversation: Int64, handle: String, held: Int)
    /// Someone away (`handle`) announced no prekey in the last week (or none ever: an older
    /// seance, or no mailbox): nothing can be sealed to them, and what waits stays in the outbox
    /// for when both are online (told once a session).
    case mailCannotSeal(conversation: Int64, handle: String)
    /// Messages mailed a week ago or more and still not acknowledged: the broker no longer holds
    /// them (nor would the reader take them); they wait in the outbox for when both are online.
    case mailExpired(conversation: Int64, handle: String, numbers: [Int64])
}

/// Delivery's state on the engine, which its parts share (`Delivery`, `Outbound`, `Inbound`,
/// `StateWrites`).
struct DeliveryState {
    struct Link {
        var conversationRecord: Conversation
        var key: SymmetricKey
        var queue = OutgoingQueue()
        var assembler: IncomingAssembler
        /// Acknowledged and first-sent state not yet written (`StateWrites` writes it).
        var acknowledged: UInt32 = 0
        var sentThrough: UInt32 = 0
        /// Incoming messages shown up to this row, not yet marked read.
        var shownUpTo: Int64 = 0
        /// The last fragment received whose message is stored: what is acknowledged. The
        /// assembler may be ahead, by messages shown and waiting for the group commit.
        var stored: UInt32
        /// The last fragment whose message was shown: one that comes again because the database
        /// refused it is stored then, but not shown twice.
        var shown: UInt32 = 0
        /// The last fragment mailed (left with a broker while the peer is away), written or not.
        var mailedThrough: UInt32 = 0

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

    /// The numbering, and the lines taken but not yet written: the engine writes them together
    /// (`Outbound.writeOutgoing`), so a burst of lines costs one transaction.
    struct Intake {
        var counters: [Int64: Counters] = [:]
        var unwritten: [Unwritten] = []
        /// A write is queued on the engine; a hold (`send(more:)`) has its timer running.
        var writeScheduled = false
        var holding = false
    }

    var links = PeerMap<Link>()
    /// Messages shown and not yet stored, by sender: unread already, not yet in the
    /// conversation's count (`Delivery.unreadNotYetStored`).
    var shownNotStored = PeerMap<Int>()
    var dropped: [String: Int] = [:]
    var resent = 0
    /// Peers owed an acknowledgement, and the route to send it by (`Inbound.acknowledge`).
    var acknowledgements = PeerMap<(Peer, Route)>()
    /// Fragments held by every link's assembler together.
    var bufferedTotal = 0
    var intake = Intake()
    /// A state write is queued on the engine; when the last one was made.
    var flushScheduled = false
    var lastFlush = -Double.infinity
    /// When mail no broker took is tried again (`Mailing`), and the acknowledgements among it.
    var mailRetry: Double?
    var mailedAcknowledgements: [Data: UInt32] = [:]
    /// Writers away whose mail came this session (each told once: `DeliveryEvent.mailFrom`).
    var mailSenders: Set<Data> = []
    /// Readers away told that what the broker holds for them is full, this session.
    var mailFullTold: Set<Data> = []
    /// Peers told of having no prekey to seal to, this session (`DeliveryEvent.mailCannotSeal`).
    var mailCannotSealTold: Set<Data> = []
    /// Features' kinds mail may bring (`Delivery.handleMail`): each reads its payload, and is
    /// false when it does not read.
    var mailHandlers: [UInt8: @Sendable ([UInt8], Peer) -> Bool] = [:]
}

/// What delivery's parts share: the state on the engine, the store, and the network.
struct DeliveryParts: Sendable {
    let box: EngineBound<DeliveryState>
    let store: MessageStore
    let commits: GroupCommit
    let identity: Identity
    /// Our plane, and what features do to a line before it goes (a curse's).
    let rules: Rules
    let router: Router
    let directory: PeerDirectory
    let deadlines: Deadlines
    /// Our signed prekeys, when we keep a mailbox (a broker): mail to us is sealed to them.
    let prekeys: Prekeys?
    let onEvent: @Sendable (DeliveryEvent) -> Void

    var engine: Engine { router.engine }
    var myKey: Data { identity.signingPublicKey }
}

/// One of delivery's parts, with the shared state by name: each access checks that it runs on
/// the engine.
protocol DeliveryPart {
    var parts: DeliveryParts { get }
}

extension DeliveryPart {
    var links: PeerMap<DeliveryState.Link> { get { parts.box.value.links } nonmutating _modify { yield &parts.box.value.links } }
    var intake: DeliveryState.Intake { get { parts.box.value.intake } nonmutating _modify { yield &parts.box.value.intake } }
    var store: MessageStore { parts.store }
    var commits: GroupCommit { parts.commits }
    var engine: Engine { parts.engine }
    var myKey: Data { parts.myKey }
    func clock() -> Double { parts.engine.now }

    func drop(_ reason: String) { parts.box.value.dropped[reason, default: 0] += 1 }

    /// The present peer with this key.
    func presentPeer(_ key: Data) -> Peer? { parts.directory.peer(key) }

    func isPresent(_ key: Data) -> Bool { parts.directory.isPresent(key) }

    /// The present peer with this key, if our plane reaches it and it is not held (a key using
    /// a verified name): the only ones sent to.
    func reachablePeer(_ key: Data) -> Peer? {
        guard let peer = parts.directory.peer(key), parts.rules.canWrite(peer), !parts.rules.isHeld(key) else { return nil }
        return peer
    }

    /// The conversation with a peer, made if new.
    func makeConversation(with peer: Peer) throws -> Conversation {
        try store.conversation(myKey: myKey, peerKey: peer.signingKey, peerName: peer.name,
                               peerAgreementKey: peer.announcement.agreementKey, peerPrekey: peer.announcement.signedPrekey, now: clock())
    }

    /// The link of `conversation` made and kept (key derived, assembler resumed from the stored
    /// delivered sequence): its first use.
    private func makeLink(for conversation: Conversation) throws {
        let key = try MessageCrypto.key(mine: parts.identity.agreement, theirs: conversation.peerAgreementKey,
                                        mySigningKey: myKey, theirSigningKey: conversation.peerKey)
        links[conversation.peerKey] = DeliveryState.Link(conversationRecord: conversation, key: key,
                                                         assembler: IncomingAssembler(delivered: conversation.deliveredSequence),
                                                         acknowledged: conversation.acknowledgedSequence, stored: conversation.deliveredSequence,
                                                         mailedThrough: conversation.mailedSequence)
    }

    /// Runs `body` on the link of `conversation` (made on first use) and keeps what it changed.
    @discardableResult
    func withLink<T>(_ conversation: Conversation, _ body: (inout DeliveryState.Link) throws -> T) throws -> T {
        if !links.contains(conversation.peerKey) { try makeLink(for: conversation) }
        // In place: a copy would copy the link's queue, and its assembler's table when changed.
        return try body(&links[conversation.peerKey]!)
    }

    /// Sends one of delivery's packets to `peer`; true when it left this machine.
    @discardableResult
    func transmit<Kind: PacketKind>(_ packet: Kind, to peer: Peer, everyRoute: Bool = false, reply: Route? = nil) -> Bool {
        parts.router.send(packet, to: peer, everyRoute: everyRoute, reply: reply)
    }
}
