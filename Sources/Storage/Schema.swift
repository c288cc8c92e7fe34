import GRDB

/// Every version of the schema, in order. A migration, once released, never changes:
/// a new version adds a new migration at the end.
public enum Schema {
    static let migrator: DatabaseMigrator = {
        var migrator = DatabaseMigrator()
        for (name, migrate) in migrations { migrator.registerMigration(name, migrate: migrate) }
        return migrator
    }()

    static let migrationNames = Set(migrations.map(\.0))
    /// The names in the order they run (a test pins the released ones).
    static let orderedMigrationNames = migrations.map(\.0)

    private static let migrations: [(String, @Sendable (Database) throws -> Void)] = [
        ("v1-settings", { db in
            // Small named values: the chosen zombies variant, and the like.
            try db.create(table: "setting") { t in
                t.primaryKey("key", .text)
                t.column("value", .text).notNull()
            }
        }),
        ("v2-zombies", { db in
            // One row: wins and losses survive restarts; a round in progress does not need to.
            try db.create(table: "zombiesScore") { t in
                t.primaryKey("id", .integer).check { $0 == 1 }
                t.column("wins", .integer).notNull().defaults(to: 0)
                t.column("losses", .integer).notNull().defaults(to: 0)
            }
            try db.execute(sql: "INSERT INTO zombiesScore (id) VALUES (1)")
        }),
        ("v3-visions", { db in
            try db.create(table: "rescuer") { t in
                t.autoIncrementedPrimaryKey("id")
                t.column("name", .text).notNull().unique().collate(.nocase)
                t.column("description", .text).notNull().defaults(to: "")
                t.column("portrait", .blob)
                t.column("rescues", .integer).notNull().defaults(to: 0).check { $0 >= 0 }
            }
            // The image bytes as given, plus a small RGBA thumbnail so lists never decode images.
            try db.create(table: "vision") { t in
                t.autoIncrementedPrimaryKey("id")
                t.belongsTo("rescuer", onDelete: .restrict).notNull()
                t.column("image", .blob).notNull()
                t.column("thumbnail", .blob).notNull()
                t.column("thumbnailWidth", .integer).notNull()
                t.column("thumbnailHeight", .integer).notNull()
                t.column("rescued", .boolean).notNull().defaults(to: false)
                t.column("createdAt", .double).notNull()
                t.column("rescuedAt", .double)
            }
            for (name, description) in SeedRescuers.all {
                try db.execute(sql: "INSERT INTO rescuer (name, description, portrait) VALUES (?, ?, ?)",
                               arguments: [name, description, SeedRescuers.portrait(name)])
            }
        }),
        ("v4-profiles", { db in
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
        }),
        ("v5-known-peers", { db in
            // Every key seen nearby with its name: a known name with a new key is flagged.
            try db.create(table: "knownPeer") { t in
                t.primaryKey("signingKey", .blob)
                t.column("name", .text).notNull().collate(.nocase).indexed()
                t.column("firstSeen", .double).notNull()
            }
        }),
        ("v6-conversations", { db in
            // One conversation per (my key, their key). Sequence numbers count fragments in each
            // direction: `sentSequence` is the last one given out, `deliveredSequence` the last
            // one received in order, `acknowledgedSequence` the last one the peer confirmed.
            try db.create(table: "conversation") { t in
                t.autoIncrementedPrimaryKey("id")
                t.column("myKey", .blob).notNull()
                t.column("peerKey", .blob).notNull()
                t.column("peerName", .text).notNull()
                t.column("peerAgreementKey", .blob).notNull()
                t.column("sentSequence", .integer).notNull().defaults(to: 0)
                t.column("acknowledgedSequence", .integer).notNull().defaults(to: 0)
                t.column("deliveredSequence", .integer).notNull().defaults(to: 0)
                t.column("unread", .integer).notNull().defaults(to: 0)
                t.column("lastActivity", .double).notNull()
                t.uniqueKey(["myKey", "peerKey"])
            }
            // Outgoing messages span fragments firstSequence...lastSequence; state is sending,
            // sent, delivered or read. Incoming ones are received or read.
            try db.create(table: "message") { t in
                t.autoIncrementedPrimaryKey("id")
                t.belongsTo("conversation", onDelete: .cascade).notNull()
                t.column("outgoing", .boolean).notNull()
                t.column("text", .text).notNull()
                t.column("firstSequence", .integer).notNull()
                t.column("lastSequence", .integer).notNull()
                t.column("sentAt", .double).notNull()
                t.column("receivedAt", .double)
                t.column("state", .text).notNull()
                t.uniqueKey(["conversationId", "outgoing", "lastSequence"])
            }
            // Pages walk this index backwards from a message id: the cost does not depend on how
            // many messages there are.
            try db.create(index: "message_page", on: "message", columns: ["conversationId", "id"])
            try db.execute(sql: "CREATE INDEX message_outbox ON message(conversationId, firstSequence) WHERE state IN ('sending', 'sent')")
            // Unread incoming messages: few, whatever the length of the conversation.
            try db.execute(sql: "CREATE INDEX message_unread ON message(conversationId, id) WHERE outgoing = 0 AND state = 'received'")
        }),
        ("v7-login-slots", { db in
            // The earliest time the next password attempt on a profile may be answered. Each
            // attempt books its slot (and counts as a failure) before the password is checked,
            // so neither killing the process nor running several at once skips the delay.
            try db.alter(table: "profile") { t in
                t.add(column: "nextLoginAt", .double).notNull().defaults(to: 0)
            }
        }),
        ("v8-message-numbers", { db in
            // Messages are numbered per conversation (#1, #2, … in each), as people see them;
            // the row id stays the key for paging and read marks.
            try db.execute(sql: "ALTER TABLE message ADD COLUMN number INTEGER NOT NULL DEFAULT 0")
            try db.execute(sql: """
                UPDATE message SET number = numbered.n
                FROM (SELECT id, row_number() OVER (PARTITION BY conversationId ORDER BY id) AS n FROM message) AS numbered
                WHERE message.id = numbered.id
                """)
            try db.execute(sql: "CREATE UNIQUE INDEX message_number ON message(conversationId, number)")
        }),
        ("v9-trusted-keys", { db in
            // Trust on first use: the key first seen for a name (or the one `trust` chose) is the
            // trusted one; any other key with that name is flagged, every time.
            try db.execute(sql: "ALTER TABLE knownPeer ADD COLUMN trusted BOOLEAN NOT NULL DEFAULT 0")
            try db.execute(sql: """
                UPDATE knownPeer SET trusted = 1 WHERE signingKey IN
                (SELECT signingKey FROM (SELECT signingKey, row_number() OVER (PARTITION BY name ORDER BY firstSeen) AS n
                                         FROM knownPeer) WHERE n = 1)
                """)
        }),
        ("v10-store", { db in
            // Receipts are signed by the buyer's profile key; the inventory changes in the same
            // transaction as the receipt is written (all or nothing).
            try db.create(table: "receipt") { t in
                t.primaryKey("id", .text)
                t.belongsTo("profile", onDelete: .cascade).notNull()
                t.column("profileKey", .blob).notNull()
                t.column("item", .text).notNull()
                t.column("quantity", .integer).notNull()
                t.column("unitCents", .integer).notNull()
                t.column("totalCents", .integer).notNull()
                t.column("timeMs", .integer).notNull()
                t.column("signature", .blob).notNull()
            }
            try db.create(index: "receipt_newest", on: "receipt", columns: ["profileId", "timeMs"])
            try db.create(table: "inventory") { t in
                t.belongsTo("profile", onDelete: .cascade).notNull()
                t.column("item", .text).notNull()
                t.column("count", .integer).notNull().check { $0 >= 0 }
                t.primaryKey(["profileId", "item"])
            }
            try db.create(table: "wornMedallion") { t in
                t.primaryKey("profileId", .integer).references("profile", onDelete: .cascade)
                t.column("wornAt", .double).notNull()
            }
        }),
    ]
}

extension SeanceDatabase {
    /// A named value from the `setting` table.
    public func setting(_ key: String) throws -> String? {
        try read { db in try String.fetchOne(db, sql: "SELECT value FROM setting WHERE key = ?", arguments: [key]) }
    }

    public func setSetting(_ key: String, _ value: String) throws {
        try write { db in
            try db.execute(sql: "INSERT INTO setting (key, value) VALUES (?, ?) ON CONFLICT(key) DO UPDATE SET value = excluded.value",
                           arguments: [key, value])
        }
    }
}

extension SeanceDatabase {
    public func zombiesScore() throws -> (wins: Int, losses: Int) {
        try read { db in
            let row = try Row.fetchOne(db, sql: "SELECT wins, losses FROM zombiesScore WHERE id = 1")
            return (row?["wins"] ?? 0, row?["losses"] ?? 0)
        }
    }

    public func setZombiesScore(wins: Int, losses: Int) throws {
        try write { db in
            try db.execute(sql: "INSERT INTO zombiesScore (id, wins, losses) VALUES (1, ?, ?) "
                           + "ON CONFLICT(id) DO UPDATE SET wins = excluded.wins, losses = excluded.losses",
                           arguments: [wins, losses])
        }
    }
}
