import Crypto
import Foundation
import Nearby
import Storage
import Synchronization
import Testing
import TestWorld
import Wire

/// Mail on a network that keeps presence and holds what comes to an inbox while its reader is
/// away, as a broker does (`MemoryNetwork`), on the manual clock.
@Suite struct MailingTests {
    /// What delivery tells of mail (chat's notices say it), heard from going online on.
    final class MailEvents: Feature, @unchecked Sendable {
        var full: [Int] = []
        var cannotSeal: [String] = []
        var expired: [[Int64]] = []
        /// Flags and mail senders, in the order told.
        var told: [String] = []
        func online(_ context: FeatureContext) throws {
            context.observe { [self] event in
                if case .delivery(.mailFull(_, _, let held)) = event { full.append(held) }
                if case .delivery(.mailCannotSeal(_, let handle)) = event { cannotSeal.append(handle) }
                if case .delivery(.mailExpired(_, _, let numbers)) = event { expired.append(numbers) }
                if case .delivery(.mailFrom(let peer)) = event { told.append("mail from \(peer.handle)") }
                if case .impostor(let peer, let trusted, _) = event { told.append("\(peer.handle) uses \(trusted)") }
            }
        }
        func offline() {}
    }

    /// ann and ben on a broker, each having heard the other; then ben away.
    func world() throws -> (ChatWorld, ann: ChatWorld.Node, ben: ChatWorld.Node, conversation: Conversation) {
        let world = try ChatWorld([("ann", .human), ("ben", .human)], transports: ["broker"], keeping: ["broker"])
        let (ann, ben) = (world.nodes[0], world.nodes[1])
        world.step(3)
        let peer = try #require(ann.service.peer(ben.identity.signingPublicKey))
        let conversation = try ann.delivery.conversation(with: peer)
        ben.goOffline()
        world.step(1)
        #expect(ann.service.peer(ben.identity.signingPublicKey) == nil, "ben left")
        return (world, ann, ben, conversation)
    }

    func column(_ node: ChatWorld.Node, _ sql: String) throws -> [String] {
        try node.database.read { db in try String.fetchAll(db, sql: sql) }
    }

    func states(_ node: ChatWorld.Node) throws -> [String] {
        try column(node, "SELECT shownState FROM message_shown WHERE outgoing = 1 ORDER BY number")
    }

    /// Written while ben is away, held by the broker, read when he is back with ann gone; her
    /// messages `sent` until then, `delivered` once she is back and has his acknowledgement.
    @Test func whatIsWrittenToSomeoneAwayIsHeldUntilTheyReturn() throws {
        let (world, ann, ben, conversation) = try world()
        for text in ["one", "two", "three"] { _ = try ann.delivery.send(text, in: conversation) }
        world.step(1)
        #expect(try states(ann) == ["sent", "sent", "sent"])
        #expect(world.network.held(for: ben.identity.signingPublicKey) >= 1)
        ann.goOffline()
        try ben.goOnline(world)
        world.step(1)
        #expect(try column(ben, "SELECT text FROM message WHERE outgoing = 0 ORDER BY number") == ["one", "two", "three"])
        #expect(world.network.held(for: ben.identity.signingPublicKey) == 0)
        #expect(world.network.held(for: ann.identity.signingPublicKey) == 1, "his acknowledgement, held for her")
        ben.goOffline()
        try ann.goOnline(world)
        world.step(1)
        #expect(try states(ann) == ["delivered", "delivered", "delivered"])
    }

    /// What the broker sees: first contact goes to ben's rendezvous (he has no conversation with
    /// ann to listen on), in an envelope; once he has answered, ann's mail goes to the pair's
    /// mail topic, and his acknowledgement comes back on hers. He reads it an hour later. No
    /// topic names a key, and every frame is one of the padded sizes.
    @Test func firstContactGoesToTheRendezvousAndTheRestToThePairsTopics() throws {
        let (world, ann, ben, conversation) = try world()
        let benKey = ben.identity.signingPublicKey
        let prekey = try #require(try ann.database.read { db in try Data.fetchOne(db, sql: "SELECT peerPrekey FROM conversation") })
        _ = try ann.delivery.send("hello, stranger", in: conversation)
        world.step(1)
        #expect(world.network.publications.last?.topic == BrokerTopics.rendezvous(prekey: prekey))
        ann.goOffline()
        world.step(3_600)
        try ben.goOnline(world)
        world.step(2)
        #expect(try column(ben, "SELECT text FROM message WHERE outgoing = 0") == ["hello, stranger"])
        ben.goOffline()
        try ann.goOnline(world)
        world.step(2)
        #expect(try states(ann) == ["delivered"], "his acknowledgement, on a topic of hers")
        let before = world.network.publications.count
        _ = try ann.delivery.send("hello again", in: conversation)
        world.step(1)
        let pair = try BrokerTopics.pairKey(mine: ann.identity.agreement, theirs: ben.identity.agreementPublicKey,
                                            mySigningKey: ann.identity.signingPublicKey, theirSigningKey: benKey)
        #expect(world.network.publications.dropFirst(before).map(\.topic) == [BrokerTopics.mail(pair, to: benKey, prekey: prekey)])
        for (topic, size) in world.network.publications {
            #expect(BrokerTopics.isTopic(topic) && BrokerPadding.sizes.contains(size), "\(topic): \(size) bytes")
            for key in [ann.identity.signingPublicKey, benKey] { #expect(!topic.contains(PeerIdentity.longFingerprint(of: key).prefix(8))) }
        }
    }

    /// Both online through a broker: their frames go to the pair's topics, another each hour (the
    /// mailboxes listen on the next before it comes), and no topic is used both hours.
    @Test func liveTopicsMoveWithTheHourAndNothingIsLost() throws {
        let world = try ChatWorld([("ann", .human), ("ben", .human)], transports: ["broker"], keeping: ["broker"])
        let (ann, ben) = (world.nodes[0], world.nodes[1])
        world.step(3)
        let conversation = try ann.delivery.conversation(with: try #require(ann.service.peer(ben.identity.signingPublicKey)))
        // Half an hour before the hour ends, and then past it.
        world.step((5_400 - world.scheduler.now.truncatingRemainder(dividingBy: 3_600)).truncatingRemainder(dividingBy: 3_600))
        _ = try ann.delivery.send("before the hour", in: conversation)
        world.step(2)
        let first = Set(world.network.publications.map(\.topic))
        world.step(1_800)
        _ = try ann.delivery.send("after it", in: conversation)
        world.step(2)
        #expect(try column(ben, "SELECT text FROM message WHERE outgoing = 0 ORDER BY number") == ["before the hour", "after it"])
        #expect(try states(ann).allSatisfy { $0 == "delivered" || $0 == "read" })
        let second = Set(world.network.publications.map(\.topic)).subtracting(first)
        #expect(!second.isEmpty && first.allSatisfy(BrokerTopics.isTopic))
        let hour = BrokerTopics.hour(world.scheduler.now)
        let pair = try BrokerTopics.pairKey(mine: ann.identity.agreement, theirs: ben.identity.agreementPublicKey,
                                            mySigningKey: ann.identity.signingPublicKey, theirSigningKey: ben.identity.signingPublicKey)
        #expect(second.contains(BrokerTopics.live(pair, to: ben.identity.signingPublicKey, hour: hour)))
        #expect(!first.contains(BrokerTopics.live(pair, to: ben.identity.signingPublicKey, hour: hour)))
    }

    /// A shell listens only for those it talks with: ann and ben's topics, not cat's, who talks
    /// with nobody and listens only on its rendezvous. A first handshake goes to the
    /// rendezvous; when cat, who has no conversation with ann, restarts and no longer listens
    /// for her, her next first handshake messages go to the pair's topic twice, unanswered, and
    /// then to its rendezvous, where it hears them.
    @Test func eachListensForThoseItTalksWithAndARestartedPeerIsFoundAgain() throws {
        let world = try ChatWorld([("ann", .human), ("ben", .human), ("cat", .human)], transports: ["broker"], keeping: ["broker"])
        let (ann, ben, cat) = (world.nodes[0], world.nodes[1], world.nodes[2])
        world.step(3)
        let conversation = try ann.delivery.conversation(with: try #require(ann.service.peer(ben.identity.signingPublicKey)))
        _ = try ann.delivery.send("just us", in: conversation)
        world.step(2)
        #expect(try column(ben, "SELECT text FROM message WHERE outgoing = 0") == ["just us"])
        let catPrekey = try #require(cat.delivery.signedPrekey).publicKey
        #expect(world.network.listening(to: cat.identity.signingPublicKey) == [BrokerTopics.rendezvous(prekey: catPrekey)],
                "cat listens on its rendezvous alone")
        #expect(world.network.listening(to: ann.identity.signingPublicKey).count > 1)
        // Pings between ann and cat: a session, no conversation.
        let heard = Mutex<[UInt32]>([])
        func listen() { cat.service.handle(Ping.self) { ping, _, _ in heard.withLock { $0.append(ping.number) } } }
        func ping(_ number: UInt32) {
            if let peer = ann.service.peer(cat.identity.signingPublicKey) { _ = ann.service.send(Ping(number: number, isPong: false), to: peer) }
        }
        listen()
        let before = world.network.publications.count
        ping(1)
        world.step(1)
        #expect(heard.withLock { $0 } == [1])
        #expect(world.network.publications.dropFirst(before).first?.topic == BrokerTopics.rendezvous(prekey: catPrekey), "first contact")
        cat.goOffline()
        world.step(1)
        try cat.goOnline(world)
        listen()
        world.step(3)
        var number: UInt32 = 2
        while heard.withLock({ $0.count }) < 2, number < 40 {
            ping(number)
            world.step(1)
            number += 1
        }
        #expect(heard.withLock { $0.count } >= 2, "found again at its rendezvous: \(heard.withLock { $0 })")
    }

    /// An envelope is taken only from a broker: one on the LAN is dropped before it costs a key
    /// agreement or mail's budget; one from the broker that opens for nobody is dropped too.
    @Test func envelopesComeOnlyByABrokerAndOpenOnlyForUs() throws {
        let world = try ChatWorld([("ann", .human), ("ben", .human)], transports: ["lan", "broker"], keeping: ["broker"])
        let ben = world.nodes[1]
        world.step(3)
        let stranger = try Envelope.seal(SessionWire.start(KindTable.handshake) + [UInt8](repeating: 1, count: 105),
                                         to: Curve25519.KeyAgreement.PrivateKey().publicKey.rawRepresentation, as: .agreementKey)
        world.networks["lan"]!.inject(stranger, from: "eve", by: "lan")
        world.networks["broker"]!.inject(stranger, from: "eve", by: "broker")
        world.step(1)
        let dropped = ben.service.statistics.dropped
        #expect(dropped["envelope not by a broker"] == 1 && dropped["envelope that does not open"] == 1, "\(dropped)")
    }

    /// Each fragment is mailed once: going offline and online again mails nothing new; at most
    /// `heldLimit` wait with the broker for one reader, the rest in the outbox.
    @Test func eachFragmentIsMailedOnceAndAtMostTheLimitWait() throws {
        let (world, ann, ben, conversation) = try world()
        let key = ben.identity.signingPublicKey
        _ = try ann.delivery.send("first", in: conversation)
        world.step(1)
        let held = world.network.held(for: key)
        #expect(held == 1)
        ann.goOffline()
        try ann.goOnline(world)
        world.step(10)
        #expect(world.network.held(for: key) == held, "nothing mailed again after a restart")
        let events = MailEvents()
        ann.engine.sync { try? events.online(ann.context) }
        let limit = Mailing.heldLimit, written = limit + 50
        for index in 1...written { _ = try ann.delivery.send("line \(index)", in: conversation, more: index < written) }
        world.step(1)
        #expect(try column(ann, "SELECT mailedSequence FROM conversation") == ["\(limit)"])
        #expect(try states(ann).filter { $0 == "sent" }.count == limit)
        world.step(1)
        #expect(events.full == [limit], "told once, with the messages held: \(events.full)")
        // What going offline says waits: all of it, the first `limit` with the broker.
        let summary = try #require(ann.delivery.waiting().first)
        #expect(summary.waiting == written + 1 && summary.mailed == limit, "\(summary.waiting), \(summary.mailed)")
        #expect(try MailRecords.isMailed(ann.database, number: Int64(limit), in: conversation.id))
        #expect(try !MailRecords.isMailed(ann.database, number: Int64(limit + 1), in: conversation.id))
        // Back, ben gets the 256 held, and the rest once both are online (the session).
        try ben.goOnline(world)
        world.step(5)
        #expect(try column(ben, "SELECT count(*) FROM message WHERE outgoing = 0") == ["\(written + 1)"])
        #expect(try states(ann).allSatisfy { $0 == "delivered" })
    }

    /// Mail older than a week is not taken; its writer is told, when next online, that it
    /// waits in the outbox.
    @Test func mailHeldLongerThanAWeekIsNotTakenAndItsWriterIsTold() throws {
        let (world, ann, ben, conversation) = try world()
        _ = try ann.delivery.send("stale by the time you read this", in: conversation)
        world.step(1)
        ann.goOffline()
        world.step(Mail.lifetime + 3_600)
        try ben.goOnline(world)
        world.step(1)
        #expect(try column(ben, "SELECT count(*) FROM message") == ["0"])
        #expect(ben.delivery.droppedCounts["expired mail"] == 1)
        ben.goOffline()
        let events = MailEvents()
        ann.online.add(events)
        try ann.goOnline(world)
        world.step(1)
        #expect(events.expired == [[1]])
        #expect(try states(ann) == ["sent"])
        #expect(ann.delivery.waiting().map(\.mailed) == [0], "told it waited a week: no longer with the broker")
    }

    /// Mail under the name of someone ben trusts, from another key, is flagged as an arriving
    /// impostor is, before it is shown; it goes into a conversation of its own key.
    @Test func mailUnderATrustedNameFromAnotherKeyIsFlagged() throws {
        let (world, ann, ben, _) = try world()
        let events = MailEvents()
        ben.online.add(events)
        try ben.goOnline(world)
        world.step(1)
        // Mallory, never heard, calls herself ann and writes to ben's inbox.
        let mallory = Identity()
        world.network.inject(try mail(from: mallory, as: "ann", to: ben, "it is me, ann", at: world.scheduler.now), from: "mallory", by: "broker")
        world.step(1)
        let handle = PeerIdentity.handle(name: "ann", signingKey: mallory.signingPublicKey)
        let trusted = PeerIdentity.handle(name: "ann", signingKey: ann.identity.signingPublicKey)
        #expect(events.told == ["\(handle) uses \(trusted)", "mail from \(handle)"])
        #expect(try column(ben, "SELECT count(*) FROM conversation WHERE peerKey = x'\(mallory.signingPublicKey.map { String(format: "%02x", $0) }.joined())'") == ["1"])
        #expect(try column(ben, "SELECT text FROM message") == ["it is me, ann"])
    }

    /// A mail frame from `writer`, calling itself `name`, to `reader`, stamped `time`.
    func mail(from writer: Identity, as name: String, to reader: ChatWorld.Node, _ text: String, at time: Double) throws -> [UInt8] {
        let readerKey = reader.identity.signingPublicKey
        let said = Announcement(name: name, agreementKey: writer.agreementPublicKey, plane: 0, avatar: .none, unicastPort: 0,
                                intervalMilliseconds: 1_000)
        let key = try MessageCrypto.key(mine: writer.agreement, theirs: reader.identity.agreementPublicKey,
                                        mySigningKey: writer.signingPublicKey, theirSigningKey: readerKey)
        let sealed = try MessageCrypto.seal(Fragment(sequence: 1, isLast: true, sentAt: UInt64(time * 1000), text: Data(text.utf8)),
                                            key: key, sender: writer.signingPublicKey, recipient: readerKey)
        let prekey = try #require(reader.delivery.signedPrekey)
        let mail = try Mail.seal(MessageFragment(recipient: readerKey, sealed: sealed), for: readerKey,
                                 agreementKey: reader.identity.agreementPublicKey, prekey: prekey.publicKey, from: said,
                                 identity: writer.agreement, sender: writer.signingPublicKey)
        return try Packet.encode(mail, signer: writer.signing, timestamp: UInt64(time * 1000), sequence: 1)
    }

    /// Mail stamped further ahead than clocks drift would never expire: dropped.
    @Test func mailFromTheFutureIsDropped() throws {
        let (world, _, ben, _) = try world()
        try ben.goOnline(world)
        world.step(1)
        let later = world.scheduler.now + FrameTime.allowance + 60
        world.network.inject(try mail(from: Identity(), as: "cat", to: ben, "from tomorrow", at: later), from: "cat", by: "broker")
        world.step(1)
        #expect(ben.delivery.droppedCounts["from the future"] == 1)
        #expect(try column(ben, "SELECT count(*) FROM message") == ["0"])
    }

    /// Mail from someone ben blocked is dropped unread, as anything of theirs.
    @Test func mailFromSomeoneBlockedIsDropped() throws {
        let (world, ann, ben, conversation) = try world()
        try PeerChoiceStore(database: ben.database).add(ann.identity.signingPublicKey, name: "ann", to: .blocked, now: world.scheduler.now)
        _ = try ann.delivery.send("let me in", in: conversation)
        world.step(1)
        try ben.goOnline(world)
        world.step(1)
        #expect(try column(ben, "SELECT count(*) FROM message") == ["0"])
        #expect(ben.service.statistics.dropped["blocked", default: 0] > 0)
    }

    // MARK: Forward secrecy

    /// A mail recorded on its way (a broker's operator keeping a copy) opens with ben's database
    /// and keys while the prekey it was sealed to is kept (the control), and with nothing once
    /// that prekey was replaced and erased: neither through the database nor from its files.
    @Test func aRecordedMailOpensOnlyWhileItsPrekeyIsKept() throws {
        let (world, ann, ben, conversation) = try world()
        let (annKey, benKey) = (ann.identity.signingPublicKey, ben.identity.signingPublicKey)
        _ = try ann.delivery.send("for your eyes only", in: conversation)
        world.step(1)
        // As the broker holds it: padded, in an envelope sealed to the prekey the mail is sealed to.
        let held = try #require(world.network.heldDatagrams(for: benKey).first)
        let envelope = try #require(BrokerPadding.unpad(held))
        #expect(Envelope.recipient(of: envelope) == .signedPrekey)
        // ben's prekey, as ann heard it (ben is away).
        let sealedTo = try #require(try ann.database.read { db in try Data.fetchOne(db, sql: "SELECT peerPrekey FROM conversation") })
        let hex = sealedTo.map { String(format: "%02x", $0) }.joined()
        let stored = try #require(try ben.database.read { db in
            try Data.fetchOne(db, sql: "SELECT sealedPrivateKey FROM signed_prekey WHERE publicKey = x'\(hex)'")
        })
        // What a thief with ben's database and password has: his identity, and the prekeys stored.
        func opened() throws -> String? {
            let engine = Engine(scheduler: world.scheduler)
            return try engine.sync {
                let prekeys = try Prekeys(database: ben.database, identity: ben.identity, engine: engine)
                guard let prekey = prekeys.privateKey(for: sealedTo), let inner = Envelope.open(envelope, with: [prekey]) else { return nil }
                let recorded = try Packet.decode(inner).read(Mail.self)
                #expect(recorded.prekey == sealedTo)
                let (kind, body) = try recorded.open(identity: ben.identity.agreement, prekey: prekey, sender: annKey)
                #expect(kind == KindTable.message)
                let key = try MessageCrypto.key(mine: ben.identity.agreement, theirs: ann.identity.agreementPublicKey,
                                                mySigningKey: benKey, theirSigningKey: annKey)
                let fragment = try MessageCrypto.open(try MessageFragment.read(body).sealed, key: key, sender: annKey, recipient: benKey)
                return String(decoding: fragment.text, as: UTF8.self)
            }
        }
        #expect(try opened() == "for your eyes only", "the control: it opens while the prekey is kept")
        ann.goOffline()
        // Replaced after two days; erased once every mail sealed to it has expired.
        world.step(Prekeys.kept + 60)
        try ben.goOnline(world)
        world.step(1)
        #expect(try opened() == nil)
        #expect(try ben.database.read { db in try Int.fetchOne(db, sql: "SELECT count(*) FROM signed_prekey WHERE publicKey = x'\(hex)'") } == 0)
        for file in ["", "-wal"] {
            let bytes = (try? Data(contentsOf: URL(fileURLWithPath: ben.database.path + file))) ?? Data()
            #expect(bytes.range(of: stored) == nil, "the sealed prekey is still in seance.sqlite\(file)")
        }
    }

    /// A prekey older than a week is not sealed to (its reader may have erased it by the time
    /// the mail comes): what is written waits in the outbox, its writer told once, and goes when
    /// both are online.
    @Test func noMailIsSealedToAPrekeyOlderThanAWeek() throws {
        let (world, ann, ben, conversation) = try world()
        ann.goOffline()
        world.step(Prekeys.usable)
        let events = MailEvents()
        ann.online.add(events)
        try ann.goOnline(world)
        world.step(1)
        for text in ["are you there?", "hello?"] { _ = try ann.delivery.send(text, in: conversation) }
        world.step(10)
        #expect(world.network.held(for: ben.identity.signingPublicKey) == 0)
        #expect(events.cannotSeal == [conversation.handle], "told once: \(events.cannotSeal)")
        #expect(try states(ann) == ["sending", "sending"])
        try ben.goOnline(world)
        world.step(5)
        #expect(try column(ben, "SELECT text FROM message WHERE outgoing = 0 ORDER BY number") == ["are you there?", "hello?"])
        #expect(try states(ann) == ["delivered", "delivered"])
    }
}
