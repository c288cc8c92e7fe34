import Foundation
import Noise

/// A session made: its ciphers, counter and replay window, and what is known of its use.
struct OpenSession: Sendable {
    let peer: Data
    let localIndex: UInt32
    let remoteIndex: UInt32
    var sending: CipherState
    let receiving: CipherState
    var counter: UInt64 = 0
    var window = ReplayWindow()
    let createdAt: Double
    var lastUsed: Double
    /// When the first frame went that nothing has been heard after.
    var unansweredSince: Double?
    /// The initiator's step 3, sent again until a frame in the session confirms it arrived.
    var confirmation: (frame: [UInt8], sentAt: Double, tries: Int)?
}

/// A handshake we started, sent again until answered.
struct SessionInitiation: Sendable {
    var handshake: HandshakeState
    let localIndex: UInt32
    let frame: [UInt8]
    var sentAt: Double
    var tries = 1
    /// A new key for a session that still works: nothing waits for it.
    let isRekey: Bool
}

/// A handshake we answered, not yet finished.
struct SessionAnswer: Sendable {
    var handshake: HandshakeState
    let localIndex: UInt32
    let remoteIndex: UInt32
    let peer: SessionPeer
    let frame: [UInt8]
    let at: Double
    /// The host its first message came from (`SessionTable.answer`).
    let source: String
}

/// Everything of one peer's: its session, the one it replaced, a handshake of ours, what waits.
struct PeerSessions: Sendable {
    var current: OpenSession?
    var previous: (session: OpenSession, until: Double)?
    var initiation: SessionInitiation?
    /// Inner packets (kind, payload) waiting for a session, oldest first.
    var pending: [[UInt8]] = []
    /// When a first message from each source (a host) was last answered: one a source per
    /// `answerGap`, so that one host's flood in this key's name holds up no other host's.
    var lastAnswerAt: [String: Double] = [:]
}
