import Testing
@testable import Shell

@Suite struct TokenizerTests {
    @Test func plainWords() throws {
        #expect(try Tokenizer.commands(in: "open  Jim\tHopper ") == [["open", "Jim", "Hopper"]])
        #expect(try Tokenizer.commands(in: "   ") == [])
    }

    @Test func quotes() throws {
        #expect(try Tokenizer.commands(in: #"open "Jim Hopper""#) == [["open", "Jim Hopper"]])
        #expect(try Tokenizer.commands(in: "open 'Jim \"Chief\" Hopper'") == [["open", "Jim \"Chief\" Hopper"]])
        #expect(try Tokenizer.commands(in: #"say "a \"b\" c\\ \n""#) == [["say", #"a "b" c\ \n"#]])
        #expect(try Tokenizer.commands(in: #"a"b c"'d'"#) == [["ab cd"]])
        #expect(try Tokenizer.commands(in: "x ''") == [["x", ""]])
    }

    /// A word is quoted only where the tokenizer would read it otherwise: `#` starts a comment
    /// only at the start of a word (`open ben#5aca` needs no quotes).
    @Test func quotingKeepsWhatNeedsNone() throws {
        #expect(Tokenizer.quote("ben#5aca") == "ben#5aca")
        #expect(Tokenizer.quote("#5aca") == "'#5aca'")
        #expect(Tokenizer.quote("Jim Hopper") == "'Jim Hopper'")
        for word in ["ben#5aca", "#5aca", "Jim Hopper", "it's", "a;b"] {
            #expect(try Tokenizer.commands(in: "open " + Tokenizer.quote(word)) == [["open", word]])
        }
    }

    @Test func backslashes() throws {
        #expect(try Tokenizer.commands(in: #"open Jim\ Hopper"#) == [["open", "Jim Hopper"]])
        #expect(try Tokenizer.commands(in: #"a\;b"#) == [["a;b"]])
        #expect(throws: Tokenizer.Failure.danglingBackslash) { try Tokenizer.commands(in: #"a\"#) }
    }

    @Test func semicolonsSeparateCommands() throws {
        #expect(try Tokenizer.commands(in: "zombies; up;;left ; back") == [["zombies"], ["up"], ["left"], ["back"]])
        #expect(try Tokenizer.commands(in: "echo 'a;b'") == [["echo", "a;b"]])
    }

    @Test func comments() throws {
        #expect(try Tokenizer.commands(in: "# all of it") == [])
        #expect(try Tokenizer.commands(in: "up # and a note") == [["up"]])
        #expect(try Tokenizer.commands(in: "echo a#b") == [["echo", "a#b"]])
    }

    @Test func unterminatedQuotes() {
        #expect(throws: Tokenizer.Failure.unterminatedQuote("\"")) { try Tokenizer.commands(in: #"open "Jim"#) }
        #expect(throws: Tokenizer.Failure.unterminatedQuote("'")) { try Tokenizer.commands(in: "open 'Jim") }
    }

    @Test func partialCommandForCompletion() {
        var partial = Tokenizer.partialCommand("visions open Ji")
        #expect(partial.words == ["visions", "open"])
        #expect(partial.current == "Ji")
        #expect(partial.currentRawScalarCount == 2)

        partial = Tokenizer.partialCommand("open \"Jim H")
        #expect(partial.words == ["open"])
        #expect(partial.current == "Jim H")
        #expect(partial.currentRawScalarCount == 6)
        #expect(partial.openQuote == "\"")

        partial = Tokenizer.partialCommand("up; he")
        #expect(partial.words == [])
        #expect(partial.current == "he")

        partial = Tokenizer.partialCommand("help ")
        #expect(partial.words == ["help"])
        #expect(partial.current == "")
        #expect(partial.currentRawScalarCount == 0)
    }

    @Test func quoteRoundTrips() throws {
        for word in ["plain", "Jim Hopper", "it's", "a\"b", "semi;colon", "", "back\\slash", "#tag"] {
            #expect(try Tokenizer.commands(in: "x " + Tokenizer.quote(word)) == [["x", word]])
        }
    }

    /// Found by fuzzing: a space followed by a combining mark is still a space, and `\r\n`
    /// still two separators; quoting gives back what was read.
    @Test func separatorsAreScalarsNotGraphemes() throws {
        #expect(try Tokenizer.commands(in: "a \u{FE0F} b") == [["a", "\u{FE0F}", "b"]])
        #expect(try Tokenizer.commands(in: "a\r\nb") == [["a", "b"]])
        for words in [["x", "\u{301}y"], ["tab\there", "new\nline"], ["it's", "a \"quote\""]] {
            #expect(try Tokenizer.commands(in: words.map(Tokenizer.quote).joined(separator: " ")) == [words])
        }
        #expect(throws: Tokenizer.Failure.nulCharacter) { try Tokenizer.commands(in: "echo 'a\0b'") }
    }
}
