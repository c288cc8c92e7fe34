import Crypto
import Foundation

/// Where direct frames and mail wait on a broker (`PREFIX/t/` and 32 hex digits), so that no
/// topic names a sender or a recipient and none stays the same for long: each is derived from a
/// key only the pair shares, and either the hour (frames while both are online) or the
/// recipient's signed prekey (mail, which a persistent session can only hold on a topic it was
/// subscribed to when the mail came: its reader, away, does not move on to the next hour). First
/// contact goes to a rendezvous derived from the recipient's prekey, which its presence
/// publishes: that one names the recipient, never the sender.
package enum BrokerTopics {
    /// The prefix of every such topic, under the broker's own prefix.
    package static let prefix = "t/"

    /// What a pair's topics are derived from: X25519 of the two agreement keys, through HKDF
    /// (salt: both signing keys in ascending order), apart from every other key of the pair.
    package static func pairKey(mine: Curve25519.KeyAgreement.PrivateKey, theirs: Data, mySigningKey: Data,
                                theirSigningKey: Data) throws -> SymmetricKey {
        try MessageCrypto.key(mine: mine, theirs: theirs, mySigningKey: mySigningKey, theirSigningKey: theirSigningKey, purpose: .brokerTopics)
    }

    /// The hour of `time` (seconds since 1970), which live topics change with.
    package static func hour(_ time: Double) -> UInt64 { UInt64(max(0, time) / 3_600) }

    /// Frames of the pair for `recipient` (its signing key) in `hour`.
    package static func live(_ pair: SymmetricKey, to recipient: Data, hour: UInt64) -> String {
        var hourBytes: [UInt8] = []
        hourBytes.appendBigEndian(hour)
        return topic(HMAC<SHA256>.authenticationCode(for: Data("live".utf8) + recipient + hourBytes, using: pair))
    }

    /// Mail of the pair for `recipient`, sealed to its signed prekey `prekey`.
    package static func mail(_ pair: SymmetricKey, to recipient: Data, prekey: Data) -> String {
        topic(HMAC<SHA256>.authenticationCode(for: Data("mail".utf8) + recipient + prekey, using: pair))
    }

    /// Where someone who shares no conversation with the owner of `prekey` mails it.
    package static func rendezvous(prekey: Data) -> String {
        topic(SHA256.hash(data: Data("seance rendezvous v1".utf8) + prekey))
    }

    private static func topic<Digest: Sequence>(_ digest: Digest) -> String where Digest.Element == UInt8 {
        prefix + digest.prefix(16).map { String(format: "%02x", $0) }.joined()
    }

    /// The client ID of the mailbox of `identity` (`seance-m-` and 14 hex digits, 23 characters
    /// as MQTT 3.1.1 promises every broker takes): the same at every connection, as the session
    /// the broker keeps is named by it, and derived from the private agreement key, so that it
    /// tells nothing of the profile's public keys.
    package static func mailboxClientID(of identity: Identity) -> String {
        let code = HMAC<SHA256>.authenticationCode(for: Data("seance mailbox client id".utf8),
                                                   using: SymmetricKey(data: identity.agreement.rawRepresentation))
        return "seance-m-" + code.prefix(7).map { String(format: "%02x", $0) }.joined()
    }

    /// Whether `address` is one of these topics (what a transport takes for one).
    package static func isTopic(_ address: String) -> Bool {
        address.utf8.count == prefix.utf8.count + 32 && address.hasPrefix(prefix) && address.dropFirst(prefix.count).allSatisfy(\.isHexDigit)
    }
}

/// What the broker sees of a frame's size: every frame published on a pair's topic or a
/// rendezvous is padded to one of a few sizes, its own length in its last two bytes.
package enum BrokerPadding {
    /// A session frame or a handshake; any datagram in an envelope; the largest mail.
    package static var sizes: [Int] { [256, Wire.maximumDatagram + Envelope.overhead + 2, Wire.maximumMail + Envelope.overhead + 2] }

    /// `frame`, zeros, and its length (big-endian): as long as the smallest size it fits; nil
    /// when it fits none.
    package static func pad(_ frame: [UInt8]) -> [UInt8]? {
        guard let size = sizes.first(where: { $0 >= frame.count + 2 }) else { return nil }
        var padded = frame + [UInt8](repeating: 0, count: size - frame.count - 2)
        padded.appendBigEndian(UInt16(frame.count))
        return padded
    }

    /// The frame in `padded`; nil when it is not one of the sizes or says a longer frame.
    package static func unpad(_ padded: [UInt8]) -> [UInt8]? {
        guard sizes.contains(padded.count) else { return nil }
        let length = Int(padded[padded.count - 2]) << 8 | Int(padded[padded.count - 1])
        guard length <= padded.count - 2 else { return nil }
        return Array(padded[..<length])
    }
}
