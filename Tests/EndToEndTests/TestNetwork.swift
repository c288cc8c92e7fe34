import Foundation
import Glibc
import Testing
import TestSupport

/// Hosts for tests that cross a network: network namespaces joined by veth pairs to one bridge,
/// all made inside the test's own private namespace (`make test` runs the suite in one), so
/// nothing can reach a real interface. Addresses come from 198.18.0.0/15, the range set aside
/// for network tests.
final class TestNetwork {
    let id = String(UUID().uuidString.prefix(6)).lowercased()
    let count: Int
    let scratch = Scratch()
    var bridge: String { "sbr\(id)" }

    func namespace(_ host: Int) -> String { "seance-\(id)-\(host)" }

    init(hosts count: Int) throws {
        self.count = count
        var script = """
            set -e
            ip link add \(bridge) type bridge
            ip link set \(bridge) type bridge mcast_snooping 0
            ip link set \(bridge) up

            """
        for host in 1...count {
            let ns = namespace(host), veth = "sv\(id)\(host)"
            script += """
                ip netns add \(ns)
                ip link add \(veth) type veth peer name e0 netns \(ns)
                ip link set \(veth) master \(bridge) up
                ip -n \(ns) addr add 198.18.0.\(host)/24 dev e0
                ip -n \(ns) link set e0 up
                ip -n \(ns) link set lo up
                ip -n \(ns) route add 224.0.0.0/4 dev e0

                """
        }
        let result = try shellScript(script)
        guard result.status == 0 else { throw SetupError(output: result.output) }
    }

    deinit {
        var script = "nft delete table bridge seance\(id) 2>/dev/null; ip link del \(bridge) 2>/dev/null\n"
        for host in 1...count { script += "ip netns del \(namespace(host)) 2>/dev/null\n" }
        _ = try? shellScript(script)
    }

    struct SetupError: Error, CustomStringConvertible {
        let output: String
        var description: String { "could not build the test network: \(output)" }
    }

    /// Runs `body` with the test's thread on `host` (sockets it opens are that host's).
    func inside<T>(host: Int, _ body: () throws -> T) throws -> T { try PrivateNetwork.inside(namespace(host), body) }

    /// The address of `host` on the bridge.
    func address(_ host: Int) -> String { "198.18.0.\(host)" }

    /// Drops `percent` % of the frames this network's bridge forwards, at random (nft numgen): of
    /// `protocol` alone (`udp`, `tcp`) when given.
    func dropFrames(percent: Int, of protocol: String? = nil) throws {
        try addBridgeRule((`protocol`.map { "meta l4proto \($0) " } ?? "") + "numgen random mod 100 '<' \(percent) counter drop")
    }

    /// Adds a rule to the bridge's forward chain, matching this network's own ports only so tests
    /// running beside it are not touched.
    func addBridgeRule(_ rule: String) throws {
        let result = try shellScript("""
            nft add table bridge seance\(id)
            nft add chain bridge seance\(id) forward '{ type filter hook forward priority 0; }'
            nft add rule bridge seance\(id) forward iifname '"sv\(id)*"' \(rule)
            """)
        guard result.status == 0 else { throw SetupError(output: result.output) }
    }

    /// Takes away every rule `addBridgeRule` added: the bridge forwards everything again.
    func removeBridgeRules() throws {
        let result = try shellScript("nft flush chain bridge seance\(id) forward")
        guard result.status == 0 else { throw SetupError(output: result.output) }
    }

    /// How many frames the loss rule has dropped so far.
    func droppedFrames() throws -> Int {
        let listing = try shellScript("nft list chain bridge seance\(id) forward").output
        guard let range = listing.range(of: #"packets (\d+)"#, options: .regularExpression) else { return 0 }
        return Int(listing[range].split(separator: " ")[1]) ?? 0
    }

    /// A seance batch run on `host`, driven through its standard input: lines go in when the
    /// test says (`send`), after what it waited for came out (`waitFor`); the input stays open,
    /// so the shell stays, until `finish` (or `kill`). Nothing waits for wall-clock time.
    final class Run {
        let child: Child
        let outputPath: String
        /// How many times `count` asked `nearby stats`: each answer is told by a marker of its own.
        private var asked = 0
        init(child: Child, outputPath: String) {
            self.child = child
            self.outputPath = outputPath
        }

        /// Types `lines` into the shell.
        func send(_ lines: [String]) {
            try? child.input!.write(contentsOf: Data(lines.map { $0 + "\n" }.joined().utf8))
        }

        func send(_ lines: String...) { send(lines) }

        /// Ends the input (the shell finishes what it was given, then exits) and waits for the
        /// end (a shell that does not end is reported and killed); its whole output.
        @discardableResult
        func finish(sourceLocation: SourceLocation = #_sourceLocation) -> String {
            try? child.input!.close()
            return wait(sourceLocation: sourceLocation)
        }

        /// Waits for the process to end, at most two minutes; its whole output.
        func wait(sourceLocation: SourceLocation = #_sourceLocation) -> String {
            waitForExit(child, timeout: 120, sourceLocation: sourceLocation)
            return output
        }

        func kill() {
            child.kill()
            try? child.input!.close()
        }

        /// Its peak resident memory so far in bytes (the kernel's VmHWM), while it runs.
        var peakMemory: Int? {
            guard let status = try? String(contentsOfFile: "/proc/\(child.pid)/status", encoding: .utf8),
                  let line = status.split(separator: "\n").first(where: { $0.hasPrefix("VmHWM:") }),
                  let kilobytes = Int(line.split(separator: " ").dropFirst().first ?? "") else { return nil }
            return kilobytes << 10
        }

        /// What it has written so far (it may still be running).
        var output: String { (try? String(contentsOfFile: outputPath, encoding: .utf8)) ?? "" }

        /// Waits until the output holds what `condition` looks for; records an issue (with the
        /// output) and returns false if `timeout` seconds pass first.
        @discardableResult
        func waitFor(timeout: Double = 30, sourceLocation: SourceLocation = #_sourceLocation, _ condition: (String) -> Bool) -> Bool {
            if eventually(timeout: timeout, { condition(output) }) { return true }
            Issue.record("the output never matched; it is:\n\(output.suffix(3_000))", sourceLocation: sourceLocation)
            return false
        }

        /// Waits until `name` is in sight: told arriving (`+ … name#… is nearby`), or in the list
        /// `chat` prints (`name#… seen …`) when it was there first.
        @discardableResult
        func waitForPeer(_ name: String, timeout: Double = 30, sourceLocation: SourceLocation = #_sourceLocation) -> Bool {
            waitFor(timeout: timeout, sourceLocation: sourceLocation) { Self.sees($0, name) }
        }

        /// Whether `output` shows `name` in sight, arriving or listed (on `plane`, if given).
        static func sees(_ output: String, _ name: String, plane: String? = nil) -> Bool {
            output.split(separator: "\n").contains { line in
                line.contains(name + "#") && (line.contains("is nearby") || line.contains(" seen "))
                    && (plane.map { line.contains("(\($0))") || line.contains(" \($0) ") } ?? true)
            }
        }

        /// What `nearby stats` counts under `name` now (`blocked`, `resent`, `stale`: the number
        /// that follows it), asked afresh (in chat, not in a conversation); nil when the answer
        /// did not come.
        func count(_ name: String, sourceLocation: SourceLocation = #_sourceLocation) -> Int? {
            guard let line = statsLine("sent ", sourceLocation: sourceLocation) else { return nil }
            guard let range = line.range(of: #"\b"# + name + #" (\d+)"#, options: .regularExpression) else { return 0 }
            return Int(line[range].split(separator: " ").last!) ?? 0
        }

        /// The line of `nearby stats` that starts with `prefix`, asked afresh (in chat, not in a
        /// conversation); nil when the answer did not come, "" when it has no such line.
        func statsLine(_ prefix: String, sourceLocation: SourceLocation = #_sourceLocation) -> Substring? {
            asked += 1
            let marker = "stats asked \(asked)"
            send("nearby stats", "echo \(marker)")
            guard waitFor(sourceLocation: sourceLocation, { $0.contains(marker + "\n") }) else { return nil }
            let before = output.components(separatedBy: marker + "\n").dropLast().joined()
            return before.split(separator: "\n").last(where: { $0.hasPrefix(prefix) }) ?? ""
        }

        /// Asks `nearby stats` until the broker has taken every topic of the mailbox's: only then
        /// is what is mailed to us held while we are away.
        @discardableResult
        func waitForMailbox(timeout: Double = 60, sourceLocation: SourceLocation = #_sourceLocation) -> Bool {
            var last: Substring?
            if eventually(timeout: timeout, { last = statsLine("mailbox:", sourceLocation: sourceLocation); return last?.contains(" 0 not yet taken") == true }) {
                return true
            }
            Issue.record("the broker never took every topic of the mailbox (last: \(last ?? "no answer"))", sourceLocation: sourceLocation)
            return false
        }

        /// Asks `nearby stats` until its count under `name` reaches `least`: the counter that
        /// proves something was tried (or refused), where a fixed wait would only hope so.
        @discardableResult
        func waitForCount(_ name: String, atLeast least: Int, timeout: Double = 30,
                          sourceLocation: SourceLocation = #_sourceLocation) -> Bool {
            var last: Int?
            if eventually(timeout: timeout, { last = count(name, sourceLocation: sourceLocation); return (last ?? 0) >= least }) { return true }
            Issue.record("nearby stats never counted \(least) \(name) (last \(last.map(String.init) ?? "no answer"))",
                         sourceLocation: sourceLocation)
            return false
        }

        /// Waits until the output contains `text`.
        @discardableResult
        func waitFor(_ text: String, timeout: Double = 30, sourceLocation: SourceLocation = #_sourceLocation) -> Bool {
            waitFor(timeout: timeout, sourceLocation: sourceLocation) { $0.contains(text) }
        }

        /// Starts `executable` with `lines` as its first input, its stdout and stderr both to
        /// `outputPath`.
        static func launch(_ executable: String, _ arguments: [String], environment: [String: String],
                           outputPath: String, lines: [String]) throws -> Run {
            _ = FileManager.default.createFile(atPath: outputPath, contents: nil)
            let run = Run(child: try Child([executable] + arguments, environment: environment, stdin: .pipe,
                                           stdout: .file(outputPath, append: true), stderr: .file(outputPath, append: true)),
                          outputPath: outputPath)
            run.send(lines)
            return run
        }
    }

    /// Creates profile `name` on `host` (in its own data directory) and returns the directory.
    func makeProfile(_ name: String, host: Int, tag: String = "") throws -> String {
        let data = scratch.path + "/host\(host)\(tag)"
        let password = scratch.write("password", "correct horse\n")
        let result = try runSeance(["--data-dir", data, "-c", "profile new \(name) --password-file \(password)"], scratch: scratch)
        guard result.status == 0 else { throw SetupError(output: result.stderr) }
        return data
    }

    /// Starts seance on `host`, logged in as `name`, with `lines` typed first.
    func start(host: Int, data: String, name: String, arguments: [String] = [], lines: [String]) throws -> Run {
        try Run.launch("/usr/sbin/ip", ["netns", "exec", namespace(host), seanceBinary, "--data-dir", data,
                                        "--announce-interval", "0.2", "--interface", "e0"] + arguments,
                       environment: ["HOME": scratch.path, "PATH": "/usr/bin:/bin:/usr/sbin:/sbin"],
                       outputPath: scratch.path + "/out-\(host)-\(UUID().uuidString.prefix(4))",
                       lines: ["login \(name) --password-file \(scratch.path)/password"] + lines)
    }

    func shellScript(_ script: String) throws -> (status: Int32, output: String) {
        let path = scratch.write("net-\(UUID().uuidString.prefix(6)).sh", script)
        let outputPath = path + ".out"
        _ = FileManager.default.createFile(atPath: outputPath, contents: nil)
        let child = try Child(["/bin/bash", path], stdout: .file(outputPath, append: true), stderr: .file(outputPath, append: true))
        let outcome = waitForExit(child, timeout: 120)
        return (outcome.status ?? -1, (try? String(contentsOfFile: outputPath, encoding: .utf8)) ?? "")
    }
}
