/// When to emit colour: the user's `--color` choice.
package enum ColorMode: String, CaseIterable, Sendable {
    case auto, always, never

    /// Decides whether output gets colour.
    ///
    /// `auto` colours only a terminal that can show it: the stream is a tty, `TERM` is set and
    /// is not `dumb`, and `NO_COLOR` (no-color.org) is unset or empty.
    package func enablesColor(isTTY: Bool, environment: [String: String]) -> Bool {
        switch self {
        case .always: return true
        case .never: return false
        case .auto:
            if let noColor = environment["NO_COLOR"], !noColor.isEmpty { return false }
            guard isTTY, let term = environment["TERM"], !term.isEmpty, term != "dumb" else { return false }
            return true
        }
    }
}

/// How many colours the terminal can show, when colour is on at all.
package enum ColorDepth: Int, Comparable, Sendable {
    case none = 0, ansi256 = 1, trueColor = 2

    package static func < (lhs: ColorDepth, rhs: ColorDepth) -> Bool { lhs.rawValue < rhs.rawValue }

    /// Truecolor when `COLORTERM` says so (the de-facto convention), else 256 colours.
    package static func detect(colorEnabled: Bool, environment: [String: String]) -> ColorDepth {
        guard colorEnabled else { return .none }
        let colorTerm = environment["COLORTERM"]?.lowercased() ?? ""
        return colorTerm == "truecolor" || colorTerm == "24bit" ? .trueColor : .ansi256
    }
}

/// What the output may use: decided once at start-up, then passed to every view.
package struct Capabilities: Sendable, Equatable {
    package var color: ColorDepth
    /// `--ascii`: no emoji, no box drawing.
    package var ascii: Bool
    /// Interactive output may animate and redraw; batch output never does.
    package var interactive: Bool

    package init(color: ColorDepth, ascii: Bool, interactive: Bool) {
        self.color = color
        self.ascii = ascii
        self.interactive = interactive
    }

    package var colorEnabled: Bool { color != .none }

    /// Plain text: what tests and pipes see.
    package static let plain = Capabilities(color: .none, ascii: false, interactive: false)
}
