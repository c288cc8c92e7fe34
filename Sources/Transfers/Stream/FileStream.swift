import Crypto
import Foundation
import Glibc
import Wire

/// A file's bytes on a TCP connection between two hosts of one LAN: the way a transfer goes at
/// the link's speed (a datagram a chunk, each its own sealed frame and a turn of the engine,
/// capped it at a fortieth of it). The receiver, accepting, says in its answer (sealed in the
/// session) on which TCP port it takes the file and under which key: 32 random bytes for that
/// acceptance alone, never stored, so the stream has the session's forward secrecy. The
/// sender connects, says which transfer (its id, in the clear), and sends blocks sealed with
/// ChaCha20-Poly1305 under that key, each numbered (the nonce), each saying its offset; the
/// receiver writes each where it goes. A connection that cannot open its first block is
/// closed: only the peer the key was sealed to can. Anything wrong ends the stream, and the
/// transfer goes on in chunks, as through a broker.
///
///     id 16, then blocks: length 4 · sealed(offset 8 · bytes)   (the first: sealed("seance file stream"))
enum FileStream {
    /// Bytes a block carries at most.
    static let blockSize = 256 << 10
    /// The first block's words: it proves the key.
    static let hello = Array("seance file stream".utf8)
    /// How long a connection may wait for its peer before it is given up.
    static let timeout = 10.0

    enum Failure: Error, CustomStringConvertible {
        case io(String)
        case refused(String)

        var description: String {
            switch self {
            case .io(let reason): "the stream failed: \(reason)"
            case .refused(let reason): "the stream was refused: \(reason)"
            }
        }
    }

    /// Sealing in one direction: the key, and the number of the next block.
    struct Sealing {
        let key: SymmetricKey
        var counter: UInt64 = 0

        init(key: Data) { self.key = SymmetricKey(data: key) }

        private mutating func nonce() throws -> ChaChaPoly.Nonce {
            var bytes = [UInt8](repeating: 0, count: 12)
            for index in 0..<8 { bytes[4 + index] = UInt8(truncatingIfNeeded: counter >> (8 * UInt64(index))) }
            counter += 1
            return try ChaChaPoly.Nonce(data: bytes)
        }

        mutating func seal(_ plaintext: UnsafeRawBufferPointer) throws -> Data {
            let box = try ChaChaPoly.seal(plaintext, using: key, nonce: nonce())
            return box.ciphertext + box.tag
        }

        mutating func open(_ sealed: UnsafeRawBufferPointer) throws -> Data {
            guard sealed.count >= 16 else { throw Failure.refused("a block too short") }
            let box = try ChaChaPoly.SealedBox(nonce: nonce(), ciphertext: sealed[..<(sealed.count - 16)], tag: sealed[(sealed.count - 16)...])
            return try ChaChaPoly.open(box, using: key)
        }
    }

    /// A connected socket, read and written whole: by one thread (its own), while any may
    /// `shut` it.
    final class Connection: @unchecked Sendable {
        let fd: Int32
        private var buffer = [UInt8](repeating: 0, count: 1 << 20)
        private var start = 0, end = 0

        init(fd: Int32) {
            self.fd = fd
            var seconds = timeval(tv_sec: Int(FileStream.timeout), tv_usec: 0)
            setsockopt(fd, SOL_SOCKET, SO_RCVTIMEO, &seconds, socklen_t(MemoryLayout<timeval>.size))
            setsockopt(fd, SOL_SOCKET, SO_SNDTIMEO, &seconds, socklen_t(MemoryLayout<timeval>.size))
        }

        deinit { close(fd) }

        /// Ends it from any thread: whoever waits on it returns.
        func shut() { shutdown(fd, Int32(SHUT_RDWR)) }

        func write(_ bytes: UnsafeRawBufferPointer) throws {
            var written = 0
            while written < bytes.count {
                let n = send(fd, bytes.baseAddress! + written, bytes.count - written, Int32(MSG_NOSIGNAL))
                if n < 0 && errno == EINTR { continue }
                guard n > 0 else { throw Failure.io(String(cString: strerror(errno))) }
                written += n
            }
        }

        func write(_ bytes: [UInt8]) throws { try bytes.withUnsafeBytes { try write($0) } }

        /// Exactly `count` bytes.
        func read(_ count: Int) throws -> [UInt8] {
            var result = [UInt8]()
            result.reserveCapacity(count)
            while result.count < count {
                if start == end {
                    let n = buffer.withUnsafeMutableBytes { recv(fd, $0.baseAddress!, $0.count, 0) }
                    if n < 0 && errno == EINTR { continue }
                    guard n > 0 else { throw Failure.io(n == 0 ? "the peer closed it" : String(cString: strerror(errno))) }
                    (start, end) = (0, n)
                }
                let take = min(count - result.count, end - start)
                result += buffer[start..<(start + take)]
                start += take
            }
            return result
        }

        /// One sealed block: its length first, at most `limit`.
        func readBlock(limit: Int) throws -> [UInt8] {
            let length = try read(4).reduce(0) { $0 << 8 | Int($1) }
            guard (16...limit).contains(length) else { throw Failure.refused("a block of \(length) bytes") }
            return try read(length)
        }

        func writeBlock(_ sealed: Data) throws {
            var header: [UInt8] = []
            header.appendBigEndian(UInt32(sealed.count))
            try write(header)
            try sealed.withUnsafeBytes { try write($0) }
        }
    }

    /// A TCP connection to `host`:`port`, made within `timeout`.
    static func connect(host: String, port: UInt16) throws -> Connection {
        var address = sockaddr_in()
        address.sin_family = sa_family_t(AF_INET)
        address.sin_port = port.bigEndian
        guard inet_pton(AF_INET, host, &address.sin_addr) == 1 else { throw Failure.io("no IPv4 address: \(host)") }
        let fd = socket(AF_INET, Int32(SOCK_STREAM.rawValue | SOCK_CLOEXEC.rawValue | SOCK_NONBLOCK.rawValue), 0)
        guard fd >= 0 else { throw Failure.io(String(cString: strerror(errno))) }
        let connected = withUnsafePointer(to: &address) {
            $0.withMemoryRebound(to: sockaddr.self, capacity: 1) { Glibc.connect(fd, $0, socklen_t(MemoryLayout<sockaddr_in>.size)) }
        }
        if connected != 0 {
            guard errno == EINPROGRESS else {
                close(fd)
                throw Failure.io(String(cString: strerror(errno)))
            }
            var poller = pollfd(fd: fd, events: Int16(POLLOUT), revents: 0)
            var error: Int32 = 0
            var length = socklen_t(MemoryLayout<Int32>.size)
            // A lost SYN goes again after a second, then three: a lossy LAN needs more than one try.
            guard poll(&poller, 1, Int32(timeout * 1_000)) == 1, getsockopt(fd, SOL_SOCKET, SO_ERROR, &error, &length) == 0, error == 0 else {
                close(fd)
                throw Failure.io(error != 0 ? String(cString: strerror(error)) : "no answer within \(Int(timeout)) s")
            }
        }
        _ = fcntl(fd, F_SETFL, fcntl(fd, F_GETFL) & ~O_NONBLOCK)
        var size: Int32 = 4 << 20
        setsockopt(fd, SOL_SOCKET, SO_SNDBUF, &size, socklen_t(MemoryLayout<Int32>.size))
        return Connection(fd: fd)
    }
}
