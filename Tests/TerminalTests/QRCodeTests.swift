import Testing
@testable import Terminal

/// QR codes from libqrencode, drawn two module rows a line.
@Suite struct QRCodeTests {
    /// Sixty digits at level M, in numeric mode: version 2, 25 modules a side, with its three
    /// finder patterns (a dark 7 × 7 ring round a 3 × 3 core) in the corners.
    @Test func sixtyDigitsMakeAVersionTwoCode() throws {
        let code = try #require(QRCode(String(repeating: "0123456789", count: 6)))
        #expect(code.size == 25)
        for (x, y) in [(0, 0), (18, 0), (0, 18)] {
            #expect((0..<7).allSatisfy { code.isDark(x + $0, y) && code.isDark(x + $0, y + 6) && code.isDark(x, y + $0) })
            #expect(!code.isDark(x + 1, y + 1) && code.isDark(x + 3, y + 3))
        }
    }

    /// Light modules drawn in half blocks (two rows of modules a line), the quiet zone round
    /// them; in ASCII, a module is two characters and a row a line.
    @Test func drawnInHalfBlocksOrAscii() {
        let code = QRCode(size: 2, modules: [true, false, false, true])
        let lines = code.lines(.plain)
        #expect(lines.count == 3)
        #expect(lines[1] == "██▄▀██" && lines[0] == "██████")
        let ascii = code.lines(Capabilities(color: .none, ascii: true, interactive: false))
        #expect(ascii.count == 6 && ascii[2] == "####  ######" && ascii[3] == "######  ####")
        let coloured = code.lines(Capabilities(color: .ansi256, ascii: false, interactive: true))
        #expect(coloured[1] == "\u{1B}[97;40m██▄▀██\u{1B}[0m")
    }
}
