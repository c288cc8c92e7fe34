import Glibc
import Synchronization

/// Lines produced off the main thread (an incoming message, a peer arriving), waiting for the
/// terminal's owner to print them. Posting also writes a byte to a pipe, which wakes the line
/// reader out of its wait for a key.
package final class AsyncInbox: Sendable {
    private struct State {
        var notices: [Notice] = []
        /// A wake-up byte is in the pipe and not yet read: another would wake nobody more.
        var woken = false
    }

    private let state = Mutex(State())
    /// Read end first; the line reader polls the read end together with stdin.
    package let wakeFDs: (read: Int32, write: Int32)

    package init() {
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
    package func post(_ line: String) { post(.line(line)) }

    /// Queues a notice (a line, or lines printed earlier to write over). Safe from any thread.
    package func post(_ notice: Notice) {
        let wakeNeeded = state.withLock { state in
            state.notices.append(notice)
            defer { state.woken = true }
            return !state.woken
        }
        if wakeNeeded { writeWakeByte() }
    }

    /// Queues a line and the alert that goes with it (something arrived for the user).
    package func post(_ line: String, alert: Alert) {
        post(.line(line))
        post(.alert(alert))
    }

    /// Wakes the reader without a line (a signal handler uses the same pipe directly).
    package func wake() {
        state.withLock { $0.woken = true }
        writeWakeByte()
    }

    private func writeWakeByte() {
        var byte: UInt8 = 1
        _ = write(wakeFDs.write, &byte, 1)
    }

    /// Empties the wake-up pipe but keeps the queued lines, for a waiter that cannot print now.
    package func clearWake() {
        emptyPipe()
        state.withLock { $0.woken = false }
    }

    /// True when something was posted and not yet taken: a caller that only looks in passing
    /// (before each line a script runs) need not read the pipe otherwise.
    package var hasWaiting: Bool { state.withLock { $0.woken || !$0.notices.isEmpty } }

    /// Takes every queued notice, oldest first.
    package func drain() -> [Notice] {
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
    package func drainLines(columns: Int = 80) -> [String] {
        drain().flatMap { notice -> [String] in
            switch notice {
            case .line(let line): return [line]
            case .lines(let render): return render(columns)
            case .markedLines(let render): return render(columns).map(\.text)
            case .update(let overwrites, let otherwise): return otherwise(overwrites).map { [$0] } ?? []
            case .alert: return []
            }
        }
    }

    private func emptyPipe() {
        withUnsafeTemporaryAllocation(byteCount: 64, alignment: 1) { drained in
            while read(wakeFDs.read, drained.baseAddress, drained.count) > 0 {}
        }
    }
}

/// What the shell's thread is given to print from elsewhere.
package enum Notice: Sendable {
    case line(String)
    /// Lines laid out for the terminal's width when they are printed (a bubble: the window
    /// may have been resized since the notice was made).
    case lines(@Sendable (_ columns: Int) -> [String])
    /// As `lines`, some of them marked to be written over later (`update`): a transfer's
    /// progress under its bubble.
    case markedLines(@Sendable (_ columns: Int) -> [MarkedLine])
    /// Lines printed earlier with these marks, written over where they are still on the screen;
    /// for the others (scrolled away, or no screen to follow: a pipe), `otherwise` gives the line
    /// to print instead, if any.
    case update([Overwrite], otherwise: @Sendable ([Overwrite]) -> String?)
    /// Something arrived for the user while they look elsewhere: at a terminal the shell rings
    /// the bell (and notifies the desktop, when asked to); it prints nothing.
    case alert(Alert)
}

/// A line of output, and the name it is written over by later, if any.
package struct MarkedLine: Sendable, Equatable {
    package var text: String
    package var mark: String?

    package init(_ text: String, mark: String? = nil) {
        self.text = text
        self.mark = mark
    }
}

/// What an alert says: who, what happened, and the text of it (shown on the desktop only with
/// `notify-text = yes`). `who` and `text` come from the network: whoever shows them sanitizes.
package struct Alert: Sendable, Equatable {
    package var who: String
    /// What they did, after their name: "wrote to you", "cursed you", …
    package var what: String
    package var text: String?

    package init(who: String, what: String, text: String? = nil) {
        self.who = who
        self.what = what
        self.text = text
    }
}

/// Text to write over the right end of the line printed with `mark` (a message's state at the
/// end of its row), rendered for the terminal's width then.
package struct Overwrite: Sendable {
    package let mark: String
    /// The caller's own number for it (which message).
    package let id: Int64
    package let render: @Sendable (_ columns: Int) -> String

    package init(mark: String, id: Int64, render: @escaping @Sendable (_ columns: Int) -> String) {
        self.mark = mark
        self.id = id
        self.render = render
    }
}
