/// Terminal column widths of text, so grids, lists and bubbles line up.
///
/// Width is decided per grapheme cluster (Swift's `Character`), which keeps a ZWJ sequence
/// such as 🚶‍♂️ or a flag as one two-column glyph, and honours variation selectors: U+FE0F
/// asks for emoji presentation (two columns), U+FE0E for text presentation (one column).
extension Character {
    package var displayWidth: Int {
        let scalars = unicodeScalars
        guard let first = scalars.first else { return 0 }
        if scalars.count == 1 { return DisplayWidth.scalarWidth(first) }
        if scalars.contains("\u{FE0E}") { return 1 }
        // More emoji joined than any recommended sequence joins (a family's four): no terminal
        // has one glyph for it, and each draws the parts side by side.
        let joined = scalars.count { $0 == "\u{200D}" }
        if joined >= DisplayWidth.longestJoinedSequence {
            return scalars.split(separator: "\u{200D}").reduce(0) { $0 + DisplayWidth.partWidth($1) }
        }
        if scalars.contains("\u{FE0F}") || joined > 0 { return 2 }
        // Regional indicator pairs (flags) and emoji with skin-tone modifiers.
        if first.properties.isEmoji && scalars.contains(where: { $0.properties.isEmojiModifier || DisplayWidth.isRegionalIndicator($0) }) {
            return 2
        }
        // A base followed by combining marks takes the base's width.
        return DisplayWidth.scalarWidth(first)
    }
}

extension DisplayWidth {
    /// One column, whatever follows: printable ASCII, Latin-1 and Latin Extended (below the
    /// combining marks at U+0300), general punctuation's dashes and quotes, box drawing.
    @inline(__always)
    static func isOneColumnAlone(_ value: UInt32) -> Bool {
        (0x20..<0x7F).contains(value) || (0xA0..<0x300).contains(value) || (0x2010...0x2027).contains(value)
            || (0x2500...0x257F).contains(value)
    }
}

extension StringProtocol {
    /// The number of terminal columns this text occupies. ANSI escapes are not skipped:
    /// measure text before styling it.
    package var displayWidth: Int {
        // Most text (printable ASCII, Latin letters, dashes and quotes, a bubble's box drawing)
        // is one column a scalar, none of them joining another: no grapheme breaking needed.
        // Anything else (a combining mark, an emoji, CJK) takes the long way.
        var count = 0
        for scalar in unicodeScalars {
            guard DisplayWidth.isOneColumnAlone(scalar.value) else { return graphemeWidth }
            count += 1
        }
        return count
    }

    private var graphemeWidth: Int {
        var width = 0
        for character in self { width += character.displayWidth }
        return width
    }
}

extension String {
    /// `piece` `count` times, its bytes copied in one buffer: `String(repeating:count:)`
    /// appends string to string, and the frame and indent of a chat bubble cost more that way
    /// than the rest of it.
    package init(repeated piece: String, count: Int) {
        let unit = Array(piece.utf8), total = unit.count * Swift.max(0, count)
        self.init(unsafeUninitializedCapacity: total) { buffer in
            if total == 0 {
                return 0
            } else if unit.count == 1 {
                UnsafeMutableBufferPointer(rebasing: buffer[0..<total]).initialize(repeating: unit[0])
            } else {
                for start in stride(from: 0, to: total, by: unit.count) {
                    _ = UnsafeMutableBufferPointer(rebasing: buffer[start..<(start + unit.count)]).initialize(from: unit)
                }
            }
            return total
        }
    }
}

package enum DisplayWidth {
    /// Joiners in the longest ZWJ sequence Unicode recommends, plus one: from there on a
    /// sequence is drawn as its parts.
    static let longestJoinedSequence = 4

    /// One part of a ZWJ sequence drawn on its own: an emoji two columns, else its first scalar's.
    static func partWidth<Part: Collection<Unicode.Scalar>>(_ part: Part) -> Int {
        guard let first = part.first else { return 0 }
        if part.contains("\u{FE0F}") || first.properties.isEmojiPresentation || part.contains(where: { $0.properties.isEmojiModifier }) {
            return 2
        }
        return scalarWidth(first)
    }

    static func isRegionalIndicator(_ scalar: Unicode.Scalar) -> Bool {
        (0x1F1E6...0x1F1FF).contains(scalar.value)
    }

    /// Width of one scalar standing alone: 0 for controls and combining marks, 2 for East Asian
    /// wide characters and default-emoji-presentation symbols, otherwise 1.
    package static func scalarWidth(_ scalar: Unicode.Scalar) -> Int {
        let value = scalar.value
        if value < 0x20 || (0x7F..<0xA0).contains(value) { return 0 }
        if value < 0x300 { return 1 }  // Fast path: Latin and most punctuation.
        switch scalar.properties.generalCategory {
        case .nonspacingMark, .enclosingMark, .format: return 0
        default: break
        }
        if value == 0x200B || (0x1160...0x11FF).contains(value) { return 0 }
        if scalar.properties.isEmojiPresentation { return 2 }
        return isEastAsianWide(value) ? 2 : 1
    }

    /// East Asian Wide and Fullwidth ranges (Unicode 15, abridged to the blocks that matter).
    private static func isEastAsianWide(_ v: UInt32) -> Bool {
        switch v {
        case 0x1100...0x115F, 0x231A...0x231B, 0x2329...0x232A, 0x2E80...0x303E, 0x3041...0x33FF,
             0x3400...0x4DBF, 0x4E00...0x9FFF, 0xA000...0xA4CF, 0xA960...0xA97F, 0xAC00...0xD7A3,
             0xF900...0xFAFF, 0xFE10...0xFE19, 0xFE30...0xFE6F, 0xFF00...0xFF60, 0xFFE0...0xFFE6,
             0x16FE0...0x16FE4, 0x17000...0x18CFF, 0x1AFF0...0x1B2FF, 0x1F200...0x1F2FF,
             0x1F300...0x1F64F, 0x1F900...0x1F9FF, 0x1FA70...0x1FAFF, 0x20000...0x2FFFD, 0x30000...0x3FFFD:
            return true
        default:
            return false
        }
    }

    /// Words into lines of at most `width` columns; a word longer than a line is broken.
    package static func wrap(_ text: String, width: Int) -> [String] {
        // One printable ASCII line that fits, with single spaces only between words (what the
        // walk below would rebuild anyway): itself. Most chat lines are.
        if text.utf8.count <= width, isSingleSpacedASCII(text.utf8) { return [text] }
        var lines: [String] = []
        for paragraph in text.split(separator: "\n", omittingEmptySubsequences: false) {
            var current = ""
            for word in paragraph.split(separator: " ", omittingEmptySubsequences: true) {
                var word = String(word)
                while word.displayWidth > width && word.count > 1 {
                    if !current.isEmpty { lines.append(current); current = "" }
                    var head = "", used = 0
                    for character in word {
                        // A character wider than the whole line still takes one line of its
                        // own: without it, nothing would be taken and the loop never end.
                        if used + character.displayWidth > width && !head.isEmpty { break }
                        head.append(character)
                        used += character.displayWidth
                    }
                    lines.append(head)
                    word = String(word.dropFirst(head.count))
                }
                if current.isEmpty {
                    current = word
                } else if current.displayWidth + 1 + word.displayWidth <= width {
                    current += " " + word
                } else {
                    lines.append(current)
                    current = word
                }
            }
            lines.append(current)
        }
        return lines
    }

    /// A line of prose that may be styled, broken at spaces into rows of at most `width` columns
    /// (a line that fits comes back as it is, its spacing kept). A style open at a break is
    /// closed at the end of the row and opened again on the next, so each row stands alone.
    package static func wrapStyled(_ text: String, width: Int) -> [String] {
        guard text.strippingANSI.displayWidth > width, !text.contains("\n") else { return [text] }
        var rows: [String] = [], current = "", used = 0
        var open = ""  // The escapes since the last reset: what the next row must start with.
        for word in text.split(separator: " ", omittingEmptySubsequences: true) {
            let visible = word.strippingANSI.displayWidth
            if used > 0 && used + 1 + visible > width {
                rows.append(open.isEmpty ? current : current + "\u{1B}[0m")
                current = open
                used = 0
            }
            if used > 0 { current += " "; used += 1 }
            current += word
            used += visible
            for escape in word.ansiEscapes { open = escape == "\u{1B}[0m" || escape == "\u{1B}[m" ? "" : open + escape }
        }
        rows.append(current)
        return rows
    }

    /// Printable ASCII, with no space at either end nor two together.
    static func isSingleSpacedASCII(_ bytes: String.UTF8View) -> Bool {
        var previous: UInt8 = 0x20
        for byte in bytes {
            guard (0x20..<0x7F).contains(byte), byte != 0x20 || previous != 0x20 else { return false }
            previous = byte
        }
        return previous != 0x20
    }

    /// A label and its description in two columns, the description wrapped at word boundaries
    /// to `totalWidth` and continued under itself (help, Tab listings).
    package static func described(_ label: String, _ text: String, labelWidth: Int, totalWidth: Int, indent: Int = 2) -> [String] {
        let lead = String(repeating: " ", count: indent)
        let first = lead + pad(label, to: labelWidth)
        let column = first.strippingANSI.displayWidth
        // Too narrow for two columns: the description goes under the label.
        guard totalWidth - column >= 20 else {
            return [lead + label] + wrap(text, width: max(10, totalWidth - indent - 2)).map { lead + "  " + $0 }
        }
        let lines = wrap(text, width: totalWidth - column)
        return [first + (lines.first ?? "")] + lines.dropFirst().map { String(repeating: " ", count: column) + $0 }
    }

    /// Pads `text` with spaces on the right to `width` columns (never truncates).
    package static func pad(_ text: String, to width: Int) -> String {
        let spaces = padding(text, to: width)
        return spaces == 0 ? text : text + String(repeated: " ", count: spaces)
    }

    /// How many spaces `pad` puts after `text`.
    package static func padding(_ text: String, to width: Int) -> Int {
        let missing = width - text.strippingANSI.displayWidth
        guard missing > 0 else { return 0 }
        // A last character that takes in the one after it (a prepended concatenation mark,
        // U+0600…) swallows the first space: one more goes after it.
        // (An ASCII last byte never does: the common case costs no string made to find out.)
        let swallows = (text.utf8.last ?? 0) < 0x80 ? false : text.last.map { (String($0) + " ").count == 1 } ?? false
        return missing + (swallows ? 1 : 0)
    }

    /// Cuts `text` to at most `width` columns, ending with `…` when something was cut.
    package static func truncate(_ text: String, to width: Int) -> String {
        guard text.displayWidth > width else { return text }
        guard width > 0 else { return "" }
        return String(text[..<end(of: text[...], within: width - 1)]) + "…"
    }

    /// Where `text` ends when cut to whole characters that take at most `width` columns.
    package static func end(of text: Substring, within width: Int) -> String.Index {
        // Printable ASCII, most text, is one column a byte.
        if text.utf8.allSatisfy({ (0x20..<0x7F).contains($0) }) {
            return text.utf8.index(text.startIndex, offsetBy: Swift.max(0, Swift.min(width, text.utf8.count)))
        }
        var used = 0
        for index in text.indices {
            used += text[index].displayWidth
            if used > width { return index }
        }
        return text.endIndex
    }
}
