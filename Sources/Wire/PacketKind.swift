/// A kind of packet: its number in the kind table (`KindTable`), and how its payload is written
/// and read. Presence, delivery and every feature register a handler for each of theirs with
/// the engine (`NearbyService.handle`), which reads the payload with `read` (so extension
/// fields a later version adds are skipped for every kind) before the handler sees it.
package protocol PacketKind: Sendable {
    static var code: UInt8 { get }
    /// Reads the fields this version knows; whatever follows is extension fields.
    init(reading reader: inout ByteReader) throws(DecodeError)
    /// Writes the payload; throws when a field is out of the range the protocol allows.
    func write(to bytes: inout [UInt8]) throws
}

extension PacketKind {
    /// The payload as sent.
    package func encoded() throws -> [UInt8] {
        var bytes: [UInt8] = []
        try write(to: &bytes)
        return bytes
    }

    /// The kind's code, then its payload, in one buffer: what a session frame carries.
    package func tagged() throws -> [UInt8] {
        var bytes: [UInt8] = []
        // Room for the small kinds (an acknowledgement, a receipt) without growing.
        bytes.reserveCapacity(64)
        bytes.append(Self.code)
        try write(to: &bytes)
        return bytes
    }

    /// A payload read as this kind, extension fields skipped.
    package static func read(_ body: [UInt8]) throws(DecodeError) -> Self {
        var reader = ByteReader(body[...])
        let value = try Self(reading: &reader)
        try reader.skipExtensions()
        return value
    }
}

/// The one table of packet kind numbers. A new kind takes the next free number here, is read
/// and written in one file of its own, registers one handler, and `docs/PROTOCOL.md`
/// describes it.
package enum KindTable {
    /// Presence (the `Nearby` target): who we are, that we leave, who is there.
    package static let announce: UInt8 = 1
    package static let goodbye: UInt8 = 2
    /// An image avatar asked for by its hash, and the 16x16 thumbnail in answer.
    package static let avatarRequest: UInt8 = 3
    package static let avatar: UInt8 = 4
    /// Delivery (the `Nearby` target): a sealed fragment of a direct message, the cumulative
    /// acknowledgement of fragments, the read receipt.
    package static let message: UInt8 = 5
    package static let ack: UInt8 = 6
    package static let read: UInt8 = 7
    /// "Who is there?": every peer that hears it announces itself soon (mDNS-style).
    package static let query: UInt8 = 8
    /// A Ghost's curse on a Human, and the Human's answer (the `Curses` target).
    package static let curse: UInt8 = 9
    package static let curseAnswer: UInt8 = 10
    /// A Human's spell against a ghost that cursed it.
    package static let spell: UInt8 = 11
    /// Rooms (the `Rooms` target): a host's beacon, a guest's probe and the host's roster in
    /// answer, a guest leaving or a host closing, a line to one member and its acknowledgement.
    package static let beacon: UInt8 = 12
    package static let roomProbe: UInt8 = 13
    package static let roomRoster: UInt8 = 14
    package static let roomMembership: UInt8 = 15
    package static let roomLine: UInt8 = 16
    package static let roomLineAck: UInt8 = 17
    /// Several sealed fragments of direct messages in one packet (a burst).
    package static let messages: UInt8 = 18
    /// Sessions (protocol version 3, `SessionFrames.swift`): a Noise handshake message, and a
    /// frame sealed under a session's keys, which carries every direct kind.
    package static let handshake: UInt8 = 19
    package static let sealed: UInt8 = 20
    /// Transfers (the `Transfers` target): a file offered, the answer to it (or either side
    /// stopping it), one chunk of it, and how far the receiver has stored.
    package static let fileOffer: UInt8 = 21
    package static let fileAnswer: UInt8 = 22
    package static let fileChunk: UInt8 = 23
    package static let fileChunkAck: UInt8 = 24
    /// An unchanged refresh proved by the next link of a hash chain, unsigned (protocol
    /// version 3, `RefreshChain.swift`).
    package static let refreshProof: UInt8 = 25
    /// Mail (`Delivery`): a direct kind for someone away, signed rather than in a session, left
    /// with a broker that holds it until they connect.
    package static let mail: UInt8 = 26
    /// A handshake message or mail sealed to its recipient alone, as it goes through a broker
    /// (protocol version 3, `Envelope.swift`): no outer byte names either end.
    package static let envelope: UInt8 = 27
    /// A run of a file's chunks (`Transfers`), carried only by mail: a picture for someone
    /// away, in as few mails as its size allows.
    package static let fileChunks: UInt8 = 28
    /// Fragments of direct messages as they are, for a peer whose announcement says it reads
    /// them (`Delivery`): inside a session, whose frame is what seals them.
    package static let sessionFragments: UInt8 = 29
    /// Kinds that travel signed, to everyone in range. Every other kind is direct and travels
    /// only inside a session: a signed frame of one is dropped (unchecked, for a kind from before
    /// sessions; as unsealed, for a later one).
    package static let broadcasts: Set<UInt8> = [announce, goodbye, query, beacon]
    /// Kinds that travel signed to one peer: mail, which cannot wait for a session (its reader
    /// is away), and which is not of its moment (a broker held it).
    package static let signedDirect: Set<UInt8> = [mail]
    /// Direct kinds a seance reads only since it says so in its announcement
    /// (`Announcement.alsoReads`): a peer sends one of them only to those that do.
    package static let announcedReads: Set<UInt8> = [sessionFragments]
    /// Kinds 240–255 are for tests and experiments: never sent by a released seance.
    package static let experimental: ClosedRange<UInt8> = 240...255
}
