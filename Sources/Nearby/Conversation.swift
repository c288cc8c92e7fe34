import Foundation
import GRDB
import Storage

/// A message as a conversation shows it.
package struct ChatMessage: Equatable, Sendable {
    package enum State: String, Sendable {
        case sending, sent, delivered, read
        /// An incoming message.
        case received
    }

    /// The number shown and taken by `tap N`: #1, #2, … in each conversation.
    package var number: Int64
    /// A room's line: its stored row. (A conversation's messages go by their numbers: one
    /// received is shown before its row exists.)
    package var id: Int64
    package var outgoing: Bool
    package var text: String
    /// When the sender sent it (seconds since 1970).
    package var sentAt: Double
    /// When it arrived here (incoming), or was acknowledged (outgoing).
    package var receivedAt: Double?
    /// When it was first shown here (incoming), or the peer's read receipt came (outgoing);
    /// nil while unread, and for messages read before read times were kept.
    package var readAt: Double?
    package var state: State
    /// Who wrote it, shown above a received bubble where several write (a room); nil in a
    /// conversation, whose header names the one other.
    package var sender: String?

    package init(id: Int64? = nil, number: Int64, outgoing: Bool, text: String, sentAt: Double, receivedAt: Double? = nil,
                readAt: Double? = nil, state: State, sender: String? = nil) {
        self.sender = sender
        self.id = id ?? number
        self.number = number
        self.outgoing = outgoing
        self.text = text
        self.sentAt = sentAt
        self.receivedAt = receivedAt
        self.readAt = readAt
        self.state = state
    }
}

/// A conversation with one peer, as stored.
package struct Conversation: Equatable, Sendable {
    package var id: Int64
    package var myKey: Data
    package var peerKey: Data
    package var peerName: String
    package var peerAgreementKey: Data
    package var sentSequence: UInt32
    package var acknowledgedSequence: UInt32
    package var deliveredSequence: UInt32
    package var lastActivity: Double
    /// The last fragment left with a broker for the peer while away (mail).
    package var mailedSequence: UInt32 = 0
    /// When the last of them was mailed; nil once the writer was told they waited a week.
    package var mailedAt: Double?
    /// The peer's latest signed prekey heard, which mail to it is sealed to.
    package var peerPrekey: SignedPrekey?

    /// `name#abcd`, as peers are shown.
    package var handle: String { PeerIdentity.handle(name: peerName, signingKey: peerKey) }
}

/// A message as the engine numbered it and the store writes it, either way.
package struct MessageRow: Equatable, Sendable {
    /// The number shown in the conversation.
    package var number: Int64
    package var text: String
    package var firstSequence: UInt32
    package var lastSequence: UInt32
    /// When it was written (sent), by its sender's clock.
    package var sentAt: Double

    package init(number: Int64, text: String, firstSequence: UInt32, lastSequence: UInt32, sentAt: Double) {
        self.number = number
        self.text = text
        self.firstSequence = firstSequence
        self.lastSequence = lastSequence
        self.sentAt = sentAt
    }
}

/// An outgoing message still waiting for its acknowledgement: its stored row and what it says
/// (`pending.text` is `pending.row.text`).
@dynamicMemberLookup
package struct PendingMessage: Equatable, Sendable {
    package var id: Int64
    package var row: MessageRow

    package subscript<Value>(dynamicMember field: KeyPath<MessageRow, Value>) -> Value { row[keyPath: field] }
}

/// A line of `chats`.
package struct ConversationSummary: Equatable, Sendable {
    package var conversation: Conversation
    package var lastText: String?
    package var lastTime: Double?
    package var unread: Int
    /// Our messages the peer has not acknowledged yet: the outbox.
    package var waiting: Int
    /// Of those, the ones a broker holds for the peer (mailed).
    package var mailed: Int = 0
}
