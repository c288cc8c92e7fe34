import CSQLiteSetup
import GRDB
import Glibc
import Synchronization

/// The one SQLite database of a data directory: WAL mode, versioned migrations, and checks that
/// refuse (never overwrite) a file that is not ours or was written by a newer seance.
package final class SeanceDatabase: Sendable {
    /// `PRAGMA application_id` of seance databases ("SEAN").
    static let applicationID: Int32 = 0x5345_414E

    package let path: String
    package let writer: DatabasePool
    package let schema: Schema
    /// The schema's commit steps, as this database runs them (`CommitStep.make`), made anew
    /// after a transaction is refused.
    private let commitSteps: Mutex<[@Sendable (Database) throws -> Void]>
    /// `BEGIN` and `COMMIT` prepared once on the writer's connection (the one `transaction` runs
    /// on): found in GRDB's cache by their text, which is hashed at each finding, they were
    /// 1,300 of the instructions of a message received alone. Finalized with this database
    /// (GRDB closes a connection once its last statement is).
    private let transactionStatements = Mutex<TransactionStatements?>(nil)

    /// Safe to send: its statements run only on the writer's connection, which GRDB's queue
    /// serializes.
    private final class TransactionStatements: @unchecked Sendable {
        let begin: Statement, commit: Statement

        init(_ db: Database) throws {
            begin = try db.makeStatement(sql: "BEGIN IMMEDIATE TRANSACTION")
            commit = try db.makeStatement(sql: "COMMIT TRANSACTION")
        }
    }

    /// SQLite's settings for the whole process, made once by the program before it opens any
    /// database: `sqlite3_config` may not run beside any other SQLite call (tests, which open
    /// databases on many threads at once, leave SQLite as it comes). No memory statistics
    /// (seance reads none): kept, they took a mutex at every allocation and every free, some
    /// thirty a message received (3,500 of its instructions).
    package static func configureProcess() { _ = seance_sqlite_without_memory_statistics() }

    /// Opens (creating if needed) the database at `path` and brings it up to `schema`.
    /// - Parameter busyTimeout: how long to wait for another process's lock, in seconds.
    package init(path: String, schema: Schema, busyTimeout: Double = 5) throws(StorageError) {
        self.path = path
        self.schema = schema
        commitSteps = Mutex(schema.commitSteps.map { $0.make() })
        try Self.checkExistingFile(at: path)
        var configuration = Configuration()
        configuration.busyMode = .timeout(busyTimeout)
        configuration.foreignKeysEnabled = true
        // In WAL mode, NORMAL survives any crash of the process (only a power cut can lose the
        // last commits), and saves an fsync per transaction.
        // A new database gives back the pages deleted rows leave (`giveSpaceBack`); on one that
        // has tables already this changes nothing until a VACUUM.
        configuration.prepareDatabase { db in
            try db.execute(sql: "PRAGMA synchronous = NORMAL")
            // Only while the file is empty: set later it changes nothing but takes the write lock.
            if !db.configuration.readonly, try Bool.fetchOne(db, sql: "SELECT NOT EXISTS (SELECT 1 FROM sqlite_master)") == true {
                try db.execute(sql: "PRAGMA auto_vacuum = INCREMENTAL")
            }
        }
        do {
            writer = try DatabasePool(path: path, configuration: configuration)
            // The checks only read: in WAL mode they go ahead while another process writes, so
            // a read-only command never waits for the write lock. Only a database that needs
            // its schema brought up to date takes it.
            let upToDate = try writer.read { db in try Self.check(db, path: path, schema: schema) }
            if !upToDate {
                try writer.write { db in _ = try Self.check(db, path: path, schema: schema) }
                try schema.migrator.migrate(writer)
                try writer.write { db in try db.execute(sql: "PRAGMA application_id = \(Self.applicationID)") }
            }
        } catch let error as StorageError {
            throw error
        } catch {
            throw Self.describe(error, path: path)
        }
    }

    /// Refuses a database that is not ours or is newer than this program; true when it needs no
    /// migration.
    private static func check(_ db: Database, path: String, schema: Schema) throws -> Bool {
        let id = try Int32.fetchOne(db, sql: "PRAGMA application_id") ?? 0
        let hasTables = try Bool.fetchOne(db, sql: "SELECT EXISTS (SELECT 1 FROM sqlite_master)") ?? false
        let hasMigrations = try db.tableExists("grdb_migrations")
        let isOurs = id == applicationID || (id == 0 && (!hasTables || hasMigrations))
        if !isOurs { throw StorageError.foreignDatabase(path: path) }
        let known = Set(schema.names)
        let applied = hasMigrations ? try Set(schema.migrator.appliedIdentifiers(db)) : []
        let unknown = applied.subtracting(known)
        if !unknown.isEmpty { throw StorageError.newerSchema(path: path, unknownMigrations: unknown.sorted()) }
        return id == applicationID && applied == known
    }

    /// Runs `body` in a write transaction. SQLite's errors become `StorageError`s naming the
    /// file; errors of the caller's own pass through unchanged (and roll the transaction back).
    ///
    /// The transaction is GRDB's (`BEGIN IMMEDIATE`: another writer waits before, not in the
    /// middle), with its statements prepared once per connection: GRDB prepares them anew for
    /// every transaction, and a message on its way to a peer is written twice.
    package func write<T>(_ body: (Database) throws -> T) throws -> T {
        try transaction(body, steps: true)
    }

    /// `write`, ending with the schema's commit steps (`steps`) before it commits, or without them.
    func transaction<T>(_ body: (Database) throws -> T, steps: Bool) throws -> T {
        do {
            return try writer.writeWithoutTransaction { db in
                let prepared = try transactionStatements(db)
                try prepared.begin.execute()
                do {
                    let result = try body(db)
                    // Taken out of the lock first: none is held while they write.
                    for step in steps ? commitSteps.withLock({ $0 }) : [] { try step(db) }
                    try prepared.commit.execute()
                    return result
                } catch {
                    // Unless SQLite has already rolled it back itself (a full disk, say).
                    if db.isInsideTransaction { try? db.cachedStatement(sql: "ROLLBACK TRANSACTION").execute() }
                    if steps { commitSteps.withLock { $0 = schema.commitSteps.map { $0.make() } } }
                    throw error
                }
            }
        } catch let error as DatabaseError {
            throw Self.describe(error, path: path)
        }
    }

    /// `BEGIN` and `COMMIT` on the writer's connection `db`, prepared at the first transaction.
    private func transactionStatements(_ db: Database) throws -> TransactionStatements {
        if let prepared = transactionStatements.withLock({ $0 }) { return prepared }
        let prepared = try TransactionStatements(db)
        transactionStatements.withLock { $0 = prepared }
        return prepared
    }

    /// Runs `body`, which deletes, in a write transaction, so that no copy of what it deletes
    /// stays in the files: the freed content is overwritten (`secure_delete`), and the log, which
    /// still holds the pages as they were, is copied into the database and emptied. For keys
    /// whose deletion is the point (mail's prekeys); a reader in the way leaves the log as it
    /// is, until the next checkpoint.
    package func erase(_ body: (Database) throws -> Void) throws {
        do {
            try writer.writeWithoutTransaction { db in try db.execute(sql: "PRAGMA secure_delete = ON") }
            defer { try? writer.writeWithoutTransaction { db in try db.execute(sql: "PRAGMA secure_delete = OFF") } }
            try write(body)
            writer.writeWithoutTransaction { db in _ = try? db.checkpoint(.truncate) }
        } catch let error as DatabaseError {
            throw Self.describe(error, path: path)
        }
    }

    /// Runs `body` with a read-only connection; errors as for `write`.
    package func read<T>(_ body: (Database) throws -> T) throws -> T {
        do { return try writer.read(body) } catch let error as DatabaseError { throw Self.describe(error, path: path) }
    }

    /// Checks what we can before SQLite touches the file: readable, writable, and an SQLite header.
    private static func checkExistingFile(at path: String) throws(StorageError) {
        var info = stat()
        guard stat(path, &info) == 0 else {
            // Not there yet: made here, private (SQLite gives its -wal and -shm files the same
            // mode), rather than by SQLite with whatever the umask allows.
            let fd = open(path, O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC, 0o600)
            if fd >= 0 { close(fd) }
            return
        }
        if (info.st_mode & S_IFMT) != S_IFREG { throw .unreadable(path: path, reason: "not a regular file") }
        if access(path, R_OK | W_OK) != 0 {
            throw .unreadable(path: path, reason: String(cString: strerror(errno)))
        }
        guard info.st_size > 0 else { return }  // An empty file is a valid empty database.
        let fd = open(path, O_RDONLY | O_NONBLOCK | O_CLOEXEC)
        guard fd >= 0 else { throw .unreadable(path: path, reason: String(cString: strerror(errno))) }
        defer { close(fd) }
        var header = [UInt8](repeating: 0, count: 16)
        let n = Glibc.read(fd, &header, 16)
        if n != 16 || header != Array("SQLite format 3\0".utf8) { throw .notADatabase(path: path) }
    }

    package static func describe(_ error: Error, path: String) -> StorageError {
        if let error = error as? StorageError { return error }
        guard let error = error as? DatabaseError else { return .sqlite(path: path, message: "\(error)") }
        switch error.resultCode {
        case .SQLITE_BUSY, .SQLITE_LOCKED: return .locked(path: path)
        case .SQLITE_NOTADB: return .notADatabase(path: path)
        case .SQLITE_CORRUPT: return .corrupt(path: path)
        case .SQLITE_CONSTRAINT: return .constraint(path: path, message: error.message ?? "constraint failed")
        case .SQLITE_CANTOPEN, .SQLITE_PERM, .SQLITE_READONLY, .SQLITE_AUTH:
            return .unreadable(path: path, reason: error.message ?? "permission denied")
        default: return .sqlite(path: path, message: error.message ?? "\(error)")
        }
    }
}
