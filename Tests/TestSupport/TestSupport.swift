import App
import Foundation
import Glibc
@_exported import Storage

/// A fresh private directory under /tmp, named `seance-LABEL-XXXXXX`; the caller removes it
/// (`removeDirectory`) when done.
public func temporaryDirectory(_ label: String) -> String {
    var template = Array("/tmp/seance-\(label)-XXXXXX".utf8CString)
    return template.withUnsafeMutableBufferPointer { String(cString: mkdtemp($0.baseAddress!)!) }
}

/// Removes a directory made by `temporaryDirectory`, with everything in it.
public func removeDirectory(_ path: String) {
    precondition(path.hasPrefix("/tmp/seance-"), "only test directories are removed")
    try? FileManager.default.removeItem(atPath: path)
}

/// A database with every feature's tables, as the program opens it.
public func testDatabase(_ path: String, busyTimeout: Double = 5) throws(StorageError) -> SeanceDatabase {
    try SeanceDatabase(path: path, schema: .seance, busyTimeout: busyTimeout)
}
