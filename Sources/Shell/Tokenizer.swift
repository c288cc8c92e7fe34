/// Splits command lines into words the way a Unix shell does, minus expansion.
///
/// - Single quotes keep everything literally until the next single quote.
/// - Double quotes keep spaces and `;`; inside them a backslash escapes `"` and `\`.
/// - Outside quotes a backslash escapes the next character.
/// - `;` outside quotes ends a command; `#` at the start of a word starts a comment.
package enum Tokenizer {
    package enum Failure: Error, Equatable, CustomStringConvertible {
        case unterminatedQuote(Character)
        case danglingBackslash
        /// SQLite and C strings end at a NUL: a line holding one would be stored cut short.
        case nulCharacter

        package var description: String {
            switch self {
            case .nulCharacter: return "the line contains a NUL character, which seance does not accept"
            case .unterminatedQuote(let quote): return "unterminated \(quote) quote"
            case .danglingBackslash: return "a backslash at the end of the line escapes nothing"
            }
        }
    }

    /// The commands of one line, each as its words. Empty commands are left out.
    package static func commands(in line: String) throws(Failure) -> [[String]] {
        if line.utf8.contains(0) { throw .nulCharacter }
        let scan = scan(line)
        if let failure = scan.failure { throw failure }
        return scan.commands.filter { !$0.isEmpty }
    }

    /// The words of the last command before the cursor, for completion: unterminated quotes are
    /// allowed, and the last word is the one being typed (empty when the text ends in a space).
    package static func partialCommand(_ textBeforeCursor: String) -> PartialCommand {
        let scan = scan(textBeforeCursor)
        var words = scan.commands.last ?? []
        let current: String
        let rawLength: Int
        if scan.inWord {
            current = words.removeLast()
            rawLength = scan.currentWordRawScalars
        } else {
            current = ""
            rawLength = 0
        }
        return PartialCommand(words: words, current: current, currentRawScalarCount: rawLength,
                              openQuote: scan.openQuote)
    }

    package struct PartialCommand: Equatable, Sendable {
        /// The complete words before the one being typed.
        package var words: [String]
        /// The word being typed, unquoted.
        package var current: String
        /// How many Unicode scalars of the raw text the word being typed spans (with its quotes).
        package var currentRawScalarCount: Int
        /// The quote left open in the word being typed, if any.
        package var openQuote: Character?
    }

    /// Quotes `word` so the tokenizer reads it back unchanged (scalar by scalar, as it reads).
    package static func quote(_ word: String) -> String {
        if word.isEmpty { return "''" }
        let special: Set<Unicode.Scalar> = [" ", "\t", "\n", "\r", "\"", "'", "\\", ";"]
        // `#` starts a comment only where a word starts: `ben#5aca` is one word as it is.
        guard word.unicodeScalars.contains(where: { special.contains($0) }) || word.hasPrefix("#") else { return word }
        if !word.unicodeScalars.contains("'") { return "'" + word + "'" }
        var result = String.UnicodeScalarView()
        result.append("\"")
        for scalar in word.unicodeScalars {
            if scalar == "\"" || scalar == "\\" { result.append("\\") }
            result.append(scalar)
        }
        result.append("\"")
        return String(result)
    }

    private struct Scan {
        var commands: [[String]] = [[]]
        var failure: Failure?
        var inWord = false
        var openQuote: Character?
        var currentWordRawScalars = 0
    }

    /// Walks Unicode scalars, not characters: every character the syntax uses is one ASCII
    /// scalar, and a grapheme cluster can glue a combining mark (or `\n` after `\r`) onto a
    /// space or a quote, which would then stop being one. (Found by fuzzing.)
    private static func scan(_ line: String) -> Scan {
        var scan = Scan()
        var word = String.UnicodeScalarView()
        var iterator = line.unicodeScalars.makeIterator()

        func endWord() {
            if scan.inWord {
                scan.commands[scan.commands.count - 1].append(String(word))
                word = String.UnicodeScalarView()
                scan.inWord = false
                scan.currentWordRawScalars = 0
            }
        }
        func startWord() {
            if !scan.inWord { scan.inWord = true; scan.currentWordRawScalars = 0 }
        }
        func consumed() { scan.currentWordRawScalars += 1 }

        while let c = iterator.next() {
            switch c {
            case " ", "\t", "\n", "\r":
                endWord()
            case ";":
                endWord()
                scan.commands.append([])
            case "#" where !scan.inWord:
                // A comment runs to the end of the line.
                return finish(&scan, word: word)
            case "\\":
                startWord(); consumed()
                guard let next = iterator.next() else {
                    scan.failure = .danglingBackslash
                    return finish(&scan, word: word)
                }
                consumed()
                word.append(next)
            case "'", "\"":
                startWord(); consumed()
                scan.openQuote = Character(c)
                while let q = iterator.next() {
                    consumed()
                    if q == c { scan.openQuote = nil; break }
                    if c == "\"", q == "\\" {
                        guard let escaped = iterator.next() else { break }
                        consumed()
                        if escaped != "\"" && escaped != "\\" { word.append("\\") }
                        word.append(escaped)
                        continue
                    }
                    word.append(q)
                }
                if let open = scan.openQuote {
                    scan.failure = .unterminatedQuote(open)
                    return finish(&scan, word: word)
                }
            default:
                startWord(); consumed()
                word.append(c)
            }
        }
        return finish(&scan, word: word)
    }

    private static func finish(_ scan: inout Scan, word: String.UnicodeScalarView) -> Scan {
        if scan.inWord { scan.commands[scan.commands.count - 1].append(String(word)) }
        return scan
    }
}
