import Glibc

/// What reading a line produced.
package enum LineInput: Equatable {
    case line(String)
    /// Ctrl-C: the line was abandoned.
    case interrupted
    /// End of input (Ctrl-D on an empty line, or the end of a pipe or script).
    case end
}

/// Where command lines come from: libedit at a terminal, or plain lines from a pipe or script.
package protocol LineReader: AnyObject {
    /// True when a person is typing: prompts, history and forms apply.
    var isInteractive: Bool { get }
    func readLine(prompt: String) -> LineInput
    /// Records a line that was run, for history; `persistent` false keeps it out of the file.
    func remember(_ line: String, persistent: Bool)
    /// Keys that run a command at once in the current mode; empty restores ordinary editing.
    func setKeyCommands(_ commands: [SpecialKey: String])
    /// True when another line can be read without waiting (a pipe that holds more): whoever
    /// can do a batch's work once for many lines may wait for them.
    var hasPendingInput: Bool { get }
    /// Asks one field of a form. `secret` turns echo off. Nil when the user gave up (Ctrl-C/Ctrl-D).
    func ask(_ question: String, secret: Bool, completions: ((String) -> [Candidate])?) -> String?
    /// Forgets what was typed ahead and not read yet: a question that confirms something is
    /// answered by what is typed after it is asked, never by a line typed before.
    func discardTypeahead()
}

extension LineReader {
    package func discardTypeahead() {}
}

/// Plain lines from a file descriptor or from given text: pipes, scripts and `-c`.
/// Never prompts, never records history, and never asks anything.
package final class BatchLineReader: LineReader {
    private enum Source {
        case fd(Int32)
        case text
    }

    private let source: Source
    private var buffer: [UInt8] = []
    private var start = 0
    private var atEnd = false
    private let wakeFD: Int32
    private let onWake: () -> Void
    /// Where `read` puts what it takes, made once: a 64 KiB array made (and zeroed) for every
    /// read cost more than all the rest of a piped line's work.
    private let scratch = UnsafeMutableRawBufferPointer.allocate(byteCount: 1 << 16, alignment: 1)

    /// Reads lines from `fd` as they arrive. While it waits, a byte on `wake` runs `onWake`
    /// (which prints lines that arrived asynchronously, so a pipe sees them at once).
    package init(fd: Int32, wake: Int32 = -1, onWake: @escaping () -> Void = {}) {
        source = .fd(fd)
        wakeFD = wake
        self.onWake = onWake
    }

    /// Reads the lines of `text` (a script, or the commands of `-c`).
    package init(text: String) {
        source = .text
        buffer = Array(text.utf8)
        atEnd = true
        wakeFD = -1
        onWake = {}
    }

    deinit { scratch.deallocate() }

    package var isInteractive: Bool { false }

    package var hasPendingInput: Bool {
        if buffer[start...].contains(UInt8(ascii: "\n")) { return true }
        guard case .fd(let fd) = source, !atEnd else { return start < buffer.count }
        var readable = pollfd(fd: fd, events: Int16(POLLIN), revents: 0)
        return poll(&readable, 1, 0) > 0
    }

    package func readLine(prompt: String) -> LineInput {
        while true {
            if let newline = buffer[start...].firstIndex(of: UInt8(ascii: "\n")) {
                var end = newline
                if end > start, buffer[end - 1] == UInt8(ascii: "\r") { end -= 1 }
                let line = String(decoding: buffer[start..<end], as: UTF8.self)
                start = newline + 1
                return .line(line)
            }
            if atEnd {
                guard start < buffer.count else { return .end }
                let line = String(decoding: buffer[start...], as: UTF8.self)
                start = buffer.count
                return .line(line)
            }
            fill()
        }
    }

    private func fill() {
        guard case .fd(let fd) = source else { atEnd = true; return }
        if start > 0 {
            buffer.removeFirst(start)
            start = 0
        }
        if wakeFD >= 0 {
            var fds = [pollfd(fd: fd, events: Int16(POLLIN), revents: 0), pollfd(fd: wakeFD, events: Int16(POLLIN), revents: 0)]
            // About to wait: whatever was printed goes out first, so a program driving seance
            // through a pipe sees each answer before it sends the next command. (Input already
            // waiting is read without a flush: bulk batches keep their large writes.)
            if poll(&fds, 1, 0) == 0 { onWake() }
            guard poll(&fds, 2, -1) >= 0 else { return }  // EINTR: try again.
            if fds[1].revents != 0 { onWake() }
            if fds[0].revents == 0 { return }
        }
        let n = Glibc.read(fd, scratch.baseAddress, scratch.count)
        if n < 0 && errno == EINTR { return }
        if n <= 0 { atEnd = true; return }
        buffer.append(contentsOf: UnsafeRawBufferPointer(rebasing: scratch[..<n]))
    }

    package func remember(_ line: String, persistent: Bool) {}
    package func setKeyCommands(_ commands: [SpecialKey: String]) {}
    package func ask(_ question: String, secret: Bool, completions: ((String) -> [Candidate])?) -> String? { nil }
}
