import Crypto
import Foundation

/// The frame every seance packet travels in, version 2: framing and signature, nothing of what
/// a kind carries (each kind reads its own payload: `PacketKind`). `docs/PROTOCOL.md` is the
/// reference; this file and that document change together. Version 2 is version 1 made
/// forward compatible: a payload may end with extension fields (tag, length, value) that a
/// reader skips when it does not know them (`ByteReader.skipExtensions`), and a kind a reader
/// does not know is counted and ignored, so a later seance can add fields and kinds without
/// becoming invisible.
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
package enum Wire {
    package static let magic: [UInt8] = Array("SEAN".utf8)
    package static let version: UInt8 = 2
    /// Versions this reader accepts (1 had no extension fields; it reads the same).
    package static let readableVersions: ClosedRange<UInt8> = 1...2
    package static let headerSize = 54
    package static let signatureSize = 64
    /// No datagram is larger: it fits the smallest IPv6 MTU with room to spare.
    package static let maximumDatagram = 1200
    /// Mail (kind 26) is larger: it is sent only to brokers, over TCP (and taken only from them),
    /// and one frame carries many held messages (a reader coming back gets them in a few frames).
    package static let maximumMail = 16_384

    /// The largest frame of kind `kind` this reader takes.
    package static func maximumFrame(kind: UInt8) -> Int { kind == KindTable.mail ? maximumMail : maximumDatagram }
}

/// Why a datagram was dropped. Every case is counted; none is fatal.
package enum DecodeError: Error, Equatable, Hashable, Sendable, CustomStringConvertible {
    case truncated
    case oversized
    case badMagic
    case unknownVersion(UInt8)
    case unknownType(UInt8)
    case badSignature
    case malformedPayload(String)

    package var description: String {
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
    package var counterName: String {
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

/// Bits of a frame's header (offset 6, signed like the rest). A reader ignores bits it does not
/// know, and no bit makes a reader accept anything: at most it lets one drop a frame unread.
package struct FrameFlags: OptionSet, Sendable {
    package let rawValue: UInt16
    package init(rawValue: UInt16) { self.rawValue = rawValue }

    /// An announcement sent in answer to a query: it is for the newcomer who asked, and a peer
    /// that hears the sender already may drop it without checking its signature.
    package static let answer = FrameFlags(rawValue: 1)
}

/// What a datagram's header says, read before anything is checked: enough to drop a datagram
/// without the cost of its signature (our own, looped back; an answer meant for others),
/// never to act on one.
package struct UncheckedHeader: Sendable {
    package let type: UInt8
    package let flags: FrameFlags
    package let sender: ArraySlice<UInt8>
    package let timestamp: UInt64
    package let sequence: UInt32
    package let payloadLength: Int

    package init?(_ bytes: [UInt8]) {
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

/// A verified packet: who signed it, when, and its kind's payload, not yet read (the engine
/// hands it to the kind's reader: `read`).
package struct Packet: Equatable, Sendable {
    package var kind: UInt8
    package var flags: FrameFlags
    package var sender: Data
    package var timestamp: UInt64
    package var sequence: UInt32
    package var body: [UInt8]
    /// It came out of a session (a direct kind), not in a signed frame: its sender is the
    /// session's peer, and it has no timestamp or sequence of its own.
    package var isSealed = false

    package init(kind: UInt8, sender: Data, timestamp: UInt64, sequence: UInt32, flags: FrameFlags = [], body: [UInt8]) {
        self.kind = kind
        self.flags = flags
        self.sender = sender
        self.timestamp = timestamp
        self.sequence = sequence
        self.body = body
    }

    /// A direct kind's packet as a session opened it.
    package init(sealedKind kind: UInt8, sender: Data, body: [UInt8]) {
        self.init(kind: kind, sender: sender, timestamp: 0, sequence: 0, body: body)
        isSealed = true
    }

    /// A packet of `value`'s kind, as if verified (tests, and a kind's own round trip).
    package init<Kind: PacketKind>(_ value: Kind, sender: Data, timestamp: UInt64, sequence: UInt32) throws {
        self.init(kind: Kind.code, sender: sender, timestamp: timestamp, sequence: sequence, body: try value.encoded())
    }

    /// The payload read as `Kind`; extension fields after what it knows are skipped (their
    /// framing is checked).
    package func read<Kind: PacketKind>(_ kind: Kind.Type) throws(DecodeError) -> Kind {
        guard self.kind == Kind.code else { throw .unknownType(self.kind) }
        return try Kind.read(body)
    }
}

extension Packet {
    /// The signed datagram of a payload of kind `kind`.
    package static func encode(kind: UInt8, body: [UInt8], signer: Curve25519.Signing.PrivateKey, timestamp: UInt64,
                              sequence: UInt32, flags: FrameFlags = []) throws -> [UInt8] {
        guard body.count <= Int(UInt16.max) else { throw DecodeError.oversized }
        var bytes = Wire.magic + [Wire.version, kind, UInt8(flags.rawValue >> 8), UInt8(flags.rawValue & 0xFF)]
        bytes += signer.publicKey.rawRepresentation
        bytes.appendBigEndian(timestamp)
        bytes.appendBigEndian(sequence)
        bytes.appendBigEndian(UInt16(body.count))
        bytes += body
        bytes += try signer.signature(for: bytes)
        guard bytes.count <= Wire.maximumFrame(kind: kind) else { throw DecodeError.oversized }
        return bytes
    }

    /// The signed datagram of `value`.
    package static func encode<Kind: PacketKind>(_ value: Kind, signer: Curve25519.Signing.PrivateKey, timestamp: UInt64,
                                                sequence: UInt32, flags: FrameFlags = []) throws -> [UInt8] {
        try encode(kind: Kind.code, body: try value.encoded(), signer: signer, timestamp: timestamp, sequence: sequence, flags: flags)
    }

    /// Checks a datagram: framing first, then the signature. The payload is the kind's to read.
    package static func decode(_ bytes: [UInt8]) throws(DecodeError) -> Packet {
        guard bytes.count >= 6 else { throw .truncated }
        guard bytes.count <= Wire.maximumFrame(kind: bytes[5]) else { throw .oversized }
        guard Array(bytes[0..<4]) == Wire.magic else { throw .badMagic }
        guard Wire.readableVersions.contains(bytes[4]) else { throw .unknownVersion(bytes[4]) }
        guard bytes.count >= Wire.headerSize + Wire.signatureSize, let header = UncheckedHeader(bytes) else { throw .truncated }
        let length = header.payloadLength
        guard bytes.count == Wire.headerSize + length + Wire.signatureSize else {
            throw bytes.count < Wire.headerSize + length + Wire.signatureSize ? .truncated : .malformedPayload("extra bytes")
        }
        let sender = Data(header.sender)
        let signed = bytes[0..<(Wire.headerSize + length)]
        let signature = bytes[(Wire.headerSize + length)...]
        guard let key = try? Curve25519.Signing.PublicKey(rawRepresentation: sender),
              key.isValidSignature(Data(signature), for: Data(signed)) else { throw .badSignature }
        return Packet(kind: header.type, sender: sender, timestamp: header.timestamp, sequence: header.sequence, flags: header.flags,
                      body: Array(bytes[Wire.headerSize..<(Wire.headerSize + length)]))
    }
}

/// Reads big-endian fields from a slice, returning nil past its end.
package struct ByteReader {
    private var bytes: ArraySlice<UInt8>

    package init(_ bytes: ArraySlice<UInt8>) { self.bytes = bytes }

    package var isAtEnd: Bool { bytes.isEmpty }
    package var remaining: Int { bytes.count }

    package mutating func take(_ count: Int) -> ArraySlice<UInt8>? {
        guard bytes.count >= count else { return nil }
        defer { bytes = bytes.dropFirst(count) }
        return bytes.prefix(count)
    }

    package mutating func byte() -> UInt8? { take(1)?.first }
    package mutating func uint16() -> UInt16? { take(2).map { $0.reduce(0) { $0 << 8 | UInt16($1) } } }
    package mutating func uint32() -> UInt32? { take(4).map { $0.reduce(0) { $0 << 8 | UInt32($1) } } }
    package mutating func uint64() -> UInt64? { take(8).map { $0.reduce(0) { $0 << 8 | UInt64($1) } } }

    /// The rest of a payload as pieces, each behind its 2-byte length (kinds that carry several,
    /// to the end: 18, 29), each read by `read`.
    package mutating func lengthPrefixed<Piece>(_ read: (ArraySlice<UInt8>) throws(DecodeError) -> Piece) throws(DecodeError) -> [Piece] {
        var pieces: [Piece] = []
        while !isAtEnd {
            guard let length = uint16(), let bytes = take(Int(length)) else { throw .malformedPayload("too short") }
            pieces.append(try read(bytes))
        }
        return pieces
    }

    /// Skips what follows a kind's known fields: extension fields, each a tag (1 byte), a
    /// length (2 bytes) and a value, none of which this reader knows. Only their framing is
    /// checked.
    package mutating func skipExtensions() throws(DecodeError) {
        while try extensionField() != nil {}
    }

    /// The next extension field (a kind that knows some tags reads them here, skipping the
    /// others), or nil at the end.
    package mutating func extensionField() throws(DecodeError) -> (tag: UInt8, value: ArraySlice<UInt8>)? {
        guard !isAtEnd else { return nil }
        guard let tag = byte(), let length = uint16(), let value = take(Int(length)) else { throw .malformedPayload("extension fields") }
        return (tag, value)
    }
}

extension Array where Element == UInt8 {
    /// Inlinable so that each caller gets it for its own width: called through the generic
    /// protocol, every shift was a witness call (1,600 instructions for an acknowledgement's eight).
    @inlinable package mutating func appendBigEndian<T: FixedWidthInteger>(_ value: T) {
        assert(MemoryLayout<T>.size * 8 == T.bitWidth, "an integer stored in exactly its bits")
        Swift.withUnsafeBytes(of: value.bigEndian) { append(contentsOf: $0) }
    }
}
