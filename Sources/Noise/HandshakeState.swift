import Crypto

/// Noise §7: a handshake pattern is a list of message patterns, each a list of tokens.
package enum Token: Sendable { case e, s, ee, es, se, ss }

package struct HandshakePattern: Sendable {
    package let messages: [[Token]]

    /// XX (§7.5): both static keys travel encrypted; each side learns the other's.
    ///
    ///     -> e
    ///     <- e, ee, s, es
    ///     -> s, se
    package static let xx = HandshakePattern(messages: [[.e], [.e, .ee, .s, .es], [.s, .se]])
}

/// Noise §5.3: the state of one side of a handshake. `writeMessage` and `readMessage` take
/// turns as the pattern says; after the last message both return the split ciphers (the
/// initiator sends with the first, the responder with the second).
package struct HandshakeState: Sendable {
    package typealias KeyPair = Curve25519.KeyAgreement.PrivateKey

    private var symmetric: SymmetricState
    private let pattern: HandshakePattern
    package let isInitiator: Bool
    private let s: KeyPair?
    private var e: KeyPair?
    /// The remote static key, once read.
    package private(set) var rs: [UInt8]?
    package private(set) var re: [UInt8]?
    /// The next message pattern of the handshake.
    private var turn = 0
    /// Makes each ephemeral key: random, or fixed by a test vector.
    private let generateKeyPair: @Sendable () -> KeyPair

    /// Initialize(handshake_pattern, initiator, prologue, s, e, rs, re), without pre-messages
    /// (XX has none).
    package init(pattern: HandshakePattern = .xx, initiator: Bool, prologue: [UInt8], s: KeyPair,
                 generateKeyPair: @escaping @Sendable () -> KeyPair = { KeyPair() }) {
        symmetric = SymmetricState(protocolName: Noise.protocolName)
        symmetric.mixHash(prologue)
        self.pattern = pattern
        isInitiator = initiator
        self.s = s
        self.generateKeyPair = generateKeyPair
    }

    /// h, once the handshake is over: both sides hold the same (channel binding).
    package var handshakeHash: [UInt8] { symmetric.handshakeHash }
    package var isFinished: Bool { turn == pattern.messages.count }
    /// Whether the next message is ours to write.
    package var isMyTurn: Bool { (turn % 2 == 0) == isInitiator }

    /// WriteMessage(payload, message_buffer): the message, and the two ciphers after the last.
    package mutating func writeMessage(_ payload: [UInt8] = []) throws(NoiseError) -> (message: [UInt8], split: (CipherState, CipherState)?) {
        guard !isFinished, isMyTurn else { throw .outOfTurn }
        var message: [UInt8] = []
        for token in pattern.messages[turn] {
            switch token {
            case .e:
                let pair = generateKeyPair()
                e = pair
                let key = Array(pair.publicKey.rawRepresentation)
                message += key
                symmetric.mixHash(key)
            case .s:
                guard let s else { throw .invalidKey }
                message += try symmetric.encryptAndHash(Array(s.publicKey.rawRepresentation))
            default:
                try mixDH(token)
            }
        }
        message += try symmetric.encryptAndHash(payload)
        turn += 1
        return (message, isFinished ? symmetric.split() : nil)
    }

    /// ReadMessage(message, payload_buffer): the payload, and the two ciphers after the last.
    package mutating func readMessage(_ message: [UInt8]) throws(NoiseError) -> (payload: [UInt8], split: (CipherState, CipherState)?) {
        guard !isFinished, !isMyTurn else { throw .outOfTurn }
        var rest = message[...]
        for token in pattern.messages[turn] {
            switch token {
            case .e:
                guard rest.count >= Noise.dhSize else { throw .truncated }
                let key = Array(rest.prefix(Noise.dhSize))
                rest = rest.dropFirst(Noise.dhSize)
                re = key
                symmetric.mixHash(key)
            case .s:
                let size = Noise.dhSize + (symmetric.cipher.hasKey ? Noise.tagSize : 0)
                guard rest.count >= size else { throw .truncated }
                rs = try symmetric.decryptAndHash(Array(rest.prefix(size)))
                rest = rest.dropFirst(size)
            default:
                try mixDH(token)
            }
        }
        let payload = try symmetric.decryptAndHash(Array(rest))
        turn += 1
        return (payload, isFinished ? symmetric.split() : nil)
    }

    /// ee, es, se, ss: MixKey(DH(…)) with the keys each side holds for that token.
    private mutating func mixDH(_ token: Token) throws(NoiseError) {
        let (mine, theirs): (KeyPair?, [UInt8]?) = switch token {
        case .ee: (e, re)
        case .es: isInitiator ? (e, rs) : (s, re)
        case .se: isInitiator ? (s, re) : (e, rs)
        case .ss: (s, rs)
        case .e, .s: (nil, nil)
        }
        guard let mine, let theirs else { throw .invalidKey }
        symmetric.mixKey(try Noise.dh(mine, theirs))
    }
}
