import Crypto
import Foundation
import GRDB
import Storage
import Wire

/// Our signed prekeys (X3DH's SPK_B): mail to us is sealed to the one our announcements carry,
/// and opens only while its private half is kept. A new one every `rotation`; each is kept until
/// every mail sealed to it has expired, then erased from the database's files, so that the
/// database and password taken later open no mail recorded before (forward secrecy). Private
/// halves are stored sealed under a key derived from the profile's agreement key: the database
/// alone opens none.
///
/// Engine state: every method runs on the engine.
package final class Prekeys: Sendable {
    /// A new prekey this often.
    package static let rotation = 2 * 86_400.0
    /// A writer seals to a prekey at most this long after it was made (by the maker's clock):
    /// for a reader away longer, what waits stays in the outbox.
    package static let usable = Mail.lifetime
    /// Each private half is kept this long after it was made: sealed to within `usable`, held by
    /// a broker for at most `Mail.lifetime`, clocks apart by at most the allowance.
    package static let kept = usable + Mail.lifetime + FrameTime.allowance
    static let storageInfo = "seance prekey storage v1"

    struct Key {
        var privateKey: Curve25519.KeyAgreement.PrivateKey
        var made: Double
        var publicKey: Data { privateKey.publicKey.rawRepresentation }
    }

    struct State {
        /// Oldest first; the last is announced.
        var keys: [Key]
        /// After a write the database refused: when it is tried again.
        var postponed: Double?
    }

    private let state: EngineBound<State>
    /// Tried again this long after the database refused a write.
    static let retry = 60.0
    private let database: SeanceDatabase
    private let myKey: Data
    private let sealing: SymmetricKey

    /// Loads our prekeys, erases those past keeping, and makes one if none is current.
    package init(database: SeanceDatabase, identity: Identity, engine: Engine) throws {
        self.database = database
        myKey = identity.signingPublicKey
        sealing = HKDF<SHA256>.deriveKey(inputKeyMaterial: SymmetricKey(data: identity.agreement.rawRepresentation),
                                         info: Array(Self.storageInfo.utf8), outputByteCount: 32)
        let rows = try database.read { db in
            try Row.fetchAll(db, sql: "SELECT sealedPrivateKey, made FROM signed_prekey WHERE myKey = ? ORDER BY made",
                             arguments: [identity.signingPublicKey])
        }
        let sealing = sealing
        state = EngineBound(State(keys: rows.compactMap { row in
            guard let box = try? ChaChaPoly.SealedBox(combined: row["sealedPrivateKey"] as Data),
                  let raw = try? ChaChaPoly.open(box, using: sealing),
                  let key = try? Curve25519.KeyAgreement.PrivateKey(rawRepresentation: raw) else { return nil }
            return Key(privateKey: key, made: row["made"])
        }), engine: engine)
        _ = try turn(now: engine.now)
    }

    private var keys: [Key] {
        get { state.value.keys }
        set { state.value.keys = newValue }
    }

    /// The prekey our announcements carry.
    package var current: SignedPrekey {
        let key = keys.last!
        return SignedPrekey(publicKey: key.publicKey, made: key.made)
    }

    /// When `rotate` has something to do next: a new prekey, or an old one to erase.
    var nextDue: Double {
        let due = min(keys.last.map { $0.made + Self.rotation } ?? 0, keys.first.map { $0.made + Self.kept } ?? .infinity)
        return max(due, state.value.postponed ?? 0)
    }

    /// Makes a new prekey when the current one is `rotation` old (true: announce it), and
    /// erases those past keeping; a database that refuses is tried again after `retry`.
    func rotate(now: Double) -> Bool {
        do {
            state.value.postponed = nil
            return try turn(now: now)
        } catch {
            state.value.postponed = now + Self.retry
            return false
        }
    }

    private func turn(now: Double) throws -> Bool {
        let expired = keys.filter { now - $0.made >= Self.kept }.map(\.publicKey)
        if !expired.isEmpty {
            try database.erase { db in
                for key in expired { try db.execute(sql: "DELETE FROM signed_prekey WHERE publicKey = ?", arguments: [key]) }
            }
            keys.removeAll { expired.contains($0.publicKey) }
        }
        guard keys.last.map({ now - $0.made >= Self.rotation }) ?? true else { return false }
        let key = Key(privateKey: .init(), made: now)
        let sealed = try ChaChaPoly.seal(key.privateKey.rawRepresentation, using: sealing).combined
        try database.write { db in
            try db.execute(sql: "INSERT INTO signed_prekey (publicKey, myKey, sealedPrivateKey, made) VALUES (?, ?, ?, ?)",
                           arguments: [key.publicKey, myKey, sealed, now])
        }
        keys.append(key)
        return true
    }

    /// Every prekey of ours mail may still come sealed to, the newest first: what an envelope
    /// is tried with.
    var kept: [Curve25519.KeyAgreement.PrivateKey] { keys.reversed().map(\.privateKey) }

    /// Our prekeys a writer may still seal to at `now` (its clock ahead or behind by the
    /// allowance): mail's topics are listened on for each.
    func listened(now: Double) -> [Data] {
        keys.filter { now - $0.made < Self.usable + FrameTime.allowance }.map(\.publicKey)
    }

    /// The private half of our prekey `publicKey`, while it is kept.
    package func privateKey(for publicKey: Data) -> Curve25519.KeyAgreement.PrivateKey? {
        keys.last { $0.publicKey == publicKey }?.privateKey
    }

    /// Whether a writer may still seal to `prekey` at `now` (its maker's clock may be ahead by
    /// the allowance).
    static func isUsable(_ prekey: SignedPrekey, now: Double) -> Bool {
        now - prekey.made < usable - FrameTime.allowance
    }
}
