import Crypto
import Foundation

/// The packets seance sends on the local network, version 2. `docs/PROTOCOL.md` is the
/// reference; this file and that document change together. Version 2 is version 1 made
/// forward compatible: a payload may end with extension fields (tag, length, value) that a
/// reader skips when it does not know them, and a kind a reader does not know is counted and
/// ignored, so a later seance can add fields and kinds without becoming invisible.
///
///     offset  size  field
///     0       4     magic "SEAN"
///     4       1     version (1)
///     5       1     type
///     6       2     flags (`FrameFlags`), big-endian; unknown bits ignored
///     8       32    sender's Ed25519 public key
///     40      8     timestamp, milliseconds since 1970 (big-endian)
///     48      4     sequence number, per sender (big-endian)
///     52      2     payload length N (big-endian)
///     54      N     payload
///     54+N    64    Ed25519 signature of bytes 0 ..< 54+N
public enum Wire {
    public static let magic: [UInt8] = Array("SEAN".utf8)
    public static let version: UInt8 = 2
    /// Versions this reader accepts (1 had no extension fields; it reads the same).
    public static let readableVersions: ClosedRange<UInt8> = 1...2
    public static let headerSize = 54
    public static let signatureSize = 64
    /// No datagram is larger: it fits the smallest IPv6 MTU with room to spare.
    public static let maximumDatagram = 1200
}

/// The kinds this reader knows itself (numbers from `KindTable`); other kinds reach the engine
/// as `Payload.other` for the feature that registered them.
public enum PacketType: UInt8, Sendable {
    case announce = 1
    case goodbye = 2
    case avatarRequest = 3
    case avatar = 4
    case message = 5
    case ack = 6
    case read = 7
    /// "Who is there?": every peer that hears it announces itself soon (mDNS-style).
    case query = 8
    /// Several fragments of direct messages in one packet: one signature for a burst.
    case messages = 18
}

/// Why a datagram was dropped. Every case is counted; none is fatal.
public enum DecodeError: Error, Equatable, Hashable, Sendable, CustomStringConvertible {
    case truncated
    case oversized
    case badMagic
    case unknownVersion(UInt8)
    case unknownType(UInt8)
    case badSignature
    case malformedPayload(String)

    public var description: String {
        switch self {
        case .truncated: return "truncated"
        case .oversized: return "oversized"
        case .badMagic: return "not a seance packet"
        case .unknownVersion(let v): return "unknown version \(v)"
        case .unknownType(let t): return "unknown type \(t)"
        case .badSignature: return "bad signature"
        case .malformedPayload(let why): return "malformed payload: \(why)"
        }
    }

    /// A short name for counters.
    public var counterName: String {
        switch self {
        case .truncated: return "truncated"
        case .oversized: return "oversized"
        case .badMagic: return "foreign"
        case .unknownVersion: return "version"
        case .unknownType: return "type"
        case .badSignature: return "signature"
        case .malformedPayload: return "malformed"
        }
    }
}

/// What an announcement says about its sender.
public struct Announcement: Equatable, Sendable {
    public var name: String
    public var agreementKey: Data
    /// Plane index: 0 Human, 1 Dying, 2 Hollow, 3 Undead, 4 Ghost.
    public var plane: UInt8
    public var avatar: AvatarReference
    /// The port the sender receives direct messages on.
    public var unicastPort: UInt16
    /// How often the sender refreshes, in milliseconds: receivers expire it after three misses.
    public var intervalMilliseconds: UInt32

    public init(name: String, agreementKey: Data, plane: UInt8, avatar: AvatarReference, unicastPort: UInt16,
                intervalMilliseconds: UInt32) {
        self.name = name
        self.agreementKey = agreementKey
        self.plane = plane
        self.avatar = avatar
        self.unicastPort = unicastPort
        self.intervalMilliseconds = intervalMilliseconds
    }
}

public enum AvatarReference: Equatable, Sendable {
    case none
    case emoji(String)
    /// SHA-256 of the 16x16 RGBA thumbnail; fetched with an avatar request.
    case image(Data)
}

public enum Payload: Equatable, Sendable {
    case announce(Announcement)
    case goodbye
    case avatarRequest(hash: Data)
    /// A 16x16 RGBA thumbnail and its hash.
    case avatar(hash: Data, pixels: Data)
    /// One fragment of a direct message, sealed for `recipient` (see `MessageCrypto`).
    case message(recipient: Data, sealed: Data)
    /// Several sealed fragments for `recipient`, in sequence order: what a burst sends, so that
    /// one signature (the costly part of a packet) covers many messages.
    case messages(recipient: Data, sealed: [Data])
    /// Every fragment up to `sequence` arrived, in order.
    case ack(recipient: Data, sequence: UInt32)
    /// Every message up to fragment `sequence` has been shown.
    case read(recipient: Data, sequence: UInt32)
    /// A newcomer asks who is there.
    case query
    /// A kind this reader does not know itself: a feature's (`PacketKind`), or a later
    /// version's. The signature is checked; the payload is the feature's to read.
    case other(code: UInt8, body: [UInt8])

    var code: UInt8 {
        if case .other(let code, _) = self { return code }
        return type!.rawValue
    }

    var type: PacketType? {
        switch self {
        case .other: return nil
        case .announce: return .announce
        case .goodbye: return .goodbye
        case .avatarRequest: return .avatarRequest
        case .avatar: return .avatar
        case .message: return .message
        case .messages: return .messages
        case .ack: return .ack
        case .read: return .read
        case .query: return .query
        }
    }
}

/// Bits of a frame's header (offset 6, signed like the rest). A reader ignores bits it does not
/// know, and no bit makes a reader accept anything: at most it lets one drop a frame unread.
public struct FrameFlags: OptionSet, Sendable {
    public let rawValue: UInt16
    public init(rawValue: UInt16) { self.rawValue = rawValue }

    /// An announcement sent in answer to a query: it is for the newcomer who asked, and a peer
    /// that hears the sender already may drop it without checking its signature.
    public static let answer = FrameFlags(rawValue: 1)
}

/// What a datagram's header says, read before anything is checked: enough to drop a datagram
/// without the cost of its signature (our own, looped back; an answer meant for others),
/// never to act on one.
public struct UncheckedHeader: Sendable {
    public let type: UInt8
    public let flags: FrameFlags
    public let sender: ArraySlice<UInt8>
    public let timestamp: UInt64
    public let sequence: UInt32
    public let payloadLength: Int

    public init?(_ bytes: [UInt8]) {
        guard bytes.count >= Wire.headerSize, bytes[0..<4].elementsEqual(Wire.magic) else { return nil }
        type = bytes[5]
        flags = FrameFlags(rawValue: UInt16(bytes[6]) << 8 | UInt16(bytes[7]))
        sender = bytes[8..<40]
        var reader = ByteReader(bytes[40..<Wire.headerSize])
        timestamp = reader.uint64()!
        sequence = reader.uint32()!
        payloadLength = Int(reader.uint16()!)
    }
}

/// A verified packet.
public struct Packet: Equatable, Sendable {
    public var sender: Data
    public var timestamp: UInt64
    public var sequence: UInt32
    public var payload: Payload

    public init(sender: Data, timestamp: UInt64, sequence: UInt32, payload: Payload) {
        self.sender = sender
        self.timestamp = timestamp
        self.sequence = sequence
        self.payload = payload
    }
}

extension Packet {
    /// The signed datagram.
    public static func encode(_ payload: Payload, signer: Curve25519.Signing.PrivateKey, timestamp: UInt64,
                              sequence: UInt32, flags: FrameFlags = []) throws -> [UInt8] {
        let body = try payload.encoded()
        var bytes = Wire.magic + [Wire.version, payload.code, UInt8(flags.rawValue >> 8), UInt8(flags.rawValue & 0xFF)]
        bytes += signer.publicKey.rawRepresentation
        bytes.appendBigEndian(timestamp)
        bytes.appendBigEndian(sequence)
        bytes.appendBigEndian(UInt16(body.count))
        bytes += body
        bytes += try signer.signature(for: bytes)
        guard bytes.count <= Wire.maximumDatagram else { throw DecodeError.oversized }
        return bytes
    }

    /// Checks and decodes a datagram: framing first, then the signature, then the payload.
    public static func decode(_ bytes: [UInt8]) throws(DecodeError) -> Packet {
        guard bytes.count <= Wire.maximumDatagram else { throw .oversized }
        guard bytes.count >= 6 else { throw .truncated }
        guard Array(bytes[0..<4]) == Wire.magic else { throw .badMagic }
        guard Wire.readableVersions.contains(bytes[4]) else { throw .unknownVersion(bytes[4]) }
        guard bytes.count >= Wire.headerSize + Wire.signatureSize, let header = UncheckedHeader(bytes) else { throw .truncated }
        let sender = Data(header.sender)
        let timestamp = header.timestamp, sequence = header.sequence, length = header.payloadLength
        guard bytes.count == Wire.headerSize + length + Wire.signatureSize else {
            throw bytes.count < Wire.headerSize + length + Wire.signatureSize ? .truncated : .malformedPayload("extra bytes")
        }
        let signed = bytes[0..<(Wire.headerSize + length)]
        let signature = bytes[(Wire.headerSize + length)...]
        guard let key = try? Curve25519.Signing.PublicKey(rawRepresentation: sender),
              key.isValidSignature(Data(signature), for: Data(signed)) else { throw .badSignature }
        let body = bytes[Wire.headerSize..<(Wire.headerSize + length)]
        // A kind this reader does not know goes up as it is, signed, for a feature to read.
        guard let type = PacketType(rawValue: header.type) else {
            return Packet(sender: sender, timestamp: timestamp, sequence: sequence, payload: .other(code: header.type, body: Array(body)))
        }
        let payload = try Payload.decode(type, ByteReader(body))
        return Packet(sender: sender, timestamp: timestamp, sequence: sequence, payload: payload)
    }
}

extension Payload {
    func encoded() throws -> [UInt8] {
        var bytes: [UInt8] = []
        switch self {
        case .announce(let a):
            let name = Array(a.name.utf8)
            guard a.agreementKey.count == 32, (1...128).contains(name.count), a.plane <= 4 else {
                throw DecodeError.malformedPayload("announcement fields out of range")
            }
            bytes += a.agreementKey
            bytes.append(a.plane)
            bytes.append(UInt8(name.count))
            bytes += name
            switch a.avatar {
            case .none: bytes += [0, 0]
            case .emoji(let emoji):
                let utf8 = Array(emoji.utf8)
                guard (1...32).contains(utf8.count) else { throw DecodeError.malformedPayload("emoji too long") }
                bytes += [1, UInt8(utf8.count)] + utf8
            case .image(let hash):
                guard hash.count == 32 else { throw DecodeError.malformedPayload("avatar hash") }
                bytes += [2, 32] + hash
            }
            bytes.appendBigEndian(a.unicastPort)
            bytes.appendBigEndian(a.intervalMilliseconds)
        case .goodbye, .query:
            break
        case .other(_, let body):
            bytes += body
        case .avatarRequest(let hash):
            bytes += hash
        case .avatar(let hash, let pixels):
            bytes += hash
            bytes += pixels
        case .message(let recipient, let sealed):
            guard recipient.count == 32, sealed.count >= MessageCrypto.overhead else {
                throw DecodeError.malformedPayload("message fields")
            }
            bytes += recipient
            bytes += sealed
        case .messages(let recipient, let boxes):
            guard recipient.count == 32, !boxes.isEmpty,
                  boxes.allSatisfy({ $0.count >= MessageCrypto.overhead && $0.count <= Int(UInt16.max) }) else {
                throw DecodeError.malformedPayload("messages fields")
            }
            bytes += recipient
            for box in boxes {
                bytes.appendBigEndian(UInt16(box.count))
                bytes += box
            }
        case .ack(let recipient, let sequence), .read(let recipient, let sequence):
            guard recipient.count == 32 else { throw DecodeError.malformedPayload("recipient") }
            bytes += recipient
            bytes.appendBigEndian(sequence)
        }
        return bytes
    }

    static func decode(_ type: PacketType, _ body: ByteReader) throws(DecodeError) -> Payload {
        var reader = body
        func need<T>(_ value: T?) throws(DecodeError) -> T {
            guard let value else { throw .malformedPayload("too short") }
            return value
        }
        let payload: Payload
        switch type {
        case .announce:
            let agreementKey = Data(try need(reader.take(32)))
            let plane = try need(reader.byte())
            guard plane <= 4 else { throw .malformedPayload("plane \(plane)") }
            let nameLength = Int(try need(reader.byte()))
            // Names are checked like local ones: a name that could not be typed here is not shown.
            guard let name = String(validating: try need(reader.take(nameLength)), as: UTF8.self),
                  NameRules.violation(name) == nil else {
                throw .malformedPayload("name")
            }
            let avatarKind = try need(reader.byte()), avatarLength = Int(try need(reader.byte()))
            let avatarBytes = try need(reader.take(avatarLength))
            let avatar: AvatarReference
            switch (avatarKind, avatarLength) {
            case (0, 0): avatar = .none
            case (1, 1...NameRules.maximumEmojiBytes):
                guard let emoji = String(validating: avatarBytes, as: UTF8.self), NameRules.isEmoji(emoji) else {
                    throw .malformedPayload("emoji")
                }
                avatar = .emoji(emoji)
            case (2, 32): avatar = .image(Data(avatarBytes))
            default: throw .malformedPayload("avatar")
            }
            let port = try need(reader.uint16()), interval = try need(reader.uint32())
            guard interval > 0 else { throw .malformedPayload("interval") }
            payload = .announce(Announcement(name: name, agreementKey: agreementKey, plane: plane, avatar: avatar,
                                             unicastPort: port, intervalMilliseconds: interval))
        case .goodbye:
            payload = .goodbye
        case .query:
            payload = .query
        case .avatarRequest:
            payload = .avatarRequest(hash: Data(try need(reader.take(32))))
        case .avatar:
            let hash = Data(try need(reader.take(32)))
            let pixels = Data(try need(reader.take(16 * 16 * 4)))
            guard Data(SHA256.hash(data: pixels)) == hash else { throw .malformedPayload("avatar hash mismatch") }
            payload = .avatar(hash: hash, pixels: pixels)
        case .message:
            let recipient = Data(try need(reader.take(32)))
            let sealed = Data(reader.take(reader.remaining) ?? [])
            guard sealed.count >= MessageCrypto.overhead else { throw .malformedPayload("sealed message too short") }
            payload = .message(recipient: recipient, sealed: sealed)
        case .messages:
            let recipient = Data(try need(reader.take(32)))
            var boxes: [Data] = []
            // Boxes run to the end of the payload, each behind its length (no extension fields).
            while !reader.isAtEnd {
                let length = Int(try need(reader.uint16()))
                guard length >= MessageCrypto.overhead else { throw .malformedPayload("sealed message too short") }
                boxes.append(Data(try need(reader.take(length))))
            }
            guard !boxes.isEmpty else { throw .malformedPayload("no sealed message") }
            payload = .messages(recipient: recipient, sealed: boxes)
        case .ack:
            payload = .ack(recipient: Data(try need(reader.take(32))), sequence: try need(reader.uint32()))
        case .read:
            payload = .read(recipient: Data(try need(reader.take(32))), sequence: try need(reader.uint32()))
        }
        // What follows the known fields is extension fields, each a tag (1 byte), a length
        // (2 bytes) and a value: none is known yet, so each is skipped; only their framing is
        // checked. (A message's sealed box, or a bundle's boxes, run to the end: they have none.)
        while !reader.isAtEnd {
            guard reader.byte() != nil, let length = reader.uint16(), reader.take(Int(length)) != nil else {
                throw .malformedPayload("extension fields")
            }
        }
        return payload
    }
}

/// Reads big-endian fields from a slice, returning nil past its end.
public struct ByteReader {
    private var bytes: ArraySlice<UInt8>

    public init(_ bytes: ArraySlice<UInt8>) { self.bytes = bytes }

    public var isAtEnd: Bool { bytes.isEmpty }
    public var remaining: Int { bytes.count }

    public mutating func take(_ count: Int) -> ArraySlice<UInt8>? {
        guard bytes.count >= count else { return nil }
        defer { bytes = bytes.dropFirst(count) }
        return bytes.prefix(count)
    }

    public mutating func byte() -> UInt8? { take(1)?.first }
    public mutating func uint16() -> UInt16? { take(2).map { $0.reduce(0) { $0 << 8 | UInt16($1) } } }
    public mutating func uint32() -> UInt32? { take(4).map { $0.reduce(0) { $0 << 8 | UInt32($1) } } }
    public mutating func uint64() -> UInt64? { take(8).map { $0.reduce(0) { $0 << 8 | UInt64($1) } } }
}

extension Array where Element == UInt8 {
    public mutating func appendBigEndian<T: FixedWidthInteger>(_ value: T) {
        for shift in stride(from: T.bitWidth - 8, through: 0, by: -8) { append(UInt8(truncatingIfNeeded: value >> shift)) }
    }
}
