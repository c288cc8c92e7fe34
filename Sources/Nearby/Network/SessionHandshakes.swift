import Foundation
import Noise

/// The three steps of `Noise_XX_25519_ChaChaPoly_SHA256` between two profiles, as the session
/// table takes them: the initiator's first message, the responder's answer, the initiator's
/// last; each side checks the static key it learns against the peer's signed announcement.
extension SessionTable {
    package enum HandshakeError: Error, Equatable {
        /// Not for us, or from a key that has not announced itself: never answered.
        case misaddressed, unannounced
        /// Our own first message crossed theirs and ours wins (the lower signing key's).
        case crossed
        /// Answered too recently for this key, or too many half-open.
        case busy
        /// An answer to nothing we sent (late, or forged).
        case stale
        /// It does not decrypt, or the static key it proves is not the one announced.
        case failed

        package var counterName: String {
            switch self {
            case .misaddressed: "handshake misaddressed"
            case .unannounced: "handshake unannounced"
            case .crossed: "handshake crossed"
            case .busy: "handshake busy"
            case .stale: "handshake stale"
            case .failed: "handshake failed"
            }
        }
    }

    /// Starts a handshake with `peer`: its first message, to send.
    mutating func initiate(_ entry: inout PeerSessions, with peer: SessionPeer, now: Double, isRekey: Bool) -> [SessionOutput] {
        if let old = entry.initiation { indices[old.localIndex] = nil }
        var handshake = HandshakeState(initiator: true, prologue: SessionWire.prologue(initiator: me, responder: peer.signingKey),
                                       s: identity.agreement)
        guard let message = try? handshake.writeMessage().message else { return [] }
        let index = newIndex(for: peer.signingKey)
        let frame = HandshakeFrame(sender: me, recipient: peer.signingKey, senderIndex: index, recipientIndex: 0, step: 1,
                                   message: message).encoded()
        entry.initiation = SessionInitiation(handshake: handshake, localIndex: index, frame: frame, sentAt: now, isRekey: isRekey)
        statistics.started += 1
        due(at: now + timing.retry)
        return [SessionOutput(bytes: frame, peer: peer.signingKey, isHandshake: true)]
    }

    /// A handshake frame from `peer` (nil when its sender is not announced), which came from
    /// `source` (its host: a first message proves nothing of the key it claims, so what it costs
    /// is that host's; `fromItsHost`: the host the peer's announcement was heard from): what to
    /// send back (the next message; on a session made, what waited for it).
    package mutating func receive(_ frame: HandshakeFrame, from peer: SessionPeer?, source: String = "", fromItsHost: Bool = true,
                                  now: Double) throws(HandshakeError) -> [SessionOutput] {
        guard frame.recipient == me else { throw .misaddressed }
        guard let peer, peer.signingKey == frame.sender else { throw .unannounced }
        switch frame.step {
        case 1: return try answer(frame, from: peer, source: source, fromItsHost: fromItsHost, now: now)
        case 2: return try finish(frame, from: peer, now: now)
        default: return try confirm(frame, from: peer, now: now)
        }
    }

    /// Step 1 received: answered with step 2, unless ours crossed it and wins. It proves
    /// nothing of the key it claims until step 3: what it holds (one half-open handshake, one
    /// answer per `answerGap`) is its source's, so that another host's forgeries in this key's
    /// name never push out the real peer's handshake.
    private mutating func answer(_ frame: HandshakeFrame, from peer: SessionPeer, source: String, fromItsHost: Bool,
                                 now: Double) throws(HandshakeError) -> [SessionOutput] {
        var entry = peers[peer.signingKey] ?? PeerSessions()
        // Their first message again (our answer was lost): the same answer.
        if let existing = answers.values.first(where: { $0.peer.signingKey == peer.signingKey && $0.remoteIndex == frame.senderIndex
                                                          && $0.source == source }) {
            return [SessionOutput(bytes: existing.frame, peer: peer.signingKey, isHandshake: true, isAnswer: true)]
        }
        // Both started at once: the lower signing key's handshake survives, on both sides.
        if entry.initiation != nil, me.lexicographicallyPrecedes(peer.signingKey) { throw .crossed }
        guard now - (entry.lastAnswerAt[source] ?? -.infinity) >= Self.answerGap else { throw .busy }
        var handshake = HandshakeState(initiator: false, prologue: SessionWire.prologue(initiator: peer.signingKey, responder: me),
                                       s: identity.agreement)
        guard (try? handshake.readMessage(frame.message)) != nil, let message = try? handshake.writeMessage().message else {
            throw .failed
        }
        // Theirs survives: ours goes (what waited for it stays, for the session theirs makes) —
        // when it comes from the peer's own host: one from elsewhere may be a forgery, which
        // would cancel every handshake of ours for ever; both then go on, and the first done
        // makes the session.
        if let mine = entry.initiation, fromItsHost {
            indices[mine.localIndex] = nil
            entry.initiation = nil
        }
        // One half-open handshake per key and source; past the limit in all, the oldest goes.
        for (index, old) in answers where old.peer.signingKey == peer.signingKey && old.source == source { forgetAnswer(index) }
        if answers.count >= Self.halfOpenLimit, let oldest = answers.min(by: { $0.value.at < $1.value.at })?.key { forgetAnswer(oldest) }
        let index = newIndex(for: peer.signingKey)
        let reply = HandshakeFrame(sender: me, recipient: peer.signingKey, senderIndex: index, recipientIndex: frame.senderIndex,
                                   step: 2, message: message).encoded()
        answers[index] = SessionAnswer(handshake: handshake, localIndex: index, remoteIndex: frame.senderIndex, peer: peer, frame: reply,
                                       at: now, source: source)
        // The sources answered lately, a few at most (a flood from many hosts forgets them first).
        entry.lastAnswerAt = entry.lastAnswerAt.filter { now - $0.value < Self.answerGap }
        entry.lastAnswerAt[source] = now
        peers[peer.signingKey] = entry
        statistics.answered += 1
        due(at: now + timing.halfOpenLifetime)
        return [SessionOutput(bytes: reply, peer: peer.signingKey, isHandshake: true, isAnswer: true)]
    }

    /// Step 2 received: the initiator checks the responder's key, sends step 3, and has a
    /// session; what waited goes in it.
    private mutating func finish(_ frame: HandshakeFrame, from peer: SessionPeer, now: Double) throws(HandshakeError) -> [SessionOutput] {
        guard var entry = peers[peer.signingKey], var initiation = entry.initiation, initiation.localIndex == frame.recipientIndex else {
            throw .stale
        }
        guard (try? initiation.handshake.readMessage(frame.message)) != nil, initiation.handshake.rs == Array(peer.agreementKey),
              let (message, split) = try? initiation.handshake.writeMessage(), let (sending, receiving) = split else {
            throw .failed
        }
        let last = HandshakeFrame(sender: me, recipient: peer.signingKey, senderIndex: initiation.localIndex,
                                  recipientIndex: frame.senderIndex, step: 3, message: message).encoded()
        var session = OpenSession(peer: peer.signingKey, localIndex: initiation.localIndex, remoteIndex: frame.senderIndex,
                              sending: sending, receiving: receiving, createdAt: now, lastUsed: now)
        session.confirmation = (last, now, 1)
        entry.initiation = nil
        due(at: now + timing.retry)
        return [SessionOutput(bytes: last, peer: peer.signingKey, isHandshake: true)] + install(session, in: &entry, now: now)
    }

    /// Step 3 received: the responder checks the initiator's key and has a session; it says so
    /// with an empty frame (the initiator stops sending step 3), then sends what waited.
    private mutating func confirm(_ frame: HandshakeFrame, from peer: SessionPeer, now: Double) throws(HandshakeError) -> [SessionOutput] {
        guard var answer = answers[frame.recipientIndex], answer.peer.signingKey == peer.signingKey,
              answer.remoteIndex == frame.senderIndex else {
            // Step 3 again (our confirmation was lost): confirm again.
            guard var entry = peers[peer.signingKey], var session = entry.current, session.localIndex == frame.recipientIndex,
                  session.remoteIndex == frame.senderIndex else { throw .stale }
            let confirmation = Self.seal([0], in: &session, now: now)
            session.unansweredSince = nil
            entry.current = session
            peers[peer.signingKey] = entry
            return [SessionOutput(bytes: confirmation, peer: peer.signingKey, isHandshake: false)]
        }
        guard let read = try? answer.handshake.readMessage(frame.message), let (initiatorSending, responderSending) = read.split,
              answer.handshake.rs == Array(peer.agreementKey) else {
            forgetAnswer(frame.recipientIndex)
            throw .failed
        }
        answers[frame.recipientIndex] = nil
        var entry = peers[peer.signingKey] ?? PeerSessions()
        var session = OpenSession(peer: peer.signingKey, localIndex: answer.localIndex, remoteIndex: answer.remoteIndex,
                              sending: responderSending, receiving: initiatorSending, createdAt: now, lastUsed: now)
        let confirmation = Self.seal([0], in: &session, now: now)
        session.unansweredSince = nil
        return [SessionOutput(bytes: confirmation, peer: peer.signingKey, isHandshake: false)] + install(session, in: &entry, now: now)
    }

    /// The new session becomes the current one (the old one opens late frames a while longer),
    /// and what waited is sealed in it.
    private mutating func install(_ session: OpenSession, in entry: inout PeerSessions, now: Double) -> [SessionOutput] {
        if let previous = entry.previous { indices[previous.session.localIndex] = nil }
        if let old = entry.current {
            entry.previous = (old, now + timing.previousGrace)
            due(at: now + timing.previousGrace)
        }
        var session = session
        indices[session.localIndex] = session.peer
        let waiting = entry.pending
        pendingTotal -= waiting.count
        entry.pending = []
        let frames = waiting.map { Self.seal($0, in: &session, now: now) }
        entry.current = session
        peers[session.peer] = entry
        statistics.established += 1
        statistics.open = openSessions
        due(at: now + timing.idleLimit)
        return frames.map { SessionOutput(bytes: $0, peer: session.peer, isHandshake: false) }
    }
}
