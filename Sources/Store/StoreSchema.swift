import GRDB
import Storage

/// The store's tables: signed receipts, the inventory, the medallion worn.
package enum StoreSchema {
    /// Every migration of this feature, in order.
    package static let migrations = [receiptsAndInventory]

    /// Receipts, inventory and the medallion worn.
    package static let receiptsAndInventory = Migration("v10-store") { db in
        // Receipts are signed by the buyer's profile key; the inventory changes in the same
        // transaction as the receipt is written (all or nothing).
        try db.create(table: "receipt") { t in
            t.primaryKey("id", .text)
            t.belongsTo("profile", onDelete: .cascade).notNull()
            t.column("profileKey", .blob).notNull()
            t.column("item", .text).notNull()
            t.column("quantity", .integer).notNull()
            t.column("unitCents", .integer).notNull()
            t.column("totalCents", .integer).notNull()
            t.column("timeMs", .integer).notNull()
            t.column("signature", .blob).notNull()
        }
        try db.create(index: "receipt_newest", on: "receipt", columns: ["profileId", "timeMs"])
        try db.create(table: "inventory") { t in
            t.belongsTo("profile", onDelete: .cascade).notNull()
            t.column("item", .text).notNull()
            t.column("count", .integer).notNull().check { $0 >= 0 }
            t.primaryKey(["profileId", "item"])
        }
        try db.create(table: "wornMedallion") { t in
            t.primaryKey("profileId", .integer).references("profile", onDelete: .cascade)
            t.column("wornAt", .double).notNull()
        }
    }
}
