import ChatViews
import Foundation
import Nearby
import Terminal
import TestWorld
import Testing
@testable import Chat

/// What hostile peers' names and messages become on screen, and how many notices they get.
@Suite struct HostileNoticeTests {
    /// Escapes in a peer's name or message never reach the terminal raw, in notices or bubbles.
    @Test func remoteTextIsShownInert() {
        let evil = "\u{1B}[2J\u{1B}]0;pwned\u{7}\u{202E}"
        let peer = Peer(signingKey: Data(repeating: 7, count: 32),
                        announcement: Announcement(name: "eve" + evil, agreementKey: Data(repeating: 1, count: 32), plane: 0,
                                                   avatar: .emoji(evil), unicastPort: 1, intervalMilliseconds: 5000),
                        route: Route(transport: "memory", address: "h"), lastSeen: 0)
        var lines = PresenceLines.liveLines(for: .arrived(peer), trusted: "eve" + evil + "#abcd", myPlane: .human, styler: Styler(.plain),
                                       ascii: false)
        lines += PresenceLines.liveLines(for: .left(peer, .goodbye), myPlane: .human, styler: Styler(.plain), ascii: false)
        let view = ConversationView(capabilities: .plain, columns: 60)
        lines += view.bubble(ChatMessage(number: 1, outgoing: false, text: "hi" + evil + "\u{9B}2J", sentAt: 0, state: .received))
        #expect(lines.count > 3)
        for line in lines {
            #expect(!line.unicodeScalars.contains { $0.value < 0x20 || (0x7F...0x9F).contains($0.value) || $0.value == 0x202E },
                    "\(line.debugDescription)")
        }
        #expect(lines.joined().contains("^[[2J"))
    }

    @Test func presenceNoticesAreRateLimited() {
        var limiter = NoticeLimiter(burst: 5, perSecond: 1, what: "presence notices", seeAll: "nearby lists who is here")
        var shown: [String] = []
        for i in 0..<1_000 { shown += limiter.admit(["+ key\(i)"], now: 0) }
        #expect(shown.count == 5)
        shown = limiter.admit(["+ later"], now: 1)
        #expect(shown == ["… 995 more presence notices not shown (nearby lists who is here)", "+ later"])
    }

    /// A transport that stops carrying (a broker lost, no interface joined) is said once, with
    /// its reason shown inert; coming back is said too.
    @Test func transportStateIsANotice() {
        let down = PresenceLines.liveLines(for: .transport("broker", .down("connection refused\u{1B}[2J")), myPlane: .human,
                                      styler: Styler(.plain), ascii: false)
        #expect(down == ["! broker: connection refused^[[2J"])
        let up = PresenceLines.liveLines(for: .transport("broker", .up), myPlane: .human, styler: Styler(.plain), ascii: false)
        #expect(up == ["+ broker: connected again"])
    }
}
