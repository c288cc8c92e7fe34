import Crypto
import Foundation
import Glibc
import Storage
import Terminal

/// Where transfers' bytes are: a received file is a file of its own in the data directory's
/// `transfers` folder, named by its transfer's number, each chunk written at its offset as it
/// comes (the folder and its files private); a file of ours is the user's own, read where it is
/// and never copied. The database says how much of a received file is stored (`stored`), and
/// that is only ever said of bytes already written here.
package struct TransferFiles: Sendable {
    package let directory: String

    package init(database: SeanceDatabase) { directory = (database.path as NSString).deletingLastPathComponent + "/transfers" }

    /// Where transfer `number` of theirs is kept.
    package func path(of number: Int64) -> String { directory + "/\(number)" }

    package enum Failure: Error, Equatable, CustomStringConvertible {
        case io(path: String, reason: String)
        /// The user's file is no longer what was offered.
        case changed(path: String)
        /// Where it was to go, a file is: seance never writes over one.
        case exists(path: String)

        package var description: String {
            switch self {
            case .io(let path, let reason): return "\(path): \(reason)"
            case .changed(let path): return "\(path) changed (or went) since it was sent"
            case .exists(let path): return "\(path) exists: seance never writes over a file"
            }
        }
    }

    private func failure(_ path: String) -> Failure { .io(path: path, reason: String(cString: strerror(errno))) }

    /// Writes `bytes` at `offset` of transfer `number`'s file (made if new).
    package func write(_ bytes: [UInt8], at offset: Int, to number: Int64) throws(Failure) {
        if mkdir(directory, 0o700) != 0 && errno != EEXIST { throw failure(directory) }
        let path = path(of: number)
        let fd = open(path, O_WRONLY | O_CREAT | O_CLOEXEC, 0o600)
        guard fd >= 0 else { throw failure(path) }
        defer { close(fd) }
        var written = 0
        while written < bytes.count {
            let n = bytes.withUnsafeBytes { pwrite(fd, $0.baseAddress! + written, bytes.count - written, off_t(offset + written)) }
            if n < 0 && errno == EINTR { continue }
            guard n > 0 else { throw failure(path) }
            written += n
        }
    }

    /// What a file of ours was when it was sent: a later read finds it the same or fails.
    package struct Source: Equatable, Sendable {
        package var size: Int
        package var modified: Int64

        init(_ info: stat) {
            size = Int(info.st_size)
            modified = Int64(info.st_mtim.tv_sec) * 1_000_000_000 + Int64(info.st_mtim.tv_nsec)
        }

        package init(size: Int, modified: Int64) {
            self.size = size
            self.modified = modified
        }
    }

    /// `ranges` (offset, count) of the file at `path`, read with one open; when `source` is
    /// given, the file must still be as it was.
    package func read(_ path: String, _ ranges: [(offset: Int, count: Int)], as source: Source? = nil) throws(Failure) -> [[UInt8]] {
        let fd = open(path, O_RDONLY | O_CLOEXEC)
        guard fd >= 0 else { throw errno == ENOENT && source != nil ? .changed(path: path) : failure(path) }
        defer { close(fd) }
        if let source {
            var info = stat()
            guard fstat(fd, &info) == 0 else { throw failure(path) }
            guard Source(info) == source else { throw .changed(path: path) }
        }
        return try ranges.map { (offset, count) throws(Failure) in
            var bytes = [UInt8](repeating: 0, count: count)
            var filled = 0
            while filled < count {
                let n = bytes.withUnsafeMutableBytes { pread(fd, $0.baseAddress! + filled, count - filled, off_t(offset + filled)) }
                if n < 0 && errno == EINTR { continue }
                guard n >= 0 else { throw failure(path) }
                guard n > 0 else { throw source != nil ? .changed(path: path) : .io(path: path, reason: "it is shorter than it should be") }
                filled += n
            }
            return bytes
        }
    }

    /// Reads the file at `path` once, a mebibyte at a time: its SHA-256, its size, the first
    /// `head` bytes (enough to know a picture's size: a JPEG says it after its EXIF), and what
    /// it was (`Source`) when opened.
    package func summary(of path: String, head: Int = 0) throws(Failure) -> (sha256: Data, size: Int, head: [UInt8], source: Source) {
        let fd = open(path, O_RDONLY | O_CLOEXEC)
        guard fd >= 0 else { throw failure(path) }
        defer { close(fd) }
        var info = stat()
        guard fstat(fd, &info) == 0 else { throw failure(path) }
        var hash = SHA256()
        var size = 0, start: [UInt8] = []
        var buffer = [UInt8](repeating: 0, count: 1 << 20)
        while true {
            let n = buffer.withUnsafeMutableBytes { Glibc.read(fd, $0.baseAddress!, $0.count) }
            if n < 0 && errno == EINTR { continue }
            guard n >= 0 else { throw failure(path) }
            if n == 0 { break }
            buffer.withUnsafeBytes { hash.update(bufferPointer: UnsafeRawBufferPointer(rebasing: $0[..<n])) }
            if start.count < head { start += buffer[..<min(n, head - start.count)] }
            size += n
        }
        return (Data(hash.finalize()), size, start, Source(info))
    }

    /// The whole file at `path` (a picture to draw), up to `limit` bytes.
    package func contents(_ path: String, limit: Int) throws(Failure) -> [UInt8] {
        do throws(FileContents.Failure) { return try FileContents.read(path, limit: limit) } catch { throw .io(path: path, reason: error.reason) }
    }

    /// Takes transfer `number`'s file away, if there is one.
    package func remove(_ number: Int64) { unlink(path(of: number)) }

    /// Moves the file at `from` to `to` (a path that must not exist): a rename on the same file
    /// system, else a copy and the original removed. Never over a file.
    package static func move(_ from: String, to: String) throws(Failure) {
        // link + unlink rather than rename: rename would replace a file made there meanwhile.
        if link(from, to) == 0 {
            unlink(from)
            return
        }
        guard errno == EXDEV || errno == EPERM || errno == EMLINK || errno == ENOTSUP else {
            throw errno == EEXIST ? .exists(path: to) : .io(path: to, reason: String(cString: strerror(errno)))
        }
        try copy(from, to: to)
        unlink(from)
    }

    /// FICLONE: `_IOW(0x94, 9, int)`.
    static let clone: UInt = 0x4004_9409

    /// Copies the file at `from` to `to` (a path that must not exist): a clone where the file
    /// system can make one, else by reading and writing.
    package static func copy(_ from: String, to: String) throws(Failure) {
        let input = open(from, O_RDONLY | O_CLOEXEC)
        guard input >= 0 else { throw .io(path: from, reason: String(cString: strerror(errno))) }
        defer { close(input) }
        let output = open(to, O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC, 0o644)
        guard output >= 0 else { throw errno == EEXIST ? .exists(path: to) : .io(path: to, reason: String(cString: strerror(errno))) }
        // A clone (btrfs, XFS: the blocks shared until either changes), else bytes read and written.
        let copied = ioctl(output, Self.clone, input) == 0 || copyByReading(input, output)
        let reason = String(cString: strerror(errno))
        close(output)
        guard copied else {
            unlink(to)
            throw .io(path: to, reason: reason)
        }
    }

    private static func copyByReading(_ input: Int32, _ output: Int32) -> Bool {
        guard lseek(input, 0, SEEK_SET) == 0, ftruncate(output, 0) == 0, lseek(output, 0, SEEK_SET) == 0 else { return false }
        var buffer = [UInt8](repeating: 0, count: 1 << 20)
        while true {
            let n = buffer.withUnsafeMutableBytes { Glibc.read(input, $0.baseAddress!, $0.count) }
            if n < 0 && errno == EINTR { continue }
            guard n >= 0 else { return false }
            if n == 0 { return true }
            var written = 0
            while written < n {
                let w = buffer.withUnsafeBytes { Glibc.write(output, $0.baseAddress! + written, n - written) }
                if w < 0 && errno == EINTR { continue }
                guard w > 0 else { return false }
                written += w
            }
        }
    }

    /// Bytes free for an unprivileged user on the file system of the transfers folder.
    package func freeSpace() -> Int? {
        var info = statvfs()
        let place = access(directory, F_OK) == 0 ? directory : (directory as NSString).deletingLastPathComponent
        guard statvfs(place, &info) == 0 else { return nil }
        return Int(info.f_bavail) * Int(info.f_frsize)
    }
}
