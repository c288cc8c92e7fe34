import Accounts
import Crypto
import Foundation
import Noise
import Synchronization
import TestWorld
import Testing
@testable import Nearby

/// Conversations in sessions, on the manual clock: what a bad network and restarts do to them,
/// and what is left for someone who later gets both profiles' databases and passwords.
@Suite struct SessionDeliveryTests {
    /// The texts `node` has received, oldest first.
    func received(by node: ChatWorld.Node) throws -> [String] {
        try node.database.read { db in try String.fetchAll(db, sql: "SELECT text FROM message WHERE outgoing = 0 ORDER BY id") }
    }

    /// 10 % lost, 10 % twice, 10 % late (after the next datagram), keys changed every 16 frames,
    /// one side restarted cleanly and the other as after a crash (its goodbye lost): every
    /// message arrives exactly once, in order, both ways.
    @Test func everyMessageArrivesOnceInOrderThroughABadNetworkRekeysAndRestarts() throws {
        var timing = SessionTiming()
        timing.rekeyAfterFrames = 16
        let world = try ChatWorld([("ann", .human), ("ben", .human)], sessionTiming: timing)
        let (ann, ben) = (world.nodes[0], world.nodes[1])
        let random = Mutex(SeededRandom(seed: 42))
        world.network.setFate { _ in
            random.withLock { random in
                switch Double.random(in: 0..<1, using: &random) {
                case ..<0.1: .lost
                case ..<0.2: .twice
                case ..<0.3: .late
                default: .arrives
                }
            }
        }
        var fromAnn: [String] = [], fromBen: [String] = []
        func talk(_ round: Int) throws {
            // Looked up again each round: a conversation record read before a restart is stale.
            let toBen = try ann.delivery.conversation(with: try #require(ann.service.peer(ben.identity.signingPublicKey)))
            let toAnn = try ben.delivery.conversation(with: try #require(ben.service.peer(ann.identity.signingPublicKey)))
            for index in 0..<30 {
                fromAnn.append("ann \(round).\(index)")
                _ = try ann.delivery.send(fromAnn.last!, in: toBen)
                if index % 3 == 0 {
                    fromBen.append("ben \(round).\(index)")
                    _ = try ben.delivery.send(fromBen.last!, in: toAnn)
                }
                world.step(0.01)
            }
        }
        // Back online, each lists the other within a few seconds whatever is lost (a lost query
        // is asked again, `Questions.askUnknownProvers`).
        func untilBothListed() {
            for _ in 0..<20 where ann.service.peer(ben.identity.signingPublicKey) == nil || ben.service.peer(ann.identity.signingPublicKey) == nil {
                world.step(0.5)
            }
        }
        try talk(1)
        world.step(0.5)
        ben.goOffline()
        world.step(0.5)
        try ben.goOnline(world)
        world.step(0.5)
        untilBothListed()
        try talk(2)
        // ann as after a crash: nobody hears her go, ben keeps the session she has lost.
        world.network.setDown("ann", true)
        ann.goOffline()
        world.network.setDown("ann", false)
        try ann.goOnline(world)
        world.step(0.5)
        untilBothListed()
        try talk(3)
        for _ in 0..<240 where try received(by: ben) != fromAnn || received(by: ann) != fromBen { world.step(0.5) }
        let (benGot, annGot) = (try received(by: ben), try received(by: ann))
        #expect(benGot == fromAnn, "ben has \(benGot.count) of \(fromAnn.count)")
        #expect(annGot == fromBen, "ann has \(annGot.count) of \(fromBen.count)")
        let statistics = ann.service.statistics.sessions.rekeyed + ben.service.statistics.sessions.rekeyed
        #expect(statistics > 0, "keys changed in the middle")
    }

    /// Both write first at the same moment, so both start a handshake: one survives, and each
    /// side ends with one session that carried both messages.
    @Test func twoShellsWritingAtOnceEndWithOneSession() throws {
        let world = try ChatWorld([("ann", .human), ("ben", .human)])
        let (ann, ben) = (world.nodes[0], world.nodes[1])
        let toBen = try ann.delivery.conversation(with: try #require(ann.service.peer(ben.identity.signingPublicKey)))
        let toAnn = try ben.delivery.conversation(with: try #require(ben.service.peer(ann.identity.signingPublicKey)))
        _ = try ann.delivery.send("hello ben", in: toBen)
        _ = try ben.delivery.send("hello ann", in: toAnn)
        #expect(ann.service.statistics.sessions.started == 1 && ben.service.statistics.sessions.started == 1)
        world.step(0)
        #expect(try received(by: ben) == ["hello ben"] && received(by: ann) == ["hello ann"])
        let (a, b) = (ann.service.statistics, ben.service.statistics)
        #expect(a.sessions.established == 1 && b.sessions.established == 1 && ann.service.sessionCount == 1 && ben.service.sessionCount == 1)
        #expect(a.sessions.answered + b.sessions.answered == 1, "one handshake answered, the other refused")
        #expect(a.dropped["handshake crossed", default: 0] + b.dropped["handshake crossed", default: 0] == 1)
    }

    /// Every frame of a conversation recorded; both shells go offline; the attacker gets both
    /// databases and both passwords, so both profiles' keys: no recorded frame opens.
    @Test func recordedFramesStaySealedForWhoeverGetsBothDatabasesAndPasswords() throws {
        let world = try ChatWorld([("ann", .human), ("ben", .human)])
        let (ann, ben) = (world.nodes[0], world.nodes[1])
        let recorded = Mutex<[[UInt8]]>([])
        world.network.setFate { bytes in
            recorded.withLock { $0.append(bytes) }
            return .arrives
        }
        let toBen = try ann.delivery.conversation(with: try #require(ann.service.peer(ben.identity.signingPublicKey)))
        let toAnn = try ben.delivery.conversation(with: try #require(ben.service.peer(ann.identity.signingPublicKey)))
        for index in 1...5 {
            _ = try ann.delivery.send("the password is swordfish \(index)", in: toBen)
            _ = try ben.delivery.send("swordfish it is \(index)", in: toAnn)
        }
        world.step(1)
        #expect(try received(by: ben).count == 5 && received(by: ann).count == 5)
        let frames = recorded.withLock { $0 }
        // While the sessions live their keys open the frames (so this test can tell).
        let live = world.packets
        let carriers = frames.filter { live($0)?.code == KindTable.sessionFragments }
        #expect(carriers.count >= 2)
        ann.goOffline()
        ben.goOffline()
        // The attacker's keys: each profile unlocked from its database with its password.
        func unlock(_ node: ChatWorld.Node) throws -> Identity {
            let store = ProfileStore(database: node.database, rounds: 1 << 10)
            return try store.unlock(try #require(try store.profile(named: node.name)), password: "correct horse", now: world.scheduler.now)
        }
        let (annKeys, benKeys) = (try unlock(ann), try unlock(ben))
        #expect(annKeys.agreementPublicKey == ann.identity.agreementPublicKey)
        let swordfish = Array("swordfish".utf8)
        #expect(!frames.contains { frame in frame.indices.contains { frame[$0...].starts(with: swordfish) } }, "no plaintext on the wire")
        // Every key the two profiles' own keys give (what version 2 sealed every message with)
        // opens nothing recorded, read as a session frame or as a version 2 box.
        let staticKeys = try [MessageCrypto.Purpose.conversation, .room].map {
            try MessageCrypto.key(mine: annKeys.agreement, theirs: benKeys.agreementPublicKey, mySigningKey: annKeys.signingPublicKey,
                                  theirSigningKey: benKeys.signingPublicKey, purpose: $0)
        }
        let sealed = frames.filter { $0.count > SealedFrame.overhead && $0[4] == SessionWire.version && $0[5] == KindTable.sealed }
        #expect(sealed.count >= carriers.count)
        for frame in sealed {
            let counter = try SealedFrame.fields(of: frame).counter
            for key in staticKeys {
                var raw = [UInt8](repeating: 0, count: 32)
                key.withUnsafeBytes { raw = Array($0) }
                let cipher = CipherState(key: raw)
                #expect(throws: NoiseError.self) {
                    try cipher.decrypt(nonce: counter, ad: frame[0..<SealedFrame.headerSize], ciphertext: frame[SealedFrame.headerSize...])
                }
                #expect(throws: (any Error).self) { try ChaChaPoly.open(ChaChaPoly.SealedBox(combined: frame[SealedFrame.headerSize...]), using: key) }
            }
        }
        // The recorded handshakes replayed with both static keys: their ephemeral keys lived in
        // memory only, so neither side's last message can be read again.
        let handshakes = frames.compactMap { try? HandshakeFrame(decoding: $0) }
        var replayed = 0
        for first in handshakes where first.step == 1 {
            guard let second = handshakes.first(where: { $0.step == 2 && $0.recipientIndex == first.senderIndex }),
                  let third = handshakes.first(where: { $0.step == 3 && $0.recipientIndex == second.senderIndex }) else { continue }
            let (initiator, responder) = first.sender == annKeys.signingPublicKey ? (annKeys, benKeys) : (benKeys, annKeys)
            let prologue = Array("seance session v3".utf8) + first.sender + first.recipient
            var asResponder = HandshakeState(initiator: false, prologue: prologue, s: responder.agreement)
            _ = try asResponder.readMessage(first.message)
            _ = try asResponder.writeMessage()
            #expect(throws: NoiseError.decryption) { try asResponder.readMessage(third.message) }
            var asInitiator = HandshakeState(initiator: true, prologue: prologue, s: initiator.agreement)
            _ = try asInitiator.writeMessage()
            #expect(throws: NoiseError.decryption) { try asInitiator.readMessage(second.message) }
            replayed += 1
        }
        #expect(replayed >= 1)
    }
}
