import Storage
import Testing
@testable import App

/// A released migration never changes name or place: databases in the field record these
/// names, and a renamed one would be run again (or refused as unknown). New ones go at the end.
@Suite struct ReleasedMigrationsTests {
    @Test func releasedMigrationNamesArePinned() {
        let released = ["v1-settings", "v2-zombies", "v3-visions", "v4-profiles", "v5-known-peers", "v6-conversations",
                        "v7-login-slots", "v8-message-numbers", "v9-trusted-keys", "v10-store", "v11-curses", "v12-rooms",
                        "v13-unread-by-peer", "v14-one-conversation-index", "v15-pages-by-number", "v16-delivered-by-counter",
                        "v17-read-times", "v18-search", "v19-search-by-range", "v20-look-alike-names", "v21-blocks-and-mutes"]
        #expect(Array(Schema.seance.names.prefix(released.count)) == released)
    }

    /// Each feature owns its migrations; the global order lists every one of them, each once,
    /// and a feature's own come in its own order.
    @Test func everyFeaturesMigrationsAreInTheGlobalOrder() {
        let order = Schema.seance.names
        #expect(Set(order) == Set(Schema.features.flatMap { $0.map(\.name) }))
        #expect(order.count == Schema.features.map(\.count).reduce(0, +))
        for feature in Schema.features {
            let positions = feature.map { order.firstIndex(of: $0.name) ?? -1 }
            #expect(positions == positions.sorted())
        }
    }
}
