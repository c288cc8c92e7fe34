import Crypto
import Foundation
import Glibc
import Runtime
import Synchronization
import Wire

/// One file of ours going on a stream (`FileStream`), on a thread of its own: read from the
/// user's file where it is (which must stay as it was sent), sealed a block at a time, written
/// to the connection as fast as the receiver takes it. How it ended goes to the engine
/// (`ended`, with this sender, as a newer one may have taken its place): nil, every byte sent;
/// else why not.
final class StreamSender: Sendable {
    private let connection = Mutex<FileStream.Connection?>(nil)
    private let stopped = Atomic<Bool>(false)

    struct Job: Sendable {
        var id: Data
        var path: String
        var source: TransferFiles.Source?
        var size: Int
        var from: Int
        var host: String
        var port: UInt16
        var key: Data
    }

    init(_ job: Job, engine: Engine, ended: @escaping @Sendable (StreamSender, FileStream.Failure?, _ changed: Bool) -> Void) {
        Thread.start(named: "seance-stream") { [self] in
            let (failure, changed) = self.run(job)
            engine.async { ended(self, failure, changed) }
        }
    }

    /// Ends it from the engine: the thread stops at its next write.
    func stop() {
        stopped.store(true, ordering: .relaxed)
        connection.withLock { $0?.shut() }
    }

    private func run(_ job: Job) -> (FileStream.Failure?, changed: Bool) {
        let fd = open(job.path, O_RDONLY | O_CLOEXEC)
        guard fd >= 0 else { return (.io(String(cString: strerror(errno))), true) }
        defer { close(fd) }
        guard unchanged(fd, job) else { return (.io("the file changed"), true) }
        do {
            let made = try FileStream.connect(host: job.host, port: job.port)
            connection.withLock { $0 = made }
            guard !stopped.load(ordering: .relaxed) else { return (.io("stopped"), false) }
            try made.write(Array(job.id))
            var sealing = FileStream.Sealing(key: job.key)
            try made.writeBlock(FileStream.hello.withUnsafeBytes { try sealing.seal($0) })
            var block = [UInt8](repeating: 0, count: 8 + FileStream.blockSize)
            var offset = job.from
            while offset < job.size {
                let count = min(FileStream.blockSize, job.size - offset)
                for index in 0..<8 { block[index] = UInt8(truncatingIfNeeded: UInt64(offset) >> (56 - 8 * UInt64(index))) }
                var filled = 0
                while filled < count {
                    let n = block.withUnsafeMutableBytes { pread(fd, $0.baseAddress! + 8 + filled, count - filled, off_t(offset + filled)) }
                    if n < 0 && errno == EINTR { continue }
                    guard n > 0 else { return (.io("the file is shorter than it was"), true) }
                    filled += n
                }
                let sealed = try block.withUnsafeBytes { try sealing.seal(UnsafeRawBufferPointer(rebasing: $0[..<(8 + count)])) }
                try made.writeBlock(sealed)
                offset += count
            }
            // Read whole as it was: what went is what was offered (the receiver's hash says so too).
            return unchanged(fd, job) ? (nil, false) : (.io("the file changed while it went"), true)
        } catch let failure as FileStream.Failure {
            return (failure, false)
        } catch {
            return (.io("\(error)"), false)
        }
    }

    private func unchanged(_ fd: Int32, _ job: Job) -> Bool {
        guard let source = job.source else { return true }
        var info = stat()
        return fstat(fd, &info) == 0 && TransferFiles.Source(size: Int(info.st_size),
                                                           modified: Int64(info.st_mtim.tv_sec) * 1_000_000_000 + Int64(info.st_mtim.tv_nsec)) == source
    }
}
