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

    /// Mailed to someone away: the broker holds it, which `tap` and going offline say.
    @Test func oursWithTheBrokerSaysSo() {
        #expect(ChatText.times(of: mine(.sent), mailed: true) { "t\(Int($0))" }.joined(separator: ", ")
                == "sent t1, not delivered yet (the broker holds it until they next connect)")
        #expect(ChatText.waiting(to: "ben#d60e", count: 1, mailed: 0) == "1 message to ben#d60e waits in the outbox: it goes when you are both online")
        #expect(ChatText.waiting(to: "ben#d60e", count: 2, mailed: 2) == "2 messages to ben#d60e are held by the broker: they get them when they next connect")
        #expect(ChatText.waiting(to: "ben#d60e", count: 3, mailed: 1)
                == "3 messages to ben#d60e wait: 1 held by the broker until they next connect, 2 in the outbox until you are both online")
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
