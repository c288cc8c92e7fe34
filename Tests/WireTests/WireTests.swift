import Crypto
import Foundation
import Testing
@testable import Wire

@Suite struct WireTests {
    let key = Curve25519.Signing.PrivateKey()
    let announcement = Announcement(name: "alice 👻", agreementKey: Data(repeating: 9, count: 32), plane: 2,
                                    avatar: .emoji("👻"), unicastPort: 47_778, intervalMilliseconds: 5_000)

    func encode(_ payload: Payload, sequence: UInt32 = 7) throws -> [UInt8] {
        try Packet.encode(payload, signer: key, timestamp: 1_700_000_000_123, sequence: sequence)
    }

    @Test func everyTypeRoundTrips() throws {
        let pixels = Data((0..<1024).map { UInt8($0 & 0xFF) })
        let hash = Data(SHA256.hash(data: pixels))
        var imageAnnouncement = announcement
        imageAnnouncement.avatar = .image(hash)
        var bare = announcement
        bare.avatar = .none
        for payload in [Payload.announce(announcement), .announce(imageAnnouncement), .announce(bare), .goodbye,
                        .avatarRequest(hash: hash), .avatar(hash: hash, pixels: pixels)] {
            let bytes = try encode(payload)
            #expect(bytes.count <= Wire.maximumDatagram)
            let packet = try Packet.decode(bytes)
            #expect(packet == Packet(sender: key.publicKey.rawRepresentation, timestamp: 1_700_000_000_123, sequence: 7, payload: payload))
        }
    }

    @Test func theLayoutIsAsDocumented() throws {
        let bytes = try encode(.goodbye, sequence: 0x0102_0304)
        #expect(Array(bytes[0..<4]) == Array("SEAN".utf8))
        #expect(bytes[4] == Wire.version && bytes[5] == 2 && bytes[6] == 0 && bytes[7] == 0)
        #expect(Data(bytes[8..<40]) == key.publicKey.rawRepresentation)
        #expect(Array(bytes[48..<52]) == [1, 2, 3, 4])
        #expect(Array(bytes[52..<54]) == [0, 0])
        #expect(bytes.count == 54 + 64)
    }

    /// The flags go at offset 6, big-endian, under the signature: the header can be read before
    /// anything is checked, and changing a flag breaks the signature.
    @Test func flagsAreSignedAndReadableUnchecked() throws {
        let bytes = try Packet.encode(.announce(announcement), signer: key, timestamp: 1_700_000_000_123, sequence: 7, flags: .answer)
        #expect(bytes[6] == 0 && bytes[7] == 1)
        let header = try #require(UncheckedHeader(bytes))
        #expect(header.type == PacketType.announce.rawValue && header.flags == .answer)
        #expect(Data(header.sender) == key.publicKey.rawRepresentation)
        #expect(try Packet.decode(bytes).payload == .announce(announcement))
        var unflagged = bytes
        unflagged[7] = 0
        #expect(UncheckedHeader(unflagged)?.flags == [])
        #expect(throws: DecodeError.badSignature) { try Packet.decode(unflagged) }
        #expect(UncheckedHeader(Array(bytes.prefix(Wire.headerSize - 1))) == nil)
        #expect(UncheckedHeader(Array("SEAX".utf8) + bytes.dropFirst(4)) == nil)
    }

    @Test func truncatedAtEveryLength() throws {
        let bytes = try encode(.announce(announcement))
        for length in 0..<bytes.count {
            #expect(throws: DecodeError.self) { try Packet.decode(Array(bytes.prefix(length))) }
        }
    }

    @Test func everyFlippedBitIsCaught() throws {
        let bytes = try encode(.announce(announcement))
        for index in 0..<bytes.count {
            var corrupted = bytes
            corrupted[index] ^= 0x10
            #expect(throws: DecodeError.self, "byte \(index)") { try Packet.decode(corrupted) }
        }
    }

    @Test func eachClassOfBadInput() throws {
        let good = try encode(.goodbye)
        var foreign = good; foreign[0] = UInt8(ascii: "X")
        #expect(throws: DecodeError.badMagic) { try Packet.decode(foreign) }
        var future = good; future[4] = 3
        #expect(throws: DecodeError.unknownVersion(3)) { try Packet.decode(future) }
        // A kind this reader does not know is still checked (signature), then handed up as it is.
        var strange = good; strange[5] = 99
        #expect(throws: DecodeError.badSignature) { try Packet.decode(strange) }
        strange.replaceSubrange((strange.count - 64)..., with: try key.signature(for: Array(strange[..<(strange.count - 64)])))
        #expect(try Packet.decode(strange).payload == .other(code: 99, body: []))
        #expect(throws: DecodeError.oversized) { try Packet.decode([UInt8](repeating: 0, count: 1201)) }
        var unsigned = good; unsigned.replaceSubrange((good.count - 64)..., with: [UInt8](repeating: 0, count: 64))
        #expect(throws: DecodeError.badSignature) { try Packet.decode(unsigned) }
        // Someone else's key in the header: the signature no longer matches.
        var stolen = good; stolen.replaceSubrange(8..<40, with: Curve25519.Signing.PrivateKey().publicKey.rawRepresentation)
        #expect(throws: DecodeError.badSignature) { try Packet.decode(stolen) }
        #expect(throws: DecodeError.truncated) { try Packet.decode([]) }
    }

    @Test func signedButMalformedPayloadsAreRejected() throws {
        // A correctly signed packet whose payload breaks the rules: a plane that does not exist.
        var bytes = Wire.magic + [1, PacketType.announce.rawValue, 0, 0] + key.publicKey.rawRepresentation
        bytes.appendBigEndian(UInt64(1)); bytes.appendBigEndian(UInt32(1))
        let body: [UInt8] = [UInt8](repeating: 1, count: 32) + [9, 1, UInt8(ascii: "a"), 0, 0, 0, 1, 0, 0, 0, 1]
        bytes.appendBigEndian(UInt16(body.count))
        bytes += body
        bytes += try key.signature(for: bytes)
        #expect(throws: DecodeError.malformedPayload("plane 9")) { try Packet.decode(bytes) }
    }

    @Test func randomGarbageNeverCrashes() {
        var generator = SystemRandomNumberGenerator()
        for _ in 0..<2_000 {
            let length = Int.random(in: 0...1300, using: &generator)
            var bytes = (0..<length).map { _ in UInt8.random(in: 0...255, using: &generator) }
            if length > 6 && Bool.random(using: &generator) { bytes.replaceSubrange(0..<6, with: Wire.magic + [1, 1]) }
            #expect(throws: DecodeError.self) { try Packet.decode(bytes) }
        }
    }
}

@Suite struct MessageCryptoTests {
    let alice = (sign: Curve25519.Signing.PrivateKey(), agree: Curve25519.KeyAgreement.PrivateKey())
    let bob = (sign: Curve25519.Signing.PrivateKey(), agree: Curve25519.KeyAgreement.PrivateKey())

    var aliceKey: SymmetricKey {
        try! MessageCrypto.key(mine: alice.agree, theirs: bob.agree.publicKey.rawRepresentation,
                               mySigningKey: alice.sign.publicKey.rawRepresentation, theirSigningKey: bob.sign.publicKey.rawRepresentation)
    }
    var bobKey: SymmetricKey {
        try! MessageCrypto.key(mine: bob.agree, theirs: alice.agree.publicKey.rawRepresentation,
                               mySigningKey: bob.sign.publicKey.rawRepresentation, theirSigningKey: alice.sign.publicKey.rawRepresentation)
    }

    @Test func bothSidesDeriveTheSameKeyAndOnlyTheRecipientOpens() throws {
        let a = alice.sign.publicKey.rawRepresentation, b = bob.sign.publicKey.rawRepresentation
        let fragment = Fragment(sequence: 7, isLast: true, sentAt: 123, text: Data("hello 👻".utf8))
        let sealed = try MessageCrypto.seal(fragment, key: aliceKey, sender: a, recipient: b)
        #expect(sealed.range(of: Data("hello".utf8)) == nil)  // Not in the clear.
        #expect(try MessageCrypto.open(sealed, key: bobKey, sender: a, recipient: b) == fragment)
        let eve = Curve25519.KeyAgreement.PrivateKey()
        let eveKey = try MessageCrypto.key(mine: eve, theirs: alice.agree.publicKey.rawRepresentation,
                                           mySigningKey: Data(repeating: 1, count: 32), theirSigningKey: a)
        #expect(throws: MessageCrypto.OpenError.cannotDecrypt) { try MessageCrypto.open(sealed, key: eveKey, sender: a, recipient: b) }
        // Replayed into another conversation (other recipient in the associated data): refused.
        #expect(throws: MessageCrypto.OpenError.cannotDecrypt) { try MessageCrypto.open(sealed, key: bobKey, sender: a, recipient: a) }
        var corrupted = sealed
        corrupted[20] ^= 1
        #expect(throws: MessageCrypto.OpenError.cannotDecrypt) { try MessageCrypto.open(corrupted, key: bobKey, sender: a, recipient: b) }
    }

    @Test func messagePacketsRoundTrip() throws {
        let sealed = try MessageCrypto.seal(Fragment(sequence: 1, isLast: true, sentAt: 1, text: Data(repeating: 65, count: 900)),
                                            key: aliceKey, sender: alice.sign.publicKey.rawRepresentation,
                                            recipient: bob.sign.publicKey.rawRepresentation)
        let recipient = bob.sign.publicKey.rawRepresentation
        for payload in [Payload.message(recipient: recipient, sealed: sealed), .ack(recipient: recipient, sequence: 42),
                        .read(recipient: recipient, sequence: 9)] {
            let bytes = try Packet.encode(payload, signer: alice.sign, timestamp: 5, sequence: 1)
            #expect(bytes.count <= Wire.maximumDatagram)
            #expect(try Packet.decode(bytes).payload == payload)
        }
    }

    @Test func splittingKeepsCharactersWhole() {
        let text = String(repeating: "a👻", count: 400)  // 5 bytes a pair: 2,000 bytes.
        let pieces = MessageCrypto.split(text, limit: 900)
        #expect(pieces.allSatisfy { $0.count <= 900 })
        #expect(pieces.count == 3)
        #expect(String(decoding: pieces.reduce(Data(), +), as: UTF8.self) == text)
        #expect(pieces.allSatisfy { String(data: $0, encoding: .utf8) != nil })
        #expect(MessageCrypto.split("") == [Data()])
        // At the limit a line is one fragment; a byte over, two (the short way and the long
        // way agree on where the limit is).
        #expect(MessageCrypto.split(String(repeating: "x", count: 900), limit: 900).count == 1)
        #expect(MessageCrypto.split(String(repeating: "x", count: 899) + "é", limit: 900).map(\.count) == [899, 2])
        #expect(MessageCrypto.split("e\u{301}👻", limit: 900) == [Data("e\u{301}👻".utf8)])
    }

}

@Suite struct WireVersionTwoTests {
    let key = Curve25519.Signing.PrivateKey()
    let announcement = Announcement(name: "alice 👻", agreementKey: Data(repeating: 9, count: 32), plane: 2,
                                    avatar: .emoji("👻"), unicastPort: 47_778, intervalMilliseconds: 5_000)

    func encode(_ payload: Payload) throws -> [UInt8] {
        try Packet.encode(payload, signer: key, timestamp: 1_700_000_000_123, sequence: 7)
    }

    /// Version 2: a later seance may add fields at the end of a payload (tag, length, value),
    /// and this reader, built from today's rules, still reads the packet.
    @Test func extensionFieldsAreSkippedAndKindsAreNew() throws {
        let plain = try encode(.announce(announcement))
        let bodyEnd = plain.count - Wire.signatureSize
        var extended = Array(plain[..<bodyEnd])
        let extra: [UInt8] = [0x7F, 0, 3] + Array("new".utf8) + [0x01, 0, 0]
        extended += extra
        let length = UInt16(bodyEnd - Wire.headerSize + extra.count)
        extended[52] = UInt8(length >> 8); extended[53] = UInt8(length & 0xFF)
        extended += try key.signature(for: extended)
        let packet = try Packet.decode(extended)
        #expect(packet.payload == .announce(announcement))
        // Broken framing of the extensions is still malformed.
        var broken = Array(plain[..<bodyEnd]) + [0x7F, 0, 9, 1]
        let brokenLength = UInt16(broken.count - Wire.headerSize)
        broken[52] = UInt8(brokenLength >> 8); broken[53] = UInt8(brokenLength & 0xFF)
        broken += try key.signature(for: broken)
        #expect(throws: DecodeError.malformedPayload("extension fields")) { try Packet.decode(broken) }
        // Version 1 packets are still read; the query is a kind of its own.
        var older = try encode(.goodbye)
        older[4] = 1
        older.replaceSubrange((older.count - 64)..., with: try key.signature(for: Array(older[..<(older.count - 64)])))
        #expect(try Packet.decode(older).payload == .goodbye)
        #expect(try Packet.decode(try encode(.query)).payload == .query)
    }
}
