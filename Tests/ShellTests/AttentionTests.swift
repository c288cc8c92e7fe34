import Runtime
import Testing
@testable import Shell

/// What the terminal is sent when something arrives for the user elsewhere (issue 37).
@Suite struct AttentionTests {
    let ann = Alert(who: "ann", what: "wrote to you", text: "meet me at the lighthouse")

    /// The bell rings at the first alert of a burst, not at each: a burst ends after
    /// `burstGap` seconds without one.
    @Test func theBellRingsOncePerBurst() {
        var attention = Attention(mode: .bell)
        #expect(attention.escapes(for: [ann], now: 100) == "\u{7}")
        #expect(attention.escapes(for: [ann, ann], now: 101) == "")
        #expect(attention.escapes(for: [ann], now: 101 + Attention.burstGap - 0.5) == "")  // Still the same burst.
        #expect(attention.escapes(for: [], now: 200) == "")
        #expect(attention.escapes(for: [ann], now: 200) == "\u{7}")
        var off = Attention(mode: .off)
        #expect(off.escapes(for: [ann], now: 100) == "")
    }

    /// A desktop notification names who and what, never the text unless asked to.
    @Test func aDesktopNotificationKeepsTheTextUnlessAsked() {
        var attention = Attention(mode: .desktop)
        let quiet = attention.escapes(for: [ann, Alert(who: "ben", what: "cursed you")], now: 0)
        #expect(quiet == "\u{7}\u{1B}]777;notify;seance;ann wrote to you (and 1 more)\u{7}\u{1B}]9;seance: ann wrote to you (and 1 more)\u{7}")
        var telling = Attention(mode: .desktop, showsText: true)
        #expect(telling.escapes(for: [ann], now: 0).contains(";seance;ann: meet me at the lighthouse\u{7}"))
        // A curse has no text to show: who and what, as before.
        var curse = Attention(mode: .desktop, showsText: true)
        #expect(curse.escapes(for: [Alert(who: "ben", what: "cursed you with blindness")], now: 0).contains(";ben cursed you with blindness\u{7}"))
    }

    /// Names and text come from the network: nothing in them can end the escape and start one
    /// of their own (a BEL, an ESC, the C1 string terminator), and they are cut to a glance.
    @Test func whatPeersSendCannotEscapeTheNotification() {
        var attention = Attention(mode: .desktop, showsText: true)
        let hostile = Alert(who: "eve\u{7}\u{1B}]0;owned\u{9C}", what: "wrote to you", text: String(repeating: "x", count: 5_000) + "\u{1B}[2J")
        let escapes = attention.escapes(for: [hostile], now: 0)
        #expect(escapes.unicodeScalars.filter { $0 == "\u{1B}" }.count == 2)
        #expect(escapes.unicodeScalars.filter { $0 == "\u{7}" }.count == 3)
        #expect(!escapes.unicodeScalars.contains("\u{9C}"))
        #expect(escapes.count < 2 * Attention.longestBody + 40)
    }

    /// Inside tmux the notifications are wrapped to pass through it; the bell is tmux's own.
    @Test func insideTmuxTheNotificationPassesThrough() {
        var attention = Attention(mode: .desktop, throughTmux: true)
        let escapes = attention.escapes(for: [ann], now: 0)
        #expect(escapes.hasPrefix("\u{7}\u{1B}Ptmux;\u{1B}\u{1B}]777;notify;seance;ann wrote to you\u{7}\u{1B}\u{1B}]9;"))
        #expect(escapes.hasSuffix("\u{7}\u{1B}\\"))
    }

    /// The console rings after the lines the alerts go with, and only when told to.
    @Test func theConsoleRingsAfterTheLinesAndOnlyWhenAsked() {
        let console = Console.capturing()
        console.inbox.post("✉ ann: meet me", alert: ann)
        console.printPending()
        #expect(console.takeCaptured() == "✉ ann: meet me\n")
        console.attention = Attention(mode: .bell)
        console.inbox.post("✉ ann: again", alert: ann)
        console.printPending()
        #expect(console.takeCaptured() == "✉ ann: again\n\u{7}")
        // A script's reader takes only lines.
        console.inbox.post("✉ ann: third", alert: ann)
        #expect(console.inbox.drainLines() == ["✉ ann: third"])
    }
}
