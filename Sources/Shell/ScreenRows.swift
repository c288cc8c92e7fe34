import Terminal

/// Where finished lines of output are on a terminal, in rows (a line wider than the terminal
/// takes several), so that one printed earlier can be written over while it is still on the
/// screen: a message's delivery state under its bubble.
///
/// It follows what the console writes: text and new lines move down, a cursor-up (`ESC [ n A`)
/// moves up, an erase below (`ESC [ J`) forgets what was below, and clearing the screen forgets
/// everything. What it cannot follow (a resized window, Ctrl-L, a completion listing drawn below
/// the line being typed) is told through `forgetMarks`.
struct ScreenRows {
    /// Rows finished since tracking began: the cursor is on row `row`.
    private(set) var row = 0
    /// Columns written on row `row`.
    private(set) var column = 0
    /// The row of each marked line.
    private var marks: [String: Int] = [:]

    /// Follows `text` written at a terminal `columns` wide.
    mutating func advance(over text: String, columns: Int) {
        let columns = max(1, columns)
        var bytes = text.utf8[...]
        while let first = bytes.first {
            switch first {
            case 0x0A:
                row += 1
                column = 0
                bytes = bytes.dropFirst()
            case 0x0D:
                column = 0
                bytes = bytes.dropFirst()
            case 0x1B:
                bytes = escape(in: bytes.dropFirst())
            default:
                // Up to the next control: printable text, which wraps at the right edge.
                let end = bytes.firstIndex { $0 == 0x0A || $0 == 0x0D || $0 == 0x1B } ?? bytes.endIndex
                let width = Substring(bytes[..<end]).displayWidth
                if width > 0 {
                    let total = column + width
                    let wraps = (total - 1) / columns
                    row += wraps
                    column = total - wraps * columns
                }
                bytes = bytes[end...]
            }
        }
    }

    /// Skips an escape sequence (`rest` follows the ESC), doing what it does to the rows.
    private mutating func escape(in rest: Substring.UTF8View.SubSequence) -> Substring.UTF8View.SubSequence {
        guard let kind = rest.first else { return rest }
        switch kind {
        case UInt8(ascii: "["):
            let body = rest.dropFirst()
            guard let final = body.firstIndex(where: { (0x40...0x7E).contains($0) }) else { return body[body.endIndex...] }
            // Colours, most of what is written, need no parameter read.
            func parameter() -> Int? { Int(String(decoding: body[..<final], as: UTF8.self)) }
            switch body[final] {
            case UInt8(ascii: "A"):
                row = max(0, row - max(1, parameter() ?? 1))
            case UInt8(ascii: "J"):
                if let erased = parameter(), erased == 2 || erased == 3 { marks.removeAll() } else { marks = marks.filter { $0.value < row } }
            case UInt8(ascii: "H"):
                marks.removeAll()
            default:
                break
            }
            return body[body.index(after: final)...]
        case UInt8(ascii: "]"):
            // An operating system command, ended by BEL or ESC \.
            let body = rest.dropFirst()
            guard let end = body.firstIndex(where: { $0 == 0x07 || $0 == 0x1B }) else { return body[body.endIndex...] }
            return body[end] == 0x07 ? body[body.index(after: end)...] : body[body.index(after: end)...].dropFirst()
        default:
            return rest.dropFirst()
        }
    }

    /// Names the line about to be written on the current row (only at the start of a row).
    mutating func mark(_ name: String, keepingWithin rows: Int) {
        guard column == 0 else { return }
        marks[name] = row
        // Lines that scrolled away never come back: forget them.
        if marks.count > 2 * max(rows, 1) { marks = marks.filter { row - $0.value < rows } }
    }

    /// How many rows above the cursor's row the line marked `name` is, if it is known.
    func distance(to name: String) -> Int? {
        guard let marked = marks[name], marked < row else { return nil }
        return row - marked
    }

    /// The typed line was accepted: the prompt and the line (`width` columns, starting where
    /// the output had left the cursor) stay on screen, and the cursor goes to the next row.
    mutating func finishLine(width: Int, columns: Int) {
        let columns = max(1, columns)
        let total = column + width
        // A line that ends exactly at the right edge: whether the editor moved down a row
        // before the new line is its own business, so the rows above are no longer known.
        if total > 0 && total % columns == 0 { marks.removeAll() }
        row += total > 0 ? (total - 1) / columns + 1 : 1
        column = 0
    }

    mutating func forgetMarks() { marks.removeAll() }
}
