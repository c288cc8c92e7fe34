import Crypto
import Foundation
import TestSupport
import Testing
@testable import X3DH

/// X3DH against itself and against an independent implementation (PyPI's `x3dh`), both ways.
struct X3DHTests {
    let info = "seance mail v1"
    let alice = Curve25519.KeyAgreement.PrivateKey(), bob = Curve25519.KeyAgreement.PrivateKey()
    let prekey = Curve25519.KeyAgreement.PrivateKey()

    func bytes(_ key: SymmetricKey) -> Data { key.withUnsafeBytes { Data($0) } }

    @Test func bobMakesTheKeyAliceMadeFromHerHeader() throws {
        let (made, header) = try X3DH.initiate(identity: alice, peerIdentity: bob.publicKey.rawRepresentation,
                                               peerSignedPrekey: prekey.publicKey.rawRepresentation, info: info)
        #expect(header.identityKey == alice.publicKey.rawRepresentation && header.signedPrekey == prekey.publicKey.rawRepresentation)
        let answered = try X3DH.respond(to: header, identity: bob, signedPrekey: prekey, info: info)
        #expect(bytes(answered.sharedKey) == bytes(made.sharedKey))
        #expect(made.associatedData == alice.publicKey.rawRepresentation + bob.publicKey.rawRepresentation)
        #expect(answered.associatedData == made.associatedData)
        // Another prekey, another application, another ephemeral key: another key.
        #expect(bytes(try X3DH.respond(to: header, identity: bob, signedPrekey: .init(), info: info).sharedKey) != bytes(made.sharedKey))
        #expect(bytes(try X3DH.respond(to: header, identity: bob, signedPrekey: prekey, info: "other").sharedKey) != bytes(made.sharedKey))
        let (again, _) = try X3DH.initiate(identity: alice, peerIdentity: bob.publicKey.rawRepresentation,
                                           peerSignedPrekey: prekey.publicKey.rawRepresentation, info: info)
        #expect(bytes(again.sharedKey) != bytes(made.sharedKey))
    }

    /// A key of the wrong size, or a low-order point (every output zero), agrees with nothing.
    @Test func invalidKeysAreRefused() {
        for bad in [Data(count: 31), Data(count: 32), Data([1] + [UInt8](repeating: 0, count: 31))] {
            #expect(throws: X3DH.Failure.invalidKey) {
                try X3DH.initiate(identity: alice, peerIdentity: bob.publicKey.rawRepresentation, peerSignedPrekey: bad, info: info)
            }
            let header = X3DH.Header(identityKey: alice.publicKey.rawRepresentation, ephemeralKey: bad,
                                     signedPrekey: prekey.publicKey.rawRepresentation)
            #expect(throws: X3DH.Failure.invalidKey) { try X3DH.respond(to: header, identity: bob, signedPrekey: prekey, info: info) }
        }
    }

    // MARK: Against an independent implementation

    /// `x3dh_peer.py` run with `arguments`: its `name value` lines.
    func python(_ arguments: [String]) throws -> [String: Data] {
        let root = URL(fileURLWithPath: #filePath).deletingLastPathComponent().deletingLastPathComponent().deletingLastPathComponent().path
        let python = root + "/.build/test-venv/bin/python3"
        guard FileManager.default.isExecutableFile(atPath: python) else {
            Issue.record("no \(python): `make test` makes it (python3 -m venv, then pip install x3dh)")
            return [:]
        }
        let process = try Child([python, root + "/Tests/X3DHTests/x3dh_peer.py"] + arguments, stdout: .pipe)
        let text = String(decoding: process.output!.readDataToEndOfFile(), as: UTF8.self)
        _ = process.wait(timeout: 60)
        var said: [String: Data] = [:]
        for line in text.split(separator: "\n") {
            let parts = line.split(separator: " ")
            guard parts.count == 2 else { continue }
            said[String(parts[0])] = Data(TestSupport.bytes(parts[1]))
        }
        return said
    }

    /// seance is Alice: the library, as Bob, makes the same SK and AD from her header.
    @Test func pythonsBobMakesSeancesKey() throws {
        let (made, header) = try X3DH.initiate(identity: alice, peerIdentity: bob.publicKey.rawRepresentation,
                                               peerSignedPrekey: prekey.publicKey.rawRepresentation, info: info)
        let said = try python(["bob", info, hex(bob.rawRepresentation), hex(prekey.rawRepresentation),
                               hex(header.identityKey), hex(header.ephemeralKey)])
        #expect(said["sk"] == bytes(made.sharedKey))
        #expect(said["ad"] == made.associatedData)
    }

    /// The library is Alice: seance, as Bob, makes her SK from her ephemeral key.
    @Test func seancesBobMakesPythonsKey() throws {
        let said = try python(["alice", info, hex(alice.rawRepresentation), hex(bob.rawRepresentation), hex(prekey.rawRepresentation)])
        let ephemeral = try #require(said["ek"])
        let header = X3DH.Header(identityKey: alice.publicKey.rawRepresentation, ephemeralKey: ephemeral,
                                 signedPrekey: prekey.publicKey.rawRepresentation)
        let answered = try X3DH.respond(to: header, identity: bob, signedPrekey: prekey, info: info)
        #expect(said["sk"] == bytes(answered.sharedKey))
        #expect(said["ad"] == answered.associatedData)
    }
}
