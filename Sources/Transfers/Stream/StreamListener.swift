import Crypto
import Foundation
import Glibc
import Runtime
import Synchronization

/// Where files of theirs come on streams (`FileStream`): a TCP socket on the port the LAN's
/// datagrams come to, a thread waiting on it, and a thread for each connection a transfer we
/// accepted expects (at most `connections` at once). A connection says which transfer it is;
/// the engine says whether one is expected, under which key, into which file and from where
/// (`Expected`); every other is closed at once. Blocks are written where they go as they come,
/// the file's hash kept as it grows; how far it has come, and its end, go to the engine.
final class StreamListener: Sendable {
    struct Expected: Sendable {
        var key: Data
        var path: String
        var size: Int
        /// Bytes already stored: the stream starts there.
        var from: Int
    }

    /// What the engine is told, from a connection's thread: of which transfer, and under
    /// which key (a transfer accepted again expects a stream under a new one, and an older
    /// connection of it, not yet ended, speaks for nothing).
    struct Events: Sendable {
        /// Which transfer a connection is for (nil: none expected: it is closed).
        var expect: @Sendable (Data) -> Expected?
        /// Bytes stored so far, from the first (written into the file, not yet said to be).
        var progress: @Sendable (_ id: Data, _ key: Data, Int) -> Void
        /// Every byte is in: the file's SHA-256; or the stream ended before, and why.
        var ended: @Sendable (_ id: Data, _ key: Data, Result<Data, FileStream.Failure>) -> Void
    }

    static let connections = 8
    /// How often a connection tells the engine how far it has come.
    static let reportEvery = 8 << 20, reportInterval = 0.1

    let port: UInt16
    private let fd: Int32
    private let open = Mutex<[ObjectIdentifier: FileStream.Connection]>([:])
    private let serving = Atomic<Int>(0)

    /// Listens on every address at `port` (the LAN's own, for TCP); nil when that port is taken.
    init?(port: UInt16, engine: Engine, events: Events) {
        let fd = socket(AF_INET, Int32(SOCK_STREAM.rawValue | SOCK_CLOEXEC.rawValue), 0)
        guard fd >= 0 else { return nil }
        var yes: Int32 = 1
        setsockopt(fd, SOL_SOCKET, SO_REUSEADDR, &yes, socklen_t(MemoryLayout<Int32>.size))
        var address = sockaddr_in()
        address.sin_family = sa_family_t(AF_INET)
        address.sin_port = port.bigEndian
        let bound = withUnsafePointer(to: &address) {
            $0.withMemoryRebound(to: sockaddr.self, capacity: 1) { bind(fd, $0, socklen_t(MemoryLayout<sockaddr_in>.size)) }
        }
        guard bound == 0, listen(fd, 16) == 0 else {
            close(fd)
            return nil
        }
        self.fd = fd
        self.port = port
        Thread.start(named: "seance-streams") { [self] in self.acceptLoop(engine: engine, events: events) }
    }

    /// Stops listening and ends every connection.
    func stop() {
        shutdown(fd, Int32(SHUT_RDWR))
        open.withLock { connections in connections.values.forEach { $0.shut() } }
    }

    private func acceptLoop(engine: Engine, events: Events) {
        defer { close(fd) }
        while true {
            let client = accept(fd, nil, nil)
            if client < 0 {
                if errno == EINTR || errno == ECONNABORTED { continue }
                return  // Shut down.
            }
            _ = fcntl(client, F_SETFD, FD_CLOEXEC)
            guard serving.add(1, ordering: .relaxed).newValue <= Self.connections else {
                serving.subtract(1, ordering: .relaxed)
                close(client)
                continue
            }
            let connection = FileStream.Connection(fd: client)
            let id = ObjectIdentifier(connection)
            open.withLock { $0[id] = connection }
            Thread.start(named: "seance-streamin") { [self] in
                self.serve(connection, events: events)
                open.withLock { $0[id] = nil }
                serving.subtract(1, ordering: .relaxed)
            }
        }
    }

    private func serve(_ connection: FileStream.Connection, events: Events) {
        guard let id = try? Data(connection.read(16)), let expected = events.expect(id) else { return }
        do {
            events.ended(id, expected.key, .success(try receive(connection, expected, id: id, events: events)))
        } catch let failure as FileStream.Failure {
            events.ended(id, expected.key, .failure(failure))
        } catch {
            events.ended(id, expected.key, .failure(.refused("a block that does not open")))
        }
    }

    /// Takes the blocks of one transfer into its file, in order from where it stood; its hash.
    private func receive(_ connection: FileStream.Connection, _ expected: Expected, id: Data, events: Events) throws -> Data {
        var sealing = FileStream.Sealing(key: expected.key)
        let hello = try connection.readBlock(limit: 64).withUnsafeBytes { try sealing.open($0) }
        guard [UInt8](hello) == FileStream.hello else { throw FileStream.Failure.refused("it does not hold the key") }
        let directory = (expected.path as NSString).deletingLastPathComponent
        if mkdir(directory, 0o700) != 0 && errno != EEXIST { throw FileStream.Failure.io(String(cString: strerror(errno))) }
        let file = Glibc.open(expected.path, O_RDWR | O_CREAT | O_CLOEXEC, 0o600)
        guard file >= 0 else { throw FileStream.Failure.io(String(cString: strerror(errno))) }
        defer { close(file) }
        // What was stored before (a stream after a restart, or after chunks) is hashed first.
        var hash = SHA256()
        var buffer = [UInt8](repeating: 0, count: 1 << 20)
        var prefix = 0
        while prefix < expected.from {
            let n = buffer.withUnsafeMutableBytes { pread(file, $0.baseAddress!, min($0.count, expected.from - prefix), off_t(prefix)) }
            guard n > 0 else { throw FileStream.Failure.io("what was stored is gone") }
            buffer.withUnsafeBytes { hash.update(bufferPointer: UnsafeRawBufferPointer(rebasing: $0[..<n])) }
            prefix += n
        }
        var position = expected.from, reported = position, reportedAt = SystemTime.monotonic()
        while position < expected.size {
            let plain = try connection.readBlock(limit: FileStream.blockSize + 8 + 16).withUnsafeBytes { try sealing.open($0) }
            guard plain.count > 8 else { throw FileStream.Failure.refused("an empty block") }
            let offset = plain.prefix(8).reduce(0) { $0 << 8 | Int($1) }
            let count = plain.count - 8
            guard offset == position, count <= expected.size - position else { throw FileStream.Failure.refused("a block out of place") }
            try plain.withUnsafeBytes { raw in
                let bytes = UnsafeRawBufferPointer(rebasing: raw[8...])
                var written = 0
                while written < count {
                    let n = pwrite(file, bytes.baseAddress! + written, count - written, off_t(position + written))
                    if n < 0 && errno == EINTR { continue }
                    guard n > 0 else { throw FileStream.Failure.io(String(cString: strerror(errno))) }
                    written += n
                }
                hash.update(bufferPointer: bytes)
            }
            position += count
            let now = SystemTime.monotonic()
            if position - reported >= Self.reportEvery || now - reportedAt >= Self.reportInterval || position == expected.size {
                events.progress(id, expected.key, position)
                (reported, reportedAt) = (position, now)
            }
        }
        return Data(hash.finalize())
    }
}
