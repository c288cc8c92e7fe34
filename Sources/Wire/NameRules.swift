import Foundation

/// What a username and an emoji avatar may be. One set of rules for both sides: a profile made
/// here is checked with them, and so is every name and avatar a peer announces (a peer's that
/// breaks them is dropped, not shown).
package enum NameRules {
    package static let maximumCharacters = 32
    /// The wire gives a name one length byte; 32 characters of four bytes fit well within it.
    package static let maximumBytes = 128
    package static let maximumEmojiBytes = 32

    /// Combining marks one character may carry: enough for any script's stacked vowels and
    /// tones (Vietnamese has two, Tibetan four), not for a tower over the lines above.
    package static let maximumMarks = 4
    /// Emoji one ZWJ sequence may join: the longest Unicode recommends (a family, a kiss) join
    /// four; a longer one is no recommended sequence, and terminals draw each of its parts.
    package static let maximumJoinedEmoji = 4
    /// The subdivision flags Unicode recommends (England, Scotland, Wales): the only places tag
    /// characters may stand.
    package static let subdivisionFlags: Set<String> = ["gbeng", "gbsct", "gbwls"]

    package enum Violation: Error, Equatable, Sendable, CustomStringConvertible {
        case empty, tooLong, surroundingSpace, doubleSpace, control, invisible, hash, stackedMarks, joinedEmoji

        package var description: String {
            switch self {
            case .empty: return "it is empty"
            case .tooLong: return "it has more than \(NameRules.maximumCharacters) characters"
            case .surroundingSpace: return "it starts or ends with a space (or a letter that draws as one)"
            case .doubleSpace: return "it has two spaces together (or letters that draw as spaces)"
            case .control: return "it contains control characters"
            case .invisible: return "it contains invisible or direction-changing characters"
            case .hash: return "'#' separates a name from its fingerprint"
            case .stackedMarks: return "a character carries more than \(NameRules.maximumMarks) accents or marks"
            case .joinedEmoji: return "it joins more than \(NameRules.maximumJoinedEmoji) emoji into one"
            }
        }
    }

    /// Why `name`, exactly as given, is not a valid username; nil when it is.
    package static func violation(_ name: String) -> Violation? {
        guard !name.isEmpty else { return .empty }
        guard name.count <= maximumCharacters, name.utf8.count <= maximumBytes else { return .tooLong }
        if isSpace(name.first!) || isSpace(name.last!) { return .surroundingSpace }
        if zip(name, name.dropFirst()).contains(where: { isSpace($0) && isSpace($1) }) { return .doubleSpace }
        for character in name {
            let scalars = character.unicodeScalars
            if scalars.contains(where: { $0.properties.generalCategory == .control }) { return .control }
            if !isPrintable(character) { return .invisible }
            if marks(in: character) > maximumMarks { return .stackedMarks }
            if joinedEmoji(in: character) > maximumJoinedEmoji { return .joinedEmoji }
        }
        return name.contains("#") ? .hash : nil
    }

    /// A space, or a letter or symbol that draws as nothing (`isBlank`): what a name may hold
    /// only between other characters, one at a time.
    static func isSpace(_ character: Character) -> Bool {
        character.isWhitespace || character.unicodeScalars.allSatisfy { isBlank($0) }
    }

    /// A code point that is a letter or symbol but draws as nothing: Hangul fillers, the blank
    /// Braille pattern and their kin. Taken from Unicode's own data (`blanks`), not listed by hand.
    package static func isBlank(_ scalar: Unicode.Scalar) -> Bool { scalar.value >= 0x80 && blanks.contains(scalar.value) }

    /// Every code point Unicode says is ignorable by default (drawn as nothing) that is not a
    /// format or control character (those are refused anyway) — the Hangul fillers are such
    /// letters — and every symbol Unicode names a blank (`BRAILLE PATTERN BLANK`). Read once,
    /// from the planes where letters and symbols are assigned.
    static let blanks: Set<UInt32> = {
        var found = Set<UInt32>()
        for value in UInt32(0x80)...0x3FFFF {
            guard let scalar = Unicode.Scalar(value) else { continue }
            let properties = scalar.properties
            switch properties.generalCategory {
            case .otherLetter, .modifierLetter, .modifierSymbol:
                if properties.isDefaultIgnorableCodePoint { found.insert(value) }
            case .otherSymbol:
                if properties.isDefaultIgnorableCodePoint || properties.name?.hasSuffix(" BLANK") == true { found.insert(value) }
            default:
                continue
            }
        }
        return found
    }()

    static func marks(in character: Character) -> Int {
        character.unicodeScalars.count {
            switch $0.properties.generalCategory {
            case .nonspacingMark, .enclosingMark, .spacingMark: true
            default: false
            }
        }
    }

    /// How many emoji a character joins with ZWJ (1 for one that joins none).
    package static func joinedEmoji(in character: Character) -> Int {
        character.unicodeScalars.count { $0.value == 0x200D } + 1
    }

    /// What a name looks like, for telling look-alikes apart: compatibility forms unfolded
    /// (fullwidth letters, ligatures), accents and marks, invisible and variation characters
    /// dropped, letters that look like Latin ones (Cyrillic а, е, о, р, с, х…, Greek ο, ν…, a
    /// dotless ı, the digits 0 and 1, a capital I) taken as those, letters that draw as nothing
    /// dropped, then lower case. `bob`, `BOB`, `bób`, `bоb` with a Cyrillic о, `b0b` and `bob`
    /// with a Hangul filler all look like `bob`.
    package static func skeleton(_ name: String) -> String {
        var result = ""
        for scalar in name.decomposedStringWithCompatibilityMapping.unicodeScalars {
            switch scalar.properties.generalCategory {
            case .nonspacingMark, .enclosingMark, .spacingMark, .format, .control: continue
            default: break
            }
            if isBlank(scalar) { continue }
            if (0xFE00...0xFE0F).contains(scalar.value) || (0xE0100...0xE01EF).contains(scalar.value) { continue }
            if let latin = lookAlikes[scalar.value] {
                result.unicodeScalars.append(latin)
            } else {
                result += String(scalar).lowercased()
            }
        }
        return result
    }

    /// Letters and digits drawn like a Latin letter in common fonts, and that letter.
    private static let lookAlikes: [UInt32: Unicode.Scalar] = {
        var table: [UInt32: Unicode.Scalar] = [0x30: "o", 0x31: "l", 0x49: "l", 0x7C: "l", 0x131: "i", 0x269: "i", 0x261: "g"]
        // Cyrillic, lower and capital.
        for (letters, latin) in [("аА", "a"), ("вВ", "b"), ("еЕ", "e"), ("кК", "k"), ("мМ", "m"), ("нН", "h"), ("оО", "o"),
                                 ("рР", "p"), ("сС", "c"), ("тТ", "t"), ("уУ", "y"), ("хХ", "x"), ("ѕЅ", "s"), ("іІ", "l"),
                                 ("јЈ", "j"), ("ԁ", "d"), ("һ", "h"), ("ԛ", "q"), ("ԝ", "w")] as [(String, Unicode.Scalar)] {
            for letter in letters.unicodeScalars { table[letter.value] = latin }
        }
        // Greek.
        for (letters, latin) in [("αΑ", "a"), ("βΒ", "b"), ("εΕ", "e"), ("ηΗ", "h"), ("ιΙ", "l"), ("κΚ", "k"), ("μΜ", "m"),
                                 ("νΝ", "v"), ("οΟ", "o"), ("ρΡ", "p"), ("τΤ", "t"), ("υΥ", "u"), ("χΧ", "x"), ("ζΖ", "z")]
            as [(String, Unicode.Scalar)] {
            for letter in letters.unicodeScalars { table[letter.value] = latin }
        }
        return table
    }()

    /// True when `text` is exactly one emoji (what an emoji avatar must be).
    package static func isEmoji(_ text: String) -> Bool {
        guard text.count == 1, text.utf8.count <= maximumEmojiBytes, let character = text.first,
              isPrintable(character),
              !character.unicodeScalars.contains(where: { $0.properties.generalCategory == .control }) else { return false }
        return character.unicodeScalars.contains { $0.properties.isEmojiPresentation || $0.value == 0xFE0F }
    }

    /// No format characters (zero-width spaces, bidi controls, BOM…), separators other than a
    /// space, private-use or surrogate code points; the joiner that emoji sequences are made of
    /// is allowed inside an emoji only, and tag characters only in a recommended subdivision
    /// flag (elsewhere they spell invisible text after a visible emoji).
    static func isPrintable(_ character: Character) -> Bool {
        let isEmoji = character.unicodeScalars.first?.properties.isEmoji ?? false
        for scalar in character.unicodeScalars {
            switch scalar.properties.generalCategory {
            case .format:
                if (0xE0020...0xE007F).contains(scalar.value) {
                    if !isSubdivisionFlag(character) { return false }
                } else if !(isEmoji && scalar.value == 0x200D) {
                    return false
                }
            case .lineSeparator, .paragraphSeparator, .privateUse, .surrogate:
                return false
            case .spaceSeparator where scalar.value != 0x20:
                return false
            default:
                break
            }
        }
        return true
    }

    /// 🏴 followed by the tag letters of a recommended subdivision and the cancel tag.
    static func isSubdivisionFlag(_ character: Character) -> Bool {
        let scalars = Array(character.unicodeScalars)
        guard scalars.count > 2, scalars.first?.value == 0x1F3F4, scalars.last?.value == 0xE007F else { return false }
        let tags = scalars.dropFirst().dropLast()
        guard tags.allSatisfy({ (0xE0061...0xE007A).contains($0.value) || (0xE0030...0xE0039).contains($0.value) }) else { return false }
        return subdivisionFlags.contains(String(String.UnicodeScalarView(tags.map { Unicode.Scalar($0.value - 0xE0000)! })))
    }
}
