/// A kind of packet: its number in the kind table (`KindTable`), and how its payload is written
/// and read. Presence, delivery and every feature register a handler for each of theirs with
/// the engine (`NearbyService.handle`), which reads the payload with `read` (so extension
/// fields a later version adds are skipped for every kind) before the handler sees it.
public protocol PacketKind: Sendable {
    static var code: UInt8 { get }
    /// Reads the fields this version knows; whatever follows is extension fields.
    init(reading reader: inout ByteReader) throws(DecodeError)
    /// Writes the payload; throws when a field is out of the range the protocol allows.
    func write(to bytes: inout [UInt8]) throws
}

extension PacketKind {
    /// The payload as sent.
    public func encoded() throws -> [UInt8] {
        var bytes: [UInt8] = []
        try write(to: &bytes)
        return bytes
    }

    /// A payload read as this kind, extension fields skipped.
    public static func read(_ body: [UInt8]) throws(DecodeError) -> Self {
        var reader = ByteReader(body[...])
        let value = try Self(reading: &reader)
        try reader.skipExtensions()
        return value
    }
}

/// The one table of packet kind numbers. A new kind takes the next free number here, is read
/// and written in one file of its own, registers one handler, and `docs/PROTOCOL.md`
/// describes it.
public enum KindTable {
    /// Presence (the `Nearby` target): who we are, that we leave, who is there.
    public static let announce: UInt8 = 1
    public static let goodbye: UInt8 = 2
    /// An image avatar asked for by its hash, and the 16x16 thumbnail in answer.
    public static let avatarRequest: UInt8 = 3
    public static let avatar: UInt8 = 4
    /// Delivery (the `Nearby` target): a sealed fragment of a direct message, the cumulative
    /// acknowledgement of fragments, the read receipt.
    public static let message: UInt8 = 5
    public static let ack: UInt8 = 6
    public static let read: UInt8 = 7
    /// "Who is there?": every peer that hears it announces itself soon (mDNS-style).
    public static let query: UInt8 = 8
    /// A Ghost's curse on a Human, and the Human's answer (the `Curses` target).
    public static let curse: UInt8 = 9
    public static let curseAnswer: UInt8 = 10
    /// A Human's spell against a ghost that cursed it.
    public static let spell: UInt8 = 11
    /// Rooms (the `Rooms` target): a host's beacon, a guest's probe and the host's roster in
    /// answer, a guest leaving or a host closing, a line to one member and its acknowledgement.
    public static let beacon: UInt8 = 12
    public static let roomProbe: UInt8 = 13
    public static let roomRoster: UInt8 = 14
    public static let roomMembership: UInt8 = 15
    public static let roomLine: UInt8 = 16
    public static let roomLineAck: UInt8 = 17
    /// Several sealed fragments of direct messages in one packet (a burst).
    public static let messages: UInt8 = 18
    /// Kinds 240–255 are for tests and experiments: never sent by a released seance.
    public static let experimental: ClosedRange<UInt8> = 240...255
}
