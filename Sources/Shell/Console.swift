import Glibc
import Synchronization
import Terminal

/// Lines produced off the main thread (an incoming message, a peer arriving), waiting for the
/// terminal's owner to print them. Posting also writes a byte to a pipe, which wakes the line
/// reader out of its wait for a key.
public final class AsyncInbox: Sendable {
    private struct State {
        var lines: [String] = []
        /// A wake-up byte is in the pipe and not yet read: another would wake nobody more.
        var woken = false
    }

    private let state = Mutex(State())
    /// Read end first; the line reader polls the read end together with stdin.
    public let wakeFDs: (read: Int32, write: Int32)

    public init() {
        var fds: [Int32] = [-1, -1]
        if pipe(&fds) == 0 {
            for fd in fds {
                _ = fcntl(fd, F_SETFL, fcntl(fd, F_GETFL) | O_NONBLOCK)
                _ = fcntl(fd, F_SETFD, FD_CLOEXEC)
            }
        }
        wakeFDs = (fds[0], fds[1])
    }

    deinit {
        close(wakeFDs.read)
        close(wakeFDs.write)
    }

    /// Queues a line for printing above the prompt. Safe from any thread. Under a stream of
    /// lines (a burst of messages) only the first writes to the pipe until the reader wakes.
    public func post(_ line: String) {
        let wakeNeeded = state.withLock { state in
            state.lines.append(line)
            defer { state.woken = true }
            return !state.woken
        }
        if wakeNeeded { writeWakeByte() }
    }

    /// Wakes the reader without a line (a signal handler uses the same pipe directly).
    public func wake() {
        state.withLock { $0.woken = true }
        writeWakeByte()
    }

    private func writeWakeByte() {
        var byte: UInt8 = 1
        _ = write(wakeFDs.write, &byte, 1)
    }

    /// Empties the wake-up pipe but keeps the queued lines, for a waiter that cannot print now.
    public func clearWake() {
        emptyPipe()
        state.withLock { $0.woken = false }
    }

    /// Takes every queued line, oldest first.
    public func drain() -> [String] {
        // The pipe first, then the lines and the flag together: a line posted after the lines
        // were taken writes a new byte (one posted while the pipe empties writes a byte that
        // wakes the reader once for nothing) — never a line left without a wake-up.
        emptyPipe()
        return state.withLock { state in
            defer {
                state.lines.removeAll()
                state.woken = false
            }
            return state.lines
        }
    }

    private func emptyPipe() {
        var drained: [UInt8] = Array(repeating: 0, count: 64)
        while read(wakeFDs.read, &drained, drained.count) > 0 {}
    }
}

/// The one writer of the terminal. Command output is buffered and written to stdout in large
/// chunks (batch throughput depends on it); errors flush stdout first so the two streams keep
/// their order when they go to the same place.
public final class Console {
    public let capabilities: Capabilities
    public let styler: Styler
    public let inbox = AsyncInbox()
    /// Terminal width in columns; the interactive reader updates it on SIGWINCH.
    public var columns: Int
    /// Terminal height in rows, kept like `columns`: views that could be long fit it.
    public var rows: Int

    private var buffer: [UInt8] = []
    private let outputFD: Int32
    private let errorFD: Int32
    /// Set by the interactive reader: prints async lines above the prompt while a line is edited.
    var printAbovePrompt: (([String]) -> Void)?
    /// Captured output, for tests that drive the shell without a process.
    private var capture: [String]?

    public init(capabilities: Capabilities, columns: Int = 80, rows: Int = 24, outputFD: Int32 = 1, errorFD: Int32 = 2) {
        self.rows = rows
        self.capabilities = capabilities
        self.styler = Styler(capabilities)
        self.columns = columns
        self.outputFD = outputFD
        self.errorFD = errorFD
        buffer.reserveCapacity(1 << 16)
    }

    /// A console that records what it would print, for tests.
    public static func capturing(_ capabilities: Capabilities = .plain, columns: Int = 80, rows: Int = 24) -> Console {
        let console = Console(capabilities: capabilities, columns: columns, rows: rows, outputFD: -1, errorFD: -1)
        console.capture = []
        return console
    }

    /// Everything captured so far (stdout and stderr, in order), and forgets it.
    public func takeCaptured() -> String {
        defer { capture = [] }
        return (capture ?? []).joined()
    }

    /// Writes `text` and a newline to stdout.
    public func print(_ text: String = "") {
        write(text + "\n")
    }

    /// Writes `text` to stdout as is.
    public func write(_ text: String) {
        if capture != nil { capture!.append(text); return }
        buffer.append(contentsOf: text.utf8)
        if buffer.count >= 1 << 16 { flush() }
    }

    /// Writes one error line to stderr, after whatever stdout holds.
    public func error(_ text: String) {
        if capture != nil { capture!.append(text + "\n"); return }
        flush()
        Console.writeAll(errorFD, Array((text + "\n").utf8))
    }

    public func flush() {
        guard !buffer.isEmpty else { return }
        Console.writeAll(outputFD, buffer)
        buffer.removeAll(keepingCapacity: true)
    }

    /// Prints lines that arrived asynchronously: above the prompt when one is being edited,
    /// otherwise in sequence with other output.
    public func printPending() {
        let lines = inbox.drain()
        guard !lines.isEmpty else { return }
        if let printAbovePrompt {
            printAbovePrompt(lines)
        } else {
            for line in lines { print(line) }
        }
    }

    static func writeAll(_ fd: Int32, _ bytes: [UInt8]) {
        bytes.withUnsafeBytes { raw in
            var offset = 0
            while offset < raw.count {
                let n = Glibc.write(fd, raw.baseAddress! + offset, raw.count - offset)
                if n < 0 {
                    if errno == EINTR || errno == EAGAIN { continue }
                    return  // EPIPE and the like: the reader went away; SIGPIPE ends a batch run.
                }
                offset += n
            }
        }
    }
}
