import Foundation

/// A message put back together from its fragments, in order.
package struct AssembledMessage: Equatable, Sendable {
    package var text: String
    package var firstSequence: UInt32
    package var lastSequence: UInt32
    /// Milliseconds since 1970, as the sender wrote it.
    package var sentAt: UInt64
    /// False when the sender's fragments ran past `IncomingAssembler.maximumFragments` without
    /// an end: the pieces are handed out only to be skipped, never stored.
    package var isWhole: Bool = true
}

/// The receiving side of one conversation: fragments may come twice, late or out of order;
/// whole messages come out once each, in order. The acknowledgement is cumulative and covers
/// only whole messages, so a crash loses nothing the sender believes delivered.
package struct IncomingAssembler: Sendable {
    /// The last fragment of the last whole message handed out.
    package private(set) var delivered: UInt32
    private var buffered: [UInt32: Fragment] = [:]
    /// How far ahead of what has arrived a fragment may be: the sender's window, since an
    /// honest sender never has more in flight. Beyond it fragments are dropped (and resent).
    package static let bufferLimit = OutgoingQueue.window
    /// The most fragments one message may have: a longest message (4,000 characters of up to
    /// four bytes) needs 18.
    package static let maximumFragments = 20

    /// Fragments held, waiting for earlier ones.
    package var bufferedCount: Int { buffered.count }

    package init(delivered: UInt32) { self.delivered = delivered }

    package enum Outcome: Equatable, Sendable {
        /// Already had it: acknowledge again (the first acknowledgement may have been lost).
        case duplicate
        /// Kept, waiting for earlier fragments or the rest of its message.
        case buffered
        /// Too far ahead of what has arrived.
        case outOfWindow
        /// These messages are now complete, in order.
        case messages([AssembledMessage])
    }

    package mutating func receive(_ fragment: Fragment) -> Outcome {
        if fragment.sequence <= delivered { return .duplicate }
        if fragment.sequence > delivered &+ UInt32(Self.bufferLimit) { return .outOfWindow }
        // The next one, a whole message, nothing held: as most come (a line alone, a burst in
        // order), handed out without passing through the table.
        if fragment.sequence == delivered &+ 1, fragment.isLast, buffered.isEmpty {
            delivered = fragment.sequence
            return .messages([AssembledMessage(text: String(decoding: fragment.text, as: UTF8.self), firstSequence: fragment.sequence,
                                               lastSequence: fragment.sequence, sentAt: fragment.sentAt)])
        }
        buffered[fragment.sequence] = fragment
        var messages: [AssembledMessage] = []
        // Walk forward from the next expected fragment while messages can be completed.
        while true {
            var sequence = delivered &+ 1
            var parts: [Fragment] = []
            while let part = buffered[sequence] {
                parts.append(part)
                if part.isLast || parts.count == Self.maximumFragments { break }
                sequence &+= 1
            }
            guard let last = parts.last, last.isLast || parts.count == Self.maximumFragments else { break }
            for part in parts { buffered[part.sequence] = nil }
            messages.append(AssembledMessage(text: String(decoding: parts.reduce(Data()) { $0 + $1.text }, as: UTF8.self),
                                             firstSequence: parts[0].sequence, lastSequence: last.sequence, sentAt: parts[0].sentAt,
                                             isWhole: last.isLast))
            delivered = last.sequence
        }
        return messages.isEmpty ? .buffered : .messages(messages)
    }
}
