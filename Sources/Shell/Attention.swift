import Runtime
import Terminal

/// How the user is told, at a terminal, that something arrived for them while they looked
/// elsewhere (a message outside its conversation, a curse, a room line outside the room): the
/// bell, once a burst, as irssi and weechat ring it; with `desktop`, a desktop notification
/// too, written to the terminal as OSC 777 and OSC 9 (VTE terminals, kitty, iTerm2, Windows
/// Terminal). Never in a script: a batch run has no attention to draw.
package struct Attention: Sendable {
    package enum Mode: String, Sendable, CaseIterable {
        case bell, desktop, off
    }

    package var mode: Mode
    /// The text of a message goes into the desktop notification too (`notify-text = yes`);
    /// otherwise only who and what, for a screen others may see.
    package var showsText: Bool
    /// Inside tmux, which drops escapes it does not know: notifications are wrapped to pass
    /// through it (shown where tmux's `allow-passthrough` is on).
    package var throughTmux: Bool
    /// Alerts closer together than this are one burst: the bell rings at its first only.
    package static let burstGap = 3.0
    /// How much of a notification's text is kept: a notification is a glance.
    static let longestBody = 160

    private var lastAlert = -Double.infinity

    package init(mode: Mode, showsText: Bool = false, throughTmux: Bool = false) {
        self.mode = mode
        self.showsText = showsText
        self.throughTmux = throughTmux
    }

    /// What to write to the terminal for `alerts`, which arrived together at `now` (seconds of
    /// a monotonic clock): nothing when they continue a burst.
    package mutating func escapes(for alerts: [Alert], now: Double) -> String {
        guard mode != .off, let first = alerts.first else { return "" }
        defer { lastAlert = now }
        guard now - lastAlert >= Self.burstGap else { return "" }
        guard mode == .desktop else { return "\u{7}" }
        var body = summary(of: first)
        if alerts.count > 1 { body += " (and \(alerts.count - 1) more)" }
        // The title is fixed and the body inert: no control (BEL, ESC, C1 ST) can end the
        // escape early, and OSC 777 splits only the title at its semicolons.
        let notifications = "\u{1B}]777;notify;seance;\(body)\u{7}" + "\u{1B}]9;seance: \(body)\u{7}"
        return "\u{7}" + (throughTmux ? Self.passedThroughTmux(notifications) : notifications)
    }

    /// One line for a notification: "ann wrote to you", or with the text, "ann: hello".
    func summary(of alert: Alert) -> String {
        let line = if showsText, let text = alert.text { "\(alert.who): \(text)" } else { "\(alert.who) \(alert.what)" }
        let inert = SafeText.visible(line)
        return inert.count > Self.longestBody ? String(inert.prefix(Self.longestBody - 1)) + "…" : inert
    }

    /// `escapes` in tmux's passthrough: each of their ESCs doubled, inside `ESC Ptmux; … ESC \`.
    static func passedThroughTmux(_ escapes: String) -> String {
        var doubled = String.UnicodeScalarView()
        for scalar in escapes.unicodeScalars {
            if scalar == "\u{1B}" { doubled.append(scalar) }
            doubled.append(scalar)
        }
        return "\u{1B}Ptmux;" + String(doubled) + "\u{1B}\\"
    }
}
