import Glibc
import Runtime
import Synchronization
import Terminal

/// The one writer of the terminal. Command output is buffered and written to stdout in large
/// chunks (batch throughput depends on it); errors flush stdout first so the two streams keep
/// their order when they go to the same place.
package final class Console {
    package let capabilities: Capabilities
    package let styler: Styler
    package let inbox = AsyncInbox()
    /// Terminal width in columns; the interactive reader updates it on SIGWINCH.
    package var columns: Int
    /// Terminal height in rows, kept like `columns`: views that could be long fit it.
    package var rows: Int

    private var buffer: [UInt8] = []
    private let outputFD: Int32
    private let errorFD: Int32
    /// Set by the interactive reader: prints async lines above the prompt while a line is edited.
    var printAbovePrompt: (([MarkedLine]) -> Void)?
    /// Set by the interactive reader: while a line is edited, the rows of it above and below the
    /// cursor (nil when none is).
    var editArea: (() -> (aboveCursor: Int, belowCursor: Int)?)?
    /// Set by a view the terminal would cut up when the window is resized (an open
    /// conversation): draws it again for the new size; false when it has nothing to draw.
    package var redrawAfterResize: (() -> Bool)?
    /// How a command named in advice is typed where the user is now (`Advice`); set by the
    /// shell. Without it, as at the top level.
    var placeAdvice: ((_ words: String, _ mode: String?) -> String)?
    /// Where marked lines are on the screen: followed only at a terminal that can move the
    /// cursor back up (`followScreen`).
    private(set) var screen: ScreenRows?
    /// How alerts are told (the bell, a desktop notification); nil: not at all (a script).
    package var attention: Attention?
    /// Captured output, for tests that drive the shell without a process.
    private var capture: [String]?
    /// The rows the line accepted last took with its prompt, while nothing has been written
    /// after it.
    private var acceptedRows: Int?

    package init(capabilities: Capabilities, columns: Int = 80, rows: Int = 24, outputFD: Int32 = 1, errorFD: Int32 = 2) {
        self.rows = rows
        self.capabilities = capabilities
        self.styler = Styler(capabilities)
        self.columns = columns
        self.outputFD = outputFD
        self.errorFD = errorFD
        buffer.reserveCapacity(1 << 16)
    }

    /// A console that records what it would print, for tests.
    package static func capturing(_ capabilities: Capabilities = .plain, columns: Int = 80, rows: Int = 24) -> Console {
        let console = Console(capabilities: capabilities, columns: columns, rows: rows, outputFD: -1, errorFD: -1)
        console.capture = []
        return console
    }

    /// Everything captured so far (stdout and stderr, in order), and forgets it.
    package func takeCaptured() -> String {
        defer { capture = [] }
        return (capture ?? []).joined()
    }

    /// Writes `text` and a newline to stdout; at a terminal, a line wider than the window is
    /// broken at spaces (its indentation kept) rather than by the terminal mid-word.
    package func print(_ text: String = "") {
        write(fitted(advised(text)), newline: true)
    }

    /// `text` with the commands its advice names spelled for where the user is.
    func advised(_ text: String) -> String {
        Advice.spelled(text) { words, mode in placeAdvice?(words, mode) ?? words }
    }

    /// `text` as it fits the window at a terminal: each line wider than it broken at spaces,
    /// the rows after the first indented as the first is. Unchanged to a pipe (a script reads
    /// whole lines) and when it fits.
    func fitted(_ text: String) -> String {
        guard capabilities.interactive, columns > 20, text.utf8.count > columns else { return text }
        return text.split(separator: "\n", omittingEmptySubsequences: false).map { line -> String in
            let indent = line.prefix { $0 == " " }.count
            guard indent < columns / 2, line.strippingANSI.displayWidth > columns else { return String(line) }
            let margin = String(repeating: " ", count: indent)
            return DisplayWidth.wrapStyled(String(line.dropFirst(indent)), width: columns - indent).map { margin + $0 }.joined(separator: "\n")
        }.joined(separator: "\n")
    }

    /// With `--ascii` (a terminal or a font without them), dashes, quotes and bullets as their
    /// ASCII look-alikes, each one column as before.
    private func ascii(_ text: String) -> String {
        guard capabilities.ascii, !text.utf8.allSatisfy({ $0 < 0x80 }) else { return text }
        var out = String.UnicodeScalarView()
        for scalar in text.unicodeScalars {
            switch scalar {
            case "\u{2014}", "\u{2013}", "\u{2212}", "\u{00B7}": out.append("-")
            case "\u{2018}", "\u{2019}": out.append("'")
            case "\u{201C}", "\u{201D}": out.append("\"")
            case "\u{2022}": out.append("*")
            default: out.append(scalar)
            }
        }
        return String(out)
    }

    /// Writes a status line (`logged in as …`, `announcing …`): what a command did, not what it
    /// was asked for. At a terminal with the output; in a script on standard error, so that
    /// standard output carries only the data (a list, TSV rows), as git does.
    package func status(_ text: String) {
        if capabilities.interactive || capture != nil { return print(text) }
        error(text)
    }

    /// Writes a line of prose (a hint, a notice): at a terminal broken at spaces to its width
    /// rather than by the terminal mid-word; to a pipe as one line, as scripts expect.
    package func printProse(_ text: String) {
        // Spelled before it is broken: a command advised may have spaces in it.
        for row in prose(advised(text)) { print(row) }
    }

    private func prose(_ text: String) -> [String] {
        capabilities.interactive ? DisplayWidth.wrapStyled(text, width: columns) : [text]
    }

    /// Writes `text` and a newline, and remembers where, so that `Notice.update` can write over
    /// it later (a message's delivery state).
    package func print(_ text: String, mark: @autoclosure () -> String) {
        if screen != nil { screen!.mark(mark(), keepingWithin: rows) }
        print(text)
    }

    /// True when marked lines can be written over: the output is a terminal being followed.
    package var overwrites: Bool { screen != nil }

    /// Starts following the screen, for `print(_:mark:)` and `Notice.update`.
    func followScreen() { screen = ScreenRows() }

    /// What happened to the screen is not known any more (resized, cleared, drawn over by the
    /// line editor): no marked line is written over after this.
    func forgetMarks() { screen?.forgetMarks() }

    /// The line editor printed the accepted line (`width` columns with its prompt) and a new line.
    func lineAccepted(width: Int) {
        screen?.finishLine(width: width, columns: columns)
        // A line that ends exactly at the right edge: whether the editor moved down a row is
        // its own business, so how many rows it took is not known.
        acceptedRows = width > 0 && width % max(1, columns) == 0 ? nil : max(1, (width + columns - 1) / max(1, columns))
    }

    /// At a terminal being followed, takes the line just typed at the prompt off the screen,
    /// if nothing has been written after it: what it became is drawn in its place (a message).
    package func eraseAcceptedLine() {
        guard screen != nil, let rows = acceptedRows else { return }
        write("\u{1B}[\(rows)A\r\u{1B}[J")
    }

    /// Writes `text` to stdout as is (with `--ascii`, its typographic punctuation as ASCII),
    /// and a newline after it when asked.
    package func write(_ text: String, newline: Bool = false) {
        let text = ascii(text)
        acceptedRows = nil
        if screen != nil { screen!.advance(over: newline ? text + "\n" : text, columns: columns) }
        writeUnfollowed(text, newline: newline)
    }

    /// Writes text that moves the cursor without leaving output behind (redrawing above the
    /// line being edited, writing over a marked line). Copied into the buffer from its bytes,
    /// the newline apart: every row of every message shown comes this way.
    func writeUnfollowed(_ text: String, newline: Bool = false) {
        if capture != nil { capture!.append(newline ? text + "\n" : text); return }
        var text = text
        text.withUTF8 { buffer.append(contentsOf: $0) }
        if newline { buffer.append(UInt8(ascii: "\n")) }
        if buffer.count >= 1 << 16 { flush() }
    }

    /// Writes one error line to stderr, after whatever stdout holds.
    package func error(_ text: String) {
        let text = ascii(fitted(advised(text)))
        acceptedRows = nil
        screen?.advance(over: text + "\n", columns: columns)
        if capture != nil { capture!.append(text + "\n"); return }
        flush()
        Console.writeAll(errorFD, Array((text + "\n").utf8))
    }

    /// Writes `text` over the right end of the line marked `name` (the rest of it left as it
    /// is) if it is still on the screen, the cursor left where it was; false (and nothing
    /// written) if it is not, or if the screen is not followed.
    func overwrite(_ name: String, with text: String) -> Bool {
        guard let screen, let up = screen.distance(to: name) else { return false }
        let (above, below) = editArea?() ?? (0, 0)
        // The marked row, every row after it and the line being typed all fit in the window,
        // with a row to spare.
        guard up + above + below + 1 < rows else { return false }
        // Erased before it is written: erasing after a row's last column would take that column.
        let column = max(0, columns - text.strippingANSI.displayWidth)
        writeUnfollowed("\u{1B}7\u{1B}[\(up + above)A\r" + (column > 0 ? "\u{1B}[\(column)C" : "") + "\u{1B}[K" + text + "\u{1B}8")
        return true
    }

    package func flush() {
        guard !buffer.isEmpty else { return }
        Console.writeAll(outputFD, buffer)
        buffer.removeAll(keepingCapacity: true)
    }

    /// Prints lines that arrived asynchronously: above the prompt when one is being edited,
    /// otherwise in sequence with other output.
    package func printPending() {
        let notices = inbox.drain()
        guard !notices.isEmpty else { return }
        var lines: [MarkedLine] = []
        var alerts: [Alert] = []
        func printLines() {
            guard !lines.isEmpty else { return }
            if let printAbovePrompt {
                printAbovePrompt(lines)
            } else {
                writeLines(lines)
            }
            lines.removeAll()
        }
        for notice in notices {
            switch notice {
            case .line(let line):
                lines += prose(advised(line)).map { MarkedLine($0) }
            case .lines(let render):
                lines += render(columns).map { MarkedLine($0) }
            case .markedLines(let render):
                lines += render(columns)
            case .update(let overwrites, let otherwise):
                printLines()  // The marks' distances as they are after those lines.
                let missed = overwrites.filter { !overwrite($0.mark, with: $0.render(columns)) }
                // Now, while the cursor is where the rows were counted from.
                if missed.count < overwrites.count { flush() }
                if let line = otherwise(missed) { lines.append(MarkedLine(line)) }
            case .alert(let alert):
                alerts.append(alert)
            }
        }
        printLines()
        // After the lines they go with: the bell rings when they are there to read.
        if !alerts.isEmpty, let escapes = attention?.escapes(for: alerts, now: SystemTime.monotonic()), !escapes.isEmpty {
            writeUnfollowed(escapes)
            flush()
        }
    }

    /// Writes lines, remembering where the marked ones are (as `print(_:mark:)` does).
    func writeLines(_ lines: [MarkedLine]) {
        for line in lines {
            if let mark = line.mark { print(line.text, mark: mark) } else { print(line.text) }
        }
    }

    static func writeAll(_ fd: Int32, _ bytes: [UInt8]) {
        bytes.withUnsafeBytes { raw in
            var offset = 0
            while offset < raw.count {
                let n = Glibc.write(fd, raw.baseAddress! + offset, raw.count - offset)
                if n < 0 {
                    if errno == EINTR || errno == EAGAIN { continue }
                    return  // EPIPE and the like: the reader went away; SIGPIPE ends a batch run.
                }
                offset += n
            }
        }
    }

    /// How far long work has come (indexing an older database): at a terminal one bar written
    /// over in place; in a script a line on stderr each tenth, so that stdout stays the output.
    func progressLine() -> (_ name: String, _ done: Double) -> Void {
        var lastTenth = -1
        return { [unowned self] name, done in
            let tenth = Int(done * 10)
            guard capabilities.interactive else {
                if tenth != lastTenth { error("\(name): \(tenth * 10) %") }
                lastTenth = tenth
                return
            }
            let width = 30, filled = Int(done * Double(width))
            let bar = capabilities.ascii ? String(repeating: "#", count: filled) + String(repeating: ".", count: width - filled)
                                         : String(repeating: "█", count: filled) + String(repeating: "░", count: width - filled)
            write("\r\u{1B}[K\(name) \(bar) \(Int(done * 100)) %" + (done >= 1 ? "\n" : ""))
            flush()
        }
    }
}
