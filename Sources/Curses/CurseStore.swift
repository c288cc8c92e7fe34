import Foundation
import GRDB
import Storage
import Wire

/// A curse in force on this profile.
package struct ActiveCurse: Equatable, Sendable {
    package var id: Int64
    package var casterKey: Data
    /// The caster's name when it cast (shown with its fingerprint).
    package var casterName: String
    package var kind: CurseKind
    package var startedAt: Double
    package var endsAt: Double

    package var casterHandle: String { PeerIdentity.handle(name: casterName, signingKey: casterKey) }
}

/// The curses table: each curse with its end time, so it outlives a restart, and how it ended
/// (expired, lifted by a candle).
package struct CurseStore: Sendable {
    package let database: SeanceDatabase

    package init(database: SeanceDatabase) { self.database = database }

    /// The curses in force on `target` at `now`, the one that ends first first.
    package func active(on target: Data, now: Double) throws -> [ActiveCurse] {
        try database.read { db in try Self.active(db, on: target, now: now) }
    }

    static func active(_ db: Database, on target: Data, now: Double) throws -> [ActiveCurse] {
        try Row.fetchAll(db, sql: """
            SELECT id, casterKey, casterName, kind, startedAt, endsAt FROM curse
            WHERE targetKey = ? AND endedAt IS NULL AND endsAt > ? ORDER BY endsAt, id
            """, arguments: [target, now]).compactMap { row in
            guard let kind = CurseKind(rawValue: row["kind"]) else { return nil }
            return ActiveCurse(id: row["id"], casterKey: row["casterKey"], casterName: row["casterName"], kind: kind,
                               startedAt: row["startedAt"], endsAt: row["endsAt"])
        }
    }

    /// Records a curse that took hold. The same casting (its id) twice is refused: a replayed
    /// packet never curses again.
    package func add(on target: Data, casterKey: Data, casterName: String, kind: CurseKind, castID: Data,
                    startedAt: Double, endsAt: Double) throws -> ActiveCurse {
        try database.write { db in
            try db.execute(sql: """
                INSERT INTO curse (targetKey, casterKey, casterName, kind, castId, startedAt, endsAt) VALUES (?, ?, ?, ?, ?, ?, ?)
                """, arguments: [target, casterKey, casterName, kind.rawValue, castID, startedAt, endsAt])
            return ActiveCurse(id: db.lastInsertedRowID, casterKey: casterKey, casterName: casterName, kind: kind,
                               startedAt: startedAt, endsAt: endsAt)
        }
    }

    /// Marks a curse ended (`expired`, `lifted`, `spell`).
    package func end(_ id: Int64, how: String, at now: Double) throws {
        try database.write { db in
            try db.execute(sql: "UPDATE curse SET endedAt = ?, endedHow = ? WHERE id = ? AND endedAt IS NULL", arguments: [now, how, id])
        }
    }

    /// Ends every curse from `caster` on `target` (a spell); what was ended.
    package func endAll(from caster: Data, on target: Data, how: String, at now: Double) throws -> [ActiveCurse] {
        try database.write { db in
            let ended = try Self.active(db, on: target, now: now).filter { $0.casterKey == caster }
            try db.execute(sql: "UPDATE curse SET endedAt = ?, endedHow = ? WHERE targetKey = ? AND casterKey = ? AND endedAt IS NULL",
                           arguments: [now, how, target, caster])
            return ended
        }
    }

    /// Whether `caster` ever cursed `target` (a spell is only for a ghost that did).
    package func hasCursed(_ target: Data, from caster: Data) throws -> Bool {
        try database.read { db in
            try Bool.fetchOne(db, sql: "SELECT EXISTS (SELECT 1 FROM curse WHERE targetKey = ? AND casterKey = ?)",
                              arguments: [target, caster]) ?? false
        }
    }

    /// The ghosts that have cursed `target`, newest first: (name, key).
    package func casters(of target: Data) throws -> [(name: String, key: Data)] {
        try database.read { db in
            try Row.fetchAll(db, sql: """
                SELECT casterName, casterKey FROM curse WHERE targetKey = ? GROUP BY casterKey ORDER BY max(startedAt) DESC
                """, arguments: [target]).map { ($0["casterName"], $0["casterKey"]) }
        }
    }

    /// Records that `caster` may not curse `target` until `until`.
    package func repel(_ caster: Data, from target: Data, until: Double) throws {
        try database.write { db in
            try db.execute(sql: """
                INSERT INTO repel (casterKey, targetKey, until) VALUES (?, ?, ?)
                ON CONFLICT(casterKey, targetKey) DO UPDATE SET until = excluded.until
                """, arguments: [caster, target, until])
        }
    }

    /// Until when `caster` is repelled from `target`, if it is at `now`.
    package func repelled(_ caster: Data, from target: Data, now: Double) throws -> Double? {
        try database.read { db in
            try Double.fetchOne(db, sql: "SELECT until FROM repel WHERE casterKey = ? AND targetKey = ? AND until > ?",
                                arguments: [caster, target, now])
        }
    }

    /// The spell a profile learnt last (from a spectre), kept in the settings table.
    package func lastSpell(of key: Data) throws -> String? { try database.setting(Self.spellKey(key)) }

    package func learn(spell: String, for key: Data) throws { try database.setSetting(Self.spellKey(key), spell) }

    static func spellKey(_ key: Data) -> String { "spell." + PeerIdentity.longFingerprint(of: key) }

    /// Ends the curse in force on `target` that ends last, inside the caller's transaction.
    static func liftLatest(_ db: Database, on target: Data, now: Double) throws -> ActiveCurse? {
        guard let latest = try active(db, on: target, now: now).last else { return nil }
        try db.execute(sql: "UPDATE curse SET endedAt = ?, endedHow = 'lifted' WHERE id = ?", arguments: [now, latest.id])
        return latest
    }
}

/// The curses' table.
package enum CursesSchema {
    /// Every migration of this feature, in order.
    package static let migrations = [curses]

    package static let curses = Migration("v11-curses") { db in
        // A curse on a profile's key, from a caster's key; `endedAt` is set when it ends early
        // (a candle, a spell) or is seen to have run out; `endsAt` alone says when it would.
        try db.create(table: "curse") { t in
            t.autoIncrementedPrimaryKey("id")
            t.column("targetKey", .blob).notNull()
            t.column("casterKey", .blob).notNull()
            t.column("casterName", .text).notNull()
            t.column("kind", .text).notNull()
            t.column("castId", .blob).notNull().unique()
            t.column("startedAt", .double).notNull()
            t.column("endsAt", .double).notNull()
            t.column("endedAt", .double)
            t.column("endedHow", .text)
        }
        try db.execute(sql: "CREATE INDEX curse_active ON curse(targetKey, endsAt) WHERE endedAt IS NULL")
        // A spell's half hour: the caster may not curse the target until `until`. Each side
        // keeps its own row (the Human refuses, the Ghost does not try).
        try db.create(table: "repel") { t in
            t.column("casterKey", .blob).notNull()
            t.column("targetKey", .blob).notNull()
            t.column("until", .double).notNull()
            t.primaryKey(["casterKey", "targetKey"])
        }
    }
}
