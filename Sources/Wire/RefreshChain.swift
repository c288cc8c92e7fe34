import Crypto
import Foundation

/// Refreshes proved by a hash chain, as Lamport's one-time passwords (S/KEY) and TESLA's key
/// chains are: a signature check costs some 80 µs, a hash under one, and in a crowd of 500 the
/// refreshes' checks were two fifths of every shell's CPU at rest.
///
/// A shell going online draws a random seed and hashes it `length` times; the last hash is
/// link 0. Each signed announcement it sends on the LAN carries the last link it revealed
/// (extension field 2 of `Announcement`); an unchanged refresh is then a `RefreshProof` that
/// reveals the next link, unsigned. Only the chain's owner knows a link before it is revealed
/// (the hash cannot be undone), and a link once heard is never taken again, so a proof says
/// "the sender of the signed announcement that carried link k is still here" as a signature
/// would. `docs/PROTOCOL.md` ("Refresh proofs") is the reference.
package struct ChainLink: Equatable, Sendable {
    package var index: UInt32
    package var value: [UInt8]

    package static let size = 32
    /// The most links a proof may jump (refreshes the receiver missed): a peer missing a few
    /// has expired long before, and each step costs the receiver a hash.
    package static let maximumGap: UInt32 = 16

    package init(index: UInt32, value: [UInt8]) {
        self.index = index
        self.value = value
    }

    /// The link before one: its value hashed, under a label of its own.
    static func hash(_ value: [UInt8]) -> [UInt8] {
        var hasher = SHA256()
        hasher.update(data: Self.label)
        hasher.update(data: value)
        return Array(hasher.finalize())
    }

    private static let label = Array("seance refresh chain".utf8)

    /// Whether `next` is a later link of the chain this one belongs to, at most `maximumGap`
    /// links on: hashed back as many times, it is this one.
    package func isFollowed(by next: ChainLink) -> Bool {
        guard next.index > index, next.index - index <= Self.maximumGap, next.value.count == Self.size else { return false }
        var value = next.value
        for _ in 0..<(next.index - index) { value = Self.hash(value) }
        return value == self.value
    }
}

/// Our own chain: its links from 0 (the seed hashed `length` times) to the seed, revealed one
/// by one.
package struct RefreshChain: Sendable {
    /// Every link, end to end (one allocation: 128 KiB for 4,096, where an array each took
    /// twice that).
    private let links: [UInt8]
    private let length: Int
    /// The last link revealed (sent in an announcement or a proof).
    package private(set) var revealed = 0

    /// At an interval of 5 s, 4,096 links last five and a half hours; then a new chain. The
    /// seed is the chain's secret: from the system's generator, never a seeded one (`--seed`).
    package init(length: Int = 4_096, seed: [UInt8]? = nil) {
        var value = seed ?? SymmetricKey(size: .bits256).withUnsafeBytes { Array($0) }
        var hashes = [value]
        for _ in 0..<length {
            value = ChainLink.hash(value)
            hashes.append(value)
        }
        links = Array(hashes.reversed().joined())
        self.length = length
    }

    /// The last link revealed, which a signed announcement carries.
    package var head: ChainLink {
        ChainLink(index: UInt32(revealed), value: Array(links[revealed * ChainLink.size..<(revealed + 1) * ChainLink.size]))
    }

    /// Reveals the next link; nil once the chain is spent.
    package mutating func next() -> ChainLink? {
        guard revealed < length else { return nil }
        revealed += 1
        return head
    }
}

/// An unchanged refresh (type 25, protocol version 3, unsigned): the next link of the chain
/// whose last link the sender's latest signed announcement carried.
///
///     offset  size  field
///     0       4     magic "SEAN"
///     4       1     version (3)
///     5       1     type (25)
///     6       2     flags, 0
///     8       32    sender's Ed25519 public key
///     40      2     the sender's unicast port (a receiver that lost track asks it there)
///     42      4     the link's index
///     46      32    the link
package struct RefreshProof: Equatable, Sendable {
    package var sender: Data
    package var unicastPort: UInt16
    package var link: ChainLink

    package static let size = 78

    package init(sender: Data, unicastPort: UInt16, link: ChainLink) {
        self.sender = sender
        self.unicastPort = unicastPort
        self.link = link
    }

    package func encoded() -> [UInt8] {
        var bytes = SessionWire.start(KindTable.refreshProof) + sender
        bytes.appendBigEndian(unicastPort)
        bytes.appendBigEndian(link.index)
        return bytes + link.value
    }

    package init(decoding bytes: [UInt8]) throws(DecodeError) {
        guard bytes.count >= Self.size else { throw .truncated }
        guard bytes.count == Self.size else { throw .malformedPayload("extra bytes") }
        guard bytes[5] == KindTable.refreshProof else { throw .unknownType(bytes[5]) }
        var reader = ByteReader(bytes[40..<46])
        let port = reader.uint16()!, index = reader.uint32()!
        self.init(sender: Data(bytes[8..<40]), unicastPort: port, link: ChainLink(index: index, value: Array(bytes[46...])))
    }
}
