import Crypto
import Foundation
import Testing
@testable import Wire

@Suite struct WireTests {
    let key = Curve25519.Signing.PrivateKey()
    /// A payload of some kind: the frame neither knows nor cares what it says.
    let body: [UInt8] = Array("a payload of some kind".utf8)

    func encode(kind: UInt8 = 200, _ body: [UInt8]? = nil, sequence: UInt32 = 7) throws -> [UInt8] {
        try Packet.encode(kind: kind, body: body ?? self.body, signer: key, timestamp: 1_700_000_000_123, sequence: sequence)
    }

    @Test func framesRoundTripWhateverTheyCarry() throws {
        for body in [[], self.body, [UInt8](repeating: 0xFF, count: Wire.maximumDatagram - Wire.headerSize - Wire.signatureSize)] {
            let bytes = try encode(body)
            #expect(bytes.count <= Wire.maximumDatagram)
            #expect(try Packet.decode(bytes) == Packet(kind: 200, sender: key.publicKey.rawRepresentation, timestamp: 1_700_000_000_123,
                                                       sequence: 7, body: body))
        }
        #expect(throws: DecodeError.oversized) { try encode([UInt8](repeating: 0, count: Wire.maximumDatagram)) }
    }

    @Test func theLayoutIsAsDocumented() throws {
        let bytes = try encode(kind: KindTable.goodbye, [], sequence: 0x0102_0304)
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
        let bytes = try Packet.encode(kind: KindTable.announce, body: body, signer: key, timestamp: 1_700_000_000_123, sequence: 7,
                                      flags: .answer)
        #expect(bytes[6] == 0 && bytes[7] == 1)
        let header = try #require(UncheckedHeader(bytes))
        #expect(header.type == KindTable.announce && header.flags == .answer)
        #expect(Data(header.sender) == key.publicKey.rawRepresentation)
        #expect(try Packet.decode(bytes).flags == .answer)
        var unflagged = bytes
        unflagged[7] = 0
        #expect(UncheckedHeader(unflagged)?.flags == [])
        #expect(throws: DecodeError.badSignature) { try Packet.decode(unflagged) }
        #expect(UncheckedHeader(Array(bytes.prefix(Wire.headerSize - 1))) == nil)
        #expect(UncheckedHeader(Array("SEAX".utf8) + bytes.dropFirst(4)) == nil)
    }

    @Test func truncatedAtEveryLength() throws {
        let bytes = try encode()
        for length in 0..<bytes.count {
            #expect(throws: DecodeError.self) { try Packet.decode(Array(bytes.prefix(length))) }
        }
    }

    @Test func everyFlippedBitIsCaught() throws {
        let bytes = try encode()
        for index in 0..<bytes.count {
            var corrupted = bytes
            corrupted[index] ^= 0x10
            #expect(throws: DecodeError.self, "byte \(index)") { try Packet.decode(corrupted) }
        }
    }

    @Test func eachClassOfBadInput() throws {
        let good = try encode(kind: KindTable.goodbye, [])
        var foreign = good; foreign[0] = UInt8(ascii: "X")
        #expect(throws: DecodeError.badMagic) { try Packet.decode(foreign) }
        var future = good; future[4] = 3
        #expect(throws: DecodeError.unknownVersion(3)) { try Packet.decode(future) }
        // A kind this reader does not know is still checked (signature), then handed up as it is.
        var strange = good; strange[5] = 99
        #expect(throws: DecodeError.badSignature) { try Packet.decode(strange) }
        strange.replaceSubrange((strange.count - 64)..., with: try key.signature(for: Array(strange[..<(strange.count - 64)])))
        #expect(try Packet.decode(strange).kind == 99)
        #expect(throws: DecodeError.oversized) { try Packet.decode([UInt8](repeating: 0, count: 1201)) }
        var unsigned = good; unsigned.replaceSubrange((good.count - 64)..., with: [UInt8](repeating: 0, count: 64))
        #expect(throws: DecodeError.badSignature) { try Packet.decode(unsigned) }
        // Someone else's key in the header: the signature no longer matches.
        var stolen = good; stolen.replaceSubrange(8..<40, with: Curve25519.Signing.PrivateKey().publicKey.rawRepresentation)
        #expect(throws: DecodeError.badSignature) { try Packet.decode(stolen) }
        #expect(throws: DecodeError.truncated) { try Packet.decode([]) }
        // Read as another kind than it is: refused.
        #expect(throws: DecodeError.unknownType(KindTable.goodbye)) { try Packet.decode(good).read(Probe.self) }
    }

    @Test func randomGarbageNeverCrashes() {
        let seed = UInt64.random(in: 0...UInt64.max)
        var generator = SeededBytes(seed: seed)
        for _ in 0..<2_000 {
            let length = Int.random(in: 0...1300, using: &generator)
            var bytes = (0..<length).map { _ in UInt8.random(in: 0...255, using: &generator) }
            if length > 6 && Bool.random(using: &generator) { bytes.replaceSubrange(0..<6, with: Wire.magic + [1, 1]) }
            #expect(throws: DecodeError.self, "seed \(seed)") { try Packet.decode(bytes) }
        }
    }
}

/// A kind of the tests' own: a number, and whatever a later version adds.
struct Probe: PacketKind, Equatable {
    static let code: UInt8 = 240
    var number: UInt32

    init(number: UInt32) { self.number = number }

    init(reading reader: inout ByteReader) throws(DecodeError) {
        guard let number = reader.uint32() else { throw .malformedPayload("probe") }
        self.number = number
    }

    func write(to bytes: inout [UInt8]) { bytes.appendBigEndian(number) }
}

/// SplitMix64, as `SeededRandom` (which Wire does not see): the seed is printed when a test fails.
struct SeededBytes: RandomNumberGenerator {
    var state: UInt64
    init(seed: UInt64) { state = seed }
    mutating func next() -> UInt64 {
        state &+= 0x9E37_79B9_7F4A_7C15
        var z = state
        z = (z ^ (z >> 30)) &* 0xBF58_476D_1CE4_E5B9
        z = (z ^ (z >> 27)) &* 0x94D0_49BB_1331_11EB
        return z ^ (z >> 31)
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

    /// Version 2: a later seance may add fields at the end of a payload (tag, length, value),
    /// and a reader built from today's rules still reads the packet, for every kind.
    @Test func extensionFieldsAreSkippedByEveryKindsReader() throws {
        var body = try Probe(number: 42).encoded()
        body += [0x7F, 0, 3] + Array("new".utf8) + [0x01, 0, 0]
        let frame = try Packet.encode(kind: Probe.code, body: body, signer: key, timestamp: 1, sequence: 1)
        #expect(try Packet.decode(frame).read(Probe.self) == Probe(number: 42))
        // Broken framing of the extensions is still malformed.
        #expect(throws: DecodeError.malformedPayload("extension fields")) { try Probe.read(try Probe(number: 1).encoded() + [0x7F, 0, 9, 1]) }
        #expect(throws: DecodeError.malformedPayload("extension fields")) { try Probe.read(try Probe(number: 1).encoded() + [0x7F]) }
        // Version 1 packets are still read.
        var older = try Packet.encode(Probe(number: 3), signer: key, timestamp: 1, sequence: 1)
        older[4] = 1
        older.replaceSubrange((older.count - 64)..., with: try key.signature(for: Array(older[..<(older.count - 64)])))
        #expect(try Packet.decode(older).read(Probe.self) == Probe(number: 3))
    }
}
