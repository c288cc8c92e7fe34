import Glibc
import Runtime

/// Whole small files read at once: images, password files, the config file.
package enum FileContents {
    package struct Failure: Error, Equatable, CustomStringConvertible {
        package let path: String
        package let reason: String
        /// The file does not exist (as opposed to existing but being unreadable).
        package let isMissing: Bool

        package var description: String { "cannot read \(path): \(reason)" }
    }

    /// The largest file read whole (a 50-megapixel BMP is 150 MB).
    package static let defaultLimit = 256 << 20

    /// Reads the whole file. It is opened without blocking and checked before any byte is read,
    /// so a FIFO, a device or a directory is refused at once instead of hanging or flooding.
    package static func read(_ path: String, limit: Int = defaultLimit) throws(Failure) -> [UInt8] {
        func failure(_ reason: String? = nil) -> Failure {
            let code = errno
            return Failure(path: path, reason: reason ?? String(cString: strerror(code)), isMissing: reason == nil && code == ENOENT)
        }
        let fd = open(path, O_RDONLY | O_NONBLOCK | O_CLOEXEC)
        guard fd >= 0 else { throw failure() }
        defer { close(fd) }
        var info = stat()
        guard fstat(fd, &info) == 0 else { throw failure() }
        if let kind = irregularKind(info.st_mode) { throw failure("it is \(kind), not a regular file") }
        guard Int(info.st_size) <= limit else { throw failure("it is larger than \(limit >> 20) MB") }
        // Back to blocking reads for the regular file (O_NONBLOCK was only for opening).
        _ = fcntl(fd, F_SETFL, fcntl(fd, F_GETFL) & ~O_NONBLOCK)
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
            guard bytes.count <= limit else { throw failure("it is larger than \(limit >> 20) MB") }
        }
        return bytes
    }

    /// Reads a stream once, to its end: a pipe (`/dev/stdin` under `|`, `<(pass show x)`), a
    /// FIFO, or standard input (`fd`). Bounded in size, and in time: a stream nothing is
    /// written to is an error after `timeout` seconds, not a hang.
    package static func readStream(_ path: String, fd given: Int32? = nil, limit: Int = 64 << 10,
                                   timeout: Double = 30) throws(Failure) -> [UInt8] {
        func failure(_ reason: String? = nil) -> Failure {
            Failure(path: path, reason: reason ?? String(cString: strerror(errno)), isMissing: reason == nil && errno == ENOENT)
        }
        let fd = given ?? open(path, O_RDONLY | O_NONBLOCK | O_CLOEXEC)
        guard fd >= 0 else { throw failure() }
        defer { if given == nil { close(fd) } }
        var bytes: [UInt8] = []
        var chunk = [UInt8](repeating: 0, count: 4_096)
        let deadline = SystemTime.monotonic() + timeout
        while true {
            let left = deadline - SystemTime.monotonic()
            guard left > 0 else {
                let seconds = timeout == timeout.rounded() ? String(Int(timeout)) : String(timeout)
                throw failure("nothing came, or it did not end, within \(seconds) s")
            }
            var poller = pollfd(fd: fd, events: Int16(POLLIN), revents: 0)
            let ready = poll(&poller, 1, Int32(left * 1000))
            if ready < 0 && errno != EINTR { throw failure() }
            guard ready > 0 else { continue }
            let n = Glibc.read(fd, &chunk, chunk.count)
            if n < 0 {
                if errno == EINTR || errno == EAGAIN { continue }
                throw failure()
            }
            if n == 0 { return bytes }
            bytes += chunk[0..<n]
            guard bytes.count <= limit else { throw failure("it holds more than \(limit >> 10) KB") }
        }
    }

    /// Whether `path` is a stream to read once (a pipe, a FIFO, a terminal) rather than a file.
    package static func isStream(_ path: String) -> Bool {
        var info = stat()
        guard stat(path, &info) == 0 else { return false }
        return info.st_mode & S_IFMT == S_IFIFO || info.st_mode & S_IFMT == S_IFCHR
    }

    /// The file as UTF-8 text (invalid sequences replaced). Text files here are small.
    package static func text(_ path: String, limit: Int = 1 << 20) throws(Failure) -> String {
        String(decoding: try read(path, limit: limit), as: UTF8.self)
    }

    /// What a file of `mode` is, in words, when it is not a regular file.
    package static func irregularKind(_ mode: mode_t) -> String? {
        switch mode & S_IFMT {
        case S_IFREG: return nil
        case S_IFDIR: return "a directory"
        case S_IFIFO: return "a named pipe (FIFO)"
        case S_IFCHR, S_IFBLK: return "a device"
        case S_IFSOCK: return "a socket"
        default: return "not a regular file"
        }
    }
}
