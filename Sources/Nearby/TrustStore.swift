import Foundation
import GRDB
import Storage

/// Trust on first use (SPEC §4): every key seen nearby with its name; the first key seen for a
/// name (or the one `trust` chose) is trusted, and any other key using that name is flagged
/// every time it appears. `Online` records each arrival here.
package struct TrustStore: Sendable {
    package let database: SeanceDatabase

    package init(database: SeanceDatabase) { self.database = database }

    /// Keys remembered at most. Beyond it new keys are checked but not recorded: the records
    /// that matter most (the first key seen for a name) are the old ones, and a flood of new
    /// keys must not push them out.
    package static let limit = 5_000

    /// Records the key under its name (the first key of a name is trusted) and returns the
    /// handle of the trusted key when this one is another: it is flagged every time it appears,
    /// never the trusted one. A key we have a conversation with is never flagged. A name that
    /// looks like a trusted one (`NameRules.skeleton`: `bob`, `BOB`, `bоb` with a
    /// Cyrillic о, `b0b`) counts as that name: another key using it is flagged the same way.
    package func remember(_ peer: Peer) -> Flag? { remember([peer])[0] }

    /// Why a key is flagged: the handle of the key trusted for its name, and whether the user
    /// verified that one (then the warning is loud, whatever conversation there is, and what is
    /// written to this key waits for the user's decision).
    package struct Flag: Equatable, Sendable {
        package var trusted: String
        package var verified: Bool
    }

    /// As `remember(_:)` for each peer, in one transaction.
    package func remember(_ peers: [Peer]) -> [Flag?] {
        (try? database.write { db in try peers.map { try remember($0, in: db) } }) ?? peers.map { _ in nil }
    }

    private func remember(_ peer: Peer, in db: Database) throws -> Flag? {
        let skeleton = NameRules.skeleton(peer.name)
        try db.execute(sql: """
            INSERT OR IGNORE INTO knownPeer (signingKey, name, firstSeen, trusted, skeleton)
            SELECT ?, ?, ?, NOT EXISTS (SELECT 1 FROM knownPeer WHERE skeleton = ? AND trusted), ?
            WHERE (SELECT count(*) FROM knownPeer) < ?
            """, arguments: [peer.signingKey, peer.name, peer.lastSeen, skeleton, skeleton, Self.limit])
        let trusted = try Row.fetchOne(db, sql: """
            SELECT signingKey, name, verified FROM knownPeer WHERE skeleton = ? AND trusted ORDER BY firstSeen LIMIT 1
            """, arguments: [skeleton])
        guard let trusted, let key = trusted["signingKey"] as Data?, key != peer.signingKey else { return nil }
        let flag = Flag(trusted: PeerIdentity.handle(name: trusted["name"], signingKey: key), verified: trusted["verified"])
        if flag.verified { return flag }
        let talkedTo = try Bool.fetchOne(db, sql: "SELECT EXISTS (SELECT 1 FROM conversation WHERE peerKey = ?)",
                                         arguments: [peer.signingKey]) ?? false
        return talkedTo ? nil : flag
    }

    /// `verify NAME --yes`: the user compared the safety number; this key is the verified (and
    /// trusted) one for its name and those that look like it, and no other is.
    package func verify(_ key: Data, name: String, now: Double) throws {
        let skeleton = NameRules.skeleton(name)
        try database.write { db in
            try db.execute(sql: "INSERT OR IGNORE INTO knownPeer (signingKey, name, firstSeen, trusted, skeleton) VALUES (?, ?, ?, 0, ?)",
                           arguments: [key, name, now, skeleton])
            try db.execute(sql: "UPDATE knownPeer SET trusted = (signingKey = ?1), verified = (signingKey = ?1) WHERE skeleton = ?2 OR signingKey = ?1",
                           arguments: [key, skeleton])
        }
    }

    /// `unverify NAME`: the key stays trusted for its name, no longer verified. False when it was not.
    package func unverify(_ key: Data) throws -> Bool {
        try database.write { db in
            try db.execute(sql: "UPDATE knownPeer SET verified = 0 WHERE signingKey = ? AND verified", arguments: [key])
            return db.changesCount > 0
        }
    }

    /// The keys the user verified.
    package func verifiedKeys() -> Set<Data> {
        (try? database.read { db in Set(try Data.fetchAll(db, sql: "SELECT signingKey FROM knownPeer WHERE verified")) }) ?? []
    }

    /// Keys that use the name (or a look-alike) of a key the user verified: what is written to
    /// them waits until the user decides (`verify` the new key, or `trust` it).
    package func heldKeys() -> Set<Data> {
        (try? database.read { db in
            Set(try Data.fetchAll(db, sql: """
                SELECT other.signingKey FROM knownPeer AS other
                JOIN knownPeer AS verified ON verified.skeleton = other.skeleton AND verified.verified
                WHERE other.signingKey != verified.signingKey
                """))
        }) ?? []
    }

    /// The key trusted for `name` (or a name that looks like it), if any key was seen with it.
    package func trustedKey(forName name: String) -> Data? {
        (try? database.read { db in
            try Data.fetchOne(db, sql: "SELECT signingKey FROM knownPeer WHERE skeleton = ? AND trusted ORDER BY firstSeen LIMIT 1",
                              arguments: [NameRules.skeleton(name)])
        }) ?? nil
    }

    package enum TrustError: Error, Equatable, CustomStringConvertible {
        case noFingerprint
        case unknownKey(String)

        package var description: String {
            switch self {
            case .noFingerprint: return "give the key to trust as name#fingerprint (see nearby)"
            case .unknownKey(let handle): return "no key \(handle) has been seen nearby"
            }
        }
    }

    /// `trust NAME#FP`: that key becomes the trusted one for its name; its handle.
    package func trust(_ handle: String) throws -> String {
        let (name, fingerprint) = PeerIdentity.split(handle)
        guard let fingerprint else { throw TrustError.noFingerprint }
        return try database.write { db in
            let keys = try Data.fetchAll(db, sql: "SELECT signingKey FROM knownPeer WHERE name = ?", arguments: [name])
            guard let key = keys.first(where: { PeerIdentity.fingerprint(of: $0) == fingerprint }) else {
                throw TrustError.unknownKey(handle)
            }
            // Trusting another key is the user's decision about a verified name too: the key
            // verified before is verified no longer.
            try db.execute(sql: "UPDATE knownPeer SET trusted = (signingKey = ?1), verified = (verified AND signingKey = ?1) WHERE skeleton = ?2",
                           arguments: [key, NameRules.skeleton(name)])
            return PeerIdentity.handle(name: name, signingKey: key)
        }
    }
}

/// The table of trust on first use.
package enum TrustSchema {
    /// Every migration of this table, in order.
    package static let migrations = [knownPeers, trustedKeys, lookAlikes, blocksAndMutes, verifiedKeys, unblockedPeers]

    package static let knownPeers = Migration("v5-known-peers") { db in
        // Every key seen nearby with its name: a known name with a new key is flagged.
        try db.create(table: "knownPeer") { t in
            t.primaryKey("signingKey", .blob)
            t.column("name", .text).notNull().collate(.nocase).indexed()
            t.column("firstSeen", .double).notNull()
        }
    }

    package static let trustedKeys = Migration("v9-trusted-keys") { db in
        // Trust on first use: the key first seen for a name (or the one `trust` chose) is the
        // trusted one; any other key with that name is flagged, every time.
        try db.execute(sql: "ALTER TABLE knownPeer ADD COLUMN trusted BOOLEAN NOT NULL DEFAULT 0")
        try db.execute(sql: """
            UPDATE knownPeer SET trusted = 1 WHERE signingKey IN
            (SELECT signingKey FROM (SELECT signingKey, row_number() OVER (PARTITION BY name ORDER BY firstSeen) AS n
                                     FROM knownPeer) WHERE n = 1)
            """)
    }

    package static let lookAlikes = Migration("v20-look-alike-names") { db in
        // What each name looks like (`NameRules.skeleton`): one trusted key per look, so that
        // `bоb` with a Cyrillic о is flagged beside a trusted `bob`, as `BOB` was. Of keys
        // trusted under names that now look alike, the first seen stays trusted.
        try db.execute(sql: "ALTER TABLE knownPeer ADD COLUMN skeleton TEXT NOT NULL DEFAULT ''")
        let rows = try Row.fetchAll(db, sql: "SELECT signingKey, name FROM knownPeer")
        for row in rows {
            try db.execute(sql: "UPDATE knownPeer SET skeleton = ? WHERE signingKey = ?",
                           arguments: [NameRules.skeleton(row["name"]), row["signingKey"] as Data])
        }
        try db.execute(sql: "CREATE INDEX knownPeer_skeleton ON knownPeer(skeleton)")
        try db.execute(sql: """
            UPDATE knownPeer SET trusted = 0 WHERE trusted AND signingKey NOT IN
            (SELECT signingKey FROM (SELECT signingKey, row_number() OVER (PARTITION BY skeleton ORDER BY firstSeen) AS n
                                     FROM knownPeer WHERE trusted) WHERE n = 1)
            """)
    }
}

extension TrustSchema {
    package static let verifiedKeys = Migration("v24-verified-keys") { db in
        // Keys whose safety number the user compared (`verify`): another key using the name is
        // a loud warning, and what is written to it waits for the user.
        try db.execute(sql: "ALTER TABLE knownPeer ADD COLUMN verified BOOLEAN NOT NULL DEFAULT 0")
    }
}
