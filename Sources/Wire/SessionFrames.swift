import Foundation

/// The two frames of protocol version 3 that travel without a signature: a Noise handshake
/// message, and a transport frame sealed under a session's keys. Everything direct (messages,
/// acknowledgements, curses, room traffic…) travels inside the latter; broadcasts stay signed
/// frames (`Packet`), whose version byte stays 2 so older readers still hear them.
/// `docs/PROTOCOL.md` ("Sessions") is the reference.
package enum SessionWire {
    package static let version: UInt8 = 3

    /// The first 8 bytes of every unsigned frame of this version: magic, version, `type`, no flags.
    package static func start(_ type: UInt8) -> [UInt8] { Wire.magic + [version, type, 0, 0] }

    /// What a handshake's first hash starts from: the protocol and both signing keys, so a
    /// handshake is bound to the keys its frames name.
    package static func prologue(initiator: Data, responder: Data) -> [UInt8] { Array("seance session v3".utf8) + initiator + responder }
}

/// One message of the `Noise_XX_25519_ChaChaPoly_SHA256` handshake (type 19).
///
///     offset  size  field
///     0       4     magic "SEAN"
///     4       1     version (3)
///     5       1     type (19)
///     6       2     flags, 0
///     8       32    sender's Ed25519 public key (who it claims to be: the handshake proves it)
///     40      32    recipient's Ed25519 public key
///     72      4     sender's session index (frames to the sender carry it)
///     76      4     recipient's session index (0 in the first message)
///     80      1     step: 1, 2 or 3
///     81      n     the Noise message
package struct HandshakeFrame: Equatable, Sendable {
    package var sender: Data
    package var recipient: Data
    package var senderIndex: UInt32
    package var recipientIndex: UInt32
    package var step: UInt8
    package var message: [UInt8]

    package static let headerSize = 81
    /// The Noise message of each step, with an empty payload: e; e, ee, s, es; s, se.
    package static let messageSizes: [UInt8: Int] = [1: 32, 2: 32 + 48 + 16, 3: 48 + 16]

    package init(sender: Data, recipient: Data, senderIndex: UInt32, recipientIndex: UInt32, step: UInt8, message: [UInt8]) {
        self.sender = sender
        self.recipient = recipient
        self.senderIndex = senderIndex
        self.recipientIndex = recipientIndex
        self.step = step
        self.message = message
    }

    package func encoded() -> [UInt8] {
        var bytes = SessionWire.start(KindTable.handshake) + sender
        bytes += recipient
        bytes.appendBigEndian(senderIndex)
        bytes.appendBigEndian(recipientIndex)
        bytes.append(step)
        return bytes + message
    }

    /// A handshake frame's fields; its size is exact for its step (a later version may send a
    /// Noise payload: it gets a new step number).
    package init(decoding bytes: [UInt8]) throws(DecodeError) {
        guard bytes.count >= Self.headerSize else { throw .truncated }
        guard bytes[5] == KindTable.handshake else { throw .unknownType(bytes[5]) }
        var reader = ByteReader(bytes[72..<Self.headerSize])
        let senderIndex = reader.uint32()!, recipientIndex = reader.uint32()!, step = reader.byte()!
        guard let size = Self.messageSizes[step] else { throw .malformedPayload("handshake step \(step)") }
        guard bytes.count == Self.headerSize + size else {
            throw bytes.count < Self.headerSize + size ? .truncated : .malformedPayload("extra bytes")
        }
        guard senderIndex != 0, (step == 1) == (recipientIndex == 0) else { throw .malformedPayload("session index") }
        self.init(sender: Data(bytes[8..<40]), recipient: Data(bytes[40..<72]), senderIndex: senderIndex,
                  recipientIndex: recipientIndex, step: step, message: Array(bytes[Self.headerSize...]))
    }
}

/// A direct packet inside a session (type 20): ChaChaPoly under the session's key for this
/// direction, with the counter as nonce and the 20-byte header as associated data.
///
///     offset  size  field
///     0       4     magic "SEAN"
///     4       1     version (3)
///     5       1     type (20)
///     6       2     flags, 0
///     8       4     recipient's session index
///     12      8     counter: the nonce, from 0, +1 per frame in this direction
///     20      n+16  ciphertext and tag of: the inner kind (1 byte), then its payload
///
/// Inner kind 0 carries nothing (it confirms a session to its initiator).
package enum SealedFrame {
    package static let headerSize = 20
    package static let tagSize = 16
    /// Bytes a frame adds around a payload: header, inner kind, tag.
    package static let overhead = headerSize + 1 + tagSize
    /// The largest payload of a direct kind.
    package static let maximumPayload = Wire.maximumDatagram - overhead

    package static func header(recipientIndex: UInt32, counter: UInt64) -> [UInt8] {
        var bytes = SessionWire.start(KindTable.sealed)
        bytes.appendBigEndian(recipientIndex)
        bytes.appendBigEndian(counter)
        return bytes
    }

    /// The recipient's index and the counter, read before anything is decrypted.
    package static func fields(of bytes: [UInt8]) throws(DecodeError) -> (recipientIndex: UInt32, counter: UInt64) {
        guard bytes.count >= overhead else { throw .truncated }
        guard bytes[5] == KindTable.sealed else { throw .unknownType(bytes[5]) }
        var reader = ByteReader(bytes[8..<headerSize])
        return (reader.uint32()!, reader.uint64()!)
    }
}
