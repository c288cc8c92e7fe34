import Glibc

/// Held while a profile is online, one lock file per profile in the data directory: a second
/// shell that would go online with the same profile is refused. Two engines on one profile
/// would both number its conversations from what the database held when they started, give
/// out the same numbers and sequences, fail to store each other's, and have peers drop what
/// they took for copies. The lock (`flock`) ends with the process however it ends, `kill -9`
/// included; the file stays, empty of meaning once unlocked.
package final class ProfileLock {
    package enum Failure: Error, Equatable, CustomStringConvertible {
        /// Another process holds it (its id when it could be read).
        case held(byProcess: Int32?)
        case unavailable(path: String, reason: String)

        package var description: String {
            switch self {
            case .held(let pid?): "the profile is online in another seance (process \(pid))"
            case .held(nil): "the profile is online in another seance"
            case .unavailable(let path, let reason): "cannot lock \(path): \(reason)"
            }
        }
    }

    private var fd: Int32

    /// Takes the lock of the profile whose key is `id` (hex), without waiting.
    package init(in directory: DataDirectory, id: String) throws(Failure) {
        let path = directory.path + "/online-\(id).lock"
        fd = open(path, O_RDWR | O_CREAT | O_CLOEXEC, 0o600)
        guard fd >= 0 else { throw .unavailable(path: path, reason: String(cString: strerror(errno))) }
        guard flock(fd, LOCK_EX | LOCK_NB) == 0 else {
            let held = errno == EWOULDBLOCK
            let reason = String(cString: strerror(errno))
            var bytes = [UInt8](repeating: 0, count: 16)
            let count = read(fd, &bytes, bytes.count)
            close(fd)
            fd = -1
            guard held else { throw .unavailable(path: path, reason: reason) }
            throw .held(byProcess: count > 0 ? Int32(String(decoding: bytes[..<count], as: UTF8.self).prefix { $0 != "\n" }) : nil)
        }
        // Who holds it, for the message of the one refused.
        let pid = Array("\(getpid())\n".utf8)
        _ = ftruncate(fd, 0)
        _ = pwrite(fd, pid, pid.count, 0)
    }

    /// Lets it go (a second call does nothing).
    package func release() {
        guard fd >= 0 else { return }
        _ = ftruncate(fd, 0)
        close(fd)
        fd = -1
    }

    deinit { release() }
}
