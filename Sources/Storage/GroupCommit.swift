import GRDB
import Runtime

/// The database writes the network causes, committed together: every write asked for while the
/// engine handles what it was given goes into one transaction at the end of that turn, or at
/// once when `rowLimit` rows wait. What must follow a write (an acknowledgement, a read receipt,
/// a first transmission) runs once it is committed.
///
/// One transaction per message was what capped the message rate (issue 51); a burst from many
/// senders now costs one. A lone write waits for nothing: the turn ends when the engine has
/// handled what was already queued, which is the packet that caused it.
///
/// A transaction is all or nothing: when the database refuses it, every write in it is told
/// the error and nothing of any of them is kept (each then does what it does when refused:
/// messages come again, unacknowledged; states are written next time).
///
/// Engine state: every method runs on the engine.
package final class GroupCommit: Sendable {
    /// Rows written in one transaction at most: a burst is committed, and so acknowledged, in
    /// steps of this many, so the sender's window keeps moving (its window is 64 fragments).
    package static let rowLimit = 64

    struct Write {
        var body: (Database) throws -> Void
        var done: (Error?) -> Void
    }

    struct Pending {
        var writes: [Write] = []
        var rows = 0
        var scheduled = false
        /// Transactions committed or refused so far (tests count them).
        var transactions = 0
    }

    private let database: SeanceDatabase
    private let pending: EngineBound<Pending>

    package init(database: SeanceDatabase, engine: Engine) {
        self.database = database
        pending = EngineBound(Pending(), engine: engine)
    }

    /// Transactions this has run (committed or refused).
    package var transactions: Int { pending.value.transactions }

    /// Asks for `body` to be written with the turn's other writes; `done` runs after the commit
    /// (with nil) or after the transaction was refused (with the error).
    ///
    /// - Parameter rows: how many rows `body` stores, towards `rowLimit`.
    package func write(rows: Int = 1, _ body: @escaping (Database) throws -> Void, then done: @escaping (Error?) -> Void = { _ in }) {
        let (schedule, full) = pending.update { pending in
            pending.writes.append(Write(body: body, done: done))
            pending.rows += rows
            defer { pending.scheduled = true }
            return (!pending.scheduled, pending.rows >= Self.rowLimit)
        }
        if full {
            commit()
        } else if schedule {
            // Behind what the engine was already given: the packets that came together.
            pending.engine.async { [weak self] in self?.commit() }
        }
    }

    /// Writes what waits now, in one transaction, then tells each write how it went.
    package func commit() {
        let writes = pending.update { pending in
            defer {
                pending.writes = []
                pending.rows = 0
                pending.scheduled = false
            }
            if !pending.writes.isEmpty { pending.transactions += 1 }
            return pending.writes
        }
        guard !writes.isEmpty else { return }
        var failure: Error?
        do {
            try database.write { db in
                for write in writes { try write.body(db) }
            }
        } catch {
            failure = error
        }
        for write in writes { write.done(failure) }
    }
}
