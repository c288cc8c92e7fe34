import Foundation
import Nearby
import Shell
import Terminal

/// How chat names and trims what it shows: pure functions of their arguments.
enum ChatText {
    /// Said after a handle whose name is trusted for another key: possibly an impersonation.
    static func trustNote(_ trusted: Data?, _ key: Data) -> String {
        guard let trusted, trusted != key else { return "" }
        return " (not the one you trust: " + SafeText.visible(PeerIdentity.handle(name: "", signingKey: trusted)) + ")"
    }

    /// What `open` completes: the local ones, the peers present, the past conversations, each
    /// once. Names as they are: the completion quotes what it inserts (`'the Girl in the Well'`),
    /// so a name with spaces completes from its first word, quoted or not.
    /// A verified key's candidates say so.
    /// A name alone where one key goes by it (`open ben`), `name#fingerprint` where several do.
    static func peerCandidates(locals: [LocalPeer], present: [Peer], past: [Conversation], verified: Set<Data> = []) -> [Candidate] {
        var names = Set<String>()
        var candidates: [Candidate] = []
        func checked(_ key: Data, _ description: String) -> String { verified.contains(key) ? "verified, " + description : description }
        // Each key once (in sight before past), then how many keys share each name.
        var seen = Set<Data>()
        let people = present.filter { seen.insert($0.signingKey).inserted }.map { ($0.signingKey, $0.name, $0.shownHandle, $0.plane?.name ?? "") }
            + past.filter { seen.insert($0.peerKey).inserted }.map { ($0.peerKey, $0.peerName, $0.shownHandle, "past conversation") }
        var keysByName: [String: Int] = [:]
        for (_, name, _, _) in people { keysByName[name.lowercased(), default: 0] += 1 }
        for local in locals where names.insert(local.name).inserted { candidates.append(Candidate(local.name, local.kind)) }
        for (key, name, handle, description) in people {
            let shownName = SafeText.visible(name)
            let text = keysByName[name.lowercased()] == 1 && !names.contains(shownName) ? shownName : handle
            guard names.insert(text).inserted else { continue }
            candidates.append(Candidate(text, checked(key, description)))
        }
        return candidates
    }

    /// Beside the name of a key the user verified (`verify`).
    static func verifiedMark(ascii: Bool) -> String { ascii ? " (verified)" : " \u{2713}" }

    /// Message numbers as a notice names them: `#3`, or `#3–#7` for a run; nil for none.
    static func span(_ numbers: [Int64]) -> String? {
        guard let first = numbers.min(), let last = numbers.max() else { return nil }
        return first == last ? "#\(last)" : "#\(first)–#\(last)"
    }

    /// The name the state row under message `number` is printed with: written over when the
    /// state changes, where the terminal allows (elsewhere each change is a line of its own).
    static func stateMark(_ conversation: Int64, _ number: Int64) -> String { "state \(conversation) \(number)" }

    /// The line without spaces or tabs at either end. Foundation's trimming costs more than a
    /// sent line's encryption, so the usual line, with none, is not handed to it.
    static func trimmed(_ line: String) -> String {
        // ASCII without looking its category up (the table lookups were most of a line's trim).
        func isSpace(_ scalar: Unicode.Scalar) -> Bool {
            scalar.isASCII ? scalar == " " || scalar == "\t" : scalar.properties.generalCategory == .spaceSeparator
        }
        guard let first = line.unicodeScalars.first, let last = line.unicodeScalars.last, !isSpace(first) && !isSpace(last) else {
            return line.trimmingCharacters(in: .whitespaces)
        }
        return line
    }

    /// What waits for a conversation's peer as we go offline: in the outbox (it goes when both
    /// are online), or held by a broker (mailed: they get it when they next connect).
    static func waiting(_ summary: ConversationSummary) -> String {
        waiting(to: summary.conversation.shownHandle, count: summary.waiting, mailed: summary.mailed)
    }

    static func waiting(to peer: String, count: Int, mailed held: Int) -> String {
        let kept = count - held
        if held == 0 {
            return kept == 1 ? "1 message to \(peer) waits in the outbox: it goes when you are both online"
                             : "\(kept) messages to \(peer) wait in the outbox: they go when you are both online"
        }
        if kept == 0 {
            return held == 1 ? "1 message to \(peer) is held by the broker: they get it when they next connect"
                             : "\(held) messages to \(peer) are held by the broker: they get them when they next connect"
        }
        return "\(count) messages to \(peer) wait: \(held) held by the broker until they next connect, "
            + "\(kept) in the outbox until you are both online"
    }

    /// What `tap` says of a message: when it was sent, delivered (received, if theirs) and read,
    /// or how far it has come.
    /// `mailed`: a broker holds it for the peer, away.
    static func times(of message: ChatMessage, mailed: Bool = false, _ stamp: (Double) -> String) -> [String] {
        var parts = ["sent " + stamp(message.sentAt)]
        guard let received = message.receivedAt else {
            // Only ours can be on its way (theirs are stored as they arrive).
            guard message.outgoing else { return parts + ["received"] }
            return parts + [mailed ? "not delivered yet (the broker holds it until they next connect)"
                                   : "not delivered yet (\(message.state.rawValue))"]
        }
        parts.append((message.outgoing ? "delivered " : "received ") + stamp(received))
        if let read = message.readAt {
            parts.append("read " + stamp(read))
        } else if message.state == .read {
            parts.append("read")  // Before read times were kept.
        } else {
            parts.append(message.outgoing ? "not read yet" : "not shown yet")
        }
        return parts
    }
}
