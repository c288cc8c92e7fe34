/// What possession and the mirror do to a line. Pure: the same line and generator state give
/// the same result (`--seed` makes it reproducible).
package enum Gibberish {
    private static let consonants: [Character] = Array("bcdfghjklmnprstvz")
    private static let vowels: [Character] = Array("aeiou")

    /// Every word (a run of letters) becomes a made-up pronounceable one of the same length,
    /// consonants and vowels taking turns, a capital kept; everything else (spaces,
    /// punctuation, digits, emoji) stays where it was. The number of words does not change.
    package static func possess(_ line: String, using random: inout some RandomNumberGenerator) -> String {
        var result = ""
        var word: [Character] = []
        func flush() {
            guard !word.isEmpty else { return }
            var vowel = Bool.random(using: &random)
            for original in word {
                var letter = vowel ? vowels.randomElement(using: &random)! : consonants.randomElement(using: &random)!
                if original.isUppercase { letter = Character(letter.uppercased()) }
                result.append(letter)
                // Now and then two consonants in a row, so words do not all sound alike.
                vowel = vowel ? false : (Int.random(in: 0..<5, using: &random) != 0)
            }
            word = []
        }
        for character in line {
            if character.isLetter {
                word.append(character)
            } else {
                flush()
                result.append(character)
            }
        }
        flush()
        return result
    }

    /// The line as in a mirror: its characters (not bytes: an emoji stays whole) in reverse.
    package static func mirror(_ line: String) -> String { String(line.reversed()) }
}
