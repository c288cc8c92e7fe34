/// A kind of packet a feature adds: its number in the kind table (`KindTable`), and how its
/// payload is written and read. A feature registers a handler for it with the engine
/// (`NearbyService.handle`) and sends it with `broadcast`/`send`; nothing else changes.
public protocol PacketKind: Sendable {
    static var code: UInt8 { get }
    init(reading reader: inout ByteReader) throws(DecodeError)
    func write(to bytes: inout [UInt8])
}

/// The one table of packet kind numbers. A new kind takes the next free number here, and
/// `docs/PROTOCOL.md` describes it.
public enum KindTable {
    public static let announce: UInt8 = 1
    public static let goodbye: UInt8 = 2
    public static let avatarRequest: UInt8 = 3
    public static let avatar: UInt8 = 4
    public static let message: UInt8 = 5
    public static let ack: UInt8 = 6
    public static let read: UInt8 = 7
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
    /// Several fragments of direct messages in one packet (a burst; `Payload.messages`).
    public static let messages: UInt8 = 18
    /// Kinds 240–255 are for tests and experiments: never sent by a released seance.
    public static let experimental: ClosedRange<UInt8> = 240...255
}
