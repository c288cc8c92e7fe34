/// An SGR text style. Styles are only escape codes; `Styler` decides whether they are emitted.
public struct Style: Sendable, Equatable {
    public let codes: [String]

    public init(_ codes: [String]) { self.codes = codes }

    public static let bold = Style(["1"])
    public static let dim = Style(["2"])
    public static let italic = Style(["3"])
    public static let underline = Style(["4"])
    public static let inverse = Style(["7"])
    public static let red = Style(["31"])
    public static let green = Style(["32"])
    public static let yellow = Style(["33"])
    public static let blue = Style(["34"])
    public static let magenta = Style(["35"])
    public static let cyan = Style(["36"])
    public static let gray = Style(["90"])

    public static func + (lhs: Style, rhs: Style) -> Style { Style(lhs.codes + rhs.codes) }

    public var escape: String { "\u{1B}[" + codes.joined(separator: ";") + "m" }
    public static let reset = "\u{1B}[0m"
}

/// Applies styles when colour is on, and nothing at all when it is off.
public struct Styler: Sendable {
    public let enabled: Bool

    public init(enabled: Bool) { self.enabled = enabled }
    public init(_ capabilities: Capabilities) { self.enabled = capabilities.colorEnabled }

    public func apply(_ style: Style, _ text: String) -> String {
        guard enabled, !text.isEmpty else { return text }
        return style.escape + text + Style.reset
    }

    public func bold(_ text: String) -> String { apply(.bold, text) }
    public func dim(_ text: String) -> String { apply(.dim, text) }
    public func error(_ text: String) -> String { apply(.red + .bold, text) }
}

extension String {
    /// The text with every ANSI CSI escape sequence removed.
    public var strippingANSI: String {
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
