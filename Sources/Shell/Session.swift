import Glibc
@_exported import Runtime
import Storage

/// What every command may use besides the terminal: the data directory, the database (opened
/// on first use, so commands that need none start fast) and the seeded random source.
public final class Session {
    public let dataDirectory: DataDirectory
    /// What the database is brought up to when first opened.
    public let schema: Schema
    public var random: SeededRandom
    /// Seconds since 1970; tests replace it.
    public var clock: () -> Double
    private var database: SeanceDatabase?

    public init(dataDirectory: DataDirectory, schema: Schema, random: SeededRandom, clock: @escaping () -> Double = Session.systemTime) {
        self.dataDirectory = dataDirectory
        self.schema = schema
        self.random = random
        self.clock = clock
    }

    public static func systemTime() -> Double {
        var now = timespec()
        clock_gettime(CLOCK_REALTIME, &now)
        return Double(now.tv_sec) + Double(now.tv_nsec) / 1e9
    }

    /// The database, opened and migrated on first use.
    public func openDatabase() throws(StorageError) -> SeanceDatabase {
        if let database { return database }
        try dataDirectory.create()
        let opened = try SeanceDatabase(path: dataDirectory.databasePath, schema: schema)
        database = opened
        return opened
    }
}
