import Foundation
import GRDB
import Storage

/// Purchases, inventory and the worn medallion of each profile, in the database. Every change
/// is one transaction: a purchase writes its receipt and the inventory together, so a process
/// killed at any moment leaves both or neither.
package struct Ledger: Sendable {
    package let database: SeanceDatabase

    package init(database: SeanceDatabase) { self.database = database }

    /// Records a signed purchase: the receipt and the items, together.
    package func record(_ receipt: Receipt, profile: Int64) throws {
        try database.write { db in
            try db.execute(sql: """
                INSERT INTO receipt (id, profileId, profileKey, item, quantity, unitCents, totalCents, timeMs, signature)
                VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?)
                """, arguments: [receipt.id, profile, receipt.profileKey, receipt.item, receipt.quantity, receipt.unitCents,
                                 receipt.totalCents, receipt.timeMilliseconds, receipt.signature])
            try db.execute(sql: """
                INSERT INTO inventory (profileId, item, count) VALUES (?, ?, ?)
                ON CONFLICT(profileId, item) DO UPDATE SET count = count + excluded.count
                """, arguments: [profile, receipt.item, receipt.quantity])
        }
    }

    /// How many of each item the profile holds.
    package func inventory(profile: Int64) throws -> [Item: Int] {
        try database.read { db in
            var counts: [Item: Int] = [:]
            for row in try Row.fetchAll(db, sql: "SELECT item, count FROM inventory WHERE profileId = ?", arguments: [profile]) {
                if let item = Item(rawValue: row[0]) { counts[item] = row[1] }
            }
            return counts
        }
    }

    /// The profile's receipts, newest first, each with the key of the profile it is filed under.
    package func receipts(profile: Int64) throws -> [Receipt] {
        try database.read { db in
            try Row.fetchAll(db, sql: "SELECT * FROM receipt WHERE profileId = ? ORDER BY timeMs DESC, rowid DESC",
                             arguments: [profile]).map(Self.receipt)
        }
    }

    /// The receipt whose id is `id` or starts with it (at least 4 characters).
    package func receipt(_ id: String, profile: Int64) throws -> Receipt {
        let wanted = id.lowercased()
        let matches = try database.read { db in
            try Row.fetchAll(db, sql: "SELECT * FROM receipt WHERE profileId = ? AND (id = ? OR (length(?) >= 4 AND substr(id, 1, length(?)) = ?))",
                             arguments: [profile, wanted, wanted, wanted, wanted]).map(Self.receipt)
        }
        if let exact = matches.first(where: { $0.id == wanted }) { return exact }
        guard matches.count == 1 else {
            throw matches.isEmpty ? StoreError.noSuchReceipt(id) : StoreError.ambiguousReceipt(id, count: matches.count)
        }
        return matches[0]
    }

    /// Uses one Holy candle on the curse that ends last, then (once that is committed) tells
    /// the curses. Nothing is used up when there is no curse: returns nil then.
    package func useCandle(profile: Int64, curses: CurseBook?, now: Double) throws -> String? {
        let lifted = try database.write { db -> LiftedCurse? in
            let held = try Int.fetchOne(db, sql: "SELECT count FROM inventory WHERE profileId = ? AND item = 'candle'",
                                        arguments: [profile]) ?? 0
            guard held > 0 else { throw StoreError.noneLeft(.candle) }
            guard let lifted = try curses?.liftLatest(on: profile, in: db, now: now) else { return nil }
            try db.execute(sql: "UPDATE inventory SET count = count - 1 WHERE profileId = ? AND item = 'candle'", arguments: [profile])
            return lifted
        }
        guard let lifted else { return nil }
        curses?.lifted(lifted)
        return lifted.description
    }

    /// Puts on a Saint's medallion: one fewer in the inventory, and an hour of protection from
    /// `now`. Refused while another is worn.
    package func wearMedallion(profile: Int64, now: Double) throws -> Medallion {
        try database.write { db in
            if let worn = try Self.medallion(db, profile: profile), worn.protects(at: now) {
                throw StoreError.medallionWorn(minutesLeft: Int((worn.secondsLeft(at: now) / 60).rounded(.up)))
            }
            let held = try Int.fetchOne(db, sql: "SELECT count FROM inventory WHERE profileId = ? AND item = 'medallion'",
                                        arguments: [profile]) ?? 0
            guard held > 0 else { throw StoreError.noneLeft(.medallion) }
            try db.execute(sql: "UPDATE inventory SET count = count - 1 WHERE profileId = ? AND item = 'medallion'", arguments: [profile])
            try db.execute(sql: """
                INSERT INTO wornMedallion (profileId, wornAt) VALUES (?, ?)
                ON CONFLICT(profileId) DO UPDATE SET wornAt = excluded.wornAt
                """, arguments: [profile, now])
            return Medallion(wornAt: now)
        }
    }

    /// The medallion the profile wears, if one protects it at `now` (curses ask this).
    package func protectingMedallion(profile: Int64, now: Double) throws -> Medallion? {
        try database.read { db in try Self.medallion(db, profile: profile).flatMap { $0.protects(at: now) ? $0 : nil } }
    }

    static func medallion(_ db: Database, profile: Int64) throws -> Medallion? {
        try Double.fetchOne(db, sql: "SELECT wornAt FROM wornMedallion WHERE profileId = ?", arguments: [profile]).map(Medallion.init)
    }

    private static func receipt(_ row: Row) -> Receipt {
        Receipt(id: row["id"], profileKey: row["profileKey"], item: row["item"], quantity: row["quantity"],
                unitCents: row["unitCents"], totalCents: row["totalCents"], timeMilliseconds: row["timeMs"], signature: row["signature"])
    }
}
