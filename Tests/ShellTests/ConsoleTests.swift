import Testing
@testable import Shell
import Terminal

/// Issue 52: output and errors break at spaces in a narrow window, as notices do; a script
/// gets its lines whole.
@Suite struct ConsoleWrappingTests {
    let terminal = Capabilities(color: .none, ascii: false, interactive: true)

    @Test func outputAndErrorsBreakAtSpacesKeepingTheirIndentation() {
        let console = Console.capturing(terminal, columns: 50)
        console.print("A new key of theirs is not the one you trust for that name: compare safety numbers")
        console.error("unknown command 'hepl' (did you mean 'help'?) and then some more words here")
        console.print("    indented: a line of a table that is wider than the window it is printed in")
        let rows = console.takeCaptured().split(separator: "\n").map(String.init)
        #expect(rows.allSatisfy { $0.displayWidth <= 50 }, "\(rows)")
        #expect(rows.contains("A new key of theirs is not the one you trust for"), "\(rows)")
        #expect(rows.contains { $0.hasSuffix("(did you mean 'help'?) and then some") } || rows.contains { $0.contains("'help'?)") }, "\(rows)")
        #expect(!rows.contains { $0.hasSuffix("'help") }, "never cut inside a word: \(rows)")
        #expect(rows.filter { $0.hasPrefix("    ") }.count == 2, "the indentation kept: \(rows)")
    }

    @Test func aScriptGetsWholeLines() {
        let console = Console.capturing(.plain, columns: 50)
        let line = String(repeating: "word ", count: 30)
        console.print(line)
        #expect(console.takeCaptured() == line + "\n")
    }

    @Test func asciiMeansASCIIPunctuationToo() {
        let console = Console.capturing(Capabilities(color: .none, ascii: true, interactive: false))
        console.print("ben — a file · 3 MiB – “quoted” and ’twas • done")
        console.error("cannot read it — gone")
        #expect(console.takeCaptured() == "ben - a file - 3 MiB - \"quoted\" and 'twas * done\ncannot read it - gone\n")
    }
}

/// Issue 52: history is plain lines; a file libedit wrote (`open\040ben`) is read with its
/// escapes undone.
@Suite struct HistoryFileTests {
    @Test func plainLinesAndLibeditsFormatReadAlike() {
        #expect(HistoryFile.entries("open ben\nsearch \"two words\"\n") == ["open ben", "search \"two words\""])
        let old = "_HiStOrY_V2_\nopen\\040ben\nsearch\\040\\\"two\\040words\\\"\necho\\040a\\\\b\nsay\\040caf\\303\\251\n"
        #expect(HistoryFile.entries(old) == ["open ben", "search \\\"two words\\\"", "echo a\\b", "say café"])
    }
}
