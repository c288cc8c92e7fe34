import Glibc
@_exported import Runtime
import Storage

/// What every command may use besides the terminal: the data directory, the database (opened
/// on first use, so commands that need none start fast) and the seeded random source.
package final class Session {
    package let dataDirectory: DataDirectory
    /// What the database is brought up to when first opened.
    package let schema: Schema
    package var random: SeededRandom
    /// The one clock and timers of this run (App builds it; tests give a manual one): the
    /// engine, when online, runs on it too.
    package let scheduler: Scheduler
    private var database: SeanceDatabase?
    /// Told how far the work a new schema left (indexing) has come, when the database is opened.
    package var backfillProgress: (_ name: String, _ done: Double) -> Void = { _, _ in }

    package init(dataDirectory: DataDirectory, schema: Schema, random: SeededRandom, scheduler: Scheduler = SystemScheduler()) {
        self.dataDirectory = dataDirectory
        self.schema = schema
        self.random = random
        self.scheduler = scheduler
    }

    /// Seconds since 1970, by the scheduler.
    package func clock() -> Double { scheduler.now }

    /// The database, opened and migrated on first use.
    package func openDatabase() throws(StorageError) -> SeanceDatabase {
        if let database { return database }
        try dataDirectory.create()
        let opened = try SeanceDatabase(path: dataDirectory.databasePath, schema: schema)
        // Done before anything uses the database, so nothing sees it half indexed.
        do { try opened.runBackfills(progress: backfillProgress) } catch { throw SeanceDatabase.describe(error, path: opened.path) }
        database = opened
        return opened
    }
}
