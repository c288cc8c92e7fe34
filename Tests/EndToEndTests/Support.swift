import Foundation
import Glibc
import TestSupport
import Testing

/// The root of the package, found from this file's path.
let packageRoot: String = {
    var url = URL(fileURLWithPath: #filePath)
    for _ in 0..<3 { url.deleteLastPathComponent() }
    return url.path
}()

/// The built `seance`: `SEANCE_BIN`, else the debug build `make test` made.
let seanceBinary: String = ProcessInfo.processInfo.environment["SEANCE_BIN"] ?? packageRoot + "/.build/debug/seance"

/// seance's default port (and the group's): every test that goes online has a network of its
/// own (`PrivateNetwork`, `TestNetwork`), so every one can use it.
let seancePort: UInt16 = 47_777

/// A fresh directory for one test, removed afterwards.
final class Scratch {
    let path: String
    init() {
        path = NSTemporaryDirectory() + "seance-e2e-" + UUID().uuidString.prefix(8)
        try! FileManager.default.createDirectory(atPath: path, withIntermediateDirectories: true)
    }
    deinit { try? FileManager.default.removeItem(atPath: path) }

    var dataDir: String { path + "/data" }

    @discardableResult
    func write(_ name: String, _ text: String) -> String {
        let file = path + "/" + name
        _ = FileManager.default.createFile(atPath: file, contents: Data(text.utf8))
        return file
    }
}

struct RunResult {
    var stdout: String
    var stderr: String
    var status: Int32
}

/// Runs `seance` with `arguments`, `stdin` as its standard input, and waits for it.
/// Output goes to files, not pipes, so a large output never blocks the child. With `launcher`,
/// that command line runs instead (a wrapper that measures seance), followed by `arguments`.
func runSeance(_ arguments: [String], stdin: String = "", environment: [String: String] = [:],
               scratch: Scratch, launcher: [String]? = nil, timeout: Double = 120) throws -> RunResult {
    let id = UUID().uuidString.prefix(8)
    let input = scratch.write("stdin-\(id)", stdin)
    let outPath = scratch.path + "/stdout-\(id)", errPath = scratch.path + "/stderr-\(id)"
    var env = ["HOME": scratch.path, "PATH": "/usr/bin:/bin", "TERM": "xterm-256color"]
    env.merge(environment) { $1 }
    let child = try Child((launcher ?? [seanceBinary]) + arguments, environment: env, stdin: .file(input), stdout: .file(outPath),
                          stderr: .file(errPath))
    // A run that hangs (the bug some tests look for) is ended and reported, not waited on.
    let outcome = waitForExit(child, timeout: timeout)
    return RunResult(stdout: try String(contentsOfFile: outPath, encoding: .utf8),
                     stderr: try String(contentsOfFile: errPath, encoding: .utf8),
                     status: outcome.status ?? -1)
}

/// Waits for `child` to end, at most `timeout` seconds; how it ended. One still running then is
/// reported with where its threads wait, and killed: a hang fails its test instead of holding
/// the whole run until CI gives up.
@discardableResult
func waitForExit(_ child: Child, timeout: Double, sourceLocation: SourceLocation = #_sourceLocation) -> ExitOutcome {
    let outcome = child.wait(timeout: timeout)
    guard outcome == .stillRunning else { return outcome }
    Issue.record("pid \(child.pid) still ran after \(timeout) s; its threads:\n\(threads(of: child.pid))", sourceLocation: sourceLocation)
    child.kill()
    let killed = child.wait(timeout: 10)
    if killed == .stillRunning { Issue.record("pid \(child.pid) outlived SIGKILL by 10 s", sourceLocation: sourceLocation) }
    return killed
}

/// Where a running process's threads are (gdb's backtraces), for a report of a hang.
func threads(of pid: pid_t) -> String {
    (try? sh("timeout -s KILL 20 gdb -p \(pid) -batch -ex 'thread apply all bt 12' 2>/dev/null | grep -E '^(Thread|#)' | head -120")) ?? ""
}

/// Runs a shell pipeline and returns its standard output.
func sh(_ command: String) throws -> String {
    let child = try Child(["/bin/sh", "-c", command], stdout: .pipe)
    let data = child.output!.readDataToEndOfFile()
    waitForExit(child, timeout: 120)
    return String(decoding: data, as: UTF8.self)
}

/// `seance` in a pseudo-terminal: a private tmux server, keys in, screen out.
final class TerminalSession {
    let socket = "seance-test-" + UUID().uuidString.prefix(8)
    let scratch: Scratch

    /// Starts seance in a `width` x `height` terminal. When it exits, the pane shows `EXIT=status`.
    /// `underJobControl`: seance is started from an interactive bash, as a job it can stop
    /// (Ctrl-Z) and bring back (`fg`). On `network`, it runs in that namespace.
    init(arguments: [String] = [], scratch: Scratch, width: Int = 100, height: Int = 30, underJobControl: Bool = false,
         network: PrivateNetwork? = nil) throws {
        self.scratch = scratch
        let args = (["--data-dir", scratch.dataDir] + arguments).map { "'\($0)'" }.joined(separator: " ")
        let seanceBinary = ((network?.launcher ?? []) + [seanceBinary]).joined(separator: " ")
        let environment = "env HOME='\(scratch.path)' TERM=xterm-256color LANG=C.UTF-8"
        if underJobControl {
            try tmux(["new-session", "-d", "-x", "\(width)", "-y", "\(height)", "\(environment) PS1='$ ' bash --norc --noprofile -i"])
            try waitFor { $0.hasSuffix("$") }
            try type("\(seanceBinary) \(args)")
            try press("Enter")
        } else {
            let command = "\(environment) \(seanceBinary) \(args); echo EXIT=$?; sleep 60"
            try tmux(["new-session", "-d", "-x", "\(width)", "-y", "\(height)", command])
        }
        try waitFor { $0.contains("seance>") }
    }

    deinit { _ = try? tmux(["kill-server"]) }

    /// Runs a tmux client and returns what it printed.
    @discardableResult
    func tmux(_ arguments: [String]) throws -> String {
        try spawn(["/usr/bin/tmux", "-L", socket, "-f", "/dev/null"] + arguments)
    }

    /// Types `text` literally.
    func type(_ text: String) throws { try tmux(["send-keys", "-l", text]) }
    /// Presses named keys: Enter, Tab, C-c, C-d, Up, …
    func press(_ keys: String...) throws { try tmux(["send-keys"] + keys) }

    /// The visible screen, trailing blank lines dropped. Lines the terminal wrapped are joined,
    /// unless `asShown`: then each row is a line of its own.
    func screen(asShown: Bool = false) throws -> String {
        let text = try tmux(["capture-pane", "-p"] + (asShown ? [] : ["-J"]))
        return text.split(separator: "\n", omittingEmptySubsequences: false)
            .map { String($0).replacingOccurrences(of: "\\s+$", with: "", options: .regularExpression) }
            .reversed().drop { $0.isEmpty }.reversed().joined(separator: "\n")
    }

    /// The last line on screen (where the prompt is).
    func lastLine() throws -> String { try screen().split(separator: "\n").last.map(String.init) ?? "" }

    /// Polls the screen until `condition` holds; fails the test after `timeout` seconds.
    @discardableResult
    func waitFor(timeout: Double = 30, asShown: Bool = false, sourceLocation: SourceLocation = #_sourceLocation,
                 _ condition: (String) -> Bool) throws -> String {
        let deadline = Date().addingTimeInterval(timeout)
        var text = ""
        while Date() < deadline {
            text = try screen(asShown: asShown)
            if condition(text) { return text }
            usleep(20_000)
        }
        Issue.record("screen never matched; it shows:\n\(text)", sourceLocation: sourceLocation)
        return text
    }
}

/// Runs `argv` and returns its standard output, a minute at most: a client that never answers is
/// reported and killed. The child gets nothing of ours but its three streams: the tmux server it
/// may start as a daemon must not hold anything of ours open, or waiting for the client would
/// never end.
@discardableResult
func spawn(_ argv: [String]) throws -> String {
    let child = try Child(argv, stdout: .pipe, stderr: .null)
    let fd = child.output!.fileDescriptor
    var output: [UInt8] = []
    var buffer = [UInt8](repeating: 0, count: 4096)
    let deadline = Date().addingTimeInterval(60)
    while true {
        var poller = pollfd(fd: fd, events: Int16(POLLIN), revents: 0)
        let left = deadline.timeIntervalSinceNow
        let ready = left > 0 ? poll(&poller, 1, Int32(left * 1000)) : 0
        if ready < 0 && errno == EINTR { continue }
        if ready <= 0 {
            Issue.record("\(argv.joined(separator: " ")) gave no end within 60 s; its threads:\n\(threads(of: child.pid))")
            child.kill()
            break
        }
        let n = read(fd, &buffer, buffer.count)
        if n < 0 && (errno == EINTR || errno == EAGAIN) { continue }
        if n <= 0 { break }
        output += buffer[0..<n]
    }
    waitForExit(child, timeout: 10)
    return String(decoding: output, as: UTF8.self)
}

/// seance as a coprocess: commands go in through a pipe one at a time, and the driver waits
/// (with a timeout) for each answer before sending the next, as a program would.
final class PipeDriver {
    let child: Child
    private var received = "", receivedErrors = ""

    /// `prefix` runs seance through another program (`ip netns exec NS`, to put it on a test host).
    init(arguments: [String], scratch: Scratch, prefix: [String] = []) throws {
        child = try Child(prefix + [seanceBinary] + arguments, environment: ["HOME": scratch.path, "PATH": "/usr/bin:/bin:/usr/sbin:/sbin"],
                          stdin: .pipe, stdout: .pipe, stderr: .pipe)
    }

    func send(_ line: String) throws { try child.input!.write(contentsOf: Data((line + "\n").utf8)) }

    /// Everything read from stdout so far.
    var output: String { received }

    /// Reads stdout until it contains `text`; false when `timeout` seconds pass first (then the
    /// process's threads are recorded, to show where it waits).
    func read(until text: String, timeout: Double) throws -> Bool {
        let found = try wait(for: text, in: child.output!, into: &received, timeout: timeout)
        if !found {
            Issue.record("no '\(text)' after \(timeout) s; the threads:\n\(threads(of: child.pid))")
        }
        return found
    }

    /// Reads stdout for `seconds`, whatever comes (for a test that polls a listing).
    func drain(for seconds: Double) throws {
        _ = try wait(for: "\u{0}", in: child.output!, into: &received, timeout: seconds)
    }

    func readError(until text: String, timeout: Double) throws -> Bool {
        try wait(for: text, in: child.errors!, into: &receivedErrors, timeout: timeout)
    }

    private func wait(for text: String, in handle: FileHandle, into buffer: inout String, timeout: Double) throws -> Bool {
        let deadline = Date().addingTimeInterval(timeout)
        while !buffer.contains(text) {
            let left = deadline.timeIntervalSinceNow
            guard left > 0 else { return false }
            var poller = pollfd(fd: handle.fileDescriptor, events: Int16(POLLIN), revents: 0)
            guard poll(&poller, 1, Int32(left * 1000)) > 0 else { return false }
            var bytes = [UInt8](repeating: 0, count: 4096)
            let count = Glibc.read(handle.fileDescriptor, &bytes, bytes.count)
            guard count > 0 else { return false }
            buffer += String(decoding: bytes[0..<count], as: UTF8.self)
        }
        return true
    }

    func close() {
        try? child.input!.close()
        waitForExit(child, timeout: 120)
    }
}

/// Rows of a query on a data directory's database, read with the sqlite3 shell (WAL lets it
/// read while seance writes).
func query(_ data: String, _ sql: String) throws -> [String] {
    try sh("sqlite3 '\(data)/seance.sqlite' \"\(sql)\" 2>/dev/null").split(separator: "\n").map(String.init)
}

/// Polls until `condition` holds, up to `timeout` seconds.
func eventually(timeout: Double, _ condition: () throws -> Bool) rethrows -> Bool {
    let deadline = Date().addingTimeInterval(timeout)
    while Date() < deadline {
        if try condition() { return true }
        usleep(100_000)
    }
    return try condition()
}
