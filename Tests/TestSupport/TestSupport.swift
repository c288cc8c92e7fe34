import Foundation
import Glibc
@_exported import Storage

/// A fresh private directory under /tmp, named `seance-LABEL-XXXXXX`; the caller removes it
/// (`removeDirectory`) when done.
package func temporaryDirectory(_ label: String) -> String {
    var template = Array("/tmp/seance-\(label)-XXXXXX".utf8CString)
    return template.withUnsafeMutableBufferPointer { String(cString: mkdtemp($0.baseAddress!)!) }
}

/// Removes a directory made by `temporaryDirectory`, with everything in it.
package func removeDirectory(_ path: String) {
    precondition(path.hasPrefix("/tmp/seance-"), "only test directories are removed")
    try? FileManager.default.removeItem(atPath: path)
}

/// A database with the tables of `schema` (a feature's own, or every one: `TestWorld`).
package func testDatabase(_ path: String, schema: Schema, busyTimeout: Double = 5) throws(StorageError) -> SeanceDatabase {
    try SeanceDatabase(path: path, schema: schema, busyTimeout: busyTimeout)
}

/// A socket of `type` (`SOCK_DGRAM`, `SOCK_STREAM`) bound to 127.0.0.1 on a port the system
/// chose, listening when it is a stream: a peer or a broker a test plays. Nil, with errno, when
/// it cannot be had.
package func loopbackSocket(_ type: __socket_type) -> (fd: Int32, port: UInt16)? {
    let fd = socket(AF_INET, Int32(type.rawValue), 0)
    guard fd >= 0 else { return nil }
    var address = sockaddr_in()
    address.sin_family = sa_family_t(AF_INET)
    address.sin_addr.s_addr = inet_addr("127.0.0.1")
    var length = socklen_t(MemoryLayout<sockaddr_in>.size)
    let ready = withUnsafeMutablePointer(to: &address) {
        $0.withMemoryRebound(to: sockaddr.self, capacity: 1) { raw in
            bind(fd, raw, length) == 0 && (type != SOCK_STREAM || listen(fd, 1) == 0) && getsockname(fd, raw, &length) == 0
        }
    }
    guard ready else {
        let saved = errno
        close(fd)
        errno = saved
        return nil
    }
    return (fd, UInt16(bigEndian: address.sin_port))
}

/// How a child process ended, or that it had not within the time allowed.
package enum ExitOutcome: Equatable, Sendable {
    case exited(Int32)
    case signalled(Int32)
    case stillRunning

    /// The exit status, or the signal as `Process.terminationStatus` gives it.
    package var status: Int32? {
        switch self {
        case .exited(let code), .signalled(let code): return code
        case .stillRunning: return nil
        }
    }
}

/// Bytes from hexadecimal digits, two a byte (what the Python peers print).
package func bytes(_ hex: some StringProtocol) -> [UInt8] {
    var result: [UInt8] = []
    var index = hex.startIndex
    while index < hex.endIndex, let next = hex.index(index, offsetBy: 2, limitedBy: hex.endIndex) {
        result.append(UInt8(hex[index..<next], radix: 16)!)
        index = next
    }
    return result
}

/// Hexadecimal digits, two a byte (what the Python peers read).
package func hex(_ bytes: some Sequence<UInt8>) -> String { bytes.map { String(format: "%02x", $0) }.joined() }
