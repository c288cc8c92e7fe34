import ChatViews
import Nearby
import Foundation
import Terminal
import Testing
@testable import Chat
@testable import Shell

@Suite struct ConversationViewTests {
    /// A typed line loses the spaces and tabs at its ends (any kind of space), nothing else.
    @Test func aLineIsTrimmedOfSpacesAtItsEnds() {
        #expect(ChatMode.trimmed("hello there") == "hello there")
        #expect(ChatMode.trimmed("  hi\t") == "hi")
        #expect(ChatMode.trimmed("\u{3000}wide space") == "wide space")
        #expect(ChatMode.trimmed(" ") == "" && ChatMode.trimmed("") == "")
        #expect(ChatMode.trimmed("ends in a newline\n") == "ends in a newline\n")
    }

    var utc: Calendar {
        var calendar = Calendar(identifier: .gregorian)
        calendar.timeZone = TimeZone(identifier: "UTC")!
        calendar.locale = Locale(identifier: "en_US_POSIX")
        return calendar
    }
    var view: ConversationView { ConversationView(capabilities: .plain, columns: 60, calendar: utc) }
    /// Sunday 22 Nov 2026, 14:05:00 UTC.
    let now = 1_795_356_300.0

    func message(_ number: Int64, outgoing: Bool, at time: Double, _ text: String = "hi") -> ChatMessage {
        ChatMessage(number: number, outgoing: outgoing, text: text, sentAt: time, state: outgoing ? .delivered : .received)
    }

    @Test func sectionTitles() {
        #expect(view.sectionTitle(now, now: now) == "Today 14:05")
        #expect(view.sectionTitle(now - 86_400 - 5 * 3_600 + 7 * 60, now: now) == "Yesterday 09:12")
        #expect(view.sectionTitle(now - 6 * 86_400 + 4 * 3_600 + 35 * 60, now: now) == "Monday 18:40")
        #expect(view.sectionTitle(now - 2 * 86_400 - 6 * 3_600 - 5 * 60, now: now) == "Friday 08:00")
        #expect(view.sectionTitle(now - 7 * 86_400 - 6 * 3_600 - 5 * 60, now: now) == "15 Nov 2026 08:00")
        // Just after midnight is already "Today"; just before is "Yesterday".
        let midnight = now - (14 * 3_600 + 5 * 60)
        #expect(view.sectionTitle(midnight, now: now) == "Today 00:00")
        #expect(view.sectionTitle(midnight - 1, now: now) == "Yesterday 23:59")
    }

    @Test func aHeaderComesAfterMoreThanAnHour() {
        let exactlyAnHour = view.render([message(1, outgoing: false, at: now - 3_600), message(2, outgoing: false, at: now)], now: now)
        #expect(exactlyAnHour.filter { $0.contains("Today") }.count == 1)  // Only the first message's.
        let overAnHour = view.render([message(1, outgoing: false, at: now - 3_601), message(2, outgoing: false, at: now)], now: now)
        #expect(overAnHour.filter { $0.contains("Today") }.count == 2)
    }

    @Test func sameSenderWithinTwentySecondsSitsCloser() {
        let close = view.render([message(1, outgoing: true, at: now), message(2, outgoing: true, at: now + 20)], now: now)
        let apart = view.render([message(1, outgoing: true, at: now), message(2, outgoing: true, at: now + 21)], now: now)
        #expect(apart.count == close.count + 1)
        #expect(!close.contains("") && apart.contains(""))
        // A different sender always gets the blank line, however quick the reply.
        let reply = view.render([message(1, outgoing: true, at: now), message(2, outgoing: false, at: now + 1)], now: now)
        #expect(reply.contains(""))
    }

    @Test func bubblesSitRightAndLeftWithEqualRows() {
        let mine = view.bubble(message(3, outgoing: true, at: now, "héllo 👻 wörld"))
        #expect(mine.allSatisfy { $0.displayWidth == 60 })  // Flush with the right edge.
        #expect(mine[0].hasSuffix("╮") && mine[1].hasSuffix("│") && mine.last == String(repeating: " ", count: 48) + "#3 delivered")
        let frame = mine.dropLast().map { $0.trimmingCharacters(in: .whitespaces).displayWidth }
        #expect(Set(frame).count == 1)
        let theirs = view.bubble(message(4, outgoing: false, at: now, "hey"))
        #expect(theirs == ["╭─────╮", "│ hey │", "╰─────╯", "#4"])
    }

    @Test func asciiFramesWithParentheses() {
        let ascii = ConversationView(capabilities: Capabilities(color: .none, ascii: true, interactive: false), columns: 40, calendar: utc)
        #expect(ascii.bubble(message(5, outgoing: false, at: now, "plain")) == ["( plain )", "#5"])
    }

    @Test func wrapsAtSeventyPercentAndBreaksLongWords() {
        let lines = DisplayWidth.wrap("the quick brown fox jumps over the lazy dog", width: 10)
        #expect(lines == ["the quick", "brown fox", "jumps over", "the lazy", "dog"])
        #expect(DisplayWidth.wrap(String(repeating: "x", count: 25), width: 10) == ["xxxxxxxxxx", "xxxxxxxxxx", "xxxxx"])
        #expect(DisplayWidth.wrap("👻👻👻👻👻👻", width: 5).allSatisfy { $0.displayWidth <= 5 })
        let long = view.bubble(message(6, outgoing: false, at: now, String(repeating: "word ", count: 40)))
        #expect(long.allSatisfy { $0.displayWidth <= 42 })  // 70 % of 60.
    }
}

/// `chats` keeps a line a conversation in a narrow window, and leaves out what nobody has.
@Suite struct ConversationListTests {
    let entries = [
        ConversationView.ListEntry(handle: "ben#b2e2", when: "Today 07:28", counts: "2 unread, 1 waiting", unread: true,
                                   last: "a rather long last message that goes on and on"),
        ConversationView.ListEntry(handle: "cat#0a1f", when: "Yesterday 21:05", counts: "", unread: false, last: "bye"),
    ]

    @Test func columnsAreAsWideAsTheirEntriesAndTheLastMessageTakesWhatIsLeft() {
        let lines = ConversationView(capabilities: .plain, columns: 60).conversationList(entries)
        #expect(lines == ["ben#b2e2 Today 07:28     2 unread, 1 waiting a rather long …",
                          "cat#0a1f Yesterday 21:05                     bye"])
        #expect(lines.allSatisfy { $0.displayWidth <= 60 })
    }

    @Test func aWindowTooNarrowForTheLastMessageLeavesItOut() {
        let lines = ConversationView(capabilities: .plain, columns: 40).conversationList(entries)
        #expect(lines == ["ben#b2e2 Today 07:28     2 unread, 1 waiting", "cat#0a1f Yesterday 21:05"])
    }

    @Test func noCountsNoColumn() {
        let quiet = entries.map { entry in
            ConversationView.ListEntry(handle: entry.handle, when: entry.when, counts: "", unread: false, last: entry.last)
        }
        let lines = ConversationView(capabilities: .plain, columns: 60).conversationList(quiet)
        #expect(lines[1] == "cat#0a1f Yesterday 21:05 bye")
    }
}

/// A page at a terminal: the state rows of yours that can still change are marked, and a later
/// state is written over them; a finished one is not marked.
@Suite struct MarkedPageTests {
    @Test func theStateRowsThatCanStillChangeAreWrittenOver() {
        let console = Console.capturing(columns: 40, rows: 20)
        console.followScreen()
        let view = ConversationView(capabilities: .plain, columns: 40)
        let page = [ChatMessage(number: 1, outgoing: true, text: "read already", sentAt: 0, state: .read),
                    ChatMessage(number: 2, outgoing: true, text: "on its way", sentAt: 1, state: .sent)]
        let lines = view.render(page, now: 1)
        view.print(lines, of: page, on: console, lastState: .read) { "m\($0.number)" }
        #expect(console.takeCaptured() == lines.map { $0 + "\n" }.joined())
        console.inbox.post(.update([1, 2].map { number in
            Overwrite(mark: "m\(number)", id: number) { columns in view.statusRow(number: number, state: .read) }
        }) { missed in missed.map { "missed #\($0.id)" }.joined() })
        console.printPending()
        // #2's row is the last printed: one row up.
        #expect(console.takeCaptured() == "\u{1B}7\u{1B}[1A\r\u{1B}[2K" + view.statusRow(number: 2, state: .read) + "\u{1B}8" + "missed #1\n")
    }
}
