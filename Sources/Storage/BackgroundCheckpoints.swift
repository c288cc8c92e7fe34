import Dispatch
import GRDB
import GRDBSQLite
import Runtime
import Synchronization

/// Checkpoints a database's write-ahead log from a connection and a thread of their own, when
/// the writer pauses.
///
/// SQLite checkpoints inside whichever commit makes the log pass its threshold: it copies what
/// is not copied yet into the database and waits for the disk twice (the log's sync, then the
/// file's), milliseconds added to the one message that happened to commit then. While a session
/// is long-running (online), passive checkpoints here do the copying and the waiting beside the
/// writer, taking no lock it waits for; and they run once the writer has paused for `quiet`
/// after a commit, so that they do not compete with the next one either (run every 0.1 s
/// whatever the writer did, they were among the slowest of a stream of pings: p99 1.5–1.6 ms,
/// 1.3–1.5 without). A stream
/// that never pauses is checkpointed when its oldest commit not yet checkpointed is `overdue`
/// old: that bounds what a power cut can take (in WAL mode with `synchronous = NORMAL`, commits
/// reach the disk with the checkpoint's sync; a killed process loses nothing either way).
/// Nothing written, nothing scheduled: an idle shell never wakes for these.
///
/// The writer keeps a threshold of its own all the same: only a checkpoint in a commit can leave
/// the log wholly copied when the next commit starts, which is when the log starts over from
/// its beginning (under a steady stream of messages a passive checkpoint never catches up
/// exactly then, and without the writer's the log grew by every page of every commit, 80 MB
/// in two thousand messages). What it costs is its two syncs, whatever is left to copy, so
/// while these run the writer's threshold is `writerThreshold` pages: a chat's slowest messages
/// were those that paid for it (one in 150 under a stream of pings at SQLite's 1,000 pages), and
/// the log's file may grow to that many pages (40 MB at 10,000) until `stop`. The commits are
/// seen through SQLite's log hook, which replaces SQLite's own threshold (`PRAGMA
/// wal_autocheckpoint` reads 0 meanwhile): the hook applies `writerThreshold` as SQLite did.
package final class BackgroundCheckpoints: Sendable {
    /// SQLite's default threshold, which the writer gets back on `stop`.
    package static let sqliteThreshold = 1_000

    private let database: SeanceDatabase
    private let watch: CheckpointWatch

    /// - Parameters:
    ///   - quiet: how long the writer pauses after a commit before the log is checkpointed.
    ///   - overdue: the longest a commit waits for a checkpoint while the writer never pauses.
    package init(_ database: SeanceDatabase, scheduler: Scheduler = SystemScheduler(), quiet: Double = 0.1,
                overdue: Double = 1, writerThreshold: Int = 10_000) throws(StorageError) {
        self.database = database
        do {
            watch = CheckpointWatch(connection: try DatabaseQueue(path: database.path), scheduler: scheduler, quiet: quiet,
                                    overdue: overdue, writerThreshold: writerThreshold)
        } catch {
            throw SeanceDatabase.describe(error, path: database.path)
        }
        // Retained for the hook until `stop` has taken the hook away (a hook left with a freed
        // context would crash the next commit).
        let context = Unmanaged.passRetained(watch).toOpaque()
        database.writer.writeWithoutTransaction { db in _ = sqlite3_wal_hook(db.sqliteConnection, logHook, context) }
    }

    /// How many checkpoints have been started here (tests count them).
    package var count: Int { watch.state.withLock { $0.checkpoints } }

    /// Gives the writer SQLite's own threshold back and truncates the log, once a checkpoint
    /// under way has ended.
    package func stop() {
        guard watch.stop() else { return }
        // SQLite's own hook in place of ours, with its default threshold.
        database.writer.writeWithoutTransaction { db in _ = sqlite3_wal_autocheckpoint(db.sqliteConnection, Int32(Self.sqliteThreshold)) }
        Unmanaged.passUnretained(watch).release()
        _ = try? database.writer.writeWithoutTransaction { try $0.checkpoint(.truncate) }
    }

    deinit { stop() }
}

/// What the writer's commits and the checkpoint queue share; the log hook's context.
private final class CheckpointWatch: Sendable {
    struct State {
        var lastCommit = 0.0
        /// When the oldest commit not yet checkpointed was made (nil: none is waiting).
        var pendingSince: Double?
        var stopped = false
        var timer: Cancellable?
        var checkpoints = 0
    }

    let state = Mutex(State())
    let scheduler: Scheduler
    let queue = DispatchQueue(label: "seance.checkpoints", qos: .utility)
    let connection: DatabaseQueue
    let quiet: Double
    let overdue: Double
    let writerThreshold: Int32

    init(connection: DatabaseQueue, scheduler: Scheduler, quiet: Double, overdue: Double, writerThreshold: Int) {
        self.connection = connection
        self.scheduler = scheduler
        self.quiet = quiet
        self.overdue = overdue
        self.writerThreshold = Int32(clamping: writerThreshold)
    }

    /// On the writer's thread, in its commit: the first commit since a checkpoint sets the
    /// alarm; later ones only move the time it will look at.
    func committed() {
        let now = scheduler.now
        let arm = state.withLock { state -> Bool in
            state.lastCommit = now
            guard state.pendingSince == nil, !state.stopped else { return false }
            state.pendingSince = now
            return true
        }
        if arm { schedule(in: quiet) }
    }

    private func schedule(in seconds: Double) {
        let timer = scheduler.after(seconds, on: queue) { [weak self] in self?.due() }
        state.withLock { $0.timer = timer }
    }

    /// Timers fire this close to their time, or later: a millisecond short counts as due.
    static let slack = 0.001

    /// On the queue: checkpoints if the writer has paused or the oldest commit waiting is
    /// overdue, else looks again when one of the two will be true. A clock set back counts
    /// as time passed (never a checkpoint put off for as long as it went back).
    private func due() {
        let now = scheduler.now
        let wait = state.withLock { state -> Double? in
            guard let since = state.pendingSince, !state.stopped else { return nil }
            let paused = now - state.lastCommit, waiting = now - since
            if paused >= quiet - Self.slack || waiting >= overdue - Self.slack || paused < 0 || waiting < 0 {
                // A commit from here on is after this checkpoint's start: it sets a new alarm.
                state.pendingSince = nil
                state.checkpoints += 1
                return 0
            }
            return min(quiet - paused, overdue - waiting)
        }
        guard let wait else { return }
        if wait > 0 { return schedule(in: wait) }
        // Cut short by a reader's old snapshot, the log is synced all the same (what it could
        // not copy waits for the next); refused while the writer's own runs, that one syncs it.
        _ = try? connection.writeWithoutTransaction { try $0.checkpoint(.passive) }
    }

    /// No alarm from now on; one under way ends first (SQLite does not wait for the lock
    /// it holds). False when it was stopped already.
    func stop() -> Bool {
        let (wasRunning, timer) = state.withLock { state -> (Bool, Cancellable?) in
            defer { state.stopped = true; state.timer = nil }
            return (!state.stopped, state.timer)
        }
        guard wasRunning else { return false }
        timer?.cancel()
        queue.sync {}
        return true
    }
}

/// SQLite's log hook: after each commit of the writer, on its thread, with the log's length in
/// frames. It checkpoints at the writer's threshold as SQLite's own hook did (a passive
/// checkpoint, in the commit), then lets the watch know of the commit.
private func logHook(_ context: UnsafeMutableRawPointer?, _ db: OpaquePointer?, _ name: UnsafePointer<CChar>?, _ frames: Int32) -> Int32 {
    guard let context else { return SQLITE_OK }
    let watch = Unmanaged<CheckpointWatch>.fromOpaque(context).takeUnretainedValue()
    if frames >= watch.writerThreshold { _ = sqlite3_wal_checkpoint(db, name) }
    watch.committed()
    return SQLITE_OK
}
