/// What a username and an emoji avatar may be. One set of rules for both sides: a profile made
/// here is checked with them, and so is every name and avatar a peer announces (a peer's that
/// breaks them is dropped, not shown).
package enum NameRules {
    package static let maximumCharacters = 32
    /// The wire gives a name one length byte; 32 characters of four bytes fit well within it.
    package static let maximumBytes = 128
    package static let maximumEmojiBytes = 32

    package enum Violation: Error, Equatable, Sendable, CustomStringConvertible {
        case empty, tooLong, surroundingSpace, control, invisible, hash

        package var description: String {
            switch self {
            case .empty: return "it is empty"
            case .tooLong: return "it has more than \(NameRules.maximumCharacters) characters"
            case .surroundingSpace: return "it starts or ends with a space"
            case .control: return "it contains control characters"
            case .invisible: return "it contains invisible or direction-changing characters"
            case .hash: return "'#' separates a name from its fingerprint"
            }
        }
    }

    /// Why `name`, exactly as given, is not a valid username; nil when it is.
    package static func violation(_ name: String) -> Violation? {
        guard !name.isEmpty else { return .empty }
        guard name.count <= maximumCharacters, name.utf8.count <= maximumBytes else { return .tooLong }
        if name.first!.isWhitespace || name.last!.isWhitespace { return .surroundingSpace }
        for character in name {
            let scalars = character.unicodeScalars
            if scalars.contains(where: { $0.properties.generalCategory == .control }) { return .control }
            if !isPrintable(character) { return .invisible }
        }
        return name.contains("#") ? .hash : nil
    }

    /// True when `text` is exactly one emoji (what an emoji avatar must be).
    package static func isEmoji(_ text: String) -> Bool {
        guard text.count == 1, text.utf8.count <= maximumEmojiBytes, let character = text.first,
              isPrintable(character),
              !character.unicodeScalars.contains(where: { $0.properties.generalCategory == .control }) else { return false }
        return character.unicodeScalars.contains { $0.properties.isEmojiPresentation || $0.value == 0xFE0F }
    }

    /// No format characters (zero-width spaces, bidi controls, BOM…), separators other than a
    /// space, private-use or surrogate code points; the joiners and tags that emoji sequences
    /// are made of are allowed inside an emoji only.
    static func isPrintable(_ character: Character) -> Bool {
        let isEmoji = character.unicodeScalars.first?.properties.isEmoji ?? false
        for scalar in character.unicodeScalars {
            switch scalar.properties.generalCategory {
            case .format:
                let joinsEmoji = scalar.value == 0x200D || (0xE0020...0xE007F).contains(scalar.value)
                if !(isEmoji && joinsEmoji) { return false }
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
}
