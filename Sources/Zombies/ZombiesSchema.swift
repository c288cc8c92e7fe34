import GRDB
import Storage

/// The zombies game's tables.
package enum ZombiesSchema {
    /// Every migration of this feature, in order.
    package static let migrations = [score]

    package static let score = Migration("v2-zombies") { db in
        // One row: wins and losses survive restarts; a round in progress does not need to.
        try db.create(table: "zombiesScore") { t in
            t.primaryKey("id", .integer).check { $0 == 1 }
            t.column("wins", .integer).notNull().defaults(to: 0)
            t.column("losses", .integer).notNull().defaults(to: 0)
        }
        try db.execute(sql: "INSERT INTO zombiesScore (id) VALUES (1)")
    }
}

extension SeanceDatabase {
    package func zombiesScore() throws -> (wins: Int, losses: Int) {
        try read { db in
            let row = try Row.fetchOne(db, sql: "SELECT wins, losses FROM zombiesScore WHERE id = 1")
            return (row?["wins"] ?? 0, row?["losses"] ?? 0)
        }
    }

    package func setZombiesScore(wins: Int, losses: Int) throws {
        try write { db in
            try db.execute(sql: "INSERT INTO zombiesScore (id, wins, losses) VALUES (1, ?, ?) "
                           + "ON CONFLICT(id) DO UPDATE SET wins = excluded.wins, losses = excluded.losses",
                           arguments: [wins, losses])
        }
    }
}
