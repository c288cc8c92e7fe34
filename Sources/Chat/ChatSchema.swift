import Nearby
import GRDB
import Storage

/// Chat's tables: keys seen nearby, and which one is trusted for each name.
public enum ChatSchema {
    /// Every migration of this feature, in order.
    public static let migrations = [knownPeers, trustedKeys]

    public static let knownPeers = Migration("v5-known-peers") { db in
        // Every key seen nearby with its name: a known name with a new key is flagged.
        try db.create(table: "knownPeer") { t in
            t.primaryKey("signingKey", .blob)
            t.column("name", .text).notNull().collate(.nocase).indexed()
            t.column("firstSeen", .double).notNull()
        }
    }

    /// Trust on first use.
    public static let trustedKeys = Migration("v9-trusted-keys") { db in
        // Trust on first use: the key first seen for a name (or the one `trust` chose) is the
        // trusted one; any other key with that name is flagged, every time.
        try db.execute(sql: "ALTER TABLE knownPeer ADD COLUMN trusted BOOLEAN NOT NULL DEFAULT 0")
        try db.execute(sql: """
            UPDATE knownPeer SET trusted = 1 WHERE signingKey IN
            (SELECT signingKey FROM (SELECT signingKey, row_number() OVER (PARTITION BY name ORDER BY firstSeen) AS n
                                     FROM knownPeer) WHERE n = 1)
            """)
    }
}
