import Foundation
import Glibc
import Synchronization

/// A child process of a test, started with `posix_spawn`, not Foundation's `Process`. On Linux,
/// `Process.run()` now and then crashes (an over-read of /proc/self/fd's entries, fixed upstream
/// in swift-corelibs-foundation#5472), and `Process` sometimes never reaps a child that ended
/// (a SIGCHLD missed: `waitUntilExit` then waits for ever): each stopped a CI run. This one keeps
/// nothing open in the child but its three streams, starts it with no signal blocked, and reaps
/// it with `waitpid` itself.
package final class Child: Sendable {
    /// Where one of the child's streams goes.
    package enum Stream {
        case null
        /// The test's own.
        case inherit
        /// A file: read as the input; written as an output (created, and emptied unless `append`).
        case file(String, append: Bool = false)
        /// A pipe whose other end the test gets (`input`, `output`, `errors`).
        case pipe
    }

    package let pid: pid_t
    /// The ends of the pipes asked for: what the test writes to the child's input, and reads of
    /// its output and errors.
    package let input: FileHandle?
    package let output: FileHandle?
    package let errors: FileHandle?
    private let outcome = Mutex<ExitOutcome?>(nil)

    package struct SpawnError: Error, CustomStringConvertible {
        package let argv: [String]
        package let code: Int32
        package var description: String { "cannot start \(argv.first ?? ""): \(String(cString: strerror(code)))" }
    }

    /// Starts `argv` (its first element a path) with `environment` (the test's own when nil).
    package init(_ argv: [String], environment: [String: String]? = nil, stdin: Stream = .null, stdout: Stream = .inherit,
                 stderr: Stream = .inherit) throws {
        var actions = posix_spawn_file_actions_t()
        posix_spawn_file_actions_init(&actions)
        defer { posix_spawn_file_actions_destroy(&actions) }
        var parentEnds: [FileHandle?] = [nil, nil, nil]
        var childEnds: [Int32] = []
        // Paths stay allocated until the child is started (the actions point at them).
        var paths: [UnsafeMutablePointer<CChar>?] = []
        defer { paths.forEach { free($0) } }
        for (target, stream) in [stdin, stdout, stderr].enumerated() {
            let fd = Int32(target)
            switch stream {
            case .inherit: break
            case .null: posix_spawn_file_actions_addopen(&actions, fd, "/dev/null", fd == 0 ? O_RDONLY : O_WRONLY, 0)
            case .file(let path, let append):
                paths.append(strdup(path))
                let flags = fd == 0 ? O_RDONLY : O_WRONLY | O_CREAT | (append ? O_APPEND : O_TRUNC)
                posix_spawn_file_actions_addopen(&actions, fd, paths.last!!, flags, 0o644)
            case .pipe:
                var ends: [Int32] = [-1, -1]
                // (Close-on-exec a moment after: a child another thread starts meanwhile closes
                // everything above 2 anyway.)
                guard pipe(&ends) == 0 else { throw SpawnError(argv: argv, code: errno) }
                ends.forEach { _ = fcntl($0, F_SETFD, FD_CLOEXEC) }
                let (mine, theirs) = fd == 0 ? (ends[1], ends[0]) : (ends[0], ends[1])
                posix_spawn_file_actions_adddup2(&actions, theirs, fd)
                childEnds.append(theirs)
                parentEnds[target] = FileHandle(fileDescriptor: mine, closeOnDealloc: true)
            }
        }
        // Nothing else of the test's stays open in the child (a broker or tmux daemon holding a
        // pipe of ours would keep its reader waiting for an end).
        Self.closeFrom(&actions, 3)
        var attributes = posix_spawnattr_t()
        posix_spawnattr_init(&attributes)
        defer { posix_spawnattr_destroy(&attributes) }
        // Test threads run with signals blocked; the child starts with none blocked, all default.
        var noSignals = sigset_t(), allSignals = sigset_t()
        sigemptyset(&noSignals)
        sigfillset(&allSignals)
        posix_spawnattr_setsigmask(&attributes, &noSignals)
        posix_spawnattr_setsigdefault(&attributes, &allSignals)
        posix_spawnattr_setflags(&attributes, Int16(POSIX_SPAWN_SETSIGMASK | POSIX_SPAWN_SETSIGDEF))
        let cArguments = argv.map { strdup($0) } + [nil]
        let pairs = (environment ?? ProcessInfo.processInfo.environment).map { "\($0.key)=\($0.value)" }
        let cEnvironment = pairs.map { strdup($0) } + [nil]
        defer { (cArguments + cEnvironment).forEach { free($0) } }
        var pid: pid_t = 0
        let code = posix_spawn(&pid, argv[0], &actions, &attributes, cArguments, cEnvironment)
        childEnds.forEach { close($0) }
        guard code == 0 else { throw SpawnError(argv: argv, code: code) }
        self.pid = pid
        (input, output, errors) = (parentEnds[0], parentEnds[1], parentEnds[2])
    }

    /// glibc's `posix_spawn_file_actions_addclosefrom_np` (2.34), which its Swift module does not show.
    private static let addCloseFrom = dlsym(UnsafeMutableRawPointer(bitPattern: 0), "posix_spawn_file_actions_addclosefrom_np").map {
        unsafeBitCast($0, to: (@convention(c) (UnsafeMutablePointer<posix_spawn_file_actions_t>, Int32) -> Int32).self)
    }

    private static func closeFrom(_ actions: inout posix_spawn_file_actions_t, _ lowest: Int32) {
        if let addCloseFrom { _ = addCloseFrom(&actions, lowest); return }
        // An older glibc: each descriptor open now, by its number.
        for fd in lowest..<Int32(sysconf(Int32(_SC_OPEN_MAX))) where fcntl(fd, F_GETFD) >= 0 {
            posix_spawn_file_actions_addclose(&actions, fd)
        }
    }

    /// How it ended, if it has (reaped here, once).
    package var ended: ExitOutcome? {
        outcome.withLock { known in
            if let known { return known }
            var status: Int32 = 0
            guard waitpid(pid, &status, WNOHANG) == pid else { return nil }
            known = status & 0x7F == 0 ? .exited((status >> 8) & 0xFF) : .signalled(status & 0x7F)
            return known
        }
    }

    package var isRunning: Bool { ended == nil }

    /// Waits at most `timeout` seconds for it to end: how it did, or `.stillRunning`.
    package func wait(timeout: Double) -> ExitOutcome {
        let deadline = Date().addingTimeInterval(timeout)
        while true {
            if let ended { return ended }
            guard Date() < deadline else { return .stillRunning }
            usleep(5_000)
        }
    }

    package func kill(_ signal: Int32 = SIGKILL) {
        guard isRunning else { return }
        Glibc.kill(pid, signal)
    }
}
