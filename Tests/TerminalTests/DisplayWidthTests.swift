import Testing
import Terminal

@Suite struct DisplayWidthTests {
    @Test(arguments: [
        ("a", 1), ("é", 1), ("e\u{301}", 1), ("漢", 2), ("🧟", 2), ("🆘", 2),
        ("⬜️", 2), ("⬛️", 2), ("❤️", 2), ("🚶‍♂️", 2), ("🔦", 2), ("🚧", 2),
        ("👍🏽", 2), ("🇫🇷", 2), ("☺︎", 1), ("\u{200B}", 0), ("\t", 0),
        // The longest recommended ZWJ sequences are one glyph; a longer made-up one is drawn as
        // its parts; wide scripts are two columns a character.
        ("👨‍👩‍👧‍👦", 2), ("👩‍❤️‍💋‍👨", 2), (Array(repeating: "👻", count: 17).joined(separator: "\u{200D}"), 34),
        (String(repeating: "漢", count: 32), 64), ("𛀁", 2), ("𗀀", 2),
    ])
    func characterWidths(text: String, width: Int) {
        #expect(text.displayWidth == width, "\(text.unicodeScalars.map { String($0.value, radix: 16) })")
    }

    /// Found by fuzzing: a character wider than the line made wrap loop forever.
    @Test func aCharacterWiderThanTheLineGetsALineOfItsOwn() {
        #expect(DisplayWidth.wrap("👻👻 a", width: 1) == ["👻", "👻", "a"])
        #expect(DisplayWidth.wrap("漢字", width: 0) == ["漢", "字"])
        #expect(String(repeated: "─", count: 3) == "───" && String(repeated: "ab", count: 2) == "abab")
        #expect(String(repeated: " ", count: 0) == "" && String(repeated: "x", count: -1) == "" && String(repeated: "", count: 3) == "")
        // A line that fits is itself, spaces made single as for any other.
        #expect(DisplayWidth.wrap("two words", width: 9) == ["two words"])
        #expect(DisplayWidth.wrap("two words", width: 8) == ["two", "words"])
        #expect(DisplayWidth.wrap("two  words ", width: 40) == ["two words"])
        #expect(DisplayWidth.wrap(" lead", width: 40) == ["lead"])
        #expect(DisplayWidth.wrap("", width: 40) == [""])
        #expect(DisplayWidth.wrap("tab\there", width: 40) == ["tab\there"])
    }

    /// Hints and notices break at spaces, not where the terminal runs out (issue 31, item 13).
    @Test func styledProseBreaksAtSpacesEachRowStyledAlone() {
        let dim = "\u{1B}[2m", reset = "\u{1B}[0m"
        #expect(DisplayWidth.wrapStyled("fits  as  it is", width: 40) == ["fits  as  it is"])
        #expect(DisplayWidth.wrapStyled("one two three", width: 9) == ["one two", "three"])
        // The escapes take no columns; a style open at a break closes and opens again.
        #expect(DisplayWidth.wrapStyled(dim + "one two three" + reset, width: 9) == [dim + "one two" + reset, dim + "three" + reset])
        #expect(DisplayWidth.wrapStyled(dim + "one" + reset + " two three", width: 9) == [dim + "one" + reset + " two", "three"])
        // A word longer than the row is left whole, for the terminal to break.
        #expect(DisplayWidth.wrapStyled("a verylongword b", width: 5) == ["a", "verylongword", "b"])
        #expect((dim + "x" + reset).ansiEscapes == [dim, reset])
    }

    @Test func rowsOfEmojiLineUp() {
        let a = "🆘⬛️⬛️⬛️⬛️"
        let b = "⬛️⬛️⬜️🚶‍♂️⬜️"
        #expect(a.displayWidth == 10)
        #expect(b.displayWidth == a.displayWidth)
    }

    @Test func padAndTruncate() {
        #expect(DisplayWidth.pad("🧟x", to: 5) == "🧟x  ")
        #expect(DisplayWidth.pad("toolong", to: 3) == "toolong")
        #expect(DisplayWidth.truncate("abcdef", to: 4) == "abc…")
        #expect(DisplayWidth.truncate("🧟🧟🧟", to: 4) == "🧟…")
        #expect(DisplayWidth.truncate("abc", to: 3) == "abc")
        // A prepended concatenation mark takes in the space after it: padding still fills the width.
        let sign = "ab\u{0600}"
        #expect(DisplayWidth.pad(sign, to: sign.displayWidth + 3).displayWidth == sign.displayWidth + 3)
    }

    @Test func stripsEscapes() {
        let styled = Styler(enabled: true).apply(.red + .bold, "hi") + " there"
        #expect(styled != "hi there")
        #expect(styled.strippingANSI == "hi there")
        #expect(Styler(enabled: false).apply(.red, "hi") == "hi")
    }
}

@Suite struct ColorPolicyTests {
    @Test func autoNeedsATerminal() {
        let env = ["TERM": "xterm-256color"]
        #expect(ColorMode.auto.enablesColor(isTTY: true, environment: env))
        #expect(!ColorMode.auto.enablesColor(isTTY: false, environment: env))
        #expect(!ColorMode.auto.enablesColor(isTTY: true, environment: ["TERM": "dumb"]))
        #expect(!ColorMode.auto.enablesColor(isTTY: true, environment: [:]))
        #expect(!ColorMode.auto.enablesColor(isTTY: true, environment: ["TERM": "xterm", "NO_COLOR": "1"]))
        #expect(ColorMode.auto.enablesColor(isTTY: true, environment: ["TERM": "xterm", "NO_COLOR": ""]))
    }

    @Test func explicitChoicesWin() {
        #expect(ColorMode.always.enablesColor(isTTY: false, environment: ["NO_COLOR": "1"]))
        #expect(!ColorMode.never.enablesColor(isTTY: true, environment: ["TERM": "xterm"]))
    }

    @Test func depth() {
        #expect(ColorDepth.detect(colorEnabled: true, environment: ["COLORTERM": "truecolor"]) == .trueColor)
        #expect(ColorDepth.detect(colorEnabled: true, environment: [:]) == .ansi256)
        #expect(ColorDepth.detect(colorEnabled: false, environment: ["COLORTERM": "truecolor"]) == .none)
    }
}
