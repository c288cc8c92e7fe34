import Crypto
import Foundation

/// The number two people compare to know they hold each other's keys, derived as Signal derives
/// its safety numbers (libsignal's numeric fingerprint, version 0, 5,200 iterations): each
/// side's half is SHA-512 over a version, its key and its identifier, then again over the hash
/// and the key, 5,200 times; the first 30 bytes, read as six 40-bit numbers, give six groups of
/// five digits (each number modulo 100,000). The two halves in ascending order make the 60
/// digits, the same at both ends.
///
/// A seance key is its Ed25519 signing key, and its identifier the X25519 agreement key its
/// signed announcement carries: the number covers both keys a session relies on.
package enum SafetyNumber {
    package static let iterations = 5_200

    /// One side's 30 digits.
    package static func half(key: [UInt8], identifier: [UInt8], iterations: Int = iterations) -> String {
        var hash: [UInt8] = [0, 0] + key + identifier
        for _ in 0..<iterations {
            var digest = SHA512()
            digest.update(data: hash)
            digest.update(data: key)
            hash = Array(digest.finalize())
        }
        return (0..<6).map { group in
            let number = hash[(group * 5)..<(group * 5 + 5)].reduce(UInt64(0)) { $0 << 8 | UInt64($1) } % 100_000
            let digits = String(number)
            return String(repeating: "0", count: 5 - digits.count) + digits
        }.joined()
    }

    /// The 60 digits of two sides, whichever is ours.
    package static func between(_ one: (key: [UInt8], identifier: [UInt8]), _ other: (key: [UInt8], identifier: [UInt8]),
                                iterations: Int = iterations) -> String {
        let halves = [half(key: one.key, identifier: one.identifier, iterations: iterations),
                      half(key: other.key, identifier: other.identifier, iterations: iterations)]
        return halves.sorted().joined()
    }

    /// Of two seance identities: signing and agreement keys.
    package static func between(signing one: Data, agreement oneAgreement: Data, and other: Data, agreement otherAgreement: Data) -> String {
        between(([UInt8](one), [UInt8](oneAgreement)), ([UInt8](other), [UInt8](otherAgreement)))
    }

    /// The digits as people read them aloud: twelve groups of five, four to a line.
    package static func lines(_ digits: String) -> [String] {
        let groups = stride(from: 0, to: digits.count, by: 5).map { start in
            String(digits.dropFirst(start).prefix(5))
        }
        return stride(from: 0, to: groups.count, by: 4).map { groups[$0..<min($0 + 4, groups.count)].joined(separator: " ") }
    }
}
