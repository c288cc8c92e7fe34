import Foundation
import Testing

/// What `make install` puts on a machine, as the binary writes it: seance(1) and the shells'
/// completions.
struct InstallTests {
    let scratch = Scratch()

    func run(_ arguments: [String], stdin: String = "") throws -> String {
        let result = try runSeance(arguments, stdin: stdin, scratch: scratch)
        #expect(result.status == 0, "\(arguments): \(result.stderr)")
        return result.stdout
    }

    /// The manual page names every flag `--help` lists, every mode and every command `help`
    /// lists in each (it is written from them), and groff reads it without a warning.
    @Test func theManualPageHasEveryFlagModeAndCommandAndLintsClean() throws {
        let page = try run(["--manual-page"])
        for section in ["NAME", "SYNOPSIS", "DESCRIPTION", "OPTIONS", "COMMANDS", "FILES", "ENVIRONMENT", "EXIT STATUS", "EXAMPLES", "SEE ALSO"] {
            #expect(page.contains(".SH \(section)\n"), "no \(section)")
        }
        let flags = try run(["--help"]).matches(of: /(?:^|\s)(--[a-z][a-z-]*|-[a-z])\b/.anchorsMatchLineEndings()).map { String($0.1) }
        #expect(flags.count > 15)
        for flag in Set(flags) where flag != "--manual-page" {
            #expect(page.contains("\\fB" + flag.replacingOccurrences(of: "-", with: "\\-") + "\\fR"), "\(flag) is not in the page")
        }
        // `help` at the top level: its modes; `help MODE`: each mode's commands.
        let top = try run(["-c", "help"])
        // An entry's first line is indented by two spaces; what wraps, by more.
        func entries(_ text: Substring) -> [String] {
            text.split(separator: "\n").filter { $0.hasPrefix("  ") && !$0.hasPrefix("   ") }.map { String($0.split(separator: " ")[0]) }
        }
        let modes = entries(top.components(separatedBy: "Modes:").last![...])
        #expect(Set(modes).isSuperset(of: ["zombies", "visions", "chat", "store", "room"]), "\(modes)")
        for mode in modes {
            #expect(page.contains(".SS \(mode)\n"), "mode \(mode)")
            let own = try run(["-c", "help \(mode)"]).components(separatedBy: "Everywhere:").first!
            #expect(!entries(own[...]).isEmpty, "\(mode) has no commands listed")
            for name in entries(own[...]) {
                #expect(page.contains(".TP\n\\fB" + name.replacingOccurrences(of: "-", with: "\\-")), "\(mode): \(name)")
            }
        }
        for file in ["seance.sqlite", "seance.conf", "history", "online\\-ID.lock"] { #expect(page.contains(file), "\(file)") }
        for variable in ["XDG_DATA_HOME", "NO_COLOR", "COLORTERM", "TERM"] { #expect(page.contains("\\fB\(variable)\\fR"), "\(variable)") }
        // Issue 52: a command's details are one paragraph, not a paragraph a source line; code
        // in backticks is bold; a usage error's status is what it is.
        let send = try #require(page.components(separatedBy: "\\fBsend ").dropFirst().first?.components(separatedBy: ".TP\n\\fB").first)
        #expect(send.components(separatedBy: ".IP").count == 2, "\(send)")
        #expect(!page.contains("`") && page.contains("\\fBmore\\fR"))
        #expect(page.contains("64: the command line itself is wrong"))
        let bogus = try runSeance(["--bogus"], scratch: scratch)
        #expect(bogus.status == 64, "\(bogus.stderr)")
        // A flag's value out of range is a usage error too, negative numbers included.
        for flags in [["--port", "0"], ["--linger", "-1"], ["--battery", "-5"], ["--notify", "loud"]] {
            let wrong = try runSeance(["--data-dir", scratch.dataDir] + flags + ["-c", "quit"], scratch: scratch)
            #expect(wrong.status == 64 && !wrong.stderr.contains("Missing value"), "\(flags): \(wrong.stderr)")
        }
        let path = scratch.write("seance.1", page)
        let lint = try sh("groff -ww -z -man '\(path)' 2>&1; echo \"status $?\"")
        #expect(lint == "status 0\n", "\(lint)")
    }

    /// Each shell loads its completion script and completes `--color` with its three words;
    /// bash completes `--data-dir` with directories and a script with files.
    @Test func eachShellLoadsItsCompletionsAndCompletesTheFlags() throws {
        let bin = scratch.path + "/bin"
        try FileManager.default.createDirectory(atPath: bin, withIntermediateDirectories: true)
        try FileManager.default.createSymbolicLink(atPath: bin + "/seance", withDestinationPath: seanceBinary)
        for shell in ["bash", "zsh", "fish"] {
            _ = scratch.write("seance.\(shell)", try run(["--generate-completion-script", shell]))
        }
        try FileManager.default.createDirectory(atPath: scratch.path + "/dir/sub", withIntermediateDirectories: true)
        _ = scratch.write("dir/file.txt", "")
        let prefix = "cd '\(scratch.path)' && PATH='\(bin)':/usr/bin:/bin "
        func bash(_ words: [String]) throws -> [String] {
            let quoted = words.map { "'\($0)'" }.joined(separator: " ")
            let script = "source /usr/share/bash-completion/bash_completion; source seance.bash; COMP_WORDS=(\(quoted)); "
                + "COMP_CWORD=\(words.count - 1); COMP_LINE=\"${COMP_WORDS[*]}\"; COMP_POINT=${#COMP_LINE}; "
                + "_seance seance '\(words.last!)' '\(words[words.count - 2])'; printf '%s\\n' \"${COMPREPLY[@]}\""
            return try sh(prefix + "bash -c \(shellQuote(script)) 2>&1").split(separator: "\n").map(String.init)
        }
        #expect(Set(try bash(["seance", "--color", ""])) == ["auto", "always", "never"])
        #expect(try bash(["seance", "--data-dir", "dir/"]).contains { $0.hasPrefix("dir/sub") })
        #expect(try !bash(["seance", "--data-dir", "dir/"]).contains { $0.hasPrefix("dir/file") })
        #expect(try bash(["seance", "dir/"]).contains("dir/file.txt"))
        let fish = try sh(prefix + "fish --no-config -c 'source seance.fish; complete -C \"seance --color \"' 2>&1")
        #expect(Set(fish.split(separator: "\n").map { String($0.split(separator: "\t").first ?? "") }) == ["auto", "always", "never"], "\(fish)")
        let zsh = try sh(prefix + "zsh -fc 'autoload -U compinit && compinit -u -D; source seance.zsh; whence -w _seance' 2>&1")
        #expect(zsh == "_seance: function\n", "\(zsh)")
    }
}

/// `text` as one word for sh, in single quotes.
private func shellQuote(_ text: String) -> String { "'" + text.replacingOccurrences(of: "'", with: "'\\''") + "'" }
