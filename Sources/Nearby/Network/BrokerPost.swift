import Crypto
import Foundation
import Wire

/// Direct frames and mail as they go through a broker, which must not learn who writes to whom
/// (`docs/PROTOCOL.md`, "What a broker learns"): each goes to a topic only the pair can derive
/// (`BrokerTopics`), a handshake message and mail in an envelope sealed to the recipient
/// (`Envelope`), so that no topic and no outer byte names either end; the mailbox listens on
/// the topics that are ours. Live topics change every hour and are listened on for the peers we
/// talk with: those of our conversations present, and whoever we sent to or heard from through
/// the broker lately (a site of thousands costs each shell only its own); a first handshake
/// message to someone who may not listen for us goes to their rendezvous. Mail's topics change
/// with our signed prekey and are listened on for every conversation (delivery says which,
/// `Mailbox`). Only on a shell with a broker.
///
/// Engine state: every method runs on the engine.
package final class BrokerPost: Sendable {
    struct State {
        /// Each peer's pair key, kept while its agreement key stays the same.
        var pairs: [Data: (agreement: Data, key: SymmetricKey)] = [:]
        /// Mail's topics and the rendezvous, as delivery last said, and when it is asked again.
        var mailbox = Mailbox()
        var mailDue = -Double.infinity
        /// Peers we sent to through the broker, and peers heard from there (who listen for us),
        /// when last; and how many first handshake messages went to a peer unanswered.
        var talking: [Data: Double] = [:]
        var heard: [Data: Double] = [:]
        var unanswered: [Data: Int] = [:]
        /// What the mailbox was last told to listen on, and what an earlier run left subscribed.
        var listening: Set<String> = []
        var forgetting: Set<String> = []
        var checkedAt = -Double.infinity
        /// Delivery's: mail's topics and our correspondents (nil: none asked yet), our prekeys'
        /// private halves for mail's envelopes, and where the topics listened on are kept.
        var mailTopics: (@Sendable () -> Mailbox)?
        var prekeys: (@Sendable () -> [Curve25519.KeyAgreement.PrivateKey])?
        var remember: (@Sendable (Set<String>) -> Void)?
    }

    let agreement: Curve25519.KeyAgreement.PrivateKey
    let myKey: Data
    let keeping: [Transport]
    let directory: PeerDirectory
    let engine: Engine
    private let state: EngineBound<State>

    /// How often the peers present are looked at again for topics to listen on.
    static let recheck = 1.0
    /// How often delivery is asked again for mail's topics (a conversation begun meanwhile).
    static let mailRecheck = 60.0
    /// The hour before is still listened on this long into the next: a sender's clock behind.
    static let overlap = 300.0
    /// Pair keys kept at most (all forgotten past it: each is one key agreement to make again).
    static let pairLimit = 4_096
    /// How long a peer we talked with through the broker is listened for (a session unused for
    /// 10 minutes is forgotten).
    static let talk = 900.0
    /// First handshake messages to a peer's pair topic before the rest go to its rendezvous
    /// (it may have restarted, and listen for us no more).
    static let triesOnThePairsTopic = 2

    /// What delivery says of mail: the topics it comes on (each conversation's, and our
    /// rendezvous), our correspondents with their agreement keys, and those who wrote to us or
    /// acknowledged something of ours (they have a conversation with us, and listen for us).
    package struct Mailbox: Sendable {
        package var topics: Set<String> = []
        package var correspondents: [Data: Data] = [:]
        package var answered: Set<Data> = []

        package init(topics: Set<String> = [], correspondents: [Data: Data] = [:], answered: Set<Data> = []) {
            self.topics = topics
            self.correspondents = correspondents
            self.answered = answered
        }
    }

    init(identity: Identity, keeping: [Transport], directory: PeerDirectory, engine: Engine) {
        agreement = identity.agreement
        myKey = identity.signingPublicKey
        self.keeping = keeping
        self.directory = directory
        self.engine = engine
        state = EngineBound(State(), engine: engine)
    }

    /// Delivery's part: mail's topics to listen on, the prekeys mail's envelopes are sealed to,
    /// and the topics an earlier run listened on (`previous`), kept by `remember`.
    package func serve(mailTopics: @escaping @Sendable () -> Mailbox, prekeys: @escaping @Sendable () -> [Curve25519.KeyAgreement.PrivateKey],
                       previous: Set<String>, remember: @escaping @Sendable (Set<String>) -> Void) {
        state.update { state in
            state.mailTopics = mailTopics
            state.prekeys = prekeys
            state.remember = remember
            state.forgetting = previous
            state.mailDue = -.infinity
            state.checkedAt = -.infinity
        }
    }

    /// Mail's topics are to be asked for again at once (a prekey made, a conversation begun).
    package func mailChanged() { state.value.mailDue = -.infinity }

    /// Lets go of delivery's closures (gone offline).
    func release() {
        state.update { state in
            state.mailTopics = nil
            state.prekeys = nil
            state.remember = nil
        }
    }

    // MARK: Topics

    /// The key the pair's topics come from; nil for a key that agrees to nothing.
    package func pairKey(_ peer: Data, agreement theirs: Data) -> SymmetricKey? {
        if let known = state.value.pairs[peer], known.agreement == theirs { return known.key }
        guard let key = try? BrokerTopics.pairKey(mine: agreement, theirs: theirs, mySigningKey: myKey, theirSigningKey: peer) else { return nil }
        state.update { state in
            if state.pairs.count >= Self.pairLimit { state.pairs = [:] }
            state.pairs[peer] = (theirs, key)
        }
        return key
    }

    /// The route of `peer`'s frames on the broker `transport` this hour.
    func liveRoute(on transport: String, to peer: Peer) -> Route? {
        guard let pair = pairKey(peer.signingKey, agreement: peer.announcement.agreementKey) else { return nil }
        return Route(transport: transport, address: BrokerTopics.live(pair, to: peer.signingKey, hour: BrokerTopics.hour(engine.now)))
    }

    /// Where a first handshake message to `peer` goes on `route` (its pair's topic): there when
    /// it listens for us (it wrote to us, answered us, or we heard from it lately), else, and after
    /// `triesOnThePairsTopic` unanswered there, to its rendezvous (its presence names it).
    func firstContact(_ peer: Peer, on route: Route) -> Route {
        let key = peer.signingKey
        let tries = state.value.unanswered[key, default: 0]
        state.value.unanswered[key] = tries + 1
        let listens = state.value.heard[key].map { engine.now - $0 < Self.talk } ?? false || state.value.mailbox.answered.contains(key)
        guard !listens || tries >= Self.triesOnThePairsTopic, let prekey = peer.announcement.signedPrekey else { return route }
        return Route(transport: route.transport, address: BrokerTopics.rendezvous(prekey: prekey.publicKey))
    }

    /// We are about to send to `peer` through the broker: its answers come on the pair's topics,
    /// listened on before what we send goes (one connection: the broker has the subscription
    /// first).
    func talking(to peer: Peer) {
        let known = state.value.talking[peer.signingKey] != nil
        state.value.talking[peer.signingKey] = engine.now
        if !known { check(now: engine.now, peersOnly: true) }
    }

    /// `key` left: back, it may be a new process, which listens for us only once it hears from us.
    func forget(_ key: Data) {
        state.update { state in
            state.heard[key] = nil
            state.unanswered[key] = nil
        }
    }

    /// A frame from `key` came through the broker: it listens for us.
    func heard(from key: Data) {
        state.update { state in
            state.heard[key] = engine.now
            state.unanswered[key] = nil
        }
    }

    /// The topics that are ours now: this hour's and the next's (and the last's for a few
    /// minutes into this one) of every present peer we talk with, and mail's.
    func inbox(now: Double) -> Set<String> {
        let hour = BrokerTopics.hour(now)
        let hours = now - Double(hour) * 3_600 < Self.overlap && hour > 0 ? [hour - 1, hour, hour + 1] : [hour, hour + 1]
        var topics = state.value.mailbox.topics
        let recent = { (time: Double) in now - time < Self.talk }
        let peers = Set(state.value.mailbox.correspondents.keys).union(state.value.talking.filter { recent($0.value) }.keys)
            .union(state.value.heard.filter { recent($0.value) }.keys)
        for key in peers {
            guard let peer = directory.peer(key), let pair = pairKey(key, agreement: peer.announcement.agreementKey) else { continue }
            for hour in hours { topics.insert(BrokerTopics.live(pair, to: myKey, hour: hour)) }
        }
        return topics
    }

    /// When the topics are looked at again; nil without a broker.
    var nextDue: Double? { keeping.isEmpty ? nil : state.value.checkedAt + Self.recheck }

    /// Tells the mailbox what to listen on, when that changed (kept for the next run, which
    /// unsubscribes from what is no longer ours).
    func check(now: Double, peersOnly: Bool = false) {
        guard !keeping.isEmpty else { return }
        if !peersOnly {
            state.update { state in
                state.checkedAt = now
                // Those we no longer talk with are forgotten.
                state.talking = state.talking.filter { now - $0.value < Self.talk }
                state.heard = state.heard.filter { now - $0.value < Self.talk }
                state.unanswered = state.unanswered.filter { state.talking[$0.key] != nil }
            }
        }
        if now >= state.value.mailDue, let mailTopics = state.value.mailTopics {
            let mailbox = mailTopics()
            state.update { state in
                state.mailbox = mailbox
                state.mailDue = now + Self.mailRecheck
            }
        }
        let topics = inbox(now: now)
        let (changed, forgetting, remember) = state.update { state -> (Bool, Set<String>, (@Sendable (Set<String>) -> Void)?) in
            let forgetting = state.forgetting.union(state.listening).subtracting(topics)
            defer {
                state.listening = topics
                state.forgetting = []
            }
            return (topics != state.listening || !forgetting.isEmpty, forgetting, state.remember)
        }
        guard changed else { return }
        for transport in keeping { transport.setInbox(topics: topics, forgetting: forgetting) }
        remember?(topics)
    }

    // MARK: Envelopes

    /// A handshake message for `peer` as it goes through a broker: sealed to its agreement key.
    func sealHandshake(_ bytes: [UInt8], to peer: Peer) -> [UInt8]? {
        try? Envelope.seal(bytes, to: peer.announcement.agreementKey, as: .agreementKey)
    }

    /// The frame inside an envelope to us; nil when it does not open, or holds a kind no
    /// envelope may.
    func open(_ bytes: [UInt8]) -> [UInt8]? {
        let keys: [Curve25519.KeyAgreement.PrivateKey]
        switch Envelope.recipient(of: bytes) {
        case .agreementKey?: keys = [agreement]
        case .signedPrekey?: keys = state.value.prekeys?() ?? []
        case nil: return nil
        }
        guard let inner = Envelope.open(bytes, with: keys), inner.count > 5, Envelope.carries(inner[5]) else { return nil }
        return inner
    }
}
