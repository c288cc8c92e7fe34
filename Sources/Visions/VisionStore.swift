import Foundation
import GRDB
import Storage
import Terminal
import Shell

package struct Rescuer: Equatable, Sendable {
    package var id: Int64
    package var name: String
    package var description: String
    package var portrait: [UInt8]?
    package var rescues: Int
}

/// A vision as the list shows it: no image bytes, just the thumbnail.
package struct VisionSummary: Equatable, Sendable {
    package var id: Int64
    package var rescuerName: String
    package var rescued: Bool
    package var thumbnail: RGBAImage
}

package struct Vision: Equatable, Sendable {
    package var id: Int64
    package var rescuerName: String
    package var image: [UInt8]
    package var rescued: Bool
    package var createdAt: Double
    package var rescuedAt: Double?
}

package enum VisionsError: Error, Equatable, CustomStringConvertible {
    case emptyName
    case nameTooLong
    case noSuchVision(Int64)
    case noSuchRescuer(String)
    case rescuerHasVisions(String, Int)
    case rescuerExists(String)
    case newRescuerNotAllowed(String, similar: String?)
    case descriptionTooLong
    case nothingOpen

    package var description: String {
        switch self {
        case .emptyName: return "the rescuer's name cannot be empty"
        case .nameTooLong: return "the rescuer's name is too long (at most 40 characters)"
        case .noSuchVision(let id): return "there is no vision #\(id)"
        case .noSuchRescuer(let name): return "there is no rescuer named '\(SafeText.visible(name))'"
        case .rescuerHasVisions(let name, let count):
            let shown = SafeText.visible(name)
            return "\(shown) is assigned to \(count == 1 ? "a vision" : "\(count) visions"): delete \(count == 1 ? "it" : "them") first, or rename \(shown)"
        case .rescuerExists(let name): return "there is already a rescuer named '\(SafeText.visible(name))'"
        case .newRescuerNotAllowed(let name, let similar):
            return "there is no rescuer named '\(SafeText.visible(name))'" + (similar.map { " (did you mean '\(SafeText.visible($0))'?)" } ?? "")
                + "; add --new-rescuer to create one"
        case .descriptionTooLong: return "the description is too long (at most 500 characters)"
        case .nothingOpen: return "open a vision first: " + Advice.command("open N", mode: "visions")
        }
    }
}

/// What `save NAME` did.
package enum SaveOutcome: Equatable, Sendable {
    case rescued(by: String)
    case wrongRescuer(expected: String)
    case alreadyRescued(by: String)
}

/// Visions and rescuers in the database. Every change that touches both is one transaction.
package struct VisionStore: Sendable {
    package let database: SeanceDatabase
    /// Thumbnails are this many pixels wide: four rows of eight cells in a list.
    package static let thumbnailWidth = 8

    package init(database: SeanceDatabase) { self.database = database }

    /// A name as stored: trimmed, not empty, not absurdly long, no control characters.
    package static func normalise(_ name: String) throws(VisionsError) -> String {
        // Controls go first: a name of nothing else is empty.
        let visible = String(name.unicodeScalars.filter { $0.properties.generalCategory != .control }.map(Character.init))
        let trimmed = visible.trimmingCharacters(in: .whitespacesAndNewlines)
        guard !trimmed.isEmpty else { throw .emptyName }
        guard trimmed.count <= 40 else { throw .nameTooLong }
        return trimmed
    }

    package func rescuers() throws -> [Rescuer] {
        try database.read { db in try Row.fetchAll(db, sql: "SELECT * FROM rescuer ORDER BY name COLLATE NOCASE").map(Self.rescuer) }
    }

    package func rescuer(named name: String) throws -> Rescuer? {
        try database.read { db in
            try Row.fetchOne(db, sql: "SELECT * FROM rescuer WHERE name = ? COLLATE NOCASE", arguments: [name]).map(Self.rescuer)
        }
    }

    private static func rescuer(_ row: Row) -> Rescuer {
        Rescuer(id: row["id"], name: row["name"], description: row["description"],
                portrait: (row["portrait"] as Data?).map { [UInt8]($0) }, rescues: row["rescues"])
    }

    /// Stores a vision assigned to `rescuerName`, creating the rescuer if new. The image must
    /// already be decoded (it is refused before anything is written if it cannot be).
    @discardableResult
    package func addVision(rescuerName: String, imageBytes: [UInt8], image: RGBAImage, now: Double) throws -> Int64 {
        let name = try Self.normalise(rescuerName)
        let thumbnailHeight = max(2, min(16, Int((Double(image.height) * Double(Self.thumbnailWidth) / Double(image.width)).rounded())))
        let thumbnail = image.scaled(width: Self.thumbnailWidth, height: thumbnailHeight)
        return try database.write { db in
            let existing = try Int64.fetchOne(db, sql: "SELECT id FROM rescuer WHERE name = ? COLLATE NOCASE", arguments: [name])
            let rescuerID: Int64
            if let existing {
                rescuerID = existing
            } else {
                try db.execute(sql: "INSERT INTO rescuer (name) VALUES (?)", arguments: [name])
                rescuerID = db.lastInsertedRowID
            }
            try db.execute(sql: """
                INSERT INTO vision (rescuerId, image, thumbnail, thumbnailWidth, thumbnailHeight, createdAt)
                VALUES (?, ?, ?, ?, ?, ?)
                """, arguments: [rescuerID, Data(imageBytes), Data(thumbnail.pixels), thumbnail.width, thumbnail.height, now])
            return db.lastInsertedRowID
        }
    }

    /// The rescuer a name may have been meant for: one whose name starts or ends the given one,
    /// or is started by it (`Joyce Byers` → `Joyce`), any case; else one a typo away (`Joice`).
    package func similarRescuer(to name: String) throws -> String? {
        let given = name.lowercased()
        let names = try rescuers().map(\.name)
        let word = names.first { known in
            let lower = known.lowercased()
            // (Equal but for case beyond ASCII, which SQLite's NOCASE does not fold: Élodie.)
            return given == lower || given.hasPrefix(lower + " ") || given.hasSuffix(" " + lower) || lower.hasPrefix(given + " ")
        }
        return word ?? EditDistance.nearest(to: given, in: names.map { $0.lowercased() }).flatMap { typo in
            names.first { $0.lowercased() == typo }
        }
    }

    /// Renames rescuer `name` to `newName` (its visions and rescues follow); a change of case
    /// alone is allowed.
    package func renameRescuer(_ name: String, to newName: String) throws {
        let new = try Self.normalise(newName)
        try database.write { db in
            guard let id = try Int64.fetchOne(db, sql: "SELECT id FROM rescuer WHERE name = ? COLLATE NOCASE", arguments: [name]) else {
                throw VisionsError.noSuchRescuer(name)
            }
            if let other = try Row.fetchOne(db, sql: "SELECT id, name FROM rescuer WHERE name = ? COLLATE NOCASE", arguments: [new]),
               other["id"] as Int64 != id {
                throw VisionsError.rescuerExists(other["name"])
            }
            try db.execute(sql: "UPDATE rescuer SET name = ? WHERE id = ?", arguments: [new, id])
        }
    }

    /// Deletes rescuer `name`, refused while a vision names them.
    package func deleteRescuer(_ name: String) throws {
        try database.write { db in
            let id = try Self.deletableRescuer(db, name)
            try db.execute(sql: "DELETE FROM rescuer WHERE id = ?", arguments: [id])
        }
    }

    /// Throws what would stop `deleteRescuer` (no such rescuer, one with visions), so that the
    /// user is told before being asked to confirm.
    package func checkDeletable(_ name: String) throws {
        _ = try database.read { db in try Self.deletableRescuer(db, name) }
    }

    private static func deletableRescuer(_ db: Database, _ name: String) throws -> Int64 {
        guard let row = try Row.fetchOne(db, sql: "SELECT id, name FROM rescuer WHERE name = ? COLLATE NOCASE", arguments: [name]) else {
            throw VisionsError.noSuchRescuer(name)
        }
        let visions = try Int.fetchOne(db, sql: "SELECT count(*) FROM vision WHERE rescuerId = ?", arguments: [row["id"] as Int64]) ?? 0
        guard visions == 0 else { throw VisionsError.rescuerHasVisions(row["name"], visions) }
        return row["id"]
    }

    /// Gives rescuer `name` a portrait: image bytes already known to decode.
    package func setPortrait(_ name: String, imageBytes: [UInt8]) throws {
        try updateRescuer(name, sql: "UPDATE rescuer SET portrait = ? WHERE id = ?", Data(imageBytes))
    }

    /// Gives rescuer `name` a description (one paragraph: controls and new lines become spaces).
    package func describeRescuer(_ name: String, as text: String) throws {
        let cleaned = String(text.unicodeScalars.map { $0.properties.generalCategory == .control ? " " : Character($0) })
            .trimmingCharacters(in: .whitespaces)
        guard cleaned.count <= 500 else { throw VisionsError.descriptionTooLong }
        try updateRescuer(name, sql: "UPDATE rescuer SET description = ? WHERE id = ?", cleaned)
    }

    private func updateRescuer(_ name: String, sql: String, _ value: some DatabaseValueConvertible & Sendable) throws {
        try database.write { db in
            guard let id = try Int64.fetchOne(db, sql: "SELECT id FROM rescuer WHERE name = ? COLLATE NOCASE", arguments: [name]) else {
                throw VisionsError.noSuchRescuer(name)
            }
            try db.execute(sql: sql, arguments: [value, id])
        }
    }

    /// Every vision's number, rescuer and state, for Tab.
    package func visionNumbers() throws -> [(id: Int64, rescuer: String, rescued: Bool)] {
        try database.read { db in
            try Row.fetchAll(db, sql: """
                SELECT vision.id, rescuer.name, vision.rescued FROM vision JOIN rescuer ON rescuer.id = vision.rescuerId ORDER BY vision.id
                """).map { ($0[0], $0[1], $0[2]) }
        }
    }

    /// Every vision's thumbnail height in pixels, oldest first (what a list page holds depends on them).
    package func thumbnailHeights() throws -> [Int] {
        try database.read { db in try Int.fetchAll(db, sql: "SELECT thumbnailHeight FROM vision ORDER BY id") }
    }

    package func visionCount() throws -> Int {
        try database.read { db in try Int.fetchOne(db, sql: "SELECT count(*) FROM vision") ?? 0 }
    }

    /// One page of the list, oldest first, reading thumbnails only.
    package func visions(offset: Int, limit: Int) throws -> [VisionSummary] {
        try database.read { db in
            try Row.fetchAll(db, sql: """
                SELECT vision.id, rescuer.name, vision.rescued, vision.thumbnail, vision.thumbnailWidth, vision.thumbnailHeight
                FROM vision JOIN rescuer ON rescuer.id = vision.rescuerId
                ORDER BY vision.id LIMIT ? OFFSET ?
                """, arguments: [limit, offset]).map { row in
                VisionSummary(id: row[0], rescuerName: row[1], rescued: row[2],
                              thumbnail: RGBAImage(width: row[4], height: row[5], pixels: [UInt8](row[3] as Data)))
            }
        }
    }

    package func vision(_ id: Int64) throws -> Vision {
        let found = try database.read { db in
            try Row.fetchOne(db, sql: """
                SELECT vision.*, rescuer.name AS rescuerName FROM vision JOIN rescuer ON rescuer.id = vision.rescuerId
                WHERE vision.id = ?
                """, arguments: [id]).map { row in
                Vision(id: row["id"], rescuerName: row["rescuerName"], image: [UInt8](row["image"] as Data),
                       rescued: row["rescued"], createdAt: row["createdAt"], rescuedAt: row["rescuedAt"])
            }
        }
        guard let found else { throw VisionsError.noSuchVision(id) }
        return found
    }

    /// Marks vision `id` rescued if `name` (trimmed, any case) is its rescuer, and counts the
    /// rescue, in one transaction.
    package func save(_ id: Int64, name: String, now: Double) throws -> SaveOutcome {
        let given = name.trimmingCharacters(in: .whitespacesAndNewlines)
        return try database.write { db in
            guard let row = try Row.fetchOne(db, sql: """
                SELECT vision.rescued, rescuer.id, rescuer.name FROM vision JOIN rescuer ON rescuer.id = vision.rescuerId
                WHERE vision.id = ?
                """, arguments: [id]) else { throw VisionsError.noSuchVision(id) }
            let rescued: Bool = row[0], rescuerID: Int64 = row[1], rescuerName: String = row[2]
            if rescued { return .alreadyRescued(by: rescuerName) }
            guard given.caseInsensitiveCompare(rescuerName) == .orderedSame else { return .wrongRescuer(expected: rescuerName) }
            try db.execute(sql: "UPDATE vision SET rescued = 1, rescuedAt = ? WHERE id = ?", arguments: [now, id])
            try db.execute(sql: "UPDATE rescuer SET rescues = rescues + 1 WHERE id = ?", arguments: [rescuerID])
            return .rescued(by: rescuerName)
        }
    }

    /// Deletes vision `id`; a rescued one takes its rescue off the rescuer's count.
    package func delete(_ id: Int64) throws {
        try database.write { db in
            guard let row = try Row.fetchOne(db, sql: "SELECT rescued, rescuerId FROM vision WHERE id = ?", arguments: [id]) else {
                throw VisionsError.noSuchVision(id)
            }
            if row["rescued"] as Bool {
                try db.execute(sql: "UPDATE rescuer SET rescues = rescues - 1 WHERE id = ?", arguments: [row["rescuerId"] as Int64])
            }
            try db.execute(sql: "DELETE FROM vision WHERE id = ?", arguments: [id])
        }
    }
}
