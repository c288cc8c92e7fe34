import Dispatch
import GRDB

/// Checkpoints a database's write-ahead log from a connection and a thread of their own.
///
/// SQLite checkpoints inside whichever commit makes the log pass 1,000 pages: it copies them
/// all into the database and waits for the disk, milliseconds added to the one message that
/// happened to commit then (a chat session's slowest messages were those). While a session is
/// long-running (online), passive checkpoints here, every `interval`, do that copying beside
/// the writer, taking no lock it waits for. The writer keeps its own threshold all the same:
/// only a checkpoint in a commit can leave the log wholly copied when the next commit starts,
/// which is when the log starts over from its beginning. (Without it, under a steady stream of
/// messages, the log grew by every page of every commit, 80 MB in two thousand messages, each
/// write extending the file.) By then its checkpoint has only the last few pages to copy.
public final class BackgroundCheckpoints: @unchecked Sendable {
    private let connection: DatabaseQueue
    // Touched only by `init` and `stop`, on the caller's thread.
    private let timer: DispatchSourceTimer
    private var stopped = false

    public init(_ database: SeanceDatabase, every interval: Double = 0.1) throws(StorageError) {
        do {
            connection = try DatabaseQueue(path: database.path)
        } catch {
            throw SeanceDatabase.describe(error, path: database.path)
        }
        let queue = DispatchQueue(label: "seance.checkpoints", qos: .utility)
        timer = DispatchSource.makeTimerSource(queue: queue)
        let connection = self.connection
        timer.schedule(deadline: .now() + interval, repeating: interval, leeway: .milliseconds(Int(interval * 100)))
        // A failed checkpoint (the writer's own under way, a reader holding an old snapshot)
        // is tried again next time.
        timer.setEventHandler { _ = try? connection.writeWithoutTransaction { try $0.checkpoint(.passive) } }
        timer.resume()
    }

    /// Stops checkpointing. Safe to call twice.
    public func stop() {
        guard !stopped else { return }
        stopped = true
        timer.cancel()
    }

    deinit { stop() }
}
