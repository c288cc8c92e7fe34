import Testing
@testable import Shell

@Suite struct HistorySearchTests {
    let entries = ["open ann", "echo first", "search lighthouse", "echo second", "echo second"]

    @Test func eachLetterFindsTheNewestLineWithTheQuery() {
        var search = HistorySearch(entries: entries, original: "half")
        #expect(search.prompt == "(reverse-i-search)'': " && search.line == "half")
        search.type("e")
        #expect(search.line == "echo second" && search.matchOffset == 0)
        search.erase()
        search.type("cond")
        #expect(search.line == "echo second" && search.matchOffset == 7)
        search.erase(); search.erase(); search.erase(); search.erase()
        search.type("echo f")
        #expect(search.line == "echo first" && !search.failed)
    }

    @Test func ctrlRStepsOlderSkippingTheLineShown() {
        var search = HistorySearch(entries: entries, original: "")
        search.type("echo")
        #expect(search.line == "echo second")
        search.older()  // The second "echo second" is the same line: skipped.
        #expect(search.line == "echo first")
        search.older()
        #expect(search.failed && search.line == "echo first")
        #expect(search.prompt == "(failed reverse-i-search)'echo': ")
    }

    @Test func aQueryNothingMatchesFailsAndKeepsTheLastFound() {
        var search = HistorySearch(entries: entries, original: "typed")
        search.type("light")
        #expect(search.line == "search lighthouse" && search.matchOffset == 7)
        search.type("x")
        #expect(search.failed && search.line == "search lighthouse")
        search.erase()
        #expect(!search.failed && search.line == "search lighthouse" && search.query == "light")
        search.erase(); search.erase(); search.erase(); search.erase(); search.erase()
        #expect(search.query.isEmpty && search.line == "typed")
        search.erase()  // Nothing left to erase: nothing changes.
        #expect(search.query.isEmpty)
    }

    @Test func anEmptyHistoryFindsNothing() {
        var search = HistorySearch(entries: [], original: "")
        search.type("a")
        search.older()
        #expect(search.failed && search.line == "")
    }

    @Test func theCursorCountsUnicodeScalars() {
        var search = HistorySearch(entries: ["say café ☕ now"], original: "")
        search.type("now")
        #expect(search.matchOffset == 11)
    }
}
