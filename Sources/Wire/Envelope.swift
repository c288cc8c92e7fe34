import Crypto
import Foundation

/// A frame that goes through a broker sealed to its recipient alone (type 27), so that no outer
/// byte names who wrote it or whom it is for: a handshake message names both keys, and mail is
/// signed by its writer. The sender's half is an ephemeral X25519 key, the recipient's is its
/// agreement key (a handshake) or its signed prekey (mail, which is then forward-secret in what
/// it says of its writer too). As libsodium's sealed box, with HKDF and ChaCha20-Poly1305:
///
///     offset  size  field
///     0       4     magic "SEAN"
///     4       1     version (3)
///     5       1     type (27)
///     6       2     flags (0)
///     8       1     the recipient's key it is sealed to: 0 its agreement key, 1 a signed prekey
///     9       32    the ephemeral public key E
///     41      n+16  ChaCha20-Poly1305 of the inner frame: key HKDF-SHA256(DH(e, R), salt E‖R,
///                   info "seance envelope v1"), nonce zero (each key seals once), AD bytes 0..<41
package enum Envelope {
    /// Which of the recipient's keys an envelope is sealed to.
    package enum Recipient: UInt8, Sendable {
        case agreementKey = 0
        case signedPrekey = 1
    }

    package static let headerSize = 41
    package static let overhead = headerSize + 16
    /// Whether an envelope may hold a frame of `kind`: those that would name someone outside it.
    /// (Written out, as `symmetricKey`'s info: a static made during one fuzzed input is a leak to
    /// LeakSanitizer.)
    package static func carries(_ kind: UInt8) -> Bool { kind == KindTable.handshake || kind == KindTable.mail }

    /// `inner` sealed to `recipient` (the public half of the key `to` says).
    package static func seal(_ inner: [UInt8], to recipient: Data, as key: Recipient,
                             ephemeral: Curve25519.KeyAgreement.PrivateKey = .init()) throws -> [UInt8] {
        let header = SessionWire.start(KindTable.envelope) + [key.rawValue] + ephemeral.publicKey.rawRepresentation
        let shared = try ephemeral.sharedSecretFromKeyAgreement(with: .init(rawRepresentation: recipient))
        let sealed = try ChaChaPoly.seal(inner, using: symmetricKey(shared, ephemeral: ephemeral.publicKey.rawRepresentation, recipient: recipient),
                                         nonce: ChaChaPoly.Nonce(data: Data(count: 12)), authenticating: header)
        return header + sealed.ciphertext + sealed.tag
    }

    /// Which key an envelope says it is sealed to; nil when it is no envelope.
    package static func recipient(of bytes: [UInt8]) -> Recipient? {
        guard bytes.count >= overhead, bytes[0..<4].elementsEqual(Wire.magic), bytes[4] == SessionWire.version,
              bytes[5] == KindTable.envelope else { return nil }
        return Recipient(rawValue: bytes[8])
    }

    /// The inner frame, opened with the first of `keys` (the private halves of the kind the
    /// envelope names, the likeliest first) that opens it; nil when none does.
    package static func open(_ bytes: [UInt8], with keys: [Curve25519.KeyAgreement.PrivateKey]) -> [UInt8]? {
        guard recipient(of: bytes) != nil, let ephemeral = try? Curve25519.KeyAgreement.PublicKey(rawRepresentation: bytes[9..<41]) else { return nil }
        let header = bytes[0..<headerSize], body = bytes[headerSize...]
        guard let box = try? ChaChaPoly.SealedBox(nonce: ChaChaPoly.Nonce(data: Data(count: 12)), ciphertext: body.dropLast(16), tag: body.suffix(16)) else {
            return nil
        }
        for key in keys {
            guard let shared = try? key.sharedSecretFromKeyAgreement(with: ephemeral),
                  let inner = try? ChaChaPoly.open(box, using: symmetricKey(shared, ephemeral: ephemeral.rawRepresentation,
                                                                             recipient: key.publicKey.rawRepresentation),
                                                   authenticating: header) else { continue }
            return Array(inner)
        }
        return nil
    }

    private static func symmetricKey(_ shared: SharedSecret, ephemeral: Data, recipient: Data) -> SymmetricKey {
        shared.hkdfDerivedSymmetricKey(using: SHA256.self, salt: ephemeral + recipient, sharedInfo: Data("seance envelope v1".utf8),
                                       outputByteCount: 32)
    }
}
