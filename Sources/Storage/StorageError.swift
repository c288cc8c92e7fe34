/// What can go wrong with the data directory or the database, in words that name the file.
package enum StorageError: Error, Equatable, CustomStringConvertible {
    case cannotCreateDirectory(path: String, reason: String)
    case notADirectory(path: String)
    case unreadable(path: String, reason: String)
    case notADatabase(path: String)
    case corrupt(path: String)
    case foreignDatabase(path: String)
    case newerSchema(path: String, unknownMigrations: [String])
    case locked(path: String)
    /// A uniqueness or other constraint refused a write (callers turn it into their own words).
    case constraint(path: String, message: String)
    case sqlite(path: String, message: String)

    package var description: String {
        switch self {
        case .cannotCreateDirectory(let path, let reason):
            return "cannot create the data directory \(path): \(reason)"
        case .notADirectory(let path):
            return "\(path) is not a directory (use --data-dir to choose another place)"
        case .unreadable(let path, let reason):
            return "cannot open \(path): \(reason)"
        case .notADatabase(let path):
            return "\(path) is not an SQLite database; it was left untouched (move it away or use --data-dir)"
        case .corrupt(let path):
            return "\(path) is damaged (SQLite reports corruption); it was left untouched"
        case .foreignDatabase(let path):
            return "\(path) is an SQLite database of another program; it was left untouched"
        case .newerSchema(let path, let unknown):
            return "\(path) was written by a newer version of seance (schema \(unknown.joined(separator: ", "))); "
                + "refusing to open it so it is not damaged"
        case .locked(let path):
            return "\(path) is locked by another process; try again when it is done"
        case .constraint(let path, let message), .sqlite(let path, let message):
            return "\(path): \(message)"
        }
    }
}
