import Crypto
import Foundation
import Glibc

/// One fragment of a direct message, before sealing.
package struct Fragment: Equatable, Sendable {
    package var sequence: UInt32
    /// The last fragment of its message.
    package var isLast: Bool
    /// When the sender wrote the message, milliseconds since 1970.
    package var sentAt: UInt64
    package var text: Data

    package init(sequence: UInt32, isLast: Bool, sentAt: UInt64, text: Data) {
        self.sequence = sequence
        self.isLast = isLast
        self.sentAt = sentAt
        self.text = text
    }

    /// Its bytes as sealed, or as carried in a session (`SessionFragments`): sequence (4),
    /// flags (1), when it was written (8), then the text.
    package var plaintext: [UInt8] {
        var bytes: [UInt8] = []
        bytes.reserveCapacity(byteCount)
        write(to: &bytes)
        return bytes
    }

    /// How many bytes `plaintext` is.
    package var byteCount: Int { MessageCrypto.headerSize + text.count }

    /// `plaintext`, at the end of `bytes`.
    package func write(to bytes: inout [UInt8]) {
        bytes.appendBigEndian(sequence)
        bytes.append(isLast ? 1 : 0)
        bytes.appendBigEndian(sentAt)
        bytes += text
    }

    /// A fragment read from its bytes: nil when they are too short or the flags are unknown.
    package init?(plaintext: ArraySlice<UInt8>) {
        // A slice, not any collection: a generic one was copied into a slice first, unspecialized
        // across modules (a tenth of a fragment's reading in a session).
        var reader = ByteReader(plaintext)
        guard let sequence = reader.uint32(), let flags = reader.byte(), let sentAt = reader.uint64(), flags <= 1 else { return nil }
        self.init(sequence: sequence, isLast: flags == 1, sentAt: sentAt, text: Data(reader.take(reader.remaining) ?? []))
    }
}

/// End-to-end encryption of direct messages: X25519 between the two profiles' agreement keys,
/// HKDF-SHA256 (salt: both signing keys in ascending order, info "seance message v1") to a
/// 32-byte key, ChaCha20-Poly1305 with a random nonce. The associated data is the sender's then
/// the recipient's signing key, so a fragment cannot be replayed into another conversation.
package enum MessageCrypto {
    /// Nonce (12) and tag (16) around the plaintext.
    package static let overhead = 28
    /// Plaintext header: sequence (4), flags (1), sentAt (8).
    package static let headerSize = 13
    /// Text bytes per fragment: what fits a datagram with all headers, with room to spare.
    package static let fragmentText = 900

    /// What a key is for, in its derivation: a room line's key differs from the conversation's,
    /// so a sealed copy cannot be replayed from one into the other; the pair's broker topics
    /// (`BrokerTopics.pairKey`) come from a key of their own.
    package enum Purpose: String, Sendable {
        case conversation = "seance message v1"
        case room = "seance room v1"
        case brokerTopics = "seance broker topics v1"
    }

    package static func key(mine: Curve25519.KeyAgreement.PrivateKey, theirs: Data, mySigningKey: Data,
                           theirSigningKey: Data, purpose: Purpose = .conversation) throws -> SymmetricKey {
        let shared = try mine.sharedSecretFromKeyAgreement(with: .init(rawRepresentation: theirs))
        let salt = [mySigningKey, theirSigningKey].sorted { $0.lexicographicallyPrecedes($1) }.reduce(Data(), +)
        return shared.hkdfDerivedSymmetricKey(using: SHA256.self, salt: salt, sharedInfo: Data(purpose.rawValue.utf8),
                                              outputByteCount: 32)
    }

    package static func seal(_ fragment: Fragment, key: SymmetricKey, sender: Data, recipient: Data) throws -> Data {
        try ChaChaPoly.seal(fragment.plaintext, using: key, nonce: randomNonce(), authenticating: sender + recipient).combined
    }

    /// A random nonce from one call to the kernel's generator (`getentropy`: one `getrandom`).
    /// swift-crypto's own asks for eight bytes a call, two system calls a fragment, a third of
    /// the sender's under a burst. Its own is taken should `getentropy` fail.
    static func randomNonce() -> ChaChaPoly.Nonce {
        var bytes = [UInt8](repeating: 0, count: 12)
        let got = bytes.withUnsafeMutableBytes { getentropy($0.baseAddress, $0.count) }
        guard got == 0, let nonce = try? ChaChaPoly.Nonce(data: bytes) else { return ChaChaPoly.Nonce() }
        return nonce
    }

    package enum OpenError: Error, Equatable { case cannotDecrypt, malformed }

    package static func open(_ sealed: Data, key: SymmetricKey, sender: Data, recipient: Data) throws(OpenError) -> Fragment {
        let plain: Data
        do {
            plain = try ChaChaPoly.open(ChaChaPoly.SealedBox(combined: sealed), using: key, authenticating: sender + recipient)
        } catch {
            throw .cannotDecrypt
        }
        guard let fragment = Fragment(plaintext: ArraySlice(plain)) else { throw .malformed }
        return fragment
    }

    /// A message's fragments, numbered from `firstSequence`, the last one marked (deterministic:
    /// an outbox entry reloaded after a restart gets the same fragments).
    package static func fragments(of text: String, firstSequence: UInt32, sentAt: UInt64) -> [Fragment] {
        let pieces = split(text)
        return pieces.enumerated().map { index, piece in
            Fragment(sequence: firstSequence + UInt32(index), isLast: index == pieces.count - 1, sentAt: sentAt, text: piece)
        }
    }

    /// Splits a message's UTF-8 into fragments of at most `fragmentText` bytes, on character
    /// boundaries.
    package static func split(_ text: String, limit: Int = fragmentText) -> [Data] {
        // Most lines fit one fragment: no walk over their characters.
        if text.utf8.count <= limit { return [Data(text.utf8)] }
        var pieces: [Data] = []
        var current = Data()
        for character in text {
            let bytes = Data(String(character).utf8)
            if current.count + bytes.count > limit, !current.isEmpty {
                pieces.append(current)
                current = Data()
            }
            current += bytes
        }
        pieces.append(current)
        return pieces
    }
}
