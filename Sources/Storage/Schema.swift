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
    /// What every write transaction does last, before it commits.
    package let commitSteps: [CommitStep]

    package init(_ migrations: [Migration], backfills: [Backfill] = [], commitSteps: [CommitStep] = []) {
        precondition(Set(migrations.map(\.name)).count == migrations.count, "a migration is listed twice")
        self.migrations = migrations
        self.backfills = backfills
        self.commitSteps = commitSteps
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
    /// The units of work left; nil when none is (the check every start makes: it must be cheap).
    package let remaining: @Sendable (Database) throws -> Int?
    /// Does one step, in the transaction it is given.
    package let step: @Sendable (Database) throws -> Void
    /// What follows the last step, outside any transaction (a `VACUUM`): done once, when the
    /// backfill had work.
    package let afterwards: (@Sendable (Database) throws -> Void)?

    package init(_ name: String, remaining: @escaping @Sendable (Database) throws -> Int?,
                 step: @escaping @Sendable (Database) throws -> Void, afterwards: (@Sendable (Database) throws -> Void)? = nil) {
        self.name = name
        self.remaining = remaining
        self.step = step
        self.afterwards = afterwards
    }
}

/// Work every write transaction ends with, in that transaction (an index brought up to the
/// rows just written): what it keeps never lags what it follows, a crash loses both or
/// neither, and the code that writes the rows need not know of it.
package struct CommitStep: Sendable {
    /// The step as one database runs it: each open database makes its own, so what a step
    /// remembers from one transaction to the next is that database's. A transaction refused
    /// makes it anew (it forgets what the transaction undid).
    package let make: @Sendable () -> @Sendable (Database) throws -> Void

    package init(remembering make: @escaping @Sendable () -> @Sendable (Database) throws -> Void) {
        self.make = make
    }

    /// A step that remembers nothing between transactions.
    package init(_ run: @escaping @Sendable (Database) throws -> Void) {
        make = { run }
    }
}

extension SeanceDatabase {
    /// Does what the schema's backfills have left, telling `progress` the fraction done
    /// (0 first, 1 last) of each that had work left.
    package func runBackfills(progress: (_ name: String, _ done: Double) -> Void) throws {
        for backfill in schema.backfills {
            guard let total = try read(backfill.remaining) else { continue }
            progress(backfill.name, 0)
            // Without the commit steps: one that keeps an index up would do the whole backfill
            // in its first step's transaction, where a step is meant to be short.
            while let left = try transaction({ db -> Int? in
                try backfill.step(db)
                return try backfill.remaining(db)
            }, steps: false) {
                progress(backfill.name, 1 - Double(left) / Double(max(1, total, left)))
            }
            if let afterwards = backfill.afterwards {
                do { try writer.writeWithoutTransaction { db in try afterwards(db) } } catch let error as DatabaseError {
                    throw Self.describe(error, path: path)
                }
            }
            progress(backfill.name, 1)
        }
    }

    /// Gives the pages rows left behind back to the file system (the database is made with
    /// `auto_vacuum = INCREMENTAL`; one made before is converted once, `TransfersSchema`).
    package func giveSpaceBack() throws {
        do {
            try writer.writeWithoutTransaction { db in
                try db.execute(sql: "PRAGMA incremental_vacuum")
                // The file shrinks when the log is written back: now (a reader may hold it back,
                // and then the next checkpoint does it).
                try db.execute(sql: "PRAGMA wal_checkpoint(TRUNCATE)")
            }
        } catch let error as DatabaseError {
            throw Self.describe(error, path: path)
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
