import GRDB
import Runtime
import Glibc
import TestSupport
import Testing
@testable import Storage

/// The storage layer's own table: a database of it is all these tests need.
let settingsOnly = Schema([.settings])

/// A fresh directory under /tmp for one test, removed afterwards.
final class TemporaryDirectory {
    let path: String
    init() {
        path = temporaryDirectory("test")
    }
    deinit { removeDirectory(path) }

    func write(_ name: String, _ bytes: [UInt8]) {
        let fd = open(path + "/" + name, O_WRONLY | O_CREAT | O_TRUNC, 0o644)
        _ = bytes.withUnsafeBytes { Glibc.write(fd, $0.baseAddress, $0.count) }
        close(fd)
    }

    func read(_ name: String) -> [UInt8] {
        let fd = open(path + "/" + name, O_RDONLY)
        defer { close(fd) }
        var result: [UInt8] = []
        var chunk = [UInt8](repeating: 0, count: 4096)
        while case let n = Glibc.read(fd, &chunk, chunk.count), n > 0 { result += chunk[0..<n] }
        return result
    }
}

@Suite struct DataDirectoryTests {
    @Test func createsPrivateDirectoriesWithParents() throws {
        let tmp = TemporaryDirectory()
        let dir = DataDirectory(path: tmp.path + "/a/b/seance")
        try dir.create()
        var info = stat()
        #expect(stat(dir.path, &info) == 0)
        #expect(info.st_mode & 0o777 == 0o700)
        #expect(stat(tmp.path + "/a", &info) == 0 && info.st_mode & 0o777 == 0o755)
        try dir.create()  // Twice is fine.
    }

    @Test func refusesAFileInTheWay() {
        let tmp = TemporaryDirectory()
        tmp.write("file", [1])
        #expect(throws: StorageError.notADirectory(path: tmp.path + "/file")) {
            try DataDirectory(path: tmp.path + "/file/seance").create()
        }
    }

    @Test func defaultPathFollowsXDG() {
        #expect(DataDirectory.defaultPath(environment: ["XDG_DATA_HOME": "/x", "HOME": "/h"]) == "/x/seance")
        #expect(DataDirectory.defaultPath(environment: ["XDG_DATA_HOME": "relative", "HOME": "/h"]) == "/h/.local/share/seance")
        #expect(DataDirectory.defaultPath(environment: ["HOME": "/h"]) == "/h/.local/share/seance")
    }
}

@Suite struct DatabaseTests {
    @Test func createsMigratesAndReopens() throws {
        let tmp = TemporaryDirectory()
        let path = tmp.path + "/seance.sqlite"
        do {
            let db = try testDatabase(path, schema: settingsOnly)
            try db.setSetting("variant", "blocker")
            let mode = try db.read { try String.fetchOne($0, sql: "PRAGMA journal_mode") }
            #expect(mode == "wal")
        }
        let again = try testDatabase(path, schema: settingsOnly)
        #expect(try again.setting("variant") == "blocker")
        let applied = try again.read { try settingsOnly.migrator.appliedIdentifiers($0) }
        #expect(Set(applied) == Set(settingsOnly.names))
    }

    @Test func refusesANewerSchemaAndLeavesItAlone() throws {
        let tmp = TemporaryDirectory()
        let path = tmp.path + "/seance.sqlite"
        _ = try testDatabase(path, schema: settingsOnly)
        let queue = try DatabaseQueue(path: path)
        try queue.write { db in
            try db.execute(sql: "INSERT INTO grdb_migrations (identifier) VALUES ('v99-future')")
            try db.execute(sql: "CREATE TABLE future (x)")
        }
        try queue.close()
        #expect(throws: StorageError.newerSchema(path: path, unknownMigrations: ["v99-future"])) {
            try testDatabase(path, schema: settingsOnly)
        }
        let check = try DatabaseQueue(path: path)
        #expect(try check.read { try $0.tableExists("future") })
    }

    @Test func refusesAFileThatIsNotADatabase() throws {
        let tmp = TemporaryDirectory()
        let junk = Array("this is my diary, not a database\n".utf8) + [UInt8](repeating: 7, count: 100)
        tmp.write("seance.sqlite", junk)
        let path = tmp.path + "/seance.sqlite"
        #expect(throws: StorageError.notADatabase(path: path)) { try testDatabase(path, schema: settingsOnly) }
        #expect(tmp.read("seance.sqlite") == junk)
        #expect(StorageError.notADatabase(path: path).description.contains(path))
    }

    @Test func refusesAnotherProgramsDatabase() throws {
        let tmp = TemporaryDirectory()
        let path = tmp.path + "/seance.sqlite"
        let other = try DatabaseQueue(path: path)
        try other.write { try $0.execute(sql: "CREATE TABLE accounts (id); INSERT INTO accounts VALUES (1)") }
        try other.close()
        #expect(throws: StorageError.foreignDatabase(path: path)) { try testDatabase(path, schema: settingsOnly) }
        let check = try DatabaseQueue(path: path)
        #expect(try check.read { try Int.fetchOne($0, sql: "SELECT count(*) FROM accounts") } == 1)
        #expect(try check.read { try $0.tableExists("setting") } == false)
    }

    @Test func reportsALockedDatabase() throws {
        let tmp = TemporaryDirectory()
        let path = tmp.path + "/seance.sqlite"
        _ = try testDatabase(path, schema: settingsOnly)
        // Another connection holds an exclusive lock, as a crashed or busy process would.
        var configuration = Configuration()
        configuration.prepareDatabase { try $0.execute(sql: "PRAGMA locking_mode = EXCLUSIVE") }
        let holder = try DatabaseQueue(path: path, configuration: configuration)
        try holder.write { try $0.execute(sql: "INSERT INTO setting VALUES ('k', 'v')") }
        #expect(throws: StorageError.locked(path: path)) { try testDatabase(path, schema: settingsOnly, busyTimeout: 0.05) }
        try holder.close()
        _ = try testDatabase(path, schema: settingsOnly)
    }

    @Test func refusesSomethingThatIsNotAFile() throws {
        let tmp = TemporaryDirectory()
        let path = tmp.path + "/seance.sqlite"
        mkdir(path, 0o700)
        #expect(throws: StorageError.unreadable(path: path, reason: "not a regular file")) { try testDatabase(path, schema: settingsOnly) }
    }

    @Test func truncatedHeaderIsNotADatabase() throws {
        let tmp = TemporaryDirectory()
        tmp.write("seance.sqlite", Array("SQLite fo".utf8))
        let path = tmp.path + "/seance.sqlite"
        #expect(throws: StorageError.notADatabase(path: path)) { try testDatabase(path, schema: settingsOnly) }
    }
}

/// While online the log is checkpointed beside the writer, and still starts over.
/// Every write is one transaction: all of it is kept, or none.
@Suite struct WriteTransactionTests {
    struct Refused: Error, Equatable {}

    @Test func aWriteThatFailsKeepsNothingAndTheNextOneIsKept() throws {
        let tmp = TemporaryDirectory()
        let db = try testDatabase(tmp.path + "/seance.sqlite", schema: settingsOnly)
        // The caller's own error passes through unchanged.
        #expect(throws: Refused()) {
            try db.write { db in
                try db.execute(sql: "INSERT INTO setting (key, value) VALUES ('a', '1')")
                throw Refused()
            }
        }
        // SQLite's becomes a `StorageError` naming the file.
        #expect(throws: StorageError.self) {
            try db.write { db in
                try db.execute(sql: "INSERT INTO setting (key, value) VALUES ('b', '2')")
                try db.execute(sql: "INSERT INTO setting (key, value) VALUES ('b', '3')")
            }
        }
        try db.write { db in try db.execute(sql: "INSERT INTO setting (key, value) VALUES ('c', '4')") }
        try db.write { db in try db.execute(sql: "INSERT INTO setting (key, value) VALUES ('d', '5')") }
        let kept = try db.read { try String.fetchAll($0, sql: "SELECT key FROM setting WHERE key IN ('a', 'b', 'c', 'd') ORDER BY key") }
        #expect(kept == ["c", "d"])
        #expect(db.writer.writeWithoutTransaction { $0.isInsideTransaction } == false)
    }
}

/// One lock per profile: a second taker is told who holds it, and another profile is free.
@Suite struct ProfileLockTests {
    @Test func aSecondTakerIsRefusedUntilReleased() throws {
        let tmp = TemporaryDirectory()
        let directory = DataDirectory(path: tmp.path)
        let lock = try ProfileLock(in: directory, id: "aa")
        #expect(throws: ProfileLock.Failure.held(byProcess: getpid())) { try ProfileLock(in: directory, id: "aa") }
        _ = try ProfileLock(in: directory, id: "bb")
        lock.release()
        lock.release()
        let again = try ProfileLock(in: directory, id: "aa")
        again.release()
    }

    @Test func aLockThatCannotBeMadeSaysWhere() {
        let directory = DataDirectory(path: "/nonexistent/seance")
        #expect(throws: ProfileLock.Failure.unavailable(path: "/nonexistent/seance/online-aa.lock", reason: "No such file or directory")) {
            try ProfileLock(in: directory, id: "aa")
        }
    }
}

@Suite struct BackgroundCheckpointTests {
    private func fileSize(_ path: String) -> Int {
        var info = stat()
        return stat(path, &info) == 0 ? Int(info.st_size) : -1
    }

    /// Checkpoints on a fresh database, with time that moves only when the test says.
    private struct Manual {
        let tmp = TemporaryDirectory()
        let db: SeanceDatabase
        let scheduler = ManualScheduler()
        let checkpoints: BackgroundCheckpoints

        init(quiet: Double, overdue: Double) throws {
            db = try testDatabase(tmp.path + "/seance.sqlite", schema: settingsOnly)
            checkpoints = try BackgroundCheckpoints(db, scheduler: scheduler, quiet: quiet, overdue: overdue)
        }

        /// `count` commits, `seconds` apart.
        func commit(_ count: Int, apart seconds: Double) throws {
            for index in 0..<count {
                try BackgroundCheckpointTests.write(db, index)
                scheduler.advance(by: seconds)
            }
        }
    }

    private static func write(_ db: SeanceDatabase, _ index: Int) throws {
        try db.write { db in try db.execute(sql: "INSERT OR REPLACE INTO setting (key, value) VALUES (?, ?)", arguments: ["k\(index % 2)", "\(index)"]) }
    }

    @Test func theLogIsCheckpointedBeside() throws {
        let tmp = TemporaryDirectory()
        let path = tmp.path + "/seance.sqlite"
        let db = try testDatabase(path, schema: settingsOnly)
        // Whatever is in the log now goes into the file first, so growth below is the rows'.
        _ = try db.writer.writeWithoutTransaction { try $0.checkpoint(.truncate) }
        let checkpoints = try BackgroundCheckpoints(db, quiet: 0.02)
        defer { checkpoints.stop() }
        let before = fileSize(path)
        // About 60 pages: far under SQLite's own threshold of 1,000, so only the background
        // checkpoint can move them from the log into the file.
        try db.write { db in
            for index in 0..<240 { try db.execute(sql: "INSERT INTO setting (key, value) VALUES (?, ?)", arguments: ["k\(index)", String(repeating: "x", count: 900)]) }
        }
        var waited = 0
        while fileSize(path) <= before && waited < 500 {
            usleep(10_000)
            waited += 1
        }
        #expect(fileSize(path) > before)
    }

    /// Nothing written, nothing checkpointed, however long: an idle shell has no alarm for them
    /// (they ran every 0.1 s whether or not anything was written).
    @Test func nothingWrittenNoCheckpoint() throws {
        let manual = try Manual(quiet: 0.1, overdue: 1)
        defer { manual.checkpoints.stop() }
        manual.scheduler.advance(by: 60)
        #expect(manual.checkpoints.count == 0)
        #expect(manual.scheduler.waiting == 0)
    }

    /// A checkpoint waits for the writer to pause: commits 50 ms apart put it off, the first
    /// pause of 100 ms brings it, once, and then nothing waits any more.
    @Test func aCheckpointWaitsForAPause() throws {
        let manual = try Manual(quiet: 0.1, overdue: 10)
        defer { manual.checkpoints.stop() }
        try manual.commit(20, apart: 0.05)
        #expect(manual.checkpoints.count == 0)
        manual.scheduler.advance(by: 0.05)
        #expect(manual.checkpoints.count == 1)
        manual.scheduler.advance(by: 60)
        #expect(manual.checkpoints.count == 1)
        #expect(manual.scheduler.waiting == 0)
    }

    /// A stream that never pauses is checkpointed all the same, when the oldest commit not yet
    /// checkpointed is `overdue` old: once a second here, whatever the number of commits.
    @Test func aStreamWithoutPausesIsCheckpointedWhenOverdue() throws {
        let manual = try Manual(quiet: 0.1, overdue: 1)
        defer { manual.checkpoints.stop() }
        // 3.5 s of commits 10 ms apart: due at 1 s, then 1 s after the first commit after it.
        try manual.commit(350, apart: 0.01)
        #expect(manual.checkpoints.count == 3)
    }

    /// Under a steady stream of commits (which never leaves the log wholly checkpointed at the
    /// moment a commit starts) the log still starts over: it stays near the writer's threshold
    /// instead of growing by every page of every commit. No alarm ever fires here, so only the
    /// hook that took SQLite's place can be what starts it over.
    @Test func aSteadyStreamOfCommitsDoesNotGrowTheLog() throws {
        let tmp = TemporaryDirectory()
        let path = tmp.path + "/seance.sqlite"
        let db = try testDatabase(path, schema: settingsOnly)
        let checkpoints = try BackgroundCheckpoints(db, scheduler: ManualScheduler(), writerThreshold: 1_000)
        defer { checkpoints.stop() }
        // Each commit adds a few frames: 4,000 of them, about 8,000 frames (32 MB) if never
        // started over; the writer's threshold is 1,000 here. Two rows updated in turn.
        var largest = 0
        for index in 0..<4_000 {
            try Self.write(db, index)
            if index % 100 == 99 { largest = max(largest, fileSize(path + "-wal")) }
        }
        let frame = 4_096 + 24
        #expect(largest > 0 && largest < 2_000 * frame, "the log reached \(largest / frame) frames")
        #expect(checkpoints.count == 0)
    }

    /// While checkpoints run beside it, SQLite's own threshold is off (the hook applies the
    /// writer's); stopped, the writer has SQLite's threshold again, and the log its space back,
    /// also when a checkpoint was under way.
    @Test func theWriterHasSQLitesThresholdBackOnceStopped() throws {
        let tmp = TemporaryDirectory()
        let path = tmp.path + "/seance.sqlite"
        let db = try testDatabase(path, schema: settingsOnly)
        let threshold = { try db.writer.writeWithoutTransaction { try Int.fetchOne($0, sql: "PRAGMA wal_autocheckpoint") } }
        #expect(try threshold() == BackgroundCheckpoints.sqliteThreshold)
        // Soon after each commit, so one is likely under way when they stop.
        let checkpoints = try BackgroundCheckpoints(db, quiet: 0.000_1)
        #expect(try threshold() == 0)
        for index in 0..<240 {
            try db.write { db in try db.execute(sql: "INSERT INTO setting (key, value) VALUES (?, ?)", arguments: ["k\(index)", String(repeating: "x", count: 900)]) }
        }
        #expect(fileSize(path + "-wal") > 0)
        checkpoints.stop()
        #expect(try threshold() == BackgroundCheckpoints.sqliteThreshold)
        #expect(fileSize(path + "-wal") == 0)
    }
}

@Suite struct TableRebuildTests {
    /// A constraint and `AUTOINCREMENT` go; the rows keep their ids, and the table keeps its
    /// indexes, its triggers and the views that read it.
    @Test func aTableDefinedAnewKeepsItsRowsIndexesTriggersAndViews() throws {
        let queue = try DatabaseQueue()
        try queue.write { db in
            try db.execute(sql: """
                CREATE TABLE line (id INTEGER PRIMARY KEY AUTOINCREMENT, text TEXT NOT NULL, at DOUBLE, UNIQUE (text, at));
                CREATE INDEX line_at ON line(at);
                CREATE TABLE tally (n INTEGER NOT NULL);
                INSERT INTO tally VALUES (0);
                CREATE TRIGGER line_counted AFTER INSERT ON line BEGIN UPDATE tally SET n = n + 1; END;
                CREATE VIEW line_shown AS SELECT id, upper(text) AS shown FROM line;
                INSERT INTO line (text, at) VALUES ('a', 1), ('b', 2), ('c', 3);
                DELETE FROM line WHERE id = 2;
                """)
            try db.rebuild("line", columns: "text TEXT NOT NULL, id INTEGER PRIMARY KEY, at DOUBLE")
            try db.execute(sql: "INSERT INTO line (text, at) VALUES ('c', 3)")
            #expect(try String.fetchAll(db, sql: "SELECT id || shown FROM line_shown ORDER BY id") == ["1A", "3C", "4C"])
            #expect(try Int.fetchOne(db, sql: "SELECT n FROM tally") == 4, "the trigger is back")
            let schema = try String.fetchOne(db, sql: "SELECT sql FROM sqlite_master WHERE name = 'line'") ?? ""
            #expect(!schema.contains("AUTOINCREMENT") && !schema.contains("UNIQUE"))
            #expect(try String.fetchAll(db, sql: "SELECT name FROM sqlite_master WHERE tbl_name = 'line' AND type = 'index'") == ["line_at"])
            #expect(try Int.fetchOne(db, sql: "SELECT count(*) FROM sqlite_sequence WHERE name = 'line'") == 0)
            #expect(try Row.fetchAll(db, sql: "PRAGMA foreign_key_check").isEmpty)
        }
    }
}

