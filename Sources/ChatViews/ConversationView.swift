import Foundation
import Nearby
import Shell
import Terminal

/// How a conversation is drawn: framed bubbles like a messaging app (the default), or a line a
/// message like IRC (`/compact`, `conversation = compact` in seance.conf).
package enum ConversationLayout: String, Sendable, CaseIterable {
    case bubbles, compact
}

/// Who speaks in a conversation, for the compact layout's name column: you, and the one other
/// (nil in a room, where each line names its sender).
package struct Speakers: Sendable, Equatable {
    package var me: String
    package var them: String?

    package init(me: String, them: String? = nil) {
        self.me = me
        self.them = them
    }
}

/// Draws a page of a conversation: a `{day} {time}` header before a message more than an hour
/// after the previous one, then, as bubbles, yours on the right and theirs on the left, no gap
/// between one sender's messages less than 20 s apart and a blank line otherwise; or, compact,
/// a line a message (longer ones wrapped under their text).
package struct ConversationView: Sendable {
    package let capabilities: Capabilities
    package let columns: Int
    package let layout: ConversationLayout
    package let speakers: Speakers
    package let calendar: Calendar

    package static let sectionGap: Double = 3_600
    package static let groupGap: Double = 20

    package init(capabilities: Capabilities, columns: Int, layout: ConversationLayout = .bubbles,
                 speakers: Speakers = Speakers(me: "you"), calendar: Calendar = .current) {
        self.capabilities = capabilities
        self.columns = columns
        self.layout = layout
        self.speakers = speakers
        self.calendar = calendar
    }

    var styler: Styler { Styler(capabilities) }

    /// Bubbles take about 70 % of the width.
    var bubbleWidth: Int { max(12, columns * 7 / 10) }

    /// Something drawn among a conversation's messages at its time (a picture or file sent in it).
    package struct Extra: Sendable {
        package var time: Double
        package var rows: [String]
        /// The name its last row is printed with, to be written over in place (a transfer's
        /// progress) when the page is drawn at a terminal; nil: never changes.
        package var mark: String?

        package init(time: Double, rows: [String], mark: String? = nil) {
            self.time = time
            self.rows = rows
            self.mark = mark
        }
    }

    /// - Parameter unread: the number of the first message not read yet and how many there are:
    ///   a line above it (or above the page, when it starts after it) marks where they begin.
    package func render(_ messages: [ChatMessage], previous: ChatMessage? = nil, now: Double, extras: [Extra] = [],
                        unread: (from: Int64, count: Int)? = nil) -> [String] {
        var lines: [String] = []
        var unreadMarked = false
        var last = previous
        // Those before the first message only when the page starts the conversation; those after
        // the last message of a page are on it (the newest page) — each page shows its own.
        var waiting = extras.filter { extra in previous == nil || extra.time >= previous!.sentAt }.sorted { $0.time < $1.time }
        func drawExtras(before time: Double) {
            while let extra = waiting.first, extra.time < time {
                waiting.removeFirst()
                if !lines.isEmpty && layout == .bubbles { lines.append("") }
                lines += extra.rows
            }
        }
        for message in messages {
            drawExtras(before: message.sentAt)
            if let unread, !unreadMarked, message.number >= unread.from, unread.count > 0 {
                unreadMarked = true
                if !lines.isEmpty && layout == .bubbles { lines.append("") }
                lines.append(unreadLine(unread.count))
            }
            if last == nil || message.sentAt - last!.sentAt > Self.sectionGap {
                if !lines.isEmpty && layout == .bubbles { lines.append("") }
                lines.append(centred(styler.dim(sectionTitle(message.sentAt, now: now))))
            } else if layout == .bubbles && !(last!.outgoing == message.outgoing && message.sentAt - last!.sentAt <= Self.groupGap) {
                lines.append("")
            }
            lines += rows(of: message)
            last = message
        }
        drawExtras(before: .infinity)
        return lines
    }

    /// A message as it joins the conversation on screen, after `previous` (the last one shown;
    /// nil: none is): with the header or gap a page drawn again would show before it.
    package func following(_ message: ChatMessage, after previous: ChatMessage?, now: Double) -> [String] {
        lead(message, after: previous, now: now) + rows(of: message)
    }

    /// What `following` puts above the message's own rows: a section's header (after a gap,
    /// when something is above it) or the gap between two senders' groups; nothing within a group.
    package func lead(_ message: ChatMessage, after previous: ChatMessage?, now: Double) -> [String] {
        guard let previous, message.sentAt - previous.sentAt <= Self.sectionGap else {
            let title = centred(styler.dim(sectionTitle(message.sentAt, now: now)))
            return previous != nil && layout == .bubbles ? ["", title] : [title]
        }
        let grouped = previous.outgoing == message.outgoing && message.sentAt - previous.sentAt <= Self.groupGap
        return layout == .bubbles && !grouped ? [""] : []
    }

    /// One message in the view's layout; its last row shows its number and, for yours, its
    /// delivery state (none when `numbered` is false: what is said to a local one).
    package func rows(of message: ChatMessage, numbered: Bool = true) -> [String] {
        switch layout {
        case .bubbles: return numbered ? bubble(message) : bubble(message).dropLast()
        case .compact: return line(message, numbered: numbered)
        }
    }

    /// The row of `rows(of:)` that shows the message's delivery state, as printed.
    package func stateRow(of message: ChatMessage) -> String {
        layout == .bubbles ? statusRow(number: message.number, state: message.state) : rows(of: message).last!
    }

    /// "Today 14:05", "Yesterday 09:12", "Monday 18:40" within the week, else "20 Nov 2026 08:00",
    /// in the calendar's time zone. Worked out by arithmetic on days: Foundation's calendar
    /// took tens of microseconds a call, most of a line of search results. The names are
    /// English, as the rest of what seance says is.
    package func sectionTitle(_ time: Double, now: Double) -> String {
        let (day, seconds) = Self.localDay(time, in: calendar.timeZone)
        let clock = Self.twoDigits(seconds / 3_600) + ":" + Self.twoDigits(seconds % 3_600 / 60)
        switch Self.localDay(now, in: calendar.timeZone).day - day {
        case 0: return "Today " + clock
        case 1: return "Yesterday " + clock
        case 2...6:
            // Day 0, 1 January 1970, was a Thursday.
            return Self.weekdays[((day % 7) + 11) % 7] + " " + clock
        default:
            let date = Self.civilDate(day)
            return "\(date.day) \(Self.months[date.month - 1]) \(date.year) " + clock
        }
    }

    static let weekdays = ["Sunday", "Monday", "Tuesday", "Wednesday", "Thursday", "Friday", "Saturday"]
    static let months = ["Jan", "Feb", "Mar", "Apr", "May", "Jun", "Jul", "Aug", "Sep", "Oct", "Nov", "Dec"]

    /// The local day (days since 1 January 1970) of `time` in `zone`, and the seconds into it.
    static func localDay(_ time: Double, in zone: TimeZone) -> (day: Int, seconds: Int) {
        let local = Int((time + Double(zone.secondsFromGMT(for: Date(timeIntervalSince1970: time)))).rounded(.down))
        let day = local >= 0 ? local / 86_400 : (local - 86_399) / 86_400
        return (day, local - day * 86_400)
    }

    /// The Gregorian year, month and day of a day since 1 January 1970 (H. Hinnant's
    /// `civil_from_days`).
    static func civilDate(_ days: Int) -> (year: Int, month: Int, day: Int) {
        let z = days + 719_468
        let era = (z >= 0 ? z : z - 146_096) / 146_097
        let dayOfEra = z - era * 146_097
        let yearOfEra = (dayOfEra - dayOfEra / 1_460 + dayOfEra / 36_524 - dayOfEra / 146_096) / 365
        let dayOfYear = dayOfEra - (365 * yearOfEra + yearOfEra / 4 - yearOfEra / 100)
        let shifted = (5 * dayOfYear + 2) / 153
        let month = shifted < 10 ? shifted + 3 : shifted - 9
        return (yearOfEra + era * 400 + (month <= 2 ? 1 : 0), month, dayOfYear - (153 * shifted + 2) / 5 + 1)
    }

    static func twoDigits(_ value: Int) -> String { value < 10 ? "0\(value)" : String(value) }

    /// One message as a framed bubble, placed right (yours) or left (theirs), with its number
    /// and, for yours, its delivery state.
    package func bubble(_ message: ChatMessage) -> [String] {
        let inner = max(4, bubbleWidth - 4)
        // Widths are measured on what will be shown: the text made safe first.
        let body = DisplayWidth.wrap(SafeText.visible(message.text, keepNewlines: true), width: inner)
        let width = body.map { $0.displayWidth }.max() ?? 0  // (A key path here cost more than the widths.)
        var rows = framed(body, width: width, outgoing: message.outgoing, sender: message.outgoing ? nil : message.sender)
        rows.append(message.outgoing ? statusRow(number: message.number, state: message.state) : styler.dim("#\(message.number)"))
        return rows
    }

    /// `body`, rows laid out `width` columns wide at most, in a bubble's frame: on the right for
    /// yours, on the left under the sender's name (when given) for theirs. The text takes the
    /// bubble's colour too unless `colouredText` is false (a picture keeps its own).
    package func framed(_ body: [String], width: Int, outgoing: Bool, sender: String?, colouredText: Bool = true) -> [String] {
        let (open, close) = styler.enabled ? ((outgoing ? Style.cyan : Style.yellow).escape, Style.reset) : ("", "")
        // Yours at the right edge: every row of the bubble is its body's width and four
        // columns of frame.
        let indent = outgoing ? max(0, columns - (width + 4)) : 0
        // Each row made whole (`LineBuilder`): a bubble is drawn for every line sent and shown.
        func row(_ pieces: (inout LineBuilder) -> Void) -> String {
            var row = LineBuilder(capacity: indent + 3 * (width + 4) + 2 * (open.utf8.count + close.utf8.count))
            row.appendSpaces(indent)
            pieces(&row)
            return row.line
        }
        func framing(_ left: String, _ text: String, _ right: String) -> String {
            row { row in
                row.append(open)
                row.append(left)
                if !colouredText { row.append(close) }
                row.append(text)
                row.appendSpaces(DisplayWidth.padding(text, to: width))
                if !colouredText { row.append(open) }
                row.append(right)
                row.append(close)
            }
        }
        var rows: [String] = []
        rows.reserveCapacity(body.count + 4)  // A sender's name, two edges, the state row.
        if !outgoing, let sender { rows.append(styler.bold(SafeText.visible(sender))) }
        if capabilities.ascii {
            for text in body { rows.append(framing("( ", text, " )")) }
            return rows
        }
        func edge(_ left: String, _ right: String) -> String {
            row { row in
                row.append(open)
                row.append(left)
                row.append("─", times: width + 2)
                row.append(right)
                row.append(close)
            }
        }
        rows.append(edge("╭", "╮"))
        for text in body { rows.append(framing("│ ", text, " │")) }
        rows.append(edge("╰", "╯"))
        return rows
    }

    /// The row under one of your bubbles: its number and delivery state, at the right edge.
    package func statusRow(number: Int64, state: ChatMessage.State) -> String {
        let digits = String(number)
        // The tail's width without measuring it: "#N" and the widest state, a space between.
        let width = 1 + digits.utf8.count + 1 + ChatMessage.State.delivered.rawValue.utf8.count
        var row = LineBuilder(capacity: max(columns, width) + 16)
        row.appendSpaces(columns - width)
        appendTail(to: &row, digits: digits, state: state)
        return row.line
    }

    /// A message's number and delivery state as they end its state row: padded on the left to
    /// the widest state, so that writing a new state over the row's right end (`Overwrite`)
    /// leaves nothing of the old one.
    package func statusTail(number: Int64, state: ChatMessage.State) -> String {
        var tail = LineBuilder(capacity: 32)
        appendTail(to: &tail, digits: String(number), state: state)
        return tail.line
    }

    /// `statusTail`, at the end of `row`.
    private func appendTail(to row: inout LineBuilder, digits: String, state: ChatMessage.State) {
        // All ASCII: widths are byte counts.
        row.appendSpaces(ChatMessage.State.delivered.rawValue.utf8.count - state.rawValue.utf8.count)
        let (open, close) = styler.enabled ? (Style.dim.escape, Style.reset) : ("", "")
        row.append(open)
        row.append("#")
        row.append(digits)
        row.append(close)
        row.append(" ")
        row.append(open)
        row.append(state.rawValue)
        row.append(close)
    }

    /// The compact layout: `14:05  ben │ hello`, the name in a column as wide as the longer of
    /// the two (at most 12), the text wrapped under itself, the number and state at the right
    /// end of the last row.
    func line(_ message: ChatMessage, numbered: Bool) -> [String] {
        let date = Date(timeIntervalSince1970: message.sentAt)
        let clock = String(format: "%02d:%02d", calendar.component(.hour, from: date), calendar.component(.minute, from: date))
        let name = SafeText.visible(message.outgoing ? speakers.me : message.sender ?? speakers.them ?? "")
        let nameWidth = min(12, max(SafeText.visible(speakers.me).displayWidth,
                                    SafeText.visible(speakers.them ?? message.sender ?? "").displayWidth))
        let shownName = DisplayWidth.truncate(name, to: nameWidth)
        let first = styler.dim(clock) + " " + String(repeated: " ", count: nameWidth - shownName.displayWidth)
            + styler.apply(message.outgoing ? .cyan : .yellow, shownName)
        let indent = clock.count + 1 + nameWidth
        let bar = styler.dim(capabilities.ascii ? "|" : "│")
        let tail = !numbered ? "" : message.outgoing ? statusTail(number: message.number, state: message.state) : styler.dim("#\(message.number)")
        // The text keeps clear of the widest tail: a state written over later never covers it.
        let tailRoom = numbered ? statusTail(number: message.number, state: .delivered).strippingANSI.displayWidth + 1 : 0
        let body = DisplayWidth.wrap(SafeText.visible(message.text, keepNewlines: true), width: max(8, columns - indent - 3 - tailRoom))
        var rows = body.enumerated().map { index, text in
            (index == 0 ? first : String(repeated: " ", count: indent)) + " " + bar + " " + text
        }
        if !tail.isEmpty {
            let last = rows.removeLast()
            let gap = max(1, columns - last.strippingANSI.displayWidth - tail.strippingANSI.displayWidth)
            rows.append(last + String(repeated: " ", count: gap) + tail)
        }
        return rows
    }

    /// Prints `lines`, the rendering of `page` (and `extras`); at a terminal the state rows of
    /// yours that can still change (not yet `lastState`) are printed with the mark `mark` names,
    /// and an extra's last row with its own, to be written over.
    package func print(_ lines: [String], of page: [ChatMessage], extras: [Extra] = [], on console: Console,
                      lastState: ChatMessage.State, mark: (ChatMessage) -> String) {
        var marks: [String: String] = [:]
        if console.overwrites {
            for message in page where message.outgoing && message.state != lastState {
                marks[stateRow(of: message)] = mark(message)
            }
            for extra in extras { if let name = extra.mark, let row = extra.rows.last { marks[row] = name } }
        }
        for line in lines {
            if let name = marks[line] { console.print(line, mark: name) } else { console.print(line) }
        }
    }

    /// The newest of `page` that fit `rows` with `reserved` lines to spare, and their rendering;
    /// `previous` gives the message before a given one (its time decides the first header). At
    /// least one message is kept, however tall.
    /// Where unread messages begin: a rule across the window with how many.
    package func unreadLine(_ count: Int) -> String {
        let label = " \(count) unread "
        let rule = capabilities.ascii ? "-" : "─"
        let side = max(2, (min(columns, 60) - label.count) / 2)
        return centred(styler.apply(.red, String(repeating: rule, count: side) + label + String(repeating: rule, count: side)))
    }

    package func fitting(_ page: [ChatMessage], rows: Int, reserved: Int, now: Double, extras: [Extra] = [],
                        unread: (from: Int64, count: Int)? = nil,
                        previous: (ChatMessage) throws -> ChatMessage?) rethrows -> ([ChatMessage], [String]) {
        var page = page
        while true {
            let lines = render(page, previous: try page.first.flatMap(previous), now: now, extras: extras, unread: unread)
            if page.count <= 1 || lines.count + reserved + 1 <= rows { return (page, lines) }
            page.removeFirst()
        }
    }

    /// A line of `chats`.
    package struct ListEntry {
        package var handle, when, counts: String
        package var unread: Bool
        package var last: String?

        package init(handle: String, when: String, counts: String, unread: Bool, last: String?) {
            (self.handle, self.when, self.counts, self.unread, self.last) = (handle, when, counts, unread, last)
        }
    }

    /// `chats`: a conversation a line, each column as wide as its widest entry (a column empty
    /// throughout left out), the last message cut to what the window has left.
    package func conversationList(_ entries: [ListEntry]) -> [String] {
        let handleWidth = min(20, entries.map(\.handle.displayWidth).max() ?? 0)
        let whenWidth = entries.map(\.when.displayWidth).max() ?? 0
        let countsWidth = entries.map(\.counts.displayWidth).max() ?? 0
        let used = [handleWidth, whenWidth, countsWidth].filter { $0 > 0 }.reduce(0) { $0 + $1 + 1 }
        let previewWidth = min(40, columns - used)
        return entries.map { entry in
            let counts = DisplayWidth.pad(entry.counts, to: countsWidth)
            let cells = [DisplayWidth.pad(entry.handle, to: handleWidth), DisplayWidth.pad(entry.when, to: whenWidth),
                         entry.unread ? styler.bold(counts) : counts,
                         previewWidth >= 8 ? entry.last.map { Self.preview($0, width: previewWidth) } ?? "" : ""]
            let widths = [handleWidth, whenWidth, countsWidth, 1]
            let line = zip(cells, widths).filter { $0.1 > 0 }.map(\.0).joined(separator: " ")
            return String(line[..<(line.lastIndex { $0 != " " }.map(line.index(after:)) ?? line.startIndex)])
        }
    }

    /// A message on one line, made safe and cut to `width` columns (notices, the list of chats).
    package static func preview(_ text: String, width: Int) -> String {
        // Newlines become spaces (`split`: Foundation's replacing costs more than the rest), in
        // the few texts that have any: splitting a line without one cost as much as the rest.
        let oneLine = text.utf8.contains(UInt8(ascii: "\n")) ? text.split(separator: "\n", omittingEmptySubsequences: false).joined(separator: " ") : text
        return DisplayWidth.truncate(SafeText.visible(oneLine), to: width)
    }

    package func centred(_ text: String) -> String {
        String(repeating: " ", count: max(0, (columns - text.strippingANSI.displayWidth) / 2)) + text
    }
}

extension Peer {
    /// `name#abcd` made safe for the terminal: the name came from the network.
    package var shownHandle: String { SafeText.visible(handle) }
}

extension Conversation {
    /// `name#abcd` made safe for the terminal: the stored name came from the network.
    package var shownHandle: String { SafeText.visible(handle) }
}
