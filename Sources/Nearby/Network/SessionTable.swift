import Crypto
import Foundation
import Noise

/// When sessions change keys, are given up, and how hard a handshake is tried (SPEC §4).
package struct SessionTiming: Sendable, Equatable {
    /// A fresh handshake after this long, or this many frames sent, whichever first.
    package var rekeyAfter: Double = 600
    package var rekeyAfterFrames: UInt64 = 1 << 20
    /// A session neither side used for this long is forgotten.
    package var idleLimit: Double = 600
    /// A handshake message not answered goes again after this, doubling, this many times in all.
    package var retry: Double = 0.5
    package var tries = 5
    /// Frames sent this long with nothing heard back in the session: the peer may have lost it
    /// (a restart), so the next frame starts a fresh handshake too.
    package var unansweredLimit: Double = 3
    /// A replaced session still opens late frames this long.
    package var previousGrace: Double = 30
    /// A handshake we answered and that was not finished in this time is forgotten.
    package var halfOpenLifetime: Double = 10

    package init() {}
}

/// The keys a session is checked against: the peer's signing key and the X25519 key its signed
/// announcement carries.
package struct SessionPeer: Sendable, Equatable {
    package var signingKey: Data
    package var agreementKey: Data

    package init(signingKey: Data, agreementKey: Data) {
        self.signingKey = signingKey
        self.agreementKey = agreementKey
    }
}

/// A frame for the wire, and to whom: handshake messages go by every route the peer has (any
/// one may be the one that works), sealed frames by the route their sender chose.
package struct SessionOutput: Sendable, Equatable {
    package var bytes: [UInt8]
    package var peer: Data
    package var isHandshake: Bool
    /// An answer to a first message: it goes back the way that message came, not to every
    /// route of the key it claims (a forged first message in a friend's name must not make us
    /// write to the friend).
    package var isAnswer = false
}

/// Counts for `nearby stats`.
package struct SessionStatistics: Sendable, Equatable {
    package var open = 0
    package var established = 0
    package var started = 0
    package var answered = 0
    package var rekeyed = 0
    /// Handshake messages and empty confirmations received: they carry nothing to a feature, so
    /// `received` leaves them out.
    package var handshakeFrames = 0
}

/// Every session of this profile, in memory only (their keys are never stored: forward
/// secrecy): per peer the current one, the one it replaced (for late frames), a handshake we
/// started and what waits for it; the handshakes we answered, bounded. A pure model on the
/// engine: the caller sends what it returns and supplies the clock.
package struct SessionTable: Sendable {
    let identity: Identity
    let timing: SessionTiming
    var peers = PeerMap<PeerSessions>()
    var answers: [UInt32: SessionAnswer] = [:]
    /// Our session indices: which peer each belongs to.
    var indices: [UInt32: Data] = [:]
    package internal(set) var statistics = SessionStatistics()
    /// Nothing is due before this (`tick`).
    package private(set) var nextDue = Double.infinity
    var pendingTotal = 0

    /// Inner packets kept waiting for one peer's handshake, and for all together.
    static let pendingPerPeer = 256
    static let pendingLimit = 4_096
    /// Handshakes answered and not finished, in all; per peer there is one at most.
    package static let halfOpenLimit = 64
    /// The least time between two handshakes answered for one key (a stranger can claim any
    /// announced key in a first message).
    static let answerGap = 0.2

    package init(identity: Identity, timing: SessionTiming = SessionTiming()) {
        self.identity = identity
        self.timing = timing
    }

    var me: Data { identity.signingPublicKey }

    package var openSessions: Int { peers.values.reduce(0) { $0 + ($1.current == nil ? 0 : 1) } }
    package var halfOpen: Int { answers.count }

    /// Whether a session with `peer` is ready to carry frames now.
    package func hasSession(with peer: Data) -> Bool { peers[peer]?.current != nil }

    // MARK: Sending

    package enum SealResult: Equatable {
        /// The frame, and any handshake message that must go too (a rekey starting).
        case sealed([UInt8], handshake: [SessionOutput])
        /// Kept until the handshake is done; `handshake` holds its first message when one starts.
        case waiting(handshake: [SessionOutput])
    }

    /// `inner` (a direct kind's number and payload) sealed for `peer`; or kept for the session
    /// a handshake is making.
    package mutating func seal(_ inner: [UInt8], to peer: SessionPeer, now: Double) -> SealResult {
        var entry = peers[peer.signingKey] ?? PeerSessions()
        defer { peers[peer.signingKey] = entry }
        if var session = entry.current, now - session.createdAt < timing.rekeyAfter + timing.previousGrace {
            let frame = Self.seal(inner, in: &session, now: now)
            let stale = now - session.createdAt >= timing.rekeyAfter || session.counter >= timing.rekeyAfterFrames
                || session.unansweredSince.map { now - $0 >= timing.unansweredLimit } == true
            entry.current = session
            guard stale, entry.initiation == nil else { return .sealed(frame, handshake: []) }
            statistics.rekeyed += 1
            return .sealed(frame, handshake: initiate(&entry, with: peer, now: now, isRekey: true))
        }
        if entry.pending.count >= Self.pendingPerPeer || pendingTotal >= Self.pendingLimit, !entry.pending.isEmpty {
            entry.pending.removeFirst()
            pendingTotal -= 1
        }
        entry.pending.append(inner)
        pendingTotal += 1
        guard entry.initiation == nil || entry.initiation!.isRekey else { return .waiting(handshake: []) }
        return .waiting(handshake: initiate(&entry, with: peer, now: now, isRekey: false))
    }

    static func seal(_ inner: [UInt8], in session: inout OpenSession, now: Double) -> [UInt8] {
        let header = SealedFrame.header(recipientIndex: session.remoteIndex, counter: session.counter)
        var frame = header
        frame.reserveCapacity(header.count + inner.count + Noise.tagSize)
        // Only a nonce of 2^64 − 1 can fail, and the counter never gets near it (a rekey comes first).
        try? session.sending.encrypt(nonce: session.counter, ad: header, plaintext: inner, appendingTo: &frame)
        session.counter += 1
        session.lastUsed = now
        if session.unansweredSince == nil { session.unansweredSince = now }
        return frame
    }

    // MARK: Receiving

    package enum OpenError: Error, Equatable {
        case malformed, unknownSession, replayed, forged

        /// The reason counted in `nearby stats`.
        package var counterName: String {
            switch self {
            case .malformed: "malformed"
            case .unknownSession: "no session"
            case .replayed: "replayed"
            case .forged: "forged"
            }
        }
    }

    /// A sealed frame opened: its sender (the session's peer) and the inner kind and payload.
    /// A replayed, reordered beyond the window, truncated or altered frame throws.
    package mutating func open(_ bytes: [UInt8], now: Double) throws(OpenError) -> (peer: Data, inner: [UInt8]) {
        guard let (index, counter) = try? SealedFrame.fields(of: bytes) else { throw .malformed }
        guard let key = indices[index], var entry = peers[key] else { throw .unknownSession }
        let isCurrent = entry.current?.localIndex == index
        guard var session = isCurrent ? entry.current : entry.previous.flatMap({ $0.session.localIndex == index ? $0.session : nil }) else {
            throw .unknownSession
        }
        guard session.window.allows(counter) else { throw .replayed }
        guard let inner = try? session.receiving.decrypt(nonce: counter, ad: bytes[0..<SealedFrame.headerSize],
                                                          ciphertext: bytes[SealedFrame.headerSize...]), !inner.isEmpty else {
            throw .forged
        }
        session.window.accept(counter)
        session.lastUsed = now
        session.unansweredSince = nil
        // The responder has the session: our step 3 arrived.
        session.confirmation = nil
        if isCurrent { entry.current = session } else { entry.previous!.session = session }
        peers[key] = entry
        return (key, inner)
    }

    /// What a sealed frame for us holds, read without accepting it (tests that lose frames of
    /// one kind): its sender and inner kind and payload, or nil.
    package func peek(_ bytes: [UInt8]) -> (peer: Data, inner: [UInt8])? {
        guard let (index, counter) = try? SealedFrame.fields(of: bytes), let key = indices[index], let entry = peers[key],
              let session = [entry.current, entry.previous?.session].compactMap({ $0 }).first(where: { $0.localIndex == index }),
              let inner = try? session.receiving.decrypt(nonce: counter, ad: bytes[0..<SealedFrame.headerSize],
                                                         ciphertext: bytes[SealedFrame.headerSize...]) else { return nil }
        return (key, inner)
    }

    // MARK: Time

    /// Handshake messages to send again, and what has lived too long forgotten. Cheap when
    /// nothing is due.
    package mutating func tick(now: Double) -> [SessionOutput] {
        guard now >= nextDue else { return [] }
        var out: [SessionOutput] = []
        var next = Double.infinity
        for (index, answer) in answers where now - answer.at >= timing.halfOpenLifetime { forgetAnswer(index) }
        for answer in answers.values { next = min(next, answer.at + timing.halfOpenLifetime) }
        for key in Array(peers.keys) {
            var entry = peers[key]!
            if let previous = entry.previous, now >= previous.until {
                indices[previous.session.localIndex] = nil
                entry.previous = nil
            }
            if let session = entry.current, now - session.lastUsed >= timing.idleLimit {
                indices[session.localIndex] = nil
                entry.current = nil
            }
            if var initiation = entry.initiation {
                if now >= initiation.sentAt + backoff(initiation.tries) {
                    if initiation.tries >= timing.tries {
                        give(up: &entry)
                    } else {
                        initiation.tries += 1
                        initiation.sentAt = now
                        out.append(SessionOutput(bytes: initiation.frame, peer: key, isHandshake: true))
                        entry.initiation = initiation
                    }
                }
                if let initiation = entry.initiation { next = min(next, initiation.sentAt + backoff(initiation.tries)) }
            }
            if var session = entry.current, var confirmation = session.confirmation {
                if now >= confirmation.sentAt + backoff(confirmation.tries) {
                    confirmation.tries += 1
                    confirmation.sentAt = now
                    out.append(SessionOutput(bytes: confirmation.frame, peer: key, isHandshake: true))
                }
                session.confirmation = confirmation.tries > timing.tries ? nil : confirmation
                entry.current = session
                if let confirmation = session.confirmation { next = min(next, confirmation.sentAt + backoff(confirmation.tries)) }
            }
            if let previous = entry.previous { next = min(next, previous.until) }
            if let session = entry.current { next = min(next, session.lastUsed + timing.idleLimit) }
            if entry.current == nil, entry.previous == nil, entry.initiation == nil, entry.pending.isEmpty {
                peers[key] = nil
            } else {
                peers[key] = entry
            }
        }
        nextDue = next
        statistics.open = openSessions
        return out
    }

    private func backoff(_ tries: Int) -> Double { timing.retry * Double(1 << min(tries - 1, 10)) }

    /// The peer left (a goodbye, an expiry): its sessions go, and what waited for it.
    package mutating func forget(_ peer: Data) {
        guard let entry = peers.removeValue(forKey: peer) else { return }
        for index in [entry.current?.localIndex, entry.previous?.session.localIndex, entry.initiation?.localIndex].compactMap({ $0 }) {
            indices[index] = nil
        }
        pendingTotal -= entry.pending.count
        statistics.open = openSessions
    }

    /// A handshake that was never answered: what waited for it goes (what must arrive is sent
    /// again by delivery, and starts a new one).
    private mutating func give(up entry: inout PeerSessions) {
        if let initiation = entry.initiation { indices[initiation.localIndex] = nil }
        entry.initiation = nil
        pendingTotal -= entry.pending.count
        entry.pending = []
    }

    mutating func due(at time: Double) { nextDue = min(nextDue, time) }

    mutating func newIndex(for peer: Data) -> UInt32 {
        var random = SystemRandomNumberGenerator()
        while true {
            let index = UInt32.random(in: 1...UInt32.max, using: &random)
            if indices[index] == nil, answers[index] == nil {
                indices[index] = peer
                return index
            }
        }
    }

    mutating func forgetAnswer(_ index: UInt32) {
        if answers.removeValue(forKey: index) != nil, indices[index] != nil, peers[indices[index]!]?.current?.localIndex != index {
            indices[index] = nil
        }
    }
}
