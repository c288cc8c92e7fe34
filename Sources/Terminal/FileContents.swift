import Glibc

/// Whole small files read at once: images, password files, the config file.
public enum FileContents {
    public struct Failure: Error, Equatable, CustomStringConvertible {
        public let path: String
        public let reason: String
        /// The file does not exist (as opposed to existing but being unreadable).
        public let isMissing: Bool

        public var description: String { "cannot read \(path): \(reason)" }
    }

    public static func read(_ path: String) throws(Failure) -> [UInt8] {
        func failure(_ reason: String? = nil) -> Failure {
            let code = errno
            return Failure(path: path, reason: reason ?? String(cString: strerror(code)), isMissing: reason == nil && code == ENOENT)
        }
        let fd = open(path, O_RDONLY)
        guard fd >= 0 else { throw failure() }
        defer { close(fd) }
        var info = stat()
        guard fstat(fd, &info) == 0 else { throw failure() }
        guard (info.st_mode & S_IFMT) == S_IFREG else { throw failure("not a regular file") }
        var bytes: [UInt8] = []
        bytes.reserveCapacity(Int(info.st_size))
        var chunk = [UInt8](repeating: 0, count: 1 << 16)
        while true {
            let n = Glibc.read(fd, &chunk, chunk.count)
            if n < 0 {
                if errno == EINTR { continue }
                throw failure()
            }
            if n == 0 { break }
            bytes += chunk[0..<n]
        }
        return bytes
    }

    /// The file as UTF-8 text (invalid sequences replaced).
    public static func text(_ path: String) throws(Failure) -> String {
        String(decoding: try read(path), as: UTF8.self)
    }
}
