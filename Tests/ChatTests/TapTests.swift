import ChatViews
import Nearby
import Testing
@testable import Chat

/// `tap N`: when a message was sent, delivered (received, if theirs) and read, or how far it
/// has come.
@Suite struct TapTests {
    func tap(_ message: ChatMessage) -> String {
        ChatText.times(of: message) { "t\(Int($0))" }.joined(separator: ", ")
    }

    func mine(_ state: ChatMessage.State, delivered: Double? = nil, read: Double? = nil) -> ChatMessage {
        ChatMessage(number: 1, outgoing: true, text: "hi", sentAt: 1, receivedAt: delivered, readAt: read, state: state)
    }

    @Test func oursSaysHowFarItCame() {
        #expect(tap(mine(.sending)) == "sent t1, not delivered yet (sending)")
        #expect(tap(mine(.sent)) == "sent t1, not delivered yet (sent)")
        #expect(tap(mine(.delivered, delivered: 2)) == "sent t1, delivered t2, not read yet")
        #expect(tap(mine(.read, delivered: 2, read: 3)) == "sent t1, delivered t2, read t3")
        // Read before read times were kept: read, with no time.
        #expect(tap(mine(.read, delivered: 2)) == "sent t1, delivered t2, read")
    }

    @Test func theirsSaysWhenItCameAndWhenItWasShown() {
        let theirs = ChatMessage(number: 2, outgoing: false, text: "yo", sentAt: 4, receivedAt: 5, state: .received)
        #expect(tap(theirs) == "sent t4, received t5, not shown yet")
        var shown = theirs
        shown.state = .read
        shown.readAt = 6
        #expect(tap(shown) == "sent t4, received t5, read t6")
    }
}
