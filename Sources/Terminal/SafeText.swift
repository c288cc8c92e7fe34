/// The one sanitizer for text that did not come from this program: names, avatars and messages
/// from peers, and anything read back from the database. Whatever it returns can be written to a
/// terminal without running a control sequence, and its display width is what it shows.
///
/// - C0 controls and DEL become caret notation (`ESC` → `^[`, `DEL` → `^?`), except that a
///   newline may be kept for text that is laid out in paragraphs (bubbles).
/// - C1 controls (U+0080–U+009F, which some terminals take as CSI, OSC…) become `\x9b`.
/// - Bidirectional controls (which reorder what follows, even on later lines) and the line and
///   paragraph separators become `<U+202E>` and the like: visible, inert.
package enum SafeText {
    /// `text` made inert for a terminal. `keepNewlines` keeps `\n` (as a line break) for views
    /// that wrap text into paragraphs; everywhere else it shows as `^J`.
    package static func visible(_ text: String, keepNewlines: Bool = false) -> String {
        // Fast path: most text has nothing to change.
        if !text.unicodeScalars.contains(where: { needsEscape($0, keepNewlines: keepNewlines) }) { return text }
        var result = String.UnicodeScalarView()
        for scalar in text.unicodeScalars {
            guard needsEscape(scalar, keepNewlines: keepNewlines) else {
                result.append(scalar)
                continue
            }
            result.append(contentsOf: escape(scalar).unicodeScalars)
        }
        return String(result)
    }

    /// True when `text` would be changed by `visible` (it holds a control, a bidi control, ...).
    package static func containsUnsafe(_ text: String) -> Bool {
        text.unicodeScalars.contains { needsEscape($0, keepNewlines: false) }
    }

    static func needsEscape(_ scalar: Unicode.Scalar, keepNewlines: Bool) -> Bool {
        let value = scalar.value
        if value == 0x0A { return !keepNewlines }
        if value < 0x20 || (0x7F...0x9F).contains(value) { return true }
        return isBidiControl(value) || value == 0x2028 || value == 0x2029
    }

    /// The embedding, override and isolate controls, and the implicit direction marks.
    package static func isBidiControl(_ value: UInt32) -> Bool {
        (0x202A...0x202E).contains(value) || (0x2066...0x2069).contains(value)
            || value == 0x200E || value == 0x200F || value == 0x061C
    }

    static func escape(_ scalar: Unicode.Scalar) -> String {
        let value = scalar.value
        if value < 0x20 { return "^" + String(Character(Unicode.Scalar(UInt8(value + 0x40)))) }
        if value == 0x7F { return "^?" }
        if value <= 0x9F { return "\\x" + hex(value, digits: 2) }
        return "<U+" + hex(value, digits: 4) + ">"
    }

    private static func hex(_ value: UInt32, digits: Int) -> String {
        let text = String(value, radix: 16, uppercase: value > 0xFF)
        return String(repeating: "0", count: max(0, digits - text.count)) + text
    }
}
