// swift-crypto's own BoringSSL, the code behind its `ChaChaPoly`: a module of that package
// which it does not list as a product, so its API is BoringSSL's and could change with it.
// The tests check this piece against RFC 8439's vector and against `ChaChaPoly` itself.
import CCryptoBoringSSL

/// ChaCha20-Poly1305 (RFC 8439) under one key, set up once, sealing into and opening from
/// contiguous bytes. `ChaChaPoly.seal` and `open` build a context, a sealed box and Foundation
/// `Data` for every call, through generic code not specialized for its callers: 12,000–15,000
/// instructions a frame, where the cipher itself costs 1,500. A session seals and opens every
/// frame under one key, so it keeps one of these.
package final class ChaChaPolyKey: @unchecked Sendable {
    // Unchecked: BoringSSL's context is only read once set up (seal and open take it `const`).
    private let context: UnsafeMutablePointer<EVP_AEAD_CTX>

    static let keySize = 32
    static let nonceSize = 12
    static let tagSize = 16

    package init(_ key: [UInt8]) {
        precondition(key.count == Self.keySize, "a ChaCha20-Poly1305 key is 32 bytes")
        context = .allocate(capacity: 1)
        context.initialize(to: EVP_AEAD_CTX())
        let done = CCryptoBoringSSL_EVP_AEAD_CTX_init(context, CCryptoBoringSSL_EVP_aead_chacha20_poly1305(), key, key.count,
                                                      Self.tagSize, nil)
        // With a 32-byte key and a 16-byte tag it only fails when memory does.
        precondition(done == 1, "BoringSSL could not set up a ChaCha20-Poly1305 key")
    }

    deinit {
        CCryptoBoringSSL_EVP_AEAD_CTX_cleanup(context)
        // The key is in the context: session keys live in memory only, and not past their use.
        CCryptoBoringSSL_OPENSSL_cleanse(context, MemoryLayout<EVP_AEAD_CTX>.size)
        context.deallocate()
    }

    /// The ciphertext then the tag, appended to `output`. `nonce` is 12 bytes.
    package func seal(nonce: UnsafeRawBufferPointer, ad: UnsafeRawBufferPointer, plaintext: UnsafeRawBufferPointer,
                      appendingTo output: inout [UInt8]) {
        assert(nonce.count == Self.nonceSize, "a ChaCha20-Poly1305 nonce is 12 bytes")
        let start = output.count
        let room = plaintext.count + Self.tagSize
        output.append(contentsOf: repeatElement(0, count: room))
        output.withUnsafeMutableBufferPointer { buffer in
            var written = 0
            let done = CCryptoBoringSSL_EVP_AEAD_CTX_seal(context, buffer.baseAddress! + start, &written, room,
                                                          Self.bytes(nonce), nonce.count, Self.bytes(plaintext), plaintext.count,
                                                          Self.bytes(ad), ad.count)
            // It refuses only a nonce that is not 12 bytes or a plaintext over 256 GiB.
            precondition(done == 1 && written == room, "ChaCha20-Poly1305 sealing refused its input")
        }
    }

    /// The plaintext of ciphertext-then-tag, or nil when it does not authenticate.
    package func open(nonce: UnsafeRawBufferPointer, ad: UnsafeRawBufferPointer, sealed: UnsafeRawBufferPointer) -> [UInt8]? {
        assert(nonce.count == Self.nonceSize, "a ChaCha20-Poly1305 nonce is 12 bytes")
        guard sealed.count >= Self.tagSize else { return nil }
        let room = sealed.count - Self.tagSize
        var opened = true
        let plaintext = [UInt8](unsafeUninitializedCapacity: room) { buffer, count in
            var written = 0
            opened = CCryptoBoringSSL_EVP_AEAD_CTX_open(context, buffer.baseAddress ?? UnsafeMutablePointer(mutating: Self.empty),
                                                        &written, room,
                                                        Self.bytes(nonce), nonce.count, Self.bytes(sealed), sealed.count,
                                                        Self.bytes(ad), ad.count) == 1
            count = opened ? written : 0
        }
        return opened ? plaintext : nil
    }

    /// BoringSSL takes a pointer even for no bytes, where an empty buffer may have none: one to a
    /// byte nobody reads or writes.
    private static func bytes(_ buffer: UnsafeRawBufferPointer) -> UnsafePointer<UInt8> {
        guard let base = buffer.baseAddress else { return empty }
        return base.assumingMemoryBound(to: UInt8.self)
    }

    nonisolated(unsafe) private static let empty: UnsafePointer<UInt8> = {
        let byte = UnsafeMutablePointer<UInt8>.allocate(capacity: 1)
        byte.initialize(to: 0)
        return UnsafePointer(byte)
    }()
}
