import Foundation
import Testing

@Suite struct BatchTests {
    let scratch = Scratch()

    func run(_ stdin: String, _ arguments: [String] = [], environment: [String: String] = [:]) throws -> RunResult {
        try runSeance(["--data-dir", scratch.dataDir] + arguments, stdin: stdin, environment: environment, scratch: scratch)
    }

    /// `notify` at runtime, kept in seance.conf for the next session (issue 52).
    @Test func notifyIsChosenAtRuntimeAndKept() throws {
        #expect(try run("notify\n").stdout == "notify: bell\n")
        let chosen = try run("notify desktop\n")
        #expect(chosen.status == 0 && chosen.stderr == "notify: desktop (kept in seance.conf)\n", "\(chosen.stderr)")
        #expect(try String(contentsOfFile: scratch.dataDir + "/seance.conf", encoding: .utf8) == "notify = desktop\n")
        #expect(try run("notify\n").stdout == "notify: desktop\n")
        #expect(try run("notify loud\n").stderr.hasPrefix("line 1: "))
    }

    @Test func pipedCommandsRunWithoutPromptOrBanner() throws {
        let result = try run("echo hello\necho 'two words'\n")
        #expect(result.stdout == "hello\ntwo words\n")
        #expect(result.stderr == "")
        #expect(result.status == 0)
    }

    @Test func errorsNameTheLineAndSetTheStatus() throws {
        let result = try run("echo one\nhlep\necho three\necho \"open\n")
        #expect(result.stdout == "one\nthree\n")
        #expect(result.stderr == "line 2: unknown command 'hlep' (did you mean 'help'?)\nline 4: unterminated \" quote\n")
        #expect(result.status == 1)
    }

    @Test func bailStopsAtTheFirstFailure() throws {
        let result = try run("echo one\nnope\necho three\n", ["--bail"])
        #expect(result.stdout == "one\n")
        #expect(result.stderr.hasPrefix("line 2: "))
        #expect(result.status == 1)
    }

    @Test func commandsFromDashC() throws {
        let ok = try run("", ["-c", "echo a; echo b;echo 'c;d'"])
        #expect(ok.stdout == "a\nb\nc;d\n")
        #expect(ok.status == 0)
        // `;` only separates: a failure skips nothing (without --bail), as in sh.
        let failing = try run("echo from stdin is ignored", ["-c", "echo a; frobnicate; echo b"])
        #expect(failing.stdout == "a\nb\n")
        #expect(failing.stderr == "line 1: unknown command 'frobnicate' (type 'help' for the list)\n")
        #expect(failing.status == 1)
        let bailed = try run("", ["--bail", "-c", "echo a; frobnicate; echo b"])
        #expect(bailed.stdout == "a\n" && bailed.status == 1)
        // Every -c is a line of its own, in order; --echo shows each command as it runs.
        let several = try run("", ["--echo", "-c", "echo a; echo b", "-c", "frobnicate", "-c", "echo 'c d'"])
        #expect(several.stdout == "seance> echo a\na\nseance> echo b\nb\nseance> frobnicate\nseance> echo 'c d'\nc d\n")
        #expect(several.stderr == "line 2: unknown command 'frobnicate' (type 'help' for the list)\n")
    }

    /// A program that drives seance through pipes sees each answer before it sends the next
    /// command, and notices (a reminder) as soon as they fire, in order with the answers.
    @Test func aDriverThroughPipesGetsEachAnswerAtOnce() throws {
        let driver = try PipeDriver(arguments: ["--data-dir", scratch.dataDir], scratch: scratch)
        defer { driver.close() }
        try driver.send("echo one")
        #expect(try driver.read(until: "one\n", timeout: 10))
        try driver.send("zombies stats")
        #expect(try driver.read(until: "wins: 0", timeout: 10))
        try driver.send("remind 0.2 ring")
        #expect(try driver.read(until: "reminder: ring\n", timeout: 10))
        try driver.send("echo two; nope; echo three")
        #expect(try driver.read(until: "two\nthree\n", timeout: 10))
        #expect(try driver.readError(until: "line 4: unknown command 'nope'", timeout: 10))
    }

    @Test func scriptFile() throws {
        let script = scratch.write("script.seance", "#!/usr/bin/env seance\n# a comment\necho from script # trailing\nquit\necho not reached\n")
        let result = try run("", [script])
        #expect(result.stdout == "from script\n")
        #expect(result.status == 0)
        let missing = try run("", [scratch.path + "/nope.seance"])
        #expect(missing.status == 1)
        #expect(missing.stderr.hasPrefix("seance: cannot read \(scratch.path)/nope.seance: No such file"))
    }

    @Test func echoFlagShowsCommands() throws {
        let result = try run("echo x\n", ["--echo"])
        #expect(result.stdout == "seance> echo x\nx\n")
    }

    @Test func emptyInputExitsAtOnce() throws {
        let result = try run("")
        #expect(result.stdout == "" && result.stderr == "" && result.status == 0)
    }

    @Test func colourOnlyWhenAskedInBatch() throws {
        let plain = try run("help\n")
        #expect(!plain.stdout.contains("\u{1B}["))
        let forced = try run("help\n", ["--color", "always"])
        #expect(forced.stdout.contains("\u{1B}[1m"))
        let never = try run("help\n", ["--color", "never"])
        #expect(!never.stdout.contains("\u{1B}["))
        let bad = try run("", ["--color", "sometimes"])
        #expect(bad.status != 0)
        #expect(bad.stderr.contains("sometimes"))
    }

    @Test func helpListsEveryFlag() throws {
        let result = try run("", ["--help"])
        for flag in ["--data-dir", "--seed", "--color", "--ascii", "-c", "--bail", "--echo", "--version", "<script>"] {
            #expect(result.stdout.contains(flag), "missing \(flag)")
        }
        #expect(try run("", ["--version"]).stdout.hasPrefix("0."))
    }

    @Test func closedPipeEndsQuietly() throws {
        let commands = Array(repeating: "help", count: 3000).joined(separator: "; ")
        let output = try sh("'\(seanceBinary)' --data-dir '\(scratch.dataDir)' -c '\(commands)' 2>'\(scratch.path)/err' | head -1")
        #expect(output == "Commands:\n")
        #expect(try String(contentsOfFile: scratch.path + "/err", encoding: .utf8) == "")
    }

    @Test func longBatchesStayInOrder() throws {
        let input = (1...20_000).map { "echo \($0)" }.joined(separator: "\n")
        let result = try run(input)
        let lines = result.stdout.split(separator: "\n")
        #expect(lines.count == 20_000)
        #expect(lines.first == "1" && lines.last == "20000")
    }

    @Test func remindInBatchDoesNotWait() throws {
        let result = try run("remind 3600 much later\necho done\n")
        #expect(result.stdout == "done\n")
        #expect(result.status == 0)
        let bad = try run("remind soon x\n")
        #expect(bad.stderr == "line 1: seconds must be a number from 0 to 86400, not 'soon'\n")
    }
}

@Suite struct BatteryEndToEndTests {
    let scratch = Scratch()

    @Test func pretendLevelsAndPlanes() throws {
        let result = try runSeance(["--data-dir", scratch.dataDir, "--battery", "8"],
                                   stdin: "battery\nbattery 40%\nbattery 101\nbattery soon\n", scratch: scratch)
        #expect(result.stdout == """
            battery: 8 % (set by you; 'battery auto' reads the real one)  plane: Undead
            battery: 40 % (set by you; 'battery auto' reads the real one)  plane: Dying

            """)
        #expect(result.stderr == """
            line 3: the battery level must be from 0 to 100, not 101
            line 4: 'soon' is not a battery level: give a percentage from 0 to 100, or 'auto'

            """)
        let auto = try runSeance(["--data-dir", scratch.dataDir, "-c", "battery auto"], scratch: scratch)
        #expect(auto.stdout.hasPrefix("battery: "))
        #expect(!auto.stdout.contains("set by you"))
    }

    @Test func theFlagIsChecked() throws {
        let result = try runSeance(["--battery", "150", "-c", "battery"], scratch: scratch)
        #expect(result.status != 0)
        #expect(result.stderr.contains("--battery takes a percentage from 0 to 100, not 150"))
    }
}
