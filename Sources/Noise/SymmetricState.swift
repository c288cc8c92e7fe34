/// Noise §5.2: the chaining key `ck`, the handshake hash `h` and the cipher they key.
package struct SymmetricState: Sendable {
    package private(set) var cipher = CipherState()
    package private(set) var chainingKey: [UInt8]
    package private(set) var handshakeHash: [UInt8]

    /// InitializeSymmetric(protocol_name).
    package init(protocolName: String) {
        let name = Array(protocolName.utf8)
        handshakeHash = name.count <= Noise.hashSize ? name + [UInt8](repeating: 0, count: Noise.hashSize - name.count) : Noise.hash(name)
        chainingKey = handshakeHash
    }

    package mutating func mixKey(_ inputKeyMaterial: [UInt8]) {
        let (chainingKey, temporaryKey) = Noise.hkdf(chainingKey, inputKeyMaterial)
        self.chainingKey = chainingKey
        cipher.initializeKey(temporaryKey)
    }

    package mutating func mixHash(_ data: [UInt8]) { handshakeHash = Noise.hash(handshakeHash + data) }

    package mutating func encryptAndHash(_ plaintext: [UInt8]) throws(NoiseError) -> [UInt8] {
        let ciphertext = try cipher.encryptWithAd(handshakeHash, plaintext)
        mixHash(ciphertext)
        return ciphertext
    }

    package mutating func decryptAndHash(_ ciphertext: [UInt8]) throws(NoiseError) -> [UInt8] {
        let plaintext = try cipher.decryptWithAd(handshakeHash, ciphertext)
        mixHash(ciphertext)
        return plaintext
    }

    /// Split(): the initiator's sending cipher, then the responder's.
    package func split() -> (CipherState, CipherState) {
        let (first, second) = Noise.hkdf(chainingKey, [])
        return (CipherState(key: first), CipherState(key: second))
    }
}
