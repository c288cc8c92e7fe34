import GRDB

/// One step of the schema, named for ever: once released, neither its name nor what it does
/// changes (a test pins the names). Each feature exports its own; the program lists them all in
/// one global order (`App`).
package struct Migration: Sendable {
    package let name: String
    package let migrate: @Sendable (Database) throws -> Void

    package init(_ name: String, migrate: @escaping @Sendable (Database) throws -> Void) {
        self.name = name
        self.migrate = migrate
    }

    /// Small named values: the chosen zombies variant, and the like.
    package static let settings = Migration("v1-settings") { db in
        try db.create(table: "setting") { t in
            t.primaryKey("key", .text)
            t.column("value", .text).notNull()
        }
    }
}

/// The migrations a database is brought up to, in the order they run.
package struct Schema: Sendable {
    package let migrations: [Migration]

    package init(_ migrations: [Migration]) {
        precondition(Set(migrations.map(\.name)).count == migrations.count, "a migration is listed twice")
        self.migrations = migrations
    }

    package var migrator: DatabaseMigrator {
        var migrator = DatabaseMigrator()
        for migration in migrations { migrator.registerMigration(migration.name, migrate: migration.migrate) }
        return migrator
    }

    package var names: [String] { migrations.map(\.name) }
}

extension SeanceDatabase {
    /// A named value from the `setting` table.
    package func setting(_ key: String) throws -> String? {
        try read { db in try String.fetchOne(db, sql: "SELECT value FROM setting WHERE key = ?", arguments: [key]) }
    }

    package func setSetting(_ key: String, _ value: String) throws {
        try write { db in
            try db.execute(sql: "INSERT INTO setting (key, value) VALUES (?, ?) ON CONFLICT(key) DO UPDATE SET value = excluded.value",
                           arguments: [key, value])
        }
    }
}
