import Crypto
import Foundation

/// The Extended Triple Diffie-Hellman key agreement (Signal's X3DH specification, revision 1),
/// on swift-crypto's X25519, SHA-256 and HKDF, in the specification's vocabulary: Alice (the
/// initiator) makes a shared key SK with Bob from his identity key IK_B and signed prekey
/// SPK_B, which he published earlier, without Bob taking part; Bob makes the same SK later from
/// the ephemeral key EK_A Alice sends. Without one-time prekeys (§3.3: "If the bundle does not
/// contain a one-time prekey, the protocol omits DH4").
///
/// Signing SPK_B (§3.2's Sig(IK_B, Encode(SPK_B))) is left to the caller: seance's identity
/// keys are an Ed25519 pair that signs and an X25519 pair that agrees, not one XEdDSA key, and
/// the prekey travels in an announcement signed by the first.
public enum X3DH {
    /// KDF's F (§2.2): 32 0xFF bytes before the key material, for X25519.
    static let padding = [UInt8](repeating: 0xFF, count: 32)

    /// What Alice sends Bob besides her ciphertext (§3.3): her identity key, her ephemeral key,
    /// and which of Bob's prekeys she used.
    public struct Header: Equatable, Sendable {
        public var identityKey: Data
        public var ephemeralKey: Data
        public var signedPrekey: Data

        public init(identityKey: Data, ephemeralKey: Data, signedPrekey: Data) {
            self.identityKey = identityKey
            self.ephemeralKey = ephemeralKey
            self.signedPrekey = signedPrekey
        }
    }

    /// SK and AD = Encode(IK_A) || Encode(IK_B) (§3.3), Encode being the key's 32 bytes.
    public struct Agreement: Sendable {
        public var sharedKey: SymmetricKey
        public var associatedData: Data
    }

    public enum Failure: Error, Equatable {
        /// A public key that is not 32 bytes, or a Diffie-Hellman output of all zeros (a
        /// low-order point: the key agrees with nothing).
        case invalidKey
    }

    /// Alice's side (§3.3): SK from her identity key and a fresh ephemeral key (`ephemeral`, to
    /// be used once), Bob's identity key and signed prekey. `info` names the application.
    public static func initiate(identity: Curve25519.KeyAgreement.PrivateKey, ephemeral: Curve25519.KeyAgreement.PrivateKey = .init(),
                                peerIdentity: Data, peerSignedPrekey: Data, info: String) throws(Failure) -> (Agreement, Header) {
        let dh1 = try dh(identity, peerSignedPrekey)
        let dh2 = try dh(ephemeral, peerIdentity)
        let dh3 = try dh(ephemeral, peerSignedPrekey)
        let mine = identity.publicKey.rawRepresentation
        let header = Header(identityKey: mine, ephemeralKey: ephemeral.publicKey.rawRepresentation, signedPrekey: peerSignedPrekey)
        return (Agreement(sharedKey: kdf(dh1 + dh2 + dh3, info: info), associatedData: mine + peerIdentity), header)
    }

    /// Bob's side (§3.4): the same SK from Alice's header, his identity key and the private half
    /// of the signed prekey she named (the caller finds it; deleted, nothing opens).
    public static func respond(to header: Header, identity: Curve25519.KeyAgreement.PrivateKey,
                               signedPrekey: Curve25519.KeyAgreement.PrivateKey, info: String) throws(Failure) -> Agreement {
        let dh1 = try dh(signedPrekey, header.identityKey)
        let dh2 = try dh(identity, header.ephemeralKey)
        let dh3 = try dh(signedPrekey, header.ephemeralKey)
        return Agreement(sharedKey: kdf(dh1 + dh2 + dh3, info: info),
                         associatedData: header.identityKey + identity.publicKey.rawRepresentation)
    }

    /// KDF(KM) (§2.2): HKDF-SHA256 of F || KM, salt 32 zero bytes, `info`, 32 bytes out.
    static func kdf(_ keyMaterial: [UInt8], info: String) -> SymmetricKey {
        HKDF<SHA256>.deriveKey(inputKeyMaterial: SymmetricKey(data: padding + keyMaterial), salt: [UInt8](repeating: 0, count: 32),
                               info: Array(info.utf8), outputByteCount: 32)
    }

    /// DH(PK1, PK2) (§2.2): X25519; an all-zero output is refused (§4.1's "invalid" keys).
    static func dh(_ mine: Curve25519.KeyAgreement.PrivateKey, _ theirs: Data) throws(Failure) -> [UInt8] {
        guard theirs.count == 32, let key = try? Curve25519.KeyAgreement.PublicKey(rawRepresentation: theirs),
              let shared = try? mine.sharedSecretFromKeyAgreement(with: key) else { throw .invalidKey }
        let bytes = shared.withUnsafeBytes { Array($0) }
        guard bytes.contains(where: { $0 != 0 }) else { throw .invalidKey }
        return bytes
    }
}
