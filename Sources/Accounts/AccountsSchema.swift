import GRDB
import Storage

/// Profiles and their login state.
package enum AccountsSchema {
    /// Every migration of this feature, in order.
    package static let migrations = [profiles, loginSlots]

    /// Profiles: the password only as a salted scrypt hash, the private keys only sealed.
    package static let profiles = Migration("v4-profiles") { db in
        // The password is kept only as a salted scrypt hash; the private keys only sealed
        // under a key derived from it. Failed logins are counted here so the growing delay
        // survives a restart.
        try db.create(table: "profile") { t in
            t.autoIncrementedPrimaryKey("id")
            t.column("name", .text).notNull().unique().collate(.nocase)
            t.column("salt", .blob).notNull()
            t.column("scryptRounds", .integer).notNull()
            t.column("passwordHash", .blob).notNull()
            t.column("sealedKeys", .blob).notNull()
            t.column("signingKey", .blob).notNull()
            t.column("agreementKey", .blob).notNull()
            t.column("avatarEmoji", .text)
            t.column("avatarImage", .blob)
            t.column("gift", .boolean).notNull()
            t.column("createdAt", .double).notNull()
            t.column("failedLogins", .integer).notNull().defaults(to: 0)
        }
    }

    /// The booked time of the next password attempt.
    package static let loginSlots = Migration("v7-login-slots") { db in
        // The earliest time the next password attempt on a profile may be answered. Each
        // attempt books its slot (and counts as a failure) before the password is checked,
        // so neither killing the process nor running several at once skips the delay.
        try db.alter(table: "profile") { t in
            t.add(column: "nextLoginAt", .double).notNull().defaults(to: 0)
        }
    }
}
