import Crypto
import Foundation
import Testing
@testable import Nearby

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
        #expect(bytes[4] == 1 && bytes[5] == 2 && bytes[6] == 0 && bytes[7] == 0)
        #expect(Data(bytes[8..<40]) == key.publicKey.rawRepresentation)
        #expect(Array(bytes[48..<52]) == [1, 2, 3, 4])
        #expect(Array(bytes[52..<54]) == [0, 0])
        #expect(bytes.count == 54 + 64)
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
        var future = good; future[4] = 2
        #expect(throws: DecodeError.unknownVersion(2)) { try Packet.decode(future) }
        var strange = good; strange[5] = 99
        #expect(throws: DecodeError.unknownType(99)) { try Packet.decode(strange) }
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
