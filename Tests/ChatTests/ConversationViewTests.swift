import ChatViews
import Nearby
import Foundation
import Terminal
import Testing
@testable import Chat
@testable import Shell

@Suite struct ConversationViewTests {
    /// A notice's preview is one line: newlines become spaces, escapes are shown as text, and
    /// it is cut to the width.
    @Test func aPreviewIsOneSafeLine() {
        #expect(ConversationView.preview("ping 5", width: 20) == "ping 5")
        #expect(ConversationView.preview("one\ntwo\n\nthree", width: 40) == "one two  three")
        #expect(ConversationView.preview("red \u{1B}[31m", width: 40) == SafeText.visible("red \u{1B}[31m"))
        #expect(ConversationView.preview(String(repeating: "x", count: 50), width: 10).displayWidth <= 10)
    }

    /// A typed line loses the spaces and tabs at its ends (any kind of space), nothing else.
    @Test func aLineIsTrimmedOfSpacesAtItsEnds() {
        #expect(ChatText.trimmed("hello there") == "hello there")
        #expect(ChatText.trimmed("  hi\t") == "hi")
        #expect(ChatText.trimmed("\u{3000}wide space") == "wide space")
        #expect(ChatText.trimmed(" ") == "" && ChatText.trimmed("") == "")
        #expect(ChatText.trimmed("ends in a newline\n") == "ends in a newline\n")
    }

    /// In colour, a bubble's frame and text take its colour, a picture's text keeps its own,
    /// and the state row is dim: each row whole, as the terminal is to draw it.
    @Test func aBubbleInColourIsStyledRowByRow() {
        let colour = ConversationView(capabilities: Capabilities(color: .ansi256, ascii: false, interactive: false), columns: 20, calendar: utc)
        let (cyan, yellow, dim, reset) = ("\u{1B}[36m", "\u{1B}[33m", "\u{1B}[2m", "\u{1B}[0m")
        let mine = ChatMessage(number: 7, outgoing: true, text: "hi", sentAt: now, state: .sent)
        #expect(colour.bubble(mine) == [
            "              \(cyan)╭────╮\(reset)", "              \(cyan)│ hi │\(reset)", "              \(cyan)╰────╯\(reset)",
            "             \(dim)#7\(reset) \(dim)sent\(reset)",
        ])
        var theirs = ChatMessage(number: 8, outgoing: false, text: "yo!", sentAt: now, state: .received)
        theirs.sender = "ben"
        #expect(colour.bubble(theirs) == [
            "\u{1B}[1mben\(reset)", "\(yellow)╭─────╮\(reset)", "\(yellow)│ yo! │\(reset)", "\(yellow)╰─────╯\(reset)", "\(dim)#8\(reset)",
        ])
        #expect(colour.framed(["ab", "c"], width: 2, outgoing: true, sender: nil, colouredText: false) == [
            "              \(cyan)╭────╮\(reset)", "              \(cyan)│ \(reset)ab\(cyan) │\(reset)",
            "              \(cyan)│ \(reset)c \(cyan) │\(reset)", "              \(cyan)╰────╯\(reset)",
        ])
        #expect(colour.statusTail(number: 12, state: .delivered) == "\(dim)#12\(reset) \(dim)delivered\(reset)")
        let ascii = ConversationView(capabilities: Capabilities(color: .none, ascii: true, interactive: false), columns: 20, calendar: utc)
        #expect(ascii.framed(["hi"], width: 3, outgoing: true, sender: nil) == ["             ( hi  )"])
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

    var compact: ConversationView {
        ConversationView(capabilities: .plain, columns: 50, layout: .compact, speakers: Speakers(me: "ann", them: "benedict"), calendar: utc)
    }

    /// What a feature draws among the messages (a picture sent) comes at its time, a gap before
    /// it; on a page that does not start the conversation, only what came after the message
    /// before the page, and what came after the last message ends the page.
    @Test func extrasAreDrawnAmongTheMessagesAtTheirTimes() {
        let first = message(1, outgoing: false, at: now), second = message(2, outgoing: true, at: now + 60, "bye")
        let picture = ConversationView.Extra(time: now + 30, rows: ["[picture 1]"])
        let early = ConversationView.Extra(time: now - 600, rows: ["[file 2]"])
        let late = ConversationView.Extra(time: now + 90, rows: ["[file 3]"])
        let lines = compact.render([first, second], now: now, extras: [late, picture, early])
        #expect(lines.map { $0.trimmingCharacters(in: .whitespaces) }.filter { $0.hasPrefix("[") || $0.contains("│") }.map { $0.prefix(8) }
                == ["[file 2]", "14:05 be", "[picture", "14:06   ", "[file 3]"].map { Substring($0) }, "\(lines)")
        // A later page: the message before it was at `now`, so the early file is not on it.
        let later = compact.render([second], previous: first, now: now, extras: [late, picture, early])
        #expect(later.contains("[picture 1]") && later.contains("[file 3]") && !later.contains("[file 2]"), "\(later)")
    }

    /// Compact: a line a message, the time, the name in a column as wide as the longer name,
    /// the number (and state, for yours) at the right end; no gaps, the same sections.
    @Test func compactIsALineAMessage() {
        let lines = compact.render([message(1, outgoing: false, at: now - 7_200), message(2, outgoing: false, at: now),
                                    message(3, outgoing: true, at: now + 30, "bye")], now: now)
        #expect(lines == [
            "                   Today 12:05",
            "12:05 benedict | hi                             #1",
            "                   Today 14:05",
            "14:05 benedict | hi                             #2",
            "14:05      ann | bye                  #3 delivered",
        ].map { $0.replacingOccurrences(of: "|", with: "│") })
    }

    /// Issue 52: where unread messages begin, a line says how many; on a page that starts
    /// after the first of them, at its top.
    @Test func aLineMarksWhereUnreadMessagesBegin() {
        let messages = [message(1, outgoing: false, at: now), message(2, outgoing: true, at: now + 10, "bye"),
                        message(3, outgoing: false, at: now + 20), message(4, outgoing: false, at: now + 30)]
        let lines = compact.render(messages, now: now, unread: (from: 3, count: 2))
        let marker = try! #require(lines.firstIndex { $0.contains(" 2 unread ") })
        #expect(lines[marker + 1].contains("#3") && lines[marker - 1].contains("#2"), "\(lines)")
        let later = compact.render(Array(messages.suffix(1)), previous: messages[2], now: now, unread: (from: 3, count: 2))
        #expect(later.first?.contains(" 2 unread ") == true, "\(later)")
        #expect(!compact.render(messages, now: now).contains { $0.contains("unread") })
    }

    /// A long message wraps under its own text; a name longer than 12 columns is cut.
    @Test func compactWrapsUnderTheText() {
        let view = ConversationView(capabilities: Capabilities(color: .none, ascii: true, interactive: false), columns: 40, layout: .compact,
                                    speakers: Speakers(me: "ann", them: "someone with a long name"), calendar: utc)
        let lines = view.rows(of: message(4, outgoing: false, at: now, String(repeating: "abc ", count: 12)))
        #expect(lines.count > 1 && lines.allSatisfy { $0.displayWidth <= 40 })
        #expect(lines[0].hasPrefix("14:05 someone wit… | abc"))
        let textColumn = lines[0].firstIndex(of: "|").map { lines[0].distance(from: lines[0].startIndex, to: $0) }!
        #expect(lines.dropFirst().allSatisfy { $0.prefix(textColumn).allSatisfy { $0 == " " } && $0.dropFirst(textColumn).hasPrefix("| abc") })
        // What is said to a local one carries no number.
        #expect(!view.rows(of: message(5, outgoing: true, at: now, "boo"), numbered: false).joined().contains("#"))
    }

    /// A message joining the screen gets what a page drawn again would show before it: the
    /// first of a conversation its header, another sender a gap, an hour later a gap and a header.
    @Test func aLiveMessageFollowsAsOnAPage() {
        let first = message(1, outgoing: true, at: now)
        #expect(view.following(first, after: nil, now: now) == [view.centred("Today 14:05")] + view.bubble(first))
        let reply = message(2, outgoing: false, at: now + 5)
        #expect(view.following(reply, after: first, now: now) == [""] + view.bubble(reply))
        let again = message(3, outgoing: false, at: now + 10)
        #expect(view.following(again, after: reply, now: now) == view.bubble(again))
        let later = message(4, outgoing: false, at: now + 4_000)
        #expect(view.following(later, after: again, now: now + 4_000) == ["", view.centred("Today 15:11")] + view.bubble(later))
        // The same messages live and on a page are the same lines.
        let live = [first, reply, again, later].enumerated().flatMap { index, message in
            view.following(message, after: index == 0 ? nil : [first, reply, again, later][index - 1], now: now + 4_000)
        }
        #expect(live == view.render([first, reply, again, later], now: now + 4_000))
        // Compact has no gaps.
        #expect(compact.following(reply, after: first, now: now) == compact.rows(of: reply))
    }

    /// The titles worked out by arithmetic agree with Foundation's calendar, in a zone with
    /// summer time, across its changes, years back and a leap day.
    @Test func sectionTitlesAgreeWithTheCalendar() {
        var berlin = Calendar(identifier: .gregorian)
        berlin.timeZone = TimeZone(identifier: "Europe/Berlin")!
        berlin.locale = Locale(identifier: "en_US_POSIX")
        let view = ConversationView(capabilities: .plain, columns: 60, calendar: berlin)
        func expected(_ time: Double, now: Double) -> String {
            let date = Date(timeIntervalSince1970: time)
            let clock = String(format: "%02d:%02d", berlin.component(.hour, from: date), berlin.component(.minute, from: date))
            let days = berlin.dateComponents([.day], from: berlin.startOfDay(for: date),
                                             to: berlin.startOfDay(for: Date(timeIntervalSince1970: now))).day!
            switch days {
            case 0: return "Today " + clock
            case 1: return "Yesterday " + clock
            case 2...6: return berlin.weekdaySymbols[berlin.component(.weekday, from: date) - 1] + " " + clock
            default:
                return "\(berlin.component(.day, from: date)) \(berlin.shortMonthSymbols[berlin.component(.month, from: date) - 1]) "
                    + "\(berlin.component(.year, from: date)) " + clock
            }
        }
        // Sunday 29 March 2026, 01:30 in Berlin: summer time begins an hour later.
        let spring = 1_774_744_200.0
        var times = stride(from: spring - 3 * 86_400, to: spring + 3 * 86_400, by: 1_799).map { $0 }
        times += [0, 951_782_400 + 3_600, 1_582_934_400, 1_795_356_300, -86_400 * 400, 4_102_444_800]  // 29 Feb 2000, 2020; 2100.
        for time in times {
            for now in [time, time + 40_000, time + 3 * 86_400, time + 30 * 86_400] {
                #expect(view.sectionTitle(time, now: now) == expected(time, now: now), "\(time) \(now)")
            }
        }
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
            Overwrite(mark: "m\(number)", id: number) { columns in view.statusTail(number: number, state: .read) }
        }) { missed in missed.map { "missed #\($0.id)" }.joined() })
        console.printPending()
        // #2's row is the last printed: one row up, to the column where the widest state starts.
        let tail = view.statusTail(number: 2, state: .read)
        #expect(tail == "     #2 read" && view.statusRow(number: 2, state: .sent).hasSuffix("     #2 sent"))
        #expect(console.takeCaptured() == "\u{1B}7\u{1B}[1A\r\u{1B}[28C\u{1B}[K" + tail + "\u{1B}8" + "missed #1\n")
    }

    /// A picture or file still going keeps its progress row marked on a page drawn again (the
    /// transfer's bar is written over where it is); a finished one's row is not marked.
    @Test func aTransferStillGoingIsWrittenOverOnAPageDrawnAgain() {
        let console = Console.capturing(columns: 40, rows: 20)
        console.followScreen()
        let view = ConversationView(capabilities: .plain, columns: 40)
        let page = [ChatMessage(number: 1, outgoing: true, text: "look", sentAt: 0, state: .read)]
        let extras = [ConversationView.Extra(time: 1, rows: ["[file 1]", "file 1 ░░░░ 0 B of 2 MiB"], mark: "transfer 1"),
                      ConversationView.Extra(time: 2, rows: ["[file 2]", "file 2 delivered"])]
        let lines = view.render(page, now: 2, extras: extras)
        view.print(lines, of: page, extras: extras, on: console, lastState: .read) { "m\($0.number)" }
        #expect(console.takeCaptured() == lines.map { $0 + "\n" }.joined())
        console.inbox.post(.update([1, 2].map { number in
            Overwrite(mark: "transfer \(number)", id: number) { _ in "file \(number) ████ 2 MiB of 2 MiB" }
        }) { missed in missed.map { "missed \($0.id)" }.joined() })
        console.printPending()
        // file 1's row, counted up from where the page ended: file 2's gap, bubble and row below it.
        let up = lines.count - lines.lastIndex(of: "file 1 ░░░░ 0 B of 2 MiB")!
        #expect(up == 4)
        // A progress row is as wide as the window: written over from where the new one starts.
        let bar = "file 1 ████ 2 MiB of 2 MiB"
        #expect(console.takeCaptured() == "\u{1B}7\u{1B}[\(up)A\r\u{1B}[\(40 - bar.displayWidth)C\u{1B}[K" + bar + "\u{1B}8" + "missed 2\n")
    }

    /// Compact, the state ends the message's own line: that line is marked, and the text left
    /// of the state stays clear of the widest state, so writing over the end keeps it whole.
    @Test func aCompactLineIsMarkedAndItsTextKeepsClearOfTheState() {
        let console = Console.capturing(columns: 40, rows: 20)
        console.followScreen()
        let view = ConversationView(capabilities: .plain, columns: 40, layout: .compact, speakers: Speakers(me: "ann", them: "ben"))
        let mine = ChatMessage(number: 2, outgoing: true, text: String(repeating: "word ", count: 8), sentAt: 1, state: .sent)
        let lines = view.render([mine], now: 1)
        view.print(lines, of: [mine], on: console, lastState: .read) { "m\($0.number)" }
        _ = console.takeCaptured()
        console.inbox.post(.update([Overwrite(mark: "m2", id: 2) { _ in view.statusTail(number: 2, state: .read) }]) { _ in nil })
        console.printPending()
        // The message's last line is the one written over: one row up.
        #expect(console.takeCaptured().hasPrefix("\u{1B}7\u{1B}[1A\r\u{1B}[28C\u{1B}[K"))
        #expect(lines.count == 4 && lines.allSatisfy { $0.displayWidth <= 40 })
        #expect(lines.last!.hasSuffix("     #2 sent") && lines.last!.prefix(28).hasSuffix(" "))
    }
}
