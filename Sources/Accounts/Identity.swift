import Crypto
import Foundation
@_exported import Wire
import _CryptoExtras

/// What the password protects: a hash to check it against and the sealed private keys.
/// One scrypt run gives 64 bytes: the first half is stored as the password hash, the second
/// half (which the first does not reveal) seals the keys with ChaCha20-Poly1305.
package struct PasswordVault: Equatable, Sendable {
    package var salt: Data
    package var rounds: Int
    package var passwordHash: Data
    package var sealedKeys: Data

    /// scrypt's cost: N = 2^14, r = 8, p = 1 (about 16 MiB and tens of milliseconds).
    package static let defaultRounds = 1 << 14

    package enum Failure: Error, Equatable, CustomStringConvertible {
        case wrongPassword
        case damaged

        package var description: String {
            switch self {
            case .wrongPassword: return "wrong password"
            case .damaged: return "the profile's keys are damaged and cannot be unlocked"
            }
        }
    }

    static func derive(_ password: String, salt: Data, rounds: Int) throws -> (hash: Data, sealingKey: SymmetricKey) {
        let key = try KDF.Scrypt.deriveKey(from: Array(password.utf8), salt: salt, outputByteCount: 64,
                                           rounds: rounds, blockSize: 8, parallelism: 1)
        let bytes = key.withUnsafeBytes { Data($0) }
        return (bytes.prefix(32), SymmetricKey(data: bytes.suffix(32)))
    }

    /// Seals `identity` under `password` with a fresh random salt.
    package static func seal(_ identity: Identity, password: String, rounds: Int = defaultRounds) throws -> PasswordVault {
        var salt = Data(count: 16)
        var generator = SystemRandomNumberGenerator()
        for i in salt.indices { salt[i] = UInt8.random(in: 0...255, using: &generator) }
        let (hash, sealingKey) = try derive(password, salt: salt, rounds: rounds)
        let plain = identity.signing.rawRepresentation + identity.agreement.rawRepresentation
        let sealed = try ChaChaPoly.seal(plain, using: sealingKey).combined
        return PasswordVault(salt: salt, rounds: rounds, passwordHash: hash, sealedKeys: sealed)
    }

    /// The identity, when `password` is right.
    package func open(password: String) throws -> Identity {
        let (hash, sealingKey) = try Self.derive(password, salt: salt, rounds: rounds)
        guard Self.constantTimeEqual(hash, passwordHash) else { throw Failure.wrongPassword }
        do {
            let plain = try ChaChaPoly.open(ChaChaPoly.SealedBox(combined: sealedKeys), using: sealingKey)
            guard plain.count == 64 else { throw Failure.damaged }
            return Identity(signing: try .init(rawRepresentation: plain.prefix(32)),
                            agreement: try .init(rawRepresentation: plain.suffix(32)))
        } catch let failure as Failure {
            throw failure
        } catch {
            throw Failure.damaged
        }
    }

    static func constantTimeEqual(_ a: Data, _ b: Data) -> Bool {
        guard a.count == b.count else { return false }
        return zip(a, b).reduce(0) { $0 | ($1.0 ^ $1.1) } == 0
    }
}
