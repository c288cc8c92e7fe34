import Foundation
import Terminal

/// A date as a user types it for a command's option (`search --since`, `transfers clean
/// --before`): `2026-11-20`, `2026-11-20 14:05`, `today`, `yesterday`, or a while ago (`3d`,
/// `12h`, `30m`); local time.
package enum TypedDate {
    package struct Invalid: Error, Equatable, CustomStringConvertible {
        package let text: String
        package var description: String {
            "'\(text)' is not a date: give 2026-11-20, '2026-11-20 14:05', today, yesterday, or 3d, 12h, 30m ago"
        }
    }

    /// Seconds since 1970 of `text`, read at `now`.
    package static func parse(_ text: String, now: Double, calendar: Calendar = .current) throws(Invalid) -> Double {
        let trimmed = text.trimmingCharacters(in: .whitespaces).lowercased()
        let today = calendar.startOfDay(for: Date(timeIntervalSince1970: now))
        switch trimmed {
        case "today": return today.timeIntervalSince1970
        case "yesterday": return (calendar.date(byAdding: .day, value: -1, to: today) ?? today).timeIntervalSince1970
        default: break
        }
        if let unit = trimmed.last, let amount = Double(trimmed.dropLast()), amount >= 0, amount.isFinite {
            switch unit {
            case "d": return now - amount * 86_400
            case "h": return now - amount * 3_600
            case "m": return now - amount * 60
            default: break
            }
        }
        let parts = trimmed.split(whereSeparator: { $0 == " " || $0 == "t" }).map(String.init)
        let day = parts.first?.split(separator: "-").map { Int($0) } ?? []
        let invalid = Invalid(text: SafeText.visible(text))
        guard (1...2).contains(parts.count), day.count == 3, let year = day[0], let month = day[1], let date = day[2] else { throw invalid }
        var components = DateComponents(year: year, month: month, day: date)
        if parts.count == 2 {
            let clock = parts[1].split(separator: ":").map { Int($0) }
            guard (2...3).contains(clock.count), let hour = clock[0], let minute = clock[1] else { throw invalid }
            (components.hour, components.minute) = (hour, minute)
        }
        guard components.isValidDate(in: calendar), let found = calendar.date(from: components) else { throw invalid }
        return found.timeIntervalSince1970
    }
}
