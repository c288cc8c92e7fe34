import ChatViews
import Foundation
import Terminal

/// Search results as text: a line a match (number, when, where, who, the line with the words
/// found highlighted, or marked `*so*` without colour), or tab-separated values for tools.
package struct SearchView {
    package let capabilities: Capabilities
    package let columns: Int
    package let calendar: Calendar

    package init(capabilities: Capabilities, columns: Int, calendar: Calendar = .current) {
        self.capabilities = capabilities
        self.columns = columns
        self.calendar = calendar
    }

    var styler: Styler { Styler(capabilities) }

    /// Where a line was said, as results name it.
    package static func placeName(_ place: SearchHit.Place) -> String {
        switch place {
        case .conversation(_, let peerName, _): return SafeText.visible(peerName)
        case .room(_, let major, let minor, _): return "room \(major).\(minor)"
        }
    }

    /// The results numbered from `firstNumber`, a line each, the columns as wide as their
    /// widest entry, the line cut to what is left with the first word found in sight.
    package func lines(_ hits: [SearchHit], firstNumber: Int, query: SearchQuery, now: Double) -> [String] {
        let days = ConversationView(capabilities: capabilities, columns: columns, calendar: calendar)
        let rows = hits.enumerated().map { index, hit in
            (number: String(firstNumber + index), when: days.sectionTitle(hit.sentAt, now: now), place: Self.placeName(hit.place),
             sender: SafeText.visible(hit.sender))
        }
        let numberWidth = rows.map(\.number.count).max() ?? 0
        let whenWidth = rows.map { $0.when.displayWidth }.max() ?? 0
        let placeWidth = min(16, rows.map { $0.place.displayWidth }.max() ?? 0)
        return zip(rows, hits).map { row, hit in
            let lead = String(repeating: " ", count: numberWidth - row.number.count) + row.number + "  "
                + DisplayWidth.pad(row.when, to: whenWidth) + "  " + DisplayWidth.pad(DisplayWidth.truncate(row.place, to: placeWidth), to: placeWidth)
                + "  " + DisplayWidth.truncate(row.sender, to: 16) + ": "
            let room = max(10, columns - lead.displayWidth)
            return styler.dim(lead) + excerpt(hit.text, query: query, width: room)
        }
    }

    /// The line on one row, made safe, cut to `width` columns around the first word found,
    /// the words found highlighted.
    func excerpt(_ text: String, query: SearchQuery, width: Int) -> String {
        // Newlines become spaces (most lines have none).
        let flat = SafeText.visible(text.utf8.contains(0x0A) ? text.split(separator: "\n", omittingEmptySubsequences: false).joined(separator: " ")
                                                              : text)
        let found = query.matches(in: flat)
        var start = flat.startIndex
        var lead = ""
        // A match far along a long line: the line starts at a word a little before it (at most
        // a third of the room back, so that the match stays in sight).
        if let first = found.first, flat.displayWidth > width, flat[..<first.lowerBound].displayWidth > width / 3 {
            let back = min(20, width / 3, flat.distance(from: flat.startIndex, to: first.lowerBound))
            let floor = flat.index(first.lowerBound, offsetBy: -back)
            start = flat[floor..<first.lowerBound].firstIndex(of: " ").map { flat.index(after: $0) } ?? floor
            lead = "…"
        }
        let shown = flat[start...]
        let fits = shown.displayWidth <= width - lead.count
        let end = fits ? shown.endIndex : DisplayWidth.end(of: shown, within: width - lead.count - 1)
        // The words found marked (the part of one that is cut, as far as it shows): the marks
        // take no columns of their own under colour.
        var result = lead
        var last = start
        for range in found where range.upperBound > start && range.lowerBound < end {
            let lower = max(range.lowerBound, start), upper = min(range.upperBound, end)
            result += flat[last..<lower]
            result += styler.enabled ? styler.apply(.bold + .yellow, String(flat[lower..<upper])) : "*" + flat[lower..<upper] + "*"
            last = upper
        }
        return result + flat[last..<end] + (fits ? "" : "…")
    }

    /// One match a line for other tools: time (ISO 8601, local with its offset), where, who,
    /// the number there, and the text; tabs, newlines and backslashes escaped as `\t`, `\n`,
    /// `\\`, anything else a terminal would act on made visible.
    package static func tsv(_ hit: SearchHit, calendar: Calendar = .current) -> String {
        let formatter = ISO8601DateFormatter()
        formatter.timeZone = calendar.timeZone
        formatter.formatOptions = [.withInternetDateTime]
        let fields = [formatter.string(from: Date(timeIntervalSince1970: hit.sentAt)), placeName(hit.place), hit.sender,
                      "#\(hit.number)", hit.text]
        return fields.map(escaped).joined(separator: "\t")
    }

    static func escaped(_ field: String) -> String {
        var out = ""
        for character in field {
            switch character {
            case "\\": out += "\\\\"
            case "\t": out += "\\t"
            case "\n": out += "\\n"
            case "\r", "\r\n": out += "\\r"
            default: out.append(character)
            }
        }
        return SafeText.visible(out)
    }
}
