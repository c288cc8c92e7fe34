import Testing
@testable import Visions

/// At a terminal a page of the visions list is what the window holds.
@Suite struct VisionListPageTests {
    @Test func anEntryIsItsThumbnailsRowsOrItsTwoLinesOfText() {
        #expect(VisionsView.entryRows(thumbnailHeight: 8) == 4)
        #expect(VisionsView.entryRows(thumbnailHeight: 7) == 4)
        #expect(VisionsView.entryRows(thumbnailHeight: 2) == 2)
        #expect(VisionsView.entryRows(thumbnailHeight: 16) == 8)
    }

    @Test func pagesFillTheWindowBelowTheHeadingAndAboveThePrompt() {
        // 15 rows: 12 for entries.
        #expect(VisionsView.pages(entryRows: Array(repeating: 4, count: 7), rows: 15) == [0..<3, 3..<6, 6..<7])
        #expect(VisionsView.pages(entryRows: [2, 8, 2, 2, 4, 8], rows: 15) == [0..<3, 3..<5, 5..<6])
        #expect(VisionsView.pages(entryRows: [], rows: 15) == [])
    }

    @Test func anEntryTallerThanTheWindowHasAPageOfItsOwn() {
        #expect(VisionsView.pages(entryRows: [8, 8, 2], rows: 6) == [0..<1, 1..<2, 2..<3])
    }
}
