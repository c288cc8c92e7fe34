import Crypto
import Foundation
import Wire
import X3DH

/// A direct packet for someone away (kind 26), left with a broker that holds it until they
/// connect: signed by its sender (no session can be made with someone who is not there), with
/// the sender's announcement, which says what a present peer's would (name, agreement key,
/// plane), and the packet it carries (one of delivery's: a message, several, an
/// acknowledgement; or a picture's offer, chunks and the answer that it is whole) sealed as X3DH
/// seals (`seal`): to the recipient's signed prekey, with a fresh ephemeral key, so that it opens
/// only while the recipient keeps that prekey. The sealed packet runs to the end of the payload:
/// this kind has no extension fields.
package struct Mail: PacketKind, Equatable {
    package static let code = KindTable.mail
    /// How long mail is held: a reader takes none older (by its frame's time), and a writer is
    /// told of what was not acknowledged within it.
    package static let lifetime = 7 * 86_400.0
    /// The kinds a mail may carry.
    package static let carried: Set<UInt8> = [KindTable.message, KindTable.messages, KindTable.ack,
                                              KindTable.fileOffer, KindTable.fileChunks, KindTable.fileAnswer]
    /// X3DH's info: the application's name for its keys.
    static let info = "seance mail v1"

    package var recipient: Data
    package var announcement: Announcement
    /// X3DH's EK_A: the sender's ephemeral X25519 key, used for this mail alone.
    package var ephemeralKey: Data
    /// The recipient's signed prekey it is sealed to (SPK_B).
    package var prekey: Data
    /// The carried kind and its payload, sealed (ChaCha20-Poly1305, with its tag).
    package var sealed: [UInt8]

    package init(recipient: Data, announcement: Announcement, ephemeralKey: Data, prekey: Data, sealed: [UInt8]) {
        self.recipient = recipient
        self.announcement = announcement
        self.ephemeralKey = ephemeralKey
        self.prekey = prekey
        self.sealed = sealed
    }

    package enum Failure: Error, Equatable {
        /// A key that agrees with nothing, or a kind mail does not carry.
        case cannotSeal
        /// It did not open: not sealed to this prekey by this sender, or altered.
        case doesNotOpen
    }

    /// `packet`, for `recipient` (whose agreement key and signed prekey are given), from whoever
    /// `announcement` describes, whose agreement key `identity` is: X3DH's initial message (§3.3).
    package static func seal<Kind: PacketKind>(_ packet: Kind, for recipient: Data, agreementKey: Data, prekey: Data,
                                              from announcement: Announcement, identity: Curve25519.KeyAgreement.PrivateKey,
                                              sender: Data) throws -> Mail {
        guard Self.carried.contains(Kind.code), let body = try? packet.encoded(),
              let (agreement, header) = try? X3DH.initiate(identity: identity, peerIdentity: agreementKey, peerSignedPrekey: prekey, info: info)
        else { throw Failure.cannotSeal }
        var mail = Mail(recipient: recipient, announcement: announcement, ephemeralKey: header.ephemeralKey, prekey: prekey, sealed: [])
        // One key per mail (a fresh ephemeral key each): the nonce can be fixed.
        let box = try ChaChaPoly.seal([Kind.code] + body, using: agreement.sharedKey, nonce: ChaChaPoly.Nonce(data: Data(count: 12)),
                                      authenticating: mail.associatedData(agreement, sender: sender))
        mail.sealed = Array(box.ciphertext + box.tag)
        return mail
    }

    /// What it carries (kind and payload), opened with our agreement key and the private half of
    /// the prekey it names (§3.4); from `sender`, whose signature the frame bore.
    package func open(identity: Curve25519.KeyAgreement.PrivateKey, prekey: Curve25519.KeyAgreement.PrivateKey,
                      sender: Data) throws(Failure) -> (kind: UInt8, body: [UInt8]) {
        let header = X3DH.Header(identityKey: announcement.agreementKey, ephemeralKey: ephemeralKey, signedPrekey: self.prekey)
        guard let agreement = try? X3DH.respond(to: header, identity: identity, signedPrekey: prekey, info: Self.info),
              let box = try? ChaChaPoly.SealedBox(nonce: ChaChaPoly.Nonce(data: Data(count: 12)), ciphertext: sealed.dropLast(16),
                                                  tag: sealed.suffix(16)),
              let plain = try? ChaChaPoly.open(box, using: agreement.sharedKey, authenticating: associatedData(agreement, sender: sender)),
              let kind = plain.first, Self.carried.contains(kind), plain.count > 1 else { throw .doesNotOpen }
        return (kind, Array(plain.dropFirst()))
    }

    /// X3DH's AD (both agreement keys), then both signing keys: a mail opens only as from its
    /// signer, to its recipient.
    private func associatedData(_ agreement: X3DH.Agreement, sender: Data) -> Data {
        agreement.associatedData + sender + recipient
    }

    package init(reading reader: inout ByteReader) throws(DecodeError) {
        guard let recipient = reader.take(32), let length = reader.uint16(), let said = reader.take(Int(length)) else {
            throw .malformedPayload("too short")
        }
        let announcement = try Announcement.read(Array(said))
        guard let ephemeral = reader.take(32), let prekey = reader.take(32) else { throw .malformedPayload("too short") }
        // At least the carried kind, one byte of it, and the tag.
        guard let rest = reader.take(reader.remaining), rest.count >= 18 else { throw .malformedPayload("nothing carried") }
        self.init(recipient: Data(recipient), announcement: announcement, ephemeralKey: Data(ephemeral), prekey: Data(prekey),
                  sealed: Array(rest))
    }

    package func write(to bytes: inout [UInt8]) throws {
        let said = try announcement.encoded()
        guard recipient.count == 32, said.count <= Int(UInt16.max), ephemeralKey.count == 32, prekey.count == 32, sealed.count >= 18 else {
            throw DecodeError.malformedPayload("mail fields")
        }
        bytes += recipient
        bytes.appendBigEndian(UInt16(said.count))
        bytes += said
        bytes += ephemeralKey
        bytes += prekey
        bytes += sealed
    }
}
