import Crypto
import Foundation
import Testing
@testable import Nearby

/// Presence's and delivery's kinds: each reads back what it wrote, inside a signed frame, and
/// skips extension fields a later version adds.
@Suite struct KindTests {
    let key = Curve25519.Signing.PrivateKey()
    let announcement = Announcement(name: "alice 👻", agreementKey: Data(repeating: 9, count: 32), plane: 2,
                                    avatar: .emoji("👻"), unicastPort: 47_778, intervalMilliseconds: 5_000)

    func roundTrip<Kind: PacketKind & Equatable>(_ value: Kind) throws {
        let frame = try Packet.encode(value, signer: key, timestamp: 1_700_000_000_123, sequence: 7)
        #expect(frame.count <= Wire.maximumDatagram)
        let packet = try Packet.decode(frame)
        #expect(packet.kind == Kind.code)
        #expect(try packet.read(Kind.self) == value)
    }

    @Test func everyCoreKindRoundTrips() throws {
        let pixels = Data((0..<1024).map { UInt8($0 & 0xFF) })
        let hash = Data(SHA256.hash(data: pixels))
        var imageAnnouncement = announcement
        imageAnnouncement.avatar = .image(hash)
        var bare = announcement
        bare.avatar = .none
        for value in [announcement, imageAnnouncement, bare] { try roundTrip(value) }
        try roundTrip(Goodbye())
        try roundTrip(Query())
        try roundTrip(AvatarRequest(hash: hash))
        try roundTrip(AvatarImage(hash: hash, pixels: pixels))
        let recipient = Data(repeating: 3, count: 32), sealed = Data(repeating: 1, count: 928)
        try roundTrip(MessageFragment(recipient: recipient, sealed: sealed))
        try roundTrip(MessageBundle(recipient: recipient, sealed: [Data(repeating: 1, count: 40), Data(repeating: 2, count: 50)]))
        try roundTrip(Acknowledgement(recipient: recipient, sequence: 42))
        try roundTrip(ReadReceipt(recipient: recipient, sequence: 9))
    }

    /// Mail: its sender's announcement and what it carries, sealed to the reader's prekey,
    /// read back and open there (and only as from its sender, with that prekey, unaltered); only
    /// delivery's kinds are carried; a mail may be larger than a datagram (up to
    /// `Wire.maximumMail`, for brokers), any other frame may not.
    @Test func mailIsSealedToAPrekeyAndMayBeLargerThanADatagram() throws {
        let recipient = Data(repeating: 4, count: 32), sender = key.publicKey.rawRepresentation
        let (reader, prekey, writer) = (Curve25519.KeyAgreement.PrivateKey(), Curve25519.KeyAgreement.PrivateKey(),
                                        Curve25519.KeyAgreement.PrivateKey())
        var said = announcement
        said.agreementKey = writer.publicKey.rawRepresentation
        func seal<Kind: PacketKind>(_ packet: Kind) throws -> Mail {
            try Mail.seal(packet, for: recipient, agreementKey: reader.publicKey.rawRepresentation,
                          prekey: prekey.publicKey.rawRepresentation, from: said, identity: writer, sender: sender)
        }
        let ack = Acknowledgement(recipient: recipient, sequence: 9)
        let mail = try seal(ack)
        try roundTrip(mail)
        let opened = try mail.open(identity: reader, prekey: prekey, sender: sender)
        #expect(opened.kind == KindTable.ack)
        #expect(try Acknowledgement.read(opened.body) == ack)
        var altered = mail
        altered.sealed[0] ^= 1
        for (attempt, from, with) in [(mail, sender, Curve25519.KeyAgreement.PrivateKey()), (mail, Data(repeating: 1, count: 32), prekey),
                                      (altered, sender, prekey)] {
            #expect(throws: Mail.Failure.doesNotOpen) { try attempt.open(identity: reader, prekey: with, sender: from) }
        }
        #expect(throws: Mail.Failure.cannotSeal) { try seal(ReadReceipt(recipient: recipient, sequence: 1)) }
        let boxes = (0..<14).map { _ in Data(repeating: 7, count: 941) }
        let big = try seal(MessageBundle(recipient: recipient, sealed: boxes))
        let frame = try Packet.encode(big, signer: key, timestamp: 1, sequence: 1)
        #expect(frame.count > Wire.maximumDatagram && frame.count <= Wire.maximumMail)
        #expect(try Packet.decode(frame).read(Mail.self) == big)
        #expect(throws: DecodeError.oversized) {
            try Packet.encode(kind: KindTable.messages, body: try big.encoded(), signer: key, timestamp: 1, sequence: 1)
        }
    }

    /// The signed prekey (extension field 3) reads back; without it, the announcement is as before.
    @Test func anAnnouncementCarriesASignedPrekey() throws {
        var with = announcement
        with.signedPrekey = SignedPrekey(publicKey: Data(repeating: 5, count: 32), made: 1_700_000_000.25)
        try roundTrip(with)
        #expect(try with.encoded().count == (try announcement.encoded()).count + 43)
    }

    /// The kinds a sender also reads (extension field 4) read back; a list longer than is kept
    /// is read as far as it is kept; without it, the announcement is as before.
    @Test func anAnnouncementSaysWhichKindsItAlsoReads() throws {
        var with = announcement
        with.alsoReads = KindTable.announcedReads
        try roundTrip(with)
        #expect(with.reads(KindTable.sessionFragments) && !announcement.reads(KindTable.sessionFragments))
        #expect(try with.encoded().count == (try announcement.encoded()).count + 3 + KindTable.announcedReads.count)
        let long = try announcement.encoded() + [4, 0, 64] + (0..<64).map { UInt8($0) }
        #expect(try Announcement.read(long).alsoReads == Set((0..<UInt8(Announcement.readsKept))))
    }

    /// Fragments as they are (kind 29) read back, up to a packet's worth; a fragment longer than
    /// a header and a full piece of text, one with flags this version does not know, one shorter
    /// than its header, or none at all is malformed.
    @Test func fragmentsAsTheyAreReadBackWithinTheirBounds() throws {
        let recipient = Data(repeating: 3, count: 32)
        let full = Fragment(sequence: 7, isLast: true, sentAt: 1_700_000_000_123, text: Data(repeating: 0x61, count: MessageCrypto.fragmentText))
        try roundTrip(SessionFragments(recipient: recipient, fragments: [full]))
        try roundTrip(SessionFragments(recipient: recipient, fragments: (1...40).map {
            Fragment(sequence: $0, isLast: $0 % 2 == 0, sentAt: 1, text: Data("line \($0)".utf8))
        }))
        let body = Array(recipient)
        func carrying(_ bytes: [UInt8]) -> [UInt8] { body + [UInt8(bytes.count >> 8), UInt8(bytes.count & 0xFF)] + bytes }
        var tooLong = full.plaintext
        tooLong.append(0x61)
        var badFlags = full.plaintext
        badFlags[4] = 2
        for malformed in [carrying(tooLong), carrying(badFlags), carrying(Array(full.plaintext.prefix(12))), body] {
            #expect(throws: DecodeError.self) { try SessionFragments.read(malformed) }
        }
        #expect(throws: DecodeError.self) {
            try SessionFragments(recipient: recipient, fragments: [Fragment(sequence: 1, isLast: true, sentAt: 1, text: Data(tooLong))]).encoded()
        }
    }

    /// A core kind too: today's reader of an announcement skips a field it does not know.
    @Test func anAnnouncementWithAnExtensionFieldIsRead() throws {
        let body = try announcement.encoded() + [0x7F, 0, 3] + Array("new".utf8)
        let frame = try Packet.encode(kind: Announcement.code, body: body, signer: key, timestamp: 1, sequence: 1)
        #expect(try Packet.decode(frame).read(Announcement.self) == announcement)
        #expect(throws: DecodeError.malformedPayload("extension fields")) { try Announcement.read(try announcement.encoded() + [1, 0]) }
    }

    @Test func signedButMalformedPayloadsAreRejected() throws {
        // A correctly signed packet whose payload breaks the rules: a plane that does not exist.
        let body: [UInt8] = [UInt8](repeating: 1, count: 32) + [9, 1, UInt8(ascii: "a"), 0, 0, 0, 1, 0, 0, 0, 1]
        let packet = try Packet.decode(try Packet.encode(kind: KindTable.announce, body: body, signer: key, timestamp: 1, sequence: 1))
        #expect(throws: DecodeError.malformedPayload("plane 9")) { try packet.read(Announcement.self) }
        #expect(throws: DecodeError.malformedPayload("avatar hash mismatch")) {
            try AvatarImage.read(Array(Data(repeating: 0, count: 32)) + [UInt8](repeating: 1, count: AvatarImage.pixelBytes))
        }
        #expect(throws: DecodeError.malformedPayload("no sealed message")) { try MessageBundle.read([UInt8](repeating: 0, count: 32)) }
    }
}
