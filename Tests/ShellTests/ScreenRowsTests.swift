import Testing
import Terminal
@testable import Shell

/// Following where printed lines are, in rows of a terminal, to write over one later.
@Suite struct ScreenRowsTests {
    @Test func linesAndWrappedLinesAreCountedInRows() {
        var screen = ScreenRows()
        screen.advance(over: "one\ntwo\n", columns: 10)
        #expect((screen.row, screen.column) == (2, 0))
        screen.advance(over: "0123456789", columns: 10)  // Exactly the width: still on its row.
        #expect((screen.row, screen.column) == (2, 10))
        screen.advance(over: "\n", columns: 10)
        #expect((screen.row, screen.column) == (3, 0))
        screen.advance(over: "0123456789abcde\n", columns: 10)  // Fifteen columns: two rows.
        #expect(screen.row == 5)
        screen.advance(over: "🆘⬛️⬛️⬛️⬛️⬛️\n", columns: 10)  // Twelve columns of emoji.
        #expect(screen.row == 7)
    }

    @Test func escapesTakeNoRoomAndMovesUpAndErasesAreFollowed() {
        var screen = ScreenRows()
        screen.advance(over: "\u{1B}[1m\u{1B}[38;2;1;2;3mbold and coloured\u{1B}[0m\n", columns: 20)
        #expect(screen.row == 1)
        screen.advance(over: "\u{1B}]0;title\u{07}x\n", columns: 20)
        #expect(screen.row == 2)
        screen.mark("a", keepingWithin: 24)
        screen.advance(over: "a line\nb\nc\n", columns: 20)
        #expect(screen.distance(to: "a") == 3)
        // An animation's frame taken back: up two rows and erased below.
        screen.advance(over: "\u{1B}[2A\u{1B}[J", columns: 20)
        #expect(screen.distance(to: "a") == 1)
        screen.advance(over: "\u{1B}[1A\u{1B}[J", columns: 20)
        #expect(screen.distance(to: "a") == nil)  // Erased with what was below.
    }

    @Test func clearingTheScreenOrForgettingLosesEveryMark() {
        var screen = ScreenRows()
        screen.mark("a", keepingWithin: 24)
        screen.advance(over: "x\n", columns: 80)
        #expect(screen.distance(to: "a") == 1)
        screen.advance(over: "\u{1B}[H\u{1B}[2J", columns: 80)
        #expect(screen.distance(to: "a") == nil)
        screen.mark("b", keepingWithin: 24)
        screen.advance(over: "x\n", columns: 80)
        screen.forgetMarks()
        #expect(screen.distance(to: "b") == nil)
    }

    @Test func onlyTheStartOfARowCanBeMarked() {
        var screen = ScreenRows()
        screen.advance(over: "half a row", columns: 80)
        screen.mark("a", keepingWithin: 24)
        screen.advance(over: "\n", columns: 80)
        #expect(screen.distance(to: "a") == nil)
    }

    @Test func anAcceptedLineTakesItsRows() {
        var screen = ScreenRows()
        screen.mark("a", keepingWithin: 24)
        screen.advance(over: "state\n", columns: 10)
        screen.finishLine(width: 14, columns: 10)  // Prompt and line over two rows.
        #expect(screen.distance(to: "a") == 3)
        // A line ending at the right edge: whether the editor moved down first is unknown.
        screen.finishLine(width: 20, columns: 10)
        #expect(screen.distance(to: "a") == nil)
    }

    @Test func marksThatScrolledAwayAreForgotten() {
        var screen = ScreenRows()
        for index in 0..<100 {
            screen.mark("line \(index)", keepingWithin: 10)
            screen.advance(over: "x\n", columns: 80)
        }
        #expect(screen.distance(to: "line 99") == 1)
        #expect(screen.distance(to: "line 0") == nil)
    }
}

/// Lines written over where they are, and printed anew where they cannot be.
@Suite struct ConsoleOverwriteTests {
    private func update(_ console: Console, _ marks: [String]) {
        console.inbox.post(.update(marks.enumerated().map { index, mark in
            Overwrite(mark: mark, id: Int64(index)) { columns in "new \(mark) at \(columns)" }
        }) { missed in missed.isEmpty ? nil : "missed " + missed.map(\.mark).joined(separator: ",") })
    }

    /// The update is written over the row's right end (a state at the end of a compact line
    /// leaves the text before it alone), erased first.
    @Test func aMarkedLineOnScreenIsWrittenOverAndTheCursorPutBack() {
        let console = Console.capturing(columns: 40, rows: 10)
        console.followScreen()
        console.print("bubble")
        console.print("#1 sending", mark: "m1")
        console.print("more output")
        _ = console.takeCaptured()
        update(console, ["m1"])
        console.printPending()
        #expect(console.takeCaptured() == "\u{1B}7\u{1B}[2A\r\u{1B}[28C\u{1B}[Knew m1 at 40\u{1B}8")
    }

    @Test func aLineNoLongerOnScreenIsPrintedInstead() {
        let console = Console.capturing(columns: 40, rows: 5)
        console.followScreen()
        console.print("#1 sending", mark: "m1")
        console.print("#2 sending", mark: "m2")
        for _ in 0..<2 { console.print("filler") }
        _ = console.takeCaptured()
        update(console, ["m1", "m2", "unknown"])
        console.printPending()
        // m2 is 3 rows up in a window of 5 (a row to spare); m1, 4 rows up, may have scrolled away.
        #expect(console.takeCaptured() == "\u{1B}7\u{1B}[3A\r\u{1B}[28C\u{1B}[Knew m2 at 40\u{1B}8" + "missed m1,unknown\n")
    }

    @Test func withoutAScreenToFollowEveryUpdateIsALine() {
        let console = Console.capturing(columns: 40, rows: 10)
        console.print("#1 sending", mark: "m1")
        _ = console.takeCaptured()
        update(console, ["m1"])
        console.printPending()
        #expect(console.takeCaptured() == "missed m1\n")
        #expect(!console.overwrites)
    }
}

/// Lines laid out when printed: the window may have been resized since they were made.
@Suite struct RenderedNoticeTests {
    @Test func linesAreLaidOutForTheWidthWhenPrinted() {
        let console = Console.capturing(columns: 80, rows: 24)
        console.inbox.post(.lines { columns in ["\(columns) wide", String(repeating: "-", count: columns)] })
        console.columns = 50  // Resized after the notice was made.
        console.printPending()
        #expect(console.takeCaptured() == "50 wide\n" + String(repeating: "-", count: 50) + "\n")
    }

    /// A notice is prose: at a terminal it breaks at spaces for the width it is printed at; to a
    /// pipe it stays one line (issue 31, item 13).
    @Test func noticesBreakAtSpacesAtATerminalOnly() {
        let terminal = Console.capturing(Capabilities(color: .none, ascii: false, interactive: true), columns: 20, rows: 24)
        let pipe = Console.capturing(columns: 20, rows: 24)
        for console in [terminal, pipe] {
            console.inbox.post("the ghost of alice cursed you with silence")
            console.printPending()
        }
        #expect(terminal.takeCaptured() == "the ghost of alice\ncursed you with\nsilence\n")
        #expect(pipe.takeCaptured() == "the ghost of alice cursed you with silence\n")
    }
}
