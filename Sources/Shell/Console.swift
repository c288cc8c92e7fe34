import Glibc
import Synchronization
import Terminal

/// Lines produced off the main thread (an incoming message, a peer arriving), waiting for the
/// terminal's owner to print them. Posting also writes a byte to a pipe, which wakes the line
/// reader out of its wait for a key.
public final class AsyncInbox: Sendable {
    private struct State {
        var notices: [Notice] = []
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
    public func post(_ line: String) { post(.line(line)) }

    /// Queues a notice (a line, or lines printed earlier to write over). Safe from any thread.
    public func post(_ notice: Notice) {
        let wakeNeeded = state.withLock { state in
            state.notices.append(notice)
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

    /// Takes every queued notice, oldest first.
    public func drain() -> [Notice] {
        // The pipe first, then the lines and the flag together: a line posted after the lines
        // were taken writes a new byte (one posted while the pipe empties writes a byte that
        // wakes the reader once for nothing) — never a line left without a wake-up.
        emptyPipe()
        return state.withLock { state in
            defer {
                state.notices.removeAll()
                state.woken = false
            }
            return state.notices
        }
    }

    /// Takes every queued notice as the lines printed where nothing on screen can be written
    /// over (a pipe).
    public func drainLines(columns: Int = 80) -> [String] {
        drain().flatMap { notice -> [String] in
            switch notice {
            case .line(let line): return [line]
            case .lines(let render): return render(columns)
            case .update(let overwrites, let otherwise): return otherwise(overwrites).map { [$0] } ?? []
            }
        }
    }

    private func emptyPipe() {
        var drained: [UInt8] = Array(repeating: 0, count: 64)
        while read(wakeFDs.read, &drained, drained.count) > 0 {}
    }
}

/// What the shell's thread is given to print from elsewhere.
public enum Notice: Sendable {
    case line(String)
    /// Lines laid out for the terminal's width when they are printed (a bubble: the window
    /// may have been resized since the notice was made).
    case lines(@Sendable (_ columns: Int) -> [String])
    /// Lines printed earlier with these marks, written over where they are still on the screen;
    /// for the others (scrolled away, or no screen to follow: a pipe), `otherwise` gives the line
    /// to print instead, if any.
    case update([Overwrite], otherwise: @Sendable ([Overwrite]) -> String?)
}

/// A line to write over the one printed with `mark`, rendered for the terminal's width then.
public struct Overwrite: Sendable {
    public let mark: String
    /// The caller's own number for it (which message).
    public let id: Int64
    public let render: @Sendable (_ columns: Int) -> String

    public init(mark: String, id: Int64, render: @escaping @Sendable (_ columns: Int) -> String) {
        self.mark = mark
        self.id = id
        self.render = render
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
    /// Set by the interactive reader: while a line is edited, the rows of it above and below the
    /// cursor (nil when none is).
    var editArea: (() -> (aboveCursor: Int, belowCursor: Int)?)?
    /// Where marked lines are on the screen: followed only at a terminal that can move the
    /// cursor back up (`followScreen`).
    private(set) var screen: ScreenRows?
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

    /// Writes `text` and a newline, and remembers where, so that `Notice.update` can write over
    /// it later (a message's delivery state).
    public func print(_ text: String, mark: @autoclosure () -> String) {
        if screen != nil { screen!.mark(mark(), keepingWithin: rows) }
        print(text)
    }

    /// True when marked lines can be written over: the output is a terminal being followed.
    public var overwrites: Bool { screen != nil }

    /// Starts following the screen, for `print(_:mark:)` and `Notice.update`.
    func followScreen() { screen = ScreenRows() }

    /// What happened to the screen is not known any more (resized, cleared, drawn over by the
    /// line editor): no marked line is written over after this.
    func forgetMarks() { screen?.forgetMarks() }

    /// The line editor printed the accepted line (`width` columns with its prompt) and a new line.
    func lineAccepted(width: Int) { screen?.finishLine(width: width, columns: columns) }

    /// Writes `text` to stdout as is.
    public func write(_ text: String) {
        screen?.advance(over: text, columns: columns)
        writeUnfollowed(text)
    }

    /// Writes text that moves the cursor without leaving output behind (redrawing above the
    /// line being edited, writing over a marked line).
    func writeUnfollowed(_ text: String) {
        if capture != nil { capture!.append(text); return }
        buffer.append(contentsOf: text.utf8)
        if buffer.count >= 1 << 16 { flush() }
    }

    /// Writes one error line to stderr, after whatever stdout holds.
    public func error(_ text: String) {
        screen?.advance(over: text + "\n", columns: columns)
        if capture != nil { capture!.append(text + "\n"); return }
        flush()
        Console.writeAll(errorFD, Array((text + "\n").utf8))
    }

    /// Writes `text` over the line marked `name` if it is still on the screen, the cursor left
    /// where it was; false (and nothing written) if it is not, or if the screen is not followed.
    func overwrite(_ name: String, with text: String) -> Bool {
        guard let screen, let up = screen.distance(to: name) else { return false }
        let (above, below) = editArea?() ?? (0, 0)
        // The marked row, every row after it and the line being typed all fit in the window,
        // with a row to spare.
        guard up + above + below + 1 < rows else { return false }
        writeUnfollowed("\u{1B}7\u{1B}[\(up + above)A\r\u{1B}[2K" + text + "\u{1B}8")
        return true
    }

    public func flush() {
        guard !buffer.isEmpty else { return }
        Console.writeAll(outputFD, buffer)
        buffer.removeAll(keepingCapacity: true)
    }

    /// Prints lines that arrived asynchronously: above the prompt when one is being edited,
    /// otherwise in sequence with other output.
    public func printPending() {
        let notices = inbox.drain()
        guard !notices.isEmpty else { return }
        var lines: [String] = []
        func printLines() {
            guard !lines.isEmpty else { return }
            if let printAbovePrompt {
                printAbovePrompt(lines)
            } else {
                for line in lines { print(line) }
            }
            lines.removeAll()
        }
        for notice in notices {
            switch notice {
            case .line(let line):
                lines.append(line)
            case .lines(let render):
                lines += render(columns)
            case .update(let overwrites, let otherwise):
                printLines()  // The marks' distances as they are after those lines.
                let missed = overwrites.filter { !overwrite($0.mark, with: $0.render(columns)) }
                // Now, while the cursor is where the rows were counted from.
                if missed.count < overwrites.count { flush() }
                if let line = otherwise(missed) { lines.append(line) }
            }
        }
        printLines()
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
