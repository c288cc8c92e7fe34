import Crypto
import Foundation

/// How a signing key is shown after a name, in one place: `alice#3fa2`.
package enum PeerIdentity {
    /// The same four hex digits profiles show: the first two bytes of SHA-256 of the key.
    package static func fingerprint(of signingKey: Data) -> String {
        hex(SHA256.hash(data: signingKey).prefix(2))
    }

    /// A longer fingerprint for where a short one could collide: 32 hex digits (128 bits) of
    /// SHA-256 of the key. Names a peer's broker topics.
    package static func longFingerprint(of signingKey: Data) -> String {
        hex(SHA256.hash(data: signingKey).prefix(16))
    }

    /// Lowercase hex digits (without `String(format:)`, which costs microseconds a byte: a
    /// handle is shown with every message notice).
    static func hex(_ bytes: some Sequence<UInt8>) -> String {
        let digits = Array("0123456789abcdef".utf8)
        var text: [UInt8] = []
        for byte in bytes { text += [digits[Int(byte >> 4)], digits[Int(byte & 15)]] }
        return String(decoding: text, as: UTF8.self)
    }

    /// `name#fp`: the name as given, and the key's fingerprint.
    package static func handle(name: String, signingKey: Data) -> String { name + "#" + fingerprint(of: signingKey) }

    /// Whether `wanted` (a name, or `name#fp`) means the key `signingKey` known as `name`:
    /// the names alike but for case, and the fingerprint, when given, its own.
    package static func answers(_ wanted: String, name: String, signingKey: Data) -> Bool {
        let (wantedName, fingerprint) = split(wanted)
        return name.caseInsensitiveCompare(wantedName) == .orderedSame && (fingerprint == nil || self.fingerprint(of: signingKey) == fingerprint)
    }

    /// A handle as typed, split at its last `#`: the name, and the fingerprint (lower-cased)
    /// when one was given.
    package static func split(_ handle: String) -> (name: String, fingerprint: String?) {
        guard let hash = handle.lastIndex(of: "#") else { return (handle, nil) }
        return (String(handle[..<hash]), String(handle[handle.index(after: hash)...]).lowercased())
    }
}
