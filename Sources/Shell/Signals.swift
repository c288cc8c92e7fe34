import Glibc
import Synchronization

/// Signals the interactive reader cares about. The handlers only set a flag and write a byte
/// to the wake-up pipe (both async-signal-safe); the reader acts on them in its own loop.
enum Signals {
    static let interrupt = Atomic<Bool>(false)
    static let resize = Atomic<Bool>(false)
    /// Set on SIGCONT: back from Ctrl-Z and `fg`, the line being edited must be drawn again.
    static let resumed = Atomic<Bool>(false)
    /// The write end of the reader's wake-up pipe, or -1.
    static let wakeFD = Atomic<Int32>(-1)

    /// Installs SIGINT, SIGWINCH and SIGCONT handlers that wake `fd`.
    static func install(wakeFD fd: Int32) {
        wakeFD.store(fd, ordering: .relaxed)
        var action = sigaction()
        action.__sigaction_handler.sa_handler = { signal in
            if signal == SIGINT { Signals.interrupt.store(true, ordering: .relaxed) }
            if signal == SIGWINCH { Signals.resize.store(true, ordering: .relaxed) }
            if signal == SIGCONT { Signals.resumed.store(true, ordering: .relaxed) }
            var byte: UInt8 = 0
            _ = write(Signals.wakeFD.load(ordering: .relaxed), &byte, 1)
        }
        sigemptyset(&action.sa_mask)
        action.sa_flags = SA_RESTART
        sigaction(SIGINT, &action, nil)
        sigaction(SIGWINCH, &action, nil)
        sigaction(SIGCONT, &action, nil)
        // A parent may have left them blocked (the mask survives exec): Ctrl-C must work anyway.
        var unblock = sigset_t()
        sigemptyset(&unblock)
        sigaddset(&unblock, SIGINT)
        sigaddset(&unblock, SIGWINCH)
        pthread_sigmask(SIG_UNBLOCK, &unblock, nil)
    }
}

/// Makes `setlocale(LC_CTYPE, "")` take effect, falling back to C.UTF-8 when the environment
/// names no UTF-8 locale: libedit needs one to read and draw anything but ASCII.
package func configureUTF8Locale() {
    let name = setlocale(LC_CTYPE, "").map { String(cString: $0) } ?? ""
    let lowered = name.lowercased()
    if !(lowered.contains("utf-8") || lowered.contains("utf8")) {
        _ = setlocale(LC_CTYPE, "C.UTF-8")
    }
}

/// Batch runs end quietly when the reader of their output goes away (`seance … | head -1`).
package func restoreDefaultSIGPIPE() {
    signal(SIGPIPE, SIG_DFL)
}
