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
    /// Work migrations leave to be done after them, a step at a time.
    package let backfills: [Backfill]

    package init(_ migrations: [Migration], backfills: [Backfill] = []) {
        precondition(Set(migrations.map(\.name)).count == migrations.count, "a migration is listed twice")
        self.migrations = migrations
        self.backfills = backfills
    }

    package var migrator: DatabaseMigrator {
        var migrator = DatabaseMigrator()
        for migration in migrations { migrator.registerMigration(migration.name, migrate: migration.migrate) }
        return migrator
    }

    package var names: [String] { migrations.map(\.name) }
}

/// Work a migration leaves to be done after it (indexing what was stored before an index
/// existed), done a step at a time, each step its own transaction: a kill stops it between two
/// steps, and the next start goes on from there; the shell can show how far it has come.
package struct Backfill: Sendable {
    /// What is being done, as the progress line says it: "indexing messages for search".
    package let name: String
    /// The units of work left and in all; nil when none is left (the check every start makes:
    /// it must be cheap).
    package let remaining: @Sendable (Database) throws -> (left: Int, total: Int)?
    /// Does one step, in the transaction it is given.
    package let step: @Sendable (Database) throws -> Void

    package init(_ name: String, remaining: @escaping @Sendable (Database) throws -> (left: Int, total: Int)?,
                 step: @escaping @Sendable (Database) throws -> Void) {
        self.name = name
        self.remaining = remaining
        self.step = step
    }
}

extension SeanceDatabase {
    /// Does what the schema's backfills have left, telling `progress` the fraction done
    /// (0 first, 1 last) of each that had work left.
    package func runBackfills(progress: (_ name: String, _ done: Double) -> Void) throws {
        for backfill in schema.backfills {
            guard let first = try read(backfill.remaining) else { continue }
            progress(backfill.name, 1 - Double(first.left) / Double(max(1, first.total)))
            while let left = try write({ db -> (left: Int, total: Int)? in
                try backfill.step(db)
                return try backfill.remaining(db)
            }) {
                progress(backfill.name, 1 - Double(left.left) / Double(max(1, left.total)))
            }
            progress(backfill.name, 1)
        }
    }

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
