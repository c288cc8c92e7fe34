import App
@_exported import TestSupport

/// A database with every feature's tables, as the program opens it.
package func testDatabase(_ path: String, busyTimeout: Double = 5) throws(StorageError) -> SeanceDatabase {
    try testDatabase(path, schema: .seance, busyTimeout: busyTimeout)
}
