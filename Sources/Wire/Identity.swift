import Crypto
import Foundation

/// A profile's keys: Ed25519 to sign every packet, X25519 to agree on message keys.
public struct Identity: Sendable {
    public let signing: Curve25519.Signing.PrivateKey
    public let agreement: Curve25519.KeyAgreement.PrivateKey

    public init(signing: Curve25519.Signing.PrivateKey = .init(), agreement: Curve25519.KeyAgreement.PrivateKey = .init()) {
        self.signing = signing
        self.agreement = agreement
    }

    public var signingPublicKey: Data { signing.publicKey.rawRepresentation }
    public var agreementPublicKey: Data { agreement.publicKey.rawRepresentation }
    public var fingerprint: String { Identity.fingerprint(of: signingPublicKey) }

    /// The short, stable rendering of a signing key shown after a name: `alice#3fa2`.
    public static func fingerprint(of signingPublicKey: Data) -> String {
        PeerIdentity.fingerprint(of: signingPublicKey)
    }
}
