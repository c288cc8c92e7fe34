import Foundation
import GRDB
import Storage

/// Block and mute: the user's own defence against a person. What is blocked or muted is a
/// key, never a name: an impostor with the same name is not blocked with the real one, and a
/// blocked person who makes a new key is a new stranger. A place (a room, `room 1.2`) can be
/// muted too. Kept per profile in the database; `Online` applies them to the running engine.
package struct PeerChoiceStore: Sendable {
    package let database: SeanceDatabase

    package init(database: SeanceDatabase) { self.database = database }

    /// A key blocked or muted: the name it had then, and since when.
    package struct Choice: Sendable, Equatable {
        package var signingKey: Data
        package var name: String
        package var since: Double
        package var handle: String { PeerIdentity.handle(name: name, signingKey: signingKey) }

        package init(signingKey: Data, name: String, since: Double) {
            self.signingKey = signingKey
            self.name = name
            self.since = since
        }
    }

    package enum List: String, Sendable {
        case blocked = "blockedPeer", muted = "mutedPeer"
    }

    /// Adds the key to the list; false when it was there already (its date is kept).
    @discardableResult
    package func add(_ key: Data, name: String, to list: List, now: Double) throws -> Bool {
        try database.write { db in
            try db.execute(sql: "INSERT OR IGNORE INTO \(list.rawValue) (signingKey, name, since) VALUES (?, ?, ?)",
                           arguments: [key, name, now])
            return db.changesCount > 0
        }
    }

    /// Takes the key off the list; false when it was not on it.
    @discardableResult
    package func remove(_ key: Data, from list: List) throws -> Bool {
        try database.write { db in
            try db.execute(sql: "DELETE FROM \(list.rawValue) WHERE signingKey = ?", arguments: [key])
            return db.changesCount > 0
        }
    }

    /// The list, the longest-standing first.
    package func all(_ list: List) throws -> [Choice] {
        try database.read { db in
            try Row.fetchAll(db, sql: "SELECT signingKey, name, since FROM \(list.rawValue) ORDER BY since, name").map {
                Choice(signingKey: $0["signingKey"], name: $0["name"], since: $0["since"])
            }
        }
    }

    package func keys(_ list: List) -> Set<Data> { Set(((try? all(list)) ?? []).map(\.signingKey)) }

    /// `unblock`: the key off the block list, and the time kept, so that what it wrote while
    /// blocked (sent again once it hears us) is never shown; false when it was not blocked.
    @discardableResult
    package func unblock(_ key: Data, now: Double) throws -> Bool {
        try database.write { db in
            try db.execute(sql: "DELETE FROM \(List.blocked.rawValue) WHERE signingKey = ?", arguments: [key])
            guard db.changesCount > 0 else { return false }
            try db.execute(sql: "INSERT OR REPLACE INTO unblockedPeer (signingKey, at) VALUES (?, ?)", arguments: [key, now])
            return true
        }
    }

    /// When each key once blocked was unblocked (the last time).
    package func unblockedTimes() -> [Data: Double] {
        let rows = (try? database.read { db in try Row.fetchAll(db, sql: "SELECT signingKey, at FROM unblockedPeer") }) ?? []
        return Dictionary(rows.map { ($0["signingKey"] as Data, $0["at"] as Double) }, uniquingKeysWith: max)
    }

    /// Mutes or unmutes a place (`room 1.2`); false when nothing changed.
    @discardableResult
    package func setMuted(place: String, _ muted: Bool, now: Double) throws -> Bool {
        try database.write { db in
            if muted {
                try db.execute(sql: "INSERT OR IGNORE INTO mutedPlace (place, since) VALUES (?, ?)", arguments: [place, now])
            } else {
                try db.execute(sql: "DELETE FROM mutedPlace WHERE place = ?", arguments: [place])
            }
            return db.changesCount > 0
        }
    }

    package func mutedPlaces() -> Set<String> {
        Set((try? database.read { db in try String.fetchAll(db, sql: "SELECT place FROM mutedPlace") }) ?? [])
    }

    /// Every key seen with a name (`bob`, `BOB`: names are matched without case) or, given
    /// `name#fingerprint`, that one key: whom `block NAME` could mean.
    package func seen(_ wanted: String) throws -> [Choice] {
        try database.read { db in
            try Row.fetchAll(db, sql: "SELECT signingKey, name, firstSeen FROM knownPeer WHERE name = ? ORDER BY firstSeen",
                             arguments: [PeerIdentity.split(wanted).name]).map { Choice(signingKey: $0["signingKey"], name: $0["name"], since: $0["firstSeen"]) }
        }.filter { PeerIdentity.answers(wanted, name: $0.name, signingKey: $0.signingKey) }
    }
}

extension TrustSchema {
    package static let blocksAndMutes = Migration("v21-blocks-and-mutes") { db in
        // The keys the user blocked (nothing of theirs is shown, stored or answered) and
        // muted (kept, but silent), with the name each had then; muted places (rooms).
        for table in [PeerChoiceStore.List.blocked.rawValue, PeerChoiceStore.List.muted.rawValue] {
            try db.create(table: table) { t in
                t.primaryKey("signingKey", .blob)
                t.column("name", .text).notNull()
                t.column("since", .double).notNull()
            }
        }
        try db.create(table: "mutedPlace") { t in
            t.primaryKey("place", .text)
            t.column("since", .double).notNull()
        }
    }
}

extension TrustSchema {
    /// When a key was unblocked: what it wrote before then (while blocked) is dropped when it
    /// comes again, never shown.
    package static let unblockedPeers = Migration("v27-unblocked-peers") { db in
        try db.create(table: "unblockedPeer") { t in
            t.primaryKey("signingKey", .blob)
            t.column("at", .double).notNull()
        }
    }
}
