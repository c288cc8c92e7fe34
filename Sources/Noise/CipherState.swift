import Crypto
import Foundation

/// What can go wrong in a Noise handshake or with a frame under its keys. None is fatal to
/// the program: the handshake or the frame is dropped.
package enum NoiseError: Error, Equatable, Sendable {
    /// A message shorter than its tokens need.
    case truncated
    /// Authentication failed: wrong key, altered bytes, or a replay under another key.
    case decryption
    /// A public key that gives no shared secret (a low-order point).
    case invalidKey
    /// The 2^64 − 1 nonce is reserved; a key is never used that long.
    case nonceExhausted
    /// A message written or read out of the pattern's turn.
    case outOfTurn
}

/// Noise §5.1: a key `k` (or none) and a nonce `n`. ChaChaPoly's nonce is 32 zero bits then
/// `n`, little-endian (§12.3). Besides the specification's implicit nonce, `encrypt(nonce:)`
/// and `decrypt(nonce:)` take one explicitly, for a transport that loses and reorders (§11.4;
/// WireGuard's counters): the caller keeps its own replay window.
package struct CipherState: Sendable {
    private(set) var key: SymmetricKey?
    package var nonce: UInt64 = 0

    package init(key: [UInt8]? = nil) { initializeKey(key) }

    package mutating func initializeKey(_ key: [UInt8]?) {
        self.key = key.map { SymmetricKey(data: $0) }
        nonce = 0
    }

    package var hasKey: Bool { key != nil }

    /// ENCRYPT(k, n++, ad, plaintext), or the plaintext as it is while there is no key.
    package mutating func encryptWithAd(_ ad: [UInt8], _ plaintext: [UInt8]) throws(NoiseError) -> [UInt8] {
        guard hasKey else { return plaintext }
        let sealed = try encrypt(nonce: nonce, ad: ad, plaintext: plaintext)
        nonce += 1
        return sealed
    }

    /// DECRYPT(k, n++, ad, ciphertext); the nonce moves only when it opens.
    package mutating func decryptWithAd(_ ad: [UInt8], _ ciphertext: [UInt8]) throws(NoiseError) -> [UInt8] {
        guard hasKey else { return ciphertext }
        let plain = try decrypt(nonce: nonce, ad: ad, ciphertext: ciphertext)
        nonce += 1
        return plain
    }

    /// Ciphertext then the 16-byte tag, under nonce `n`: the sealed box's combined form without
    /// its nonce, copied once.
    package func encrypt(nonce n: UInt64, ad: some DataProtocol, plaintext: some DataProtocol) throws(NoiseError) -> [UInt8] {
        guard let key else { return Array(plaintext) }
        guard n != .max else { throw .nonceExhausted }
        do {
            let box = try ChaChaPoly.seal(plaintext, using: key, nonce: ChaChaPoly.Nonce(data: Self.nonceBytes(n)), authenticating: ad)
            return Array(box.combined.dropFirst(Self.nonceSize))
        } catch {
            throw .decryption
        }
    }

    /// The box opened from its combined form (the nonce, then what came), built in one buffer:
    /// opening from nonce, ciphertext and tag apart cost a third of a frame's opening.
    package func decrypt(nonce n: UInt64, ad: some DataProtocol, ciphertext: some DataProtocol) throws(NoiseError) -> [UInt8] {
        guard let key else { return Array(ciphertext) }
        guard n != .max else { throw .nonceExhausted }
        guard ciphertext.count >= Noise.tagSize else { throw .truncated }
        var combined = Self.nonceBytes(n)
        combined.reserveCapacity(Self.nonceSize + ciphertext.count)
        combined.append(contentsOf: ciphertext)
        do {
            return Array(try ChaChaPoly.open(ChaChaPoly.SealedBox(combined: combined), using: key, authenticating: ad))
        } catch {
            throw .decryption
        }
    }

    static let nonceSize = 12

    /// §12.3: 32 bits of zeros, then `n` little-endian.
    private static func nonceBytes(_ n: UInt64) -> [UInt8] {
        var bytes = [UInt8](repeating: 0, count: nonceSize)
        for index in 0..<8 { bytes[4 + index] = UInt8(truncatingIfNeeded: n >> (8 * UInt64(index))) }
        return bytes
    }
}

/// The one protocol this piece speaks, and its sizes (§12: 25519, ChaChaPoly, SHA256).
package enum Noise {
    package static let protocolName = "Noise_XX_25519_ChaChaPoly_SHA256"
    package static let dhSize = 32
    package static let hashSize = 32
    package static let tagSize = 16

    /// HASH(data): SHA-256.
    static func hash(_ data: [UInt8]) -> [UInt8] { Array(SHA256.hash(data: data)) }

    /// HMAC-HASH(key, data).
    static func hmac(_ key: [UInt8], _ data: [UInt8]) -> [UInt8] {
        Array(HMAC<SHA256>.authenticationCode(for: data, using: SymmetricKey(data: key)))
    }

    /// HKDF(chaining_key, input_key_material, num_outputs) of §4.3, with two outputs (three are
    /// only for PSK patterns).
    static func hkdf(_ chainingKey: [UInt8], _ inputKeyMaterial: [UInt8]) -> ([UInt8], [UInt8]) {
        let temporaryKey = hmac(chainingKey, inputKeyMaterial)
        let first = hmac(temporaryKey, [1])
        let second = hmac(temporaryKey, first + [2])
        return (first, second)
    }

    /// DH(key_pair, public_key): X25519.
    static func dh(_ mine: Curve25519.KeyAgreement.PrivateKey, _ theirs: [UInt8]) throws(NoiseError) -> [UInt8] {
        do {
            let shared = try mine.sharedSecretFromKeyAgreement(with: .init(rawRepresentation: theirs))
            return shared.withUnsafeBytes { Array($0) }
        } catch {
            throw .invalidKey
        }
    }
}
