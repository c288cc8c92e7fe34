import Foundation
import GRDB
import Storage
import TestWorld
import Testing
import Wire
@testable import Nearby

/// Trust on first use: the first key seen for a name stays trusted; another key with the name
/// is flagged every time it appears, never the trusted one; `trust` switches.
@Suite struct TrustStoreTests {
    func peer(_ key: UInt8, _ name: String = "bob") -> Peer {
        Peer(signingKey: Data(repeating: key, count: 32),
             announcement: Announcement(name: name, agreementKey: Data(repeating: 1, count: 32), plane: 0, avatar: .none,
                                        unicastPort: 1, intervalMilliseconds: 5000),
             route: Route(transport: "memory", address: "h"), lastSeen: Double(key))
    }

    @Test func theFirstKeyStaysTrustedAndTheOtherIsFlaggedEveryTime() throws {
        let directory = temporaryDirectory("trust")
        defer { removeDirectory(directory) }
        let trust = TrustStore(database: try testDatabase(directory + "/db.sqlite"))
        let real = peer(1), impostor = peer(2), realHandle = peer(1).handle
        #expect(trust.remember(real) == nil)
        for _ in 0..<3 {
            #expect(trust.remember(impostor)?.trusted == realHandle)
            #expect(trust.remember(real) == nil)  // Never the trusted one.
        }
        #expect(trust.trustedKey(forName: "bob") == real.signingKey && trust.trustedKey(forName: "nobody") == nil)
        #expect(try trust.trust(impostor.handle) == impostor.handle)
        #expect(trust.remember(impostor) == nil)
        #expect(trust.remember(real)?.trusted == impostor.handle)
        #expect(throws: TrustStore.TrustError.unknownKey("bob#ffff")) { try trust.trust("bob#ffff") }
        #expect(throws: TrustStore.TrustError.noFingerprint) { try trust.trust("bob") }
    }

    /// `verify` (issue 49): the verified key is the trusted one, another key using its name is
    /// flagged loudly even when there is a conversation with it, and is held (what is written to
    /// it waits); trusting the other key is the user's decision, which ends the verification.
    @Test func aVerifiedNameHoldsAnotherKey() throws {
        let directory = temporaryDirectory("trust")
        defer { removeDirectory(directory) }
        let trust = TrustStore(database: try testDatabase(directory + "/db.sqlite"))
        let real = peer(1), impostor = peer(2), lookAlike = peer(3, "b\u{043E}b")
        _ = trust.remember(impostor)  // Seen first: trusted on first use.
        try trust.verify(real.signingKey, name: "bob", now: 5)
        #expect(trust.verifiedKeys() == [real.signingKey])
        #expect(trust.trustedKey(forName: "bob") == real.signingKey)
        #expect(trust.remember(impostor) == TrustStore.Flag(trusted: real.handle, verified: true))
        #expect(trust.remember(lookAlike)?.verified == true)
        #expect(trust.heldKeys() == [impostor.signingKey, lookAlike.signingKey])
        _ = try trust.trust(impostor.handle)
        #expect(trust.verifiedKeys().isEmpty && trust.heldKeys().isEmpty, "the user decided")
        try trust.verify(real.signingKey, name: "bob", now: 6)
        #expect(try trust.unverify(real.signingKey) && !(try trust.unverify(real.signingKey)))
        #expect(trust.heldKeys().isEmpty && trust.trustedKey(forName: "bob") == real.signingKey)
    }

    /// On the manual clock, three shells: ann verifies ben; another key called `bеn` (a Cyrillic
    /// е) is held, and what ann writes to it waits, unsent, while her lines to ben go; once she
    /// trusts the other key (her decision), what waited goes to it.
    @Test func whatIsWrittenToAKeyUnderAVerifiedNameWaitsForTheUser() throws {
        let world = try ChatWorld([("ann", .human), ("ben", .human), ("b\u{0435}n", .human)])
        let (ann, ben, other) = (world.nodes[0], world.nodes[1], world.nodes[2])
        world.step(2)
        try TrustStore(database: ann.database).verify(ben.identity.signingPublicKey, name: "ben", now: world.scheduler.now)
        ann.online.choicesChanged()
        #expect(ann.engine.sync { ann.context.rules.isVerified(ben.identity.signingPublicKey) })
        #expect(ann.engine.sync { ann.context.rules.isHeld(other.identity.signingPublicKey) })
        func received(_ node: ChatWorld.Node) throws -> [String] {
            try node.database.read { db in try String.fetchAll(db, sql: "SELECT text FROM message WHERE outgoing = 0 ORDER BY id") }
        }
        let toOther = try ann.delivery.conversation(with: try #require(ann.service.peer(other.identity.signingPublicKey)))
        let toBen = try ann.delivery.conversation(with: try #require(ann.service.peer(ben.identity.signingPublicKey)))
        _ = try ann.delivery.send("for the real ben", in: toBen)
        _ = try ann.delivery.send("are you ben?", in: toOther)
        world.step(5)
        #expect(try received(ben) == ["for the real ben"])
        #expect(try received(other) == [], "held")
        _ = try TrustStore(database: ann.database).trust(PeerIdentity.handle(name: "b\u{0435}n", signingKey: other.identity.signingPublicKey))
        ann.online.choicesChanged()
        world.step(5)
        #expect(try received(other) == ["are you ben?"])
    }

    /// A key whose name only looks like a trusted one (a Cyrillic о, a zero, capitals) is
    /// flagged as an impersonation of it, as another key with the very name is.
    @Test func aLookAlikeNameIsFlaggedBesideTheTrustedOne() throws {
        let directory = temporaryDirectory("trust")
        defer { removeDirectory(directory) }
        let trust = TrustStore(database: try testDatabase(directory + "/db.sqlite"))
        let real = peer(1), realHandle = peer(1).handle
        #expect(trust.remember(real) == nil)
        for (key, name) in [(2, "b\u{043E}b"), (3, "B0B"), (4, "bób")] as [(UInt8, String)] {
            #expect(trust.remember(peer(key, name))?.trusted == realHandle, "\(name.debugDescription)")
            #expect(trust.trustedKey(forName: name) == real.signingKey)
        }
        #expect(trust.remember(peer(5, "rob")) == nil, "another name")
    }
}
