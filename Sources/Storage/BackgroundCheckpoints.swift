import Dispatch
import GRDB

/// Checkpoints a database's write-ahead log from a connection and a thread of their own.
///
/// SQLite checkpoints inside whichever commit makes the log pass 1,000 pages, and a checkpoint
/// waits for the disk (fsync): milliseconds added to the one message that happened to commit
/// then — a chat session's slowest messages were those. While a session is long-running
/// (online), the writer stops checkpointing and this does it every `interval` instead; a
/// passive checkpoint takes no lock a writer waits for, so commits never wait for the disk.
/// Stopping gives the writer its checkpoints back (a short command never leaves a growing log).
public final class BackgroundCheckpoints: @unchecked Sendable {
    private let database: SeanceDatabase
    private let connection: DatabaseQueue
    // Touched only by `init` and `stop`, on the caller's thread.
    private let timer: DispatchSourceTimer
    private var stopped = false

    /// SQLite's own threshold, restored on `stop`.
    static let defaultAutoCheckpoint = 1_000

    public init(_ database: SeanceDatabase, every interval: Double = 1) throws(StorageError) {
        self.database = database
        do {
            connection = try DatabaseQueue(path: database.path)
        } catch {
            throw SeanceDatabase.describe(error, path: database.path)
        }
        try database.setAutoCheckpoint(0)
        let queue = DispatchQueue(label: "seance.checkpoints", qos: .utility)
        timer = DispatchSource.makeTimerSource(queue: queue)
        let connection = self.connection
        timer.schedule(deadline: .now() + interval, repeating: interval, leeway: .milliseconds(100))
        // A failed checkpoint (a reader holding an old snapshot) is tried again next time.
        timer.setEventHandler { _ = try? connection.writeWithoutTransaction { try $0.checkpoint(.passive) } }
        timer.resume()
    }

    /// Stops checkpointing here and gives the writer its own checkpoints back. Safe to call twice.
    public func stop() {
        guard !stopped else { return }
        stopped = true
        timer.cancel()
        try? database.setAutoCheckpoint(Self.defaultAutoCheckpoint)
    }

    deinit { stop() }
}

extension SeanceDatabase {
    /// `PRAGMA wal_autocheckpoint` of the writer connection (0: the writer never checkpoints).
    func setAutoCheckpoint(_ pages: Int) throws(StorageError) {
        do {
            try writer.writeWithoutTransaction { try $0.execute(sql: "PRAGMA wal_autocheckpoint = \(pages)") }
        } catch {
            throw Self.describe(error, path: path)
        }
    }
}
