import Foundation
import Glibc

extension Thread {
    /// Runs `body` on a new thread that the system knows by `name` (its first 15 bytes, as
    /// `ps -L`, `top -H`, gdb and `/proc` show it). Foundation's `name` does not do it on Linux:
    /// set before `start` it is lost, and set from the thread itself it did not always reach
    /// the system (a test saw such a thread unnamed, even once `start` had returned).
    package static func start(named name: String, _ body: @escaping @Sendable () -> Void) {
        Thread {
            nameCurrentThread(name)
            body()
        }.start()
    }

    /// Names the calling thread, through its own `comm` file (the system cuts a longer name).
    static func nameCurrentThread(_ name: String) {
        let fd = open("/proc/thread-self/comm", O_WRONLY | O_CLOEXEC)
        guard fd >= 0 else { return }
        defer { close(fd) }
        let bytes = Array(name.utf8.prefix(15))
        _ = bytes.withUnsafeBytes { write(fd, $0.baseAddress, $0.count) }
    }
}
