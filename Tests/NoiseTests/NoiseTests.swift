import Crypto
import Foundation
import Noise
import TestSupport
import Testing

/// The Noise piece against published vectors for its one protocol name, and against an
/// independent implementation (Python's `noiseprotocol`).
struct NoiseTests {
    struct Vector: Decodable {
        struct Message: Decodable {
            let payload: String
            let ciphertext: String
        }
        let source: String
        let init_prologue: String
        let init_static: String
        let init_ephemeral: String
        let resp_prologue: String
        let resp_static: String
        let resp_ephemeral: String
        let handshake_hash: String?
        let messages: [Message]
    }

    static var directory: String { URL(fileURLWithPath: #filePath).deletingLastPathComponent().path }

    static func vectors() throws -> [Vector] {
        struct File: Decodable { let vectors: [Vector] }
        let data = try Data(contentsOf: URL(fileURLWithPath: directory + "/Vectors/Noise_XX_25519_ChaChaPoly_SHA256.json"))
        return try JSONDecoder().decode(File.self, from: data).vectors
    }

    static func key(_ hex: String) throws -> Curve25519.KeyAgreement.PrivateKey {
        try .init(rawRepresentation: bytes(hex))
    }

    @Test(arguments: try vectors().map(\.source))
    func publishedVectors(source: String) throws {
        let vector = try #require(try Self.vectors().first { $0.source == source })
        let initiatorEphemeral = try Self.key(vector.init_ephemeral)
        let responderEphemeral = try Self.key(vector.resp_ephemeral)
        var initiator = HandshakeState(initiator: true, prologue: bytes(vector.init_prologue), s: try Self.key(vector.init_static),
                                       generateKeyPair: { initiatorEphemeral })
        var responder = HandshakeState(initiator: false, prologue: bytes(vector.resp_prologue), s: try Self.key(vector.resp_static),
                                       generateKeyPair: { responderEphemeral })
        // Handshake messages alternate from the initiator; so do the transport messages after.
        var sending: (initiator: CipherState, responder: CipherState)?
        for (index, message) in vector.messages.enumerated() {
            let fromInitiator = index % 2 == 0
            if var ciphers = sending {
                var sender = fromInitiator ? ciphers.initiator : ciphers.responder
                var receiver = sender
                let sealed = try sender.encryptWithAd([], bytes(message.payload))
                #expect(hex(sealed) == message.ciphertext, "transport message \(index)")
                #expect(try receiver.decryptWithAd([], sealed) == bytes(message.payload))
                if fromInitiator { ciphers.initiator = sender } else { ciphers.responder = sender }
                sending = ciphers
                continue
            }
            let written = fromInitiator ? try initiator.writeMessage(bytes(message.payload)) : try responder.writeMessage(bytes(message.payload))
            #expect(hex(written.message) == message.ciphertext, "handshake message \(index)")
            let read = fromInitiator ? try responder.readMessage(written.message) : try initiator.readMessage(written.message)
            #expect(read.payload == bytes(message.payload))
            if let split = written.split {
                sending = split
                #expect(initiator.isFinished && responder.isFinished)
            }
        }
        #expect(sending != nil)
        if let hash = vector.handshake_hash { #expect(hex(initiator.handshakeHash) == hash) }
        #expect(initiator.handshakeHash == responder.handshakeHash)
        #expect(initiator.rs == Array(try Self.key(vector.resp_static).publicKey.rawRepresentation))
        #expect(responder.rs == Array(try Self.key(vector.init_static).publicKey.rawRepresentation))
    }

    @Test func aTamperedHandshakeMessageIsRefused() throws {
        var initiator = HandshakeState(initiator: true, prologue: [], s: .init())
        var responder = HandshakeState(initiator: false, prologue: [], s: .init())
        let first = try initiator.writeMessage().message
        _ = try responder.readMessage(first)
        var second = try responder.writeMessage().message
        second[40] ^= 1
        #expect(throws: NoiseError.decryption) { try initiator.readMessage(second) }
    }

    @Test func differentProloguesNeverAgree() throws {
        var initiator = HandshakeState(initiator: true, prologue: Array("seance a".utf8), s: .init())
        var responder = HandshakeState(initiator: false, prologue: Array("seance b".utf8), s: .init())
        _ = try responder.readMessage(try initiator.writeMessage().message)
        #expect(throws: NoiseError.decryption) { try initiator.readMessage(try responder.writeMessage().message) }
    }

    @Test func explicitNoncesOpenInAnyOrderOnce() throws {
        let cipher = CipherState(key: Array(repeating: 7, count: 32))
        let frames = try (0..<4).map { try cipher.encrypt(nonce: UInt64($0), ad: [1], plaintext: [UInt8($0)]) }
        for n in [3, 0, 2, 1] { #expect(try cipher.decrypt(nonce: UInt64(n), ad: [1], ciphertext: frames[n]) == [UInt8(n)]) }
        #expect(throws: NoiseError.decryption) { try cipher.decrypt(nonce: 1, ad: [1], ciphertext: frames[2]) }
        #expect(throws: NoiseError.decryption) { try cipher.decrypt(nonce: 2, ad: [2], ciphertext: frames[2]) }
        #expect(throws: NoiseError.nonceExhausted) { try cipher.encrypt(nonce: .max, ad: [], plaintext: []) }
    }

    // MARK: The cipher, called straight

    /// RFC 8439 §2.8.2's example: the same ciphertext and tag, and back.
    @Test func chaChaPolyKeyGivesRFC8439sExample() throws {
        let key = ChaChaPolyKey(Array(0x80...0x9f))
        let nonce = bytes("070000004041424344454647"), ad = bytes("50515253c0c1c2c3c4c5c6c7")
        let plaintext = Array("Ladies and Gentlemen of the class of '99: If I could offer you only one tip for the future, sunscreen would be it.".utf8)
        var sealed: [UInt8] = [9, 9]
        nonce.withUnsafeBytes { nonce in
            ad.withUnsafeBytes { ad in plaintext.withUnsafeBytes { key.seal(nonce: nonce, ad: ad, plaintext: $0, appendingTo: &sealed) } }
        }
        #expect(sealed.prefix(2) == [9, 9], "what was there is kept")
        #expect(hex(sealed.dropFirst(2)) == "d31a8d34648e60db7b86afbc53ef7ec2a4aded51296e08fea9e2b5a736ee62d63dbea45e8ca9671282fafb69da92728b"
            + "1a71de0a9e060b2905d6a5b67ecd3b3692ddbd7f2d778b8c9803aee328091b58fab324e4fad675945585808b4831d7bc3ff4def08e4b7a9de576d2"
            + "6586cec64b6116" + "1ae10b594f09e26a7e902ecbd0600691")
        let opened = nonce.withUnsafeBytes { nonce in
            ad.withUnsafeBytes { ad in sealed.dropFirst(2).withUnsafeBytes { key.open(nonce: nonce, ad: ad, sealed: $0) } }
        }
        #expect(opened == plaintext)
    }

    /// Against swift-crypto's `ChaChaPoly`, the wrapper this piece does without: every length
    /// around a block's, no associated data and no plaintext too; any byte changed is refused.
    @Test func chaChaPolyKeyAgreesWithSwiftCrypto() throws {
        var random = SystemRandomNumberGenerator()
        for length in [0, 1, 15, 16, 17, 63, 64, 65, 127, 128, 129, 1_200] {
            let raw = (0..<32).map { _ in UInt8.random(in: .min ... .max, using: &random) }
            let nonce = (0..<12).map { _ in UInt8.random(in: .min ... .max, using: &random) }
            let ad = (0..<(length % 3 == 0 ? 0 : 13)).map { _ in UInt8.random(in: .min ... .max, using: &random) }
            let plaintext = (0..<length).map { _ in UInt8.random(in: .min ... .max, using: &random) }
            let key = ChaChaPolyKey(raw)
            var sealed: [UInt8] = []
            nonce.withUnsafeBytes { nonce in
                ad.withUnsafeBytes { ad in plaintext.withUnsafeBytes { key.seal(nonce: nonce, ad: ad, plaintext: $0, appendingTo: &sealed) } }
            }
            let theirs = try ChaChaPoly.seal(plaintext, using: SymmetricKey(data: raw), nonce: .init(data: nonce), authenticating: ad)
            #expect(sealed == Array(theirs.ciphertext + theirs.tag), "\(length) bytes")
            func open(_ sealed: [UInt8]) -> [UInt8]? {
                nonce.withUnsafeBytes { nonce in ad.withUnsafeBytes { ad in sealed.withUnsafeBytes { key.open(nonce: nonce, ad: ad, sealed: $0) } } }
            }
            #expect(open(sealed) == plaintext)
            for index in [0, sealed.count / 2, sealed.count - 1] {
                var altered = sealed
                altered[index] ^= 0x01
                #expect(open(altered) == nil, "byte \(index) of \(sealed.count) changed")
            }
            #expect(open(Array(sealed.prefix(15))) == nil, "shorter than a tag")
        }
    }

    /// §12.3's nonce, 32 bits of zeros then the counter little-endian, with both of the
    /// counter's words set: what a session's frames are sealed under, against `ChaChaPoly`
    /// given those twelve bytes.
    @Test func aCipherStateSealsUnderTheSpecificationsNonce() throws {
        let raw = Array(UInt8(1)...32)
        let cipher = CipherState(key: raw)
        let sealed = try cipher.encrypt(nonce: 0x0102_0304_0506_0708, ad: [7, 7], plaintext: Array("a frame".utf8))
        let theirs = try ChaChaPoly.seal(Array("a frame".utf8), using: SymmetricKey(data: raw),
                                         nonce: .init(data: bytes("000000000807060504030201")), authenticating: [7, 7])
        #expect(sealed == Array(theirs.ciphertext + theirs.tag))
        #expect(try cipher.decrypt(nonce: 0x0102_0304_0506_0708, ad: [7, 7], ciphertext: sealed) == Array("a frame".utf8))
    }

    // MARK: Against an independent implementation

    /// Python's `noiseprotocol` playing one side over pipes (`noise_peer.py`).
    final class PythonPeer {
        let process: Child
        private var buffered: [UInt8] = []

        init(role: String, static key: Curve25519.KeyAgreement.PrivateKey, prologue: [UInt8]) throws {
            let python = packageRoot + "/.build/test-venv/bin/python3"
            guard FileManager.default.isExecutableFile(atPath: python) else {
                throw TestFailure("no \(python): `make test` makes it (python3 -m venv, then pip install noiseprotocol)")
            }
            process = try Child([python, directory + "/noise_peer.py", role, hex(Array(key.rawRepresentation)), hex(prologue)],
                                stdin: .pipe, stdout: .pipe)
        }

        deinit {
            try? process.input!.close()
            _ = process.wait(timeout: 30)
        }

        func send(_ bytes: [UInt8]) { process.input!.write(Data((hex(bytes) + "\n").utf8)) }

        func line() throws -> String {
            while true {
                if let end = buffered.firstIndex(of: UInt8(ascii: "\n")) {
                    defer { buffered.removeSubrange(...end) }
                    return String(decoding: buffered[..<end], as: UTF8.self)
                }
                let more = process.output!.availableData
                guard !more.isEmpty else { throw TestFailure("the Python peer ended early") }
                buffered += more
            }
        }

        func bytesLine() throws -> [UInt8] { try bytes(line()) }
    }

    static let packageRoot = URL(fileURLWithPath: #filePath).deletingLastPathComponent().deletingLastPathComponent()
        .deletingLastPathComponent().path

    @Test(arguments: [true, false])
    func handshakesAndTalksWithPythonsNoise(seanceInitiates: Bool) throws {
        let mine = Curve25519.KeyAgreement.PrivateKey()
        let theirs = Curve25519.KeyAgreement.PrivateKey()
        let prologue = Array("seance session v3".utf8)
        let python = try PythonPeer(role: seanceInitiates ? "responder" : "initiator", static: theirs, prologue: prologue)
        var handshake = HandshakeState(initiator: seanceInitiates, prologue: prologue, s: mine)
        var ciphers: (CipherState, CipherState)?
        while ciphers == nil {
            if handshake.isMyTurn {
                let written = try handshake.writeMessage()
                python.send(written.message)
                ciphers = written.split
            } else {
                ciphers = try handshake.readMessage(python.bytesLine()).split
            }
        }
        #expect(handshake.rs == Array(theirs.publicKey.rawRepresentation))
        #expect(try python.line() == "rs " + hex(Array(mine.publicKey.rawRepresentation)))
        #expect(try python.line() == "hash " + hex(handshake.handshakeHash))
        var (initiatorCipher, responderCipher) = try #require(ciphers)
        // Python's messages come under the other side's cipher, with implicit nonces from 0.
        func fromPython() throws -> String {
            let sealed = try python.bytesLine()
            let plain = seanceInitiates ? try responderCipher.decryptWithAd([], sealed) : try initiatorCipher.decryptWithAd([], sealed)
            return String(decoding: plain, as: UTF8.self)
        }
        #expect(try fromPython() == "from python")
        for (index, text) in ["one", "two, with an explicit nonce", "three"].enumerated() {
            let plain = Array(text.utf8)
            var cipher = seanceInitiates ? initiatorCipher : responderCipher
            // The transport's explicit counter is the same nonce the implicit one would be.
            let sealed = index == 1 ? try cipher.encrypt(nonce: cipher.nonce, ad: [], plaintext: plain) : try cipher.encryptWithAd([], plain)
            if index == 1 { cipher.nonce += 1 }
            if seanceInitiates { initiatorCipher = cipher } else { responderCipher = cipher }
            python.send(sealed)
            #expect(try fromPython() == "echo: " + text)
        }
    }
}


struct TestFailure: Error, CustomStringConvertible {
    let description: String
    init(_ description: String) { self.description = description }
}
