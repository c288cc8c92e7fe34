import Foundation
import Shell

/// What the user typed, read as text: words (each found by prefix), and a quoted argument
/// (`"two words"`, one word to the shell) found as a phrase. Nothing typed is query syntax: the
/// expression handed to FTS5 quotes every word, so `NEAR(`, `OR`, `*`, a quote or `-` find what
/// they say, or nothing.
package struct SearchQuery: Equatable, Sendable {
    /// Words that must appear together, in this order: a phrase, or one typed word that the
    /// index splits in several (`e-mail`). The last is found by prefix unless it was quoted.
    package struct Part: Equatable, Sendable {
        package var words: [String]
        package var prefix: Bool
    }

    package let parts: [Part]

    /// Longer queries are refused: nobody types them, and each word costs a lookup.
    package static let maximumWords = 32

    /// `arguments` as the shell split them: one with a space in it was quoted, a phrase.
    package init(_ arguments: [String]) throws(SearchError) {
        let parts = arguments.compactMap { argument -> Part? in
            let words = Self.words(in: argument)
            return words.isEmpty ? nil : Part(words: words, prefix: !argument.contains { $0.isWhitespace })
        }
        guard parts.reduce(0, { $0 + $1.words.count }) <= Self.maximumWords else { throw .tooManyWords(Self.maximumWords) }
        self.parts = parts
    }

    /// Nothing to look for (only punctuation, say): nothing is found.
    package var isEmpty: Bool { parts.isEmpty }

    /// The FTS5 expression: each part a quoted string (words inside quotes are only words),
    /// a `*` after those found by prefix; parts side by side must all match.
    package var match: String {
        parts.map { "\"" + $0.words.joined(separator: " ") + "\"" + ($0.prefix ? " *" : "") }.joined(separator: " ")
    }

    /// The words as the index splits text: runs of letters and digits (the unicode61 tokenizer
    /// takes everything else for a separator).
    static func words(in text: String) -> [String] {
        text.split { !($0.isLetter || $0.isNumber) }.map(String.init)
    }

    /// A word as the index compares it: case and diacritics folded.
    static func folded(_ word: some StringProtocol) -> String {
        // ASCII has no accents: its case is all there is to fold, and Foundation's folding
        // cost more than the rest of a result's line.
        if word.utf8.allSatisfy({ $0 < 0x80 }) { return word.lowercased() }
        return String(word).folding(options: [.caseInsensitive, .diacriticInsensitive], locale: nil)
    }

    /// Where in `text` (as shown) the words found are, to highlight them: every word of the
    /// text that is one of the query's, or begins with one found by prefix.
    package func matches(in text: String) -> [Range<String.Index>] {
        let exact = Set(parts.flatMap { part in (part.prefix ? part.words.dropLast() : part.words[...]).map(Self.folded) })
        let prefixes = parts.filter(\.prefix).compactMap { $0.words.last.map(Self.folded) }
        // Walked a scalar at a time: a result's line is searched for every word, and walking it
        // by characters (grapheme breaking) cost more than the rest of laying it out.
        let scalars = text.unicodeScalars
        var ranges: [Range<String.Index>] = []
        var index = scalars.startIndex
        while index < scalars.endIndex {
            guard Self.isWordScalar(scalars[index]) else {
                index = scalars.index(after: index)
                continue
            }
            let end = scalars[index...].firstIndex { !Self.isWordScalar($0) } ?? scalars.endIndex
            let word = Self.folded(text[index..<end])
            if exact.contains(word) || prefixes.contains(where: { word.hasPrefix($0) }) { ranges.append(index..<end) }
            index = end
        }
        return ranges
    }

    /// A scalar of a word: a letter or a digit, or a mark on one (an accent written apart).
    static func isWordScalar(_ scalar: Unicode.Scalar) -> Bool {
        if scalar.isASCII {
            return ("a"..."z").contains(scalar) || ("A"..."Z").contains(scalar) || ("0"..."9").contains(scalar)
        }
        let properties = scalar.properties
        switch properties.generalCategory {
        case .nonspacingMark, .spacingMark, .enclosingMark: return true
        default: return properties.isAlphabetic || properties.numericType != nil
        }
    }
}

/// Why a search could not be made, as the user reads it.
package enum SearchError: Error, Equatable, CustomStringConvertible {
    case tooManyWords(Int)
    case badDate(String)
    case nowhere(String)
    case noResult(Int, count: Int)
    case noSearch

    package var description: String {
        switch self {
        case .tooManyWords(let limit): return "a search takes at most \(limit) words"
        case .badDate(let text):
            return "'\(text)' is not a date: give 2026-11-20, '2026-11-20 14:05', today, yesterday, or 3d, 12h, 30m ago"
        case .nowhere(let name): return "you have no conversation or room called \(name)"
        case .noResult(let number, let count):
            return count == 0 ? "the last search found nothing to open" : "there is no result \(number): the last search found \(count)"
        case .noSearch: return "search first: " + Advice.command("search TEXT")
        }
    }
}
