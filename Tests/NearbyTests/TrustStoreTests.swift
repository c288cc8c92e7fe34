import Foundation
import Storage
import TestWorld
import Testing
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
