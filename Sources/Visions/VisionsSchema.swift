import GRDB
import Storage

/// The visions log's tables, with the rescuers a new database starts with.
package enum VisionsSchema {
    /// Every migration of this feature, in order.
    package static let migrations = [visionsAndRescuers]

    /// Rescuers, and visions each tied to one; the seed rescuers with their portraits.
    package static let visionsAndRescuers = Migration("v3-visions") { db in
        try db.create(table: "rescuer") { t in
            t.autoIncrementedPrimaryKey("id")
            t.column("name", .text).notNull().unique().collate(.nocase)
            t.column("description", .text).notNull().defaults(to: "")
            t.column("portrait", .blob)
            t.column("rescues", .integer).notNull().defaults(to: 0).check { $0 >= 0 }
        }
        // The image bytes as given, plus a small RGBA thumbnail so lists never decode images.
        try db.create(table: "vision") { t in
            t.autoIncrementedPrimaryKey("id")
            t.belongsTo("rescuer", onDelete: .restrict).notNull()
            t.column("image", .blob).notNull()
            t.column("thumbnail", .blob).notNull()
            t.column("thumbnailWidth", .integer).notNull()
            t.column("thumbnailHeight", .integer).notNull()
            t.column("rescued", .boolean).notNull().defaults(to: false)
            t.column("createdAt", .double).notNull()
            t.column("rescuedAt", .double)
        }
        for (name, description) in SeedRescuers.all {
            try db.execute(sql: "INSERT INTO rescuer (name, description, portrait) VALUES (?, ?, ?)",
                           arguments: [name, description, SeedRescuers.portrait(name)])
        }
    }
}
