import Glibc

/// A password asked at a terminal: echo off, Ctrl-C honoured, the terminal restored.
enum SecretInput {
    /// Reads a line with echo off (passwords), restoring the terminal whatever happens.
    static func read(_ question: String, console: Console) -> String? {
        console.write(question + " ")
        console.flush()
        var saved = termios()
        let haveTerminal = tcgetattr(0, &saved) == 0
        if haveTerminal {
            var quiet = saved
            quiet.c_lflag &= ~tcflag_t(ECHO)
            tcsetattr(0, TCSAFLUSH, &quiet)
        }
        defer {
            // TCSADRAIN, not TCSAFLUSH: what was typed after the answer (the next command,
            // typed ahead while the password is checked) is kept for the prompt, as sudo does.
            // Turning echo off did flush: nothing typed before the question is taken as the answer.
            if haveTerminal { tcsetattr(0, TCSADRAIN, &saved) }
            console.write("\n")
            console.flush()
        }
        var bytes: [UInt8] = []
        var byte: UInt8 = 0
        Signals.interrupt.store(false, ordering: .relaxed)
        while true {
            // Wait on the wake-up pipe too: SIGINT restarts a plain read (SA_RESTART), so only
            // the pipe tells us that Ctrl-C was pressed. Then nothing typed is kept or tried.
            var fds = [pollfd(fd: 0, events: Int16(POLLIN), revents: 0),
                       pollfd(fd: console.inbox.wakeFDs.read, events: Int16(POLLIN), revents: 0)]
            if poll(&fds, 2, -1) < 0 && errno != EINTR { return nil }
            if Signals.interrupt.exchange(false, ordering: .relaxed) {
                console.write("^C")
                return nil
            }
            if fds[1].revents != 0 { console.inbox.clearWake() }
            guard fds[0].revents != 0 else { continue }
            let n = Glibc.read(0, &byte, 1)
            if n < 0 && errno == EINTR { continue }
            if n <= 0 { return bytes.isEmpty ? nil : String(decoding: bytes, as: UTF8.self) }
            if byte == UInt8(ascii: "\n") || byte == UInt8(ascii: "\r") { break }
            bytes.append(byte)
        }
        return String(decoding: bytes, as: UTF8.self)
    }
}
