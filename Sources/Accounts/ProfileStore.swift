import Foundation
import GRDB
import Wire
import Storage
import Terminal

/// How a profile shows itself to others: an emoji, or a small picture.
package enum Avatar: Equatable, Sendable {
    case emoji(String)
    /// A 16x16 RGBA thumbnail of the image the user gave.
    case image(RGBAImage)

    package static let imageSize = 16

    /// An emoji when `text` is exactly one emoji, else nil (then it may be a path).
    package static func emoji(from text: String) -> Avatar? {
        let trimmed = text.trimmingCharacters(in: .whitespaces)
        return NameRules.isEmoji(trimmed) ? .emoji(trimmed) : nil
    }

    /// The thumbnail of a decoded image.
    package static func image(from image: RGBAImage) -> Avatar {
        .image(image.scaled(width: imageSize, height: imageSize))
    }

    /// One cell of text for lists: the emoji, or a framed-picture sign.
    package func glyph(ascii: Bool) -> String {
        switch self {
        case .emoji(let emoji): return ascii ? "*" : emoji
        case .image: return ascii ? "[]" : "📷"
        }
    }
}

package struct Profile: Equatable, Sendable {
    package var id: Int64
    package var name: String
    package var signingKey: Data
    package var agreementKey: Data
    package var avatar: Avatar?
    package var gift: Bool
    package var createdAt: Double
    package var failedLogins: Int
    var vault: PasswordVault

    package var fingerprint: String { Identity.fingerprint(of: signingKey) }
    /// `name#abcd`: equal names told apart.
    package var handle: String { PeerIdentity.handle(name: name, signingKey: signingKey) }
}

package enum ProfileError: Error, Equatable, CustomStringConvertible {
    case badName(String)
    case nameTaken(String)
    case passwordTooShort
    case passwordsDiffer
    case noSuchProfile(String)
    case notLoggedIn
    case wrongPassword
    case badAvatar(String)

    package var description: String {
        switch self {
        case .badName(let why): return "invalid username: \(why)"
        case .nameTaken(let name): return "a profile named '\(name)' exists already"
        case .passwordTooShort: return "the password must have at least 8 characters"
        case .passwordsDiffer: return "the two passwords differ"
        case .noSuchProfile(let name): return "there is no profile named '\(name)'"
        case .notLoggedIn: return "no profile is logged in: login NAME, or profile new"
        case .wrongPassword: return "wrong password"
        case .badAvatar(let why): return "avatar: \(why)"
        }
    }
}

/// Profiles in the database.
package struct ProfileStore: Sendable {
    package let database: SeanceDatabase
    /// scrypt's N for new profiles (tests lower it; each profile keeps its own).
    package var rounds: Int

    package init(database: SeanceDatabase, rounds: Int = PasswordVault.defaultRounds) {
        self.database = database
        self.rounds = rounds
    }

    /// A username as stored: trimmed, then checked by `NameRules`, the rules every received
    /// name is checked by too.
    package static func validate(name: String) throws(ProfileError) -> String {
        let trimmed = name.trimmingCharacters(in: .whitespaces)
        if let violation = NameRules.violation(trimmed) { throw .badName(violation.description) }
        return trimmed
    }

    package static func validate(password: String) throws(ProfileError) {
        guard password.count >= 8 else { throw .passwordTooShort }
    }

    /// Creates a profile with new keys. The gift is drawn by the caller (seeded).
    package func create(name: String, password: String, avatar: Avatar?, gift: Bool, now: Double) throws -> (Profile, Identity) {
        let name = try Self.validate(name: name)
        try Self.validate(password: password)
        if try profile(named: name) != nil { throw ProfileError.nameTaken(name) }
        let identity = Identity()
        let vault = try PasswordVault.seal(identity, password: password, rounds: rounds)
        // Checked above, but another process may take the name in between: its insert wins.
        let id = try ProfileStore.uniqueName(name) { try database.write { db -> Int64 in
            try db.execute(sql: """
                INSERT INTO profile (name, salt, scryptRounds, passwordHash, sealedKeys, signingKey, agreementKey,
                                     avatarEmoji, avatarImage, gift, createdAt)
                VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)
                """, arguments: [name, vault.salt, vault.rounds, vault.passwordHash, vault.sealedKeys,
                                 identity.signingPublicKey, identity.agreementPublicKey,
                                 Self.emojiColumn(avatar), Self.imageColumn(avatar), gift, now])
            return db.lastInsertedRowID
        } }
        return (try profile(id: id)!, identity)
    }

    private static func uniqueName<T>(_ name: String, _ body: () throws -> T) throws -> T {
        do { return try body() } catch StorageError.constraint { throw ProfileError.nameTaken(name) }
    }

    package func profiles() throws -> [Profile] {
        try database.read { db in try Row.fetchAll(db, sql: "SELECT * FROM profile ORDER BY name COLLATE NOCASE, id").map(Self.profile) }
    }

    package func profile(named name: String) throws -> Profile? {
        try database.read { db in
            try Row.fetchOne(db, sql: "SELECT * FROM profile WHERE name = ? COLLATE NOCASE", arguments: [name]).map(Self.profile)
        }
    }

    func profile(id: Int64) throws -> Profile? {
        try database.read { db in try Row.fetchOne(db, sql: "SELECT * FROM profile WHERE id = ?", arguments: [id]).map(Self.profile) }
    }

    /// How long the attempt after `failures` wrong passwords in a row waits for its answer:
    /// nothing after the first, then 0.5 s doubling up to 8 s.
    package static func delay(afterFailures failures: Int) -> Double {
        failures <= 1 ? 0 : min(8, 0.5 * Double(1 << min(failures - 2, 4)))
    }

    /// Checks `password`, with the delay applied to every attempt, right or wrong:
    ///
    /// 1. In one transaction, the attempt is counted as a failure and books the earliest time
    ///    it may be answered (after the previous attempt's slot plus the delay the count calls
    ///    for). This is on disk before anything is known, so killing the process once an answer
    ///    is late skips nothing, and processes guessing in parallel queue behind each other.
    /// 2. It waits for its slot (`wait`), then checks the password.
    /// 3. A right password clears the count and the slots.
    package func unlock(_ profile: Profile, password: String, now: Double,
                       wait: (Double) throws -> Void = { _ in }) throws -> Identity {
        let answerAt = try database.write { db -> Double in
            let row = try Row.fetchOne(db, sql: "SELECT failedLogins, nextLoginAt FROM profile WHERE id = ?", arguments: [profile.id])
            guard let row else { throw ProfileError.noSuchProfile(profile.name) }
            let failures = (row["failedLogins"] as Int) + 1
            let answerAt = max(now, row["nextLoginAt"] as Double)
            try db.execute(sql: "UPDATE profile SET failedLogins = ?, nextLoginAt = ? WHERE id = ?",
                           arguments: [failures, answerAt + Self.delay(afterFailures: failures), profile.id])
            return answerAt
        }
        if answerAt > now { try wait(answerAt - now) }
        do {
            let identity = try profile.vault.open(password: password)
            try database.write {
                try $0.execute(sql: "UPDATE profile SET failedLogins = 0, nextLoginAt = 0 WHERE id = ?", arguments: [profile.id])
            }
            return identity
        } catch PasswordVault.Failure.wrongPassword {
            throw ProfileError.wrongPassword
        }
    }

    /// Seals the profile's keys under `password` instead (a new salt; the old password opens
    /// nothing from now on). The caller has unlocked them with the old one.
    package func changePassword(of profile: Profile, identity: Identity, to password: String) throws {
        try Self.validate(password: password)
        let vault = try PasswordVault.seal(identity, password: password, rounds: rounds)
        try database.write { db in
            try db.execute(sql: "UPDATE profile SET salt = ?, scryptRounds = ?, passwordHash = ?, sealedKeys = ? WHERE id = ?",
                           arguments: [vault.salt, vault.rounds, vault.passwordHash, vault.sealedKeys, profile.id])
        }
    }

    package func setAvatar(_ avatar: Avatar, of profile: Profile) throws {
        try database.write { db in
            try db.execute(sql: "UPDATE profile SET avatarEmoji = ?, avatarImage = ? WHERE id = ?",
                           arguments: [Self.emojiColumn(avatar), Self.imageColumn(avatar), profile.id])
        }
    }

    package func delete(_ profile: Profile) throws {
        try database.write { try $0.execute(sql: "DELETE FROM profile WHERE id = ?", arguments: [profile.id]) }
    }

    private static func emojiColumn(_ avatar: Avatar?) -> String? {
        if case .emoji(let emoji) = avatar { return emoji }
        return nil
    }

    private static func imageColumn(_ avatar: Avatar?) -> Data? {
        if case .image(let image) = avatar { return Data(image.pixels) }
        return nil
    }

    private static func profile(_ row: Row) -> Profile {
        var avatar: Avatar?
        if let emoji: String = row["avatarEmoji"] {
            avatar = .emoji(emoji)
        } else if let pixels: Data = row["avatarImage"], pixels.count == Avatar.imageSize * Avatar.imageSize * 4 {
            avatar = .image(RGBAImage(width: Avatar.imageSize, height: Avatar.imageSize, pixels: [UInt8](pixels)))
        }
        return Profile(id: row["id"], name: row["name"], signingKey: row["signingKey"], agreementKey: row["agreementKey"],
                       avatar: avatar, gift: row["gift"], createdAt: row["createdAt"], failedLogins: row["failedLogins"],
                       vault: PasswordVault(salt: row["salt"], rounds: row["scryptRounds"], passwordHash: row["passwordHash"],
                                            sealedKeys: row["sealedKeys"]))
    }
}
