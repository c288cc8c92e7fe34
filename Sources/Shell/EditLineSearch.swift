import CEditLine
import Glibc

/// Ctrl-R: history searched as the user types, shown as bash shows it (libedit's own search
/// shows a bare `bck:` and no match).
extension EditLineReader {
    /// Runs the search until a key ends it. Enter runs the line found; Ctrl-G leaves the line
    /// as it was; Ctrl-C abandons it, as at the prompt; any other key that is not a letter
    /// keeps the line found for editing and then does what it always does.
    func searchHistory() -> UInt8 {
        let shownPrompt = prompt.map { String(cString: $0) } ?? ""
        var search = HistorySearch(entries: recalled, original: buffer.text)
        redraw(prompt: search.prompt, line: search.line, cursor: search.matchOffset)
        var character: wchar_t = 0
        while true {
            let count = readCharacter(into: &character)
            guard count > 0 else {
                // Ctrl-C (readCharacter noted it) or the end of input: el_gets returns no line.
                // The cursor at the end: "^C" follows the line abandoned.
                redraw(prompt: shownPrompt, line: search.line, cursor: search.line.unicodeScalars.count)
                return UInt8(CC_EOF)
            }
            let scalar = Unicode.Scalar(UInt32(bitPattern: character)) ?? "\u{FFFD}"
            switch scalar {
            case "\u{12}": search.older()  // Ctrl-R
            case "\u{7F}", "\u{08}": search.erase()
            case "\u{07}":  // Ctrl-G
                redraw(prompt: shownPrompt, line: search.original, cursor: search.original.unicodeScalars.count)
                return UInt8(CC_NORM)
            case _ where scalar.value < 0x20:
                // Enter, Esc (arrows), Ctrl-A, Tab…: the key acts on the line found.
                redraw(prompt: shownPrompt, line: search.line, cursor: search.matchOffset)
                el_push(editLine, String(Character(scalar)))
                return UInt8(CC_NORM)
            default: search.type(String(scalar))
            }
            redraw(prompt: search.prompt, line: search.line, cursor: search.matchOffset)
        }
    }

    /// The edit area drawn again from its start with another prompt and line.
    private func redraw(prompt text: String, line: String, cursor: Int) {
        clearEditArea()
        console.flush()
        setPrompt(text)
        buffer.replace(with: line, cursor: cursor)
        seance_el_refresh(editLine)
    }
}
