import Storage

/// What every command may use besides the terminal: the data directory, the database (opened
/// on first use, so commands that need none start fast) and the seeded random source.
public final class Session {
    public let dataDirectory: DataDirectory
    public var random: SeededRandom
    private var database: SeanceDatabase?

    public init(dataDirectory: DataDirectory, random: SeededRandom) {
        self.dataDirectory = dataDirectory
        self.random = random
    }

    /// The database, opened and migrated on first use.
    public func openDatabase() throws(StorageError) -> SeanceDatabase {
        if let database { return database }
        try dataDirectory.create()
        let opened = try SeanceDatabase(path: dataDirectory.databasePath)
        database = opened
        return opened
    }
}
