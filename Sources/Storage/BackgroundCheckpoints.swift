import Dispatch
import GRDB

/// Checkpoints a database's write-ahead log from a connection and a thread of their own.
///
/// SQLite checkpoints inside whichever commit makes the log pass its threshold: it copies what
/// is not copied yet into the database and waits for the disk twice (the log's sync, then the
/// file's), milliseconds added to the one message that happened to commit then. While a session
/// is long-running (online), passive checkpoints here, every `interval`, do the copying and
/// the waiting beside the writer, taking no lock it waits for.
///
/// The writer keeps a threshold of its own all the same: only a checkpoint in a commit can leave
/// the log wholly copied when the next commit starts, which is when the log starts over from
/// its beginning (under a steady stream of messages a passive checkpoint never catches up
/// exactly then, and without the writer's the log grew by every page of every commit, 80 MB
/// in two thousand messages). What it costs is its two syncs, whatever is left to copy, so
/// while these run the writer's threshold is raised to `writerThreshold` pages: a chat's
/// slowest messages were those that paid for it (one in 150 under a stream of pings at 1,000
/// pages), and the log's file may grow to that many pages (40 MB at 10,000) until `stop`.
public final class BackgroundCheckpoints: @unchecked Sendable {
    /// SQLite's default threshold, which the writer gets back on `stop`.
    public static let sqliteThreshold = 1_000

    private let database: SeanceDatabase
    private let connection: DatabaseQueue
    private let queue = DispatchQueue(label: "seance.checkpoints", qos: .utility)
    // Touched only by `init` and `stop`, on the caller's thread.
    private let timer: DispatchSourceTimer
    private var stopped = false

    public init(_ database: SeanceDatabase, every interval: Double = 0.1, writerThreshold: Int = 10_000) throws(StorageError) {
        self.database = database
        do {
            connection = try DatabaseQueue(path: database.path)
        } catch {
            throw SeanceDatabase.describe(error, path: database.path)
        }
        try database.setAutoCheckpoint(writerThreshold)
        timer = DispatchSource.makeTimerSource(queue: queue)
        let connection = self.connection
        timer.schedule(deadline: .now() + interval, repeating: interval, leeway: .milliseconds(Int(interval * 100)))
        // A failed checkpoint (the writer's own under way, a reader holding an old snapshot)
        // is tried again next time.
        timer.setEventHandler { _ = try? connection.writeWithoutTransaction { try $0.checkpoint(.passive) } }
        timer.resume()
    }

    /// Stops checkpointing, gives the writer SQLite's threshold back and the log's disk space
    /// back to the system (when no reader is in the way; else it goes when the database
    /// closes). Safe to call twice.
    public func stop() {
        guard !stopped else { return }
        stopped = true
        timer.cancel()
        // A checkpoint under way holds the lock every checkpoint takes (and SQLite does not wait
        // for that one): it ends first.
        queue.sync {}
        try? database.setAutoCheckpoint(Self.sqliteThreshold)
        _ = try? database.writer.writeWithoutTransaction { try $0.checkpoint(.truncate) }
    }

    deinit { stop() }
}

extension SeanceDatabase {
    /// `PRAGMA wal_autocheckpoint` of the writer connection: after how many pages of log a commit
    /// checkpoints.
    func setAutoCheckpoint(_ pages: Int) throws(StorageError) {
        do {
            try writer.writeWithoutTransaction { try $0.execute(sql: "PRAGMA wal_autocheckpoint = \(pages)") }
        } catch {
            throw Self.describe(error, path: path)
        }
    }
}
