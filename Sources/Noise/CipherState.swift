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
    private(set) var key: ChaChaPolyKey?
    package var nonce: UInt64 = 0

    package init(key: [UInt8]? = nil) { initializeKey(key) }

    package mutating func initializeKey(_ key: [UInt8]?) {
        self.key = key.map(ChaChaPolyKey.init)
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

    /// Ciphertext then the 16-byte tag, under nonce `n`.
    package func encrypt(nonce n: UInt64, ad: [UInt8], plaintext: [UInt8]) throws(NoiseError) -> [UInt8] {
        var sealed: [UInt8] = []
        sealed.reserveCapacity(plaintext.count + Noise.tagSize)
        try encrypt(nonce: n, ad: ad, plaintext: plaintext, appendingTo: &sealed)
        return sealed
    }

    /// Ciphertext then the 16-byte tag, under nonce `n`, appended to `output` (a frame's header,
    /// say, so that the frame is made in one buffer).
    package func encrypt(nonce n: UInt64, ad: [UInt8], plaintext: [UInt8], appendingTo output: inout [UInt8]) throws(NoiseError) {
        guard let key else { return output.append(contentsOf: plaintext) }
        guard n != .max else { throw .nonceExhausted }
        Self.withNonce(n) { nonce in
            ad.withUnsafeBytes { ad in
                plaintext.withUnsafeBytes { plaintext in key.seal(nonce: nonce, ad: ad, plaintext: plaintext, appendingTo: &output) }
            }
        }
    }

    /// The plaintext of ciphertext-then-tag under nonce `n`.
    package func decrypt(nonce n: UInt64, ad: ArraySlice<UInt8>, ciphertext: ArraySlice<UInt8>) throws(NoiseError) -> [UInt8] {
        guard let key else { return Array(ciphertext) }
        guard n != .max else { throw .nonceExhausted }
        guard ciphertext.count >= Noise.tagSize else { throw .truncated }
        let plaintext = Self.withNonce(n) { nonce in
            ad.withUnsafeBytes { ad in ciphertext.withUnsafeBytes { sealed in key.open(nonce: nonce, ad: ad, sealed: sealed) } }
        }
        guard let plaintext else { throw .decryption }
        return plaintext
    }

    package func decrypt(nonce n: UInt64, ad: [UInt8], ciphertext: [UInt8]) throws(NoiseError) -> [UInt8] {
        try decrypt(nonce: n, ad: ad[...], ciphertext: ciphertext[...])
    }

    /// §12.3: 32 bits of zeros, then `n` little-endian; twelve bytes on the stack.
    private static func withNonce<Result>(_ n: UInt64, _ body: (UnsafeRawBufferPointer) -> Result) -> Result {
        let words = (UInt32(0), UInt32(truncatingIfNeeded: n).littleEndian, UInt32(truncatingIfNeeded: n >> 32).littleEndian)
        return withUnsafeBytes(of: words) { body($0) }
    }
}

/// The one protocol this piece speaks, and its sizes (§12: 25519, ChaChaPoly, SHA256).
package enum Noise {
    package static let protocolName = "Noise_XX_25519_ChaChaPoly_SHA256"
    package static let dhSize = 32
    package static let hashSize = 32
    package static let tagSize = ChaChaPolyKey.tagSize

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
