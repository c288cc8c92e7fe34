/// An SGR text style. Styles are only escape codes; `Styler` decides whether they are emitted.
package struct Style: Sendable, Equatable {
    package let codes: [String]

    package init(_ codes: [String]) { self.codes = codes }

    package static let bold = Style(["1"])
    package static let dim = Style(["2"])
    package static let italic = Style(["3"])
    package static let underline = Style(["4"])
    package static let inverse = Style(["7"])
    package static let red = Style(["31"])
    package static let green = Style(["32"])
    package static let yellow = Style(["33"])
    package static let blue = Style(["34"])
    package static let magenta = Style(["35"])
    package static let cyan = Style(["36"])
    package static let gray = Style(["90"])

    package static func + (lhs: Style, rhs: Style) -> Style { Style(lhs.codes + rhs.codes) }

    package var escape: String { "\u{1B}[" + codes.joined(separator: ";") + "m" }
    package static let reset = "\u{1B}[0m"
}

/// Applies styles when colour is on, and nothing at all when it is off.
package struct Styler: Sendable {
    package let enabled: Bool

    package init(enabled: Bool) { self.enabled = enabled }
    package init(_ capabilities: Capabilities) { self.enabled = capabilities.colorEnabled }

    package func apply(_ style: Style, _ text: String) -> String {
        guard enabled, !text.isEmpty else { return text }
        return style.escape + text + Style.reset
    }

    package func bold(_ text: String) -> String { apply(.bold, text) }
    package func dim(_ text: String) -> String { apply(.dim, text) }
    package func error(_ text: String) -> String { apply(.red + .bold, text) }
}

extension StringProtocol {
    /// The ANSI CSI escape sequences in the text, in order (what `strippingANSI` removes).
    package var ansiEscapes: [String] {
        var escapes: [String] = []
        var scalars = unicodeScalars.makeIterator()
        while let scalar = scalars.next() {
            guard scalar == "\u{1B}", let next = scalars.next(), next == "[" else { continue }
            var escape = "\u{1B}["
            while let c = scalars.next() {
                escape.unicodeScalars.append(c)
                if (0x40...0x7E).contains(c.value) { break }
            }
            escapes.append(escape)
        }
        return escapes
    }
}

extension StringProtocol {
    /// The text with every ANSI CSI escape sequence removed.
    package var strippingANSI: String {
        // Most text measured (a bubble's rows, a list's cells) holds no escape: itself.
        guard utf8.contains(0x1B) else { return String(self) }
        var result = ""
        result.reserveCapacity(utf8.count)
        var scalars = unicodeScalars.makeIterator()
        while let scalar = scalars.next() {
            if scalar == "\u{1B}" {
                guard let next = scalars.next() else { break }
                if next == "[" {
                    // Parameters and intermediates, then one final byte in @...~.
                    while let c = scalars.next(), !(0x40...0x7E).contains(c.value) {}
                }
                continue
            }
            result.unicodeScalars.append(scalar)
        }
        return result
    }
}
