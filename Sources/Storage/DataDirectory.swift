import Glibc

/// The directory that holds the database and the history file.
package struct DataDirectory: Sendable, Equatable {
    package let path: String

    package init(path: String) { self.path = path }

    /// `$XDG_DATA_HOME/seance`, else `~/.local/share/seance`.
    package static func defaultPath(environment: [String: String]) -> String {
        if let xdg = environment["XDG_DATA_HOME"], xdg.hasPrefix("/") { return xdg + "/seance" }
        let home = environment["HOME"].flatMap { $0.isEmpty ? nil : $0 } ?? "."
        return home + "/.local/share/seance"
    }

    package var databasePath: String { path + "/seance.sqlite" }
    package var historyPath: String { path + "/history" }

    /// Fails when the path exists and is not a directory (a missing one is fine: it is made
    /// when first needed).
    package func checkExisting() throws(StorageError) {
        var info = stat()
        if stat(path, &info) == 0, (info.st_mode & S_IFMT) != S_IFDIR { throw .notADirectory(path: path) }
    }

    /// Creates the directory (and missing parents) private to the user, mode 0700.
    package func create() throws(StorageError) {
        var partial = path.hasPrefix("/") ? "" : "."
        let components = path.split(separator: "/")
        for (index, component) in components.enumerated() {
            partial += "/" + component
            var info = stat()
            if stat(partial, &info) == 0 {
                if (info.st_mode & S_IFMT) != S_IFDIR { throw .notADirectory(path: partial) }
                continue
            }
            // Only the final directory is ours; parents get the usual 0755 like `mkdir -p`.
            let mode: mode_t = index == components.count - 1 ? 0o700 : 0o755
            if mkdir(partial, mode) != 0 && errno != EEXIST {
                throw .cannotCreateDirectory(path: path, reason: String(cString: strerror(errno)))
            }
        }
    }
}
