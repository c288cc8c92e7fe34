import Crypto
import Foundation

/// A profile's keys: Ed25519 to sign every packet, X25519 to agree on message keys.
package struct Identity: Sendable {
    package let signing: Curve25519.Signing.PrivateKey
    package let agreement: Curve25519.KeyAgreement.PrivateKey

    /// The public keys' bytes, made once: the engine asks for ours several times a message, and
    /// each asking made a new `Data`.
    package let signingPublicKey: Data
    package let agreementPublicKey: Data

    package init(signing: Curve25519.Signing.PrivateKey = .init(), agreement: Curve25519.KeyAgreement.PrivateKey = .init()) {
        self.signing = signing
        self.agreement = agreement
        signingPublicKey = signing.publicKey.rawRepresentation
        agreementPublicKey = agreement.publicKey.rawRepresentation
    }

    package var fingerprint: String { Identity.fingerprint(of: signingPublicKey) }

    /// The short, stable rendering of a signing key shown after a name: `alice#3fa2`.
    package static func fingerprint(of signingPublicKey: Data) -> String {
        PeerIdentity.fingerprint(of: signingPublicKey)
    }
}
