import Wire

/// "Who is there?" (kind 8): a newcomer asks, and every peer that hears it announces itself
/// soon (mDNS-style), instead of at its next refresh.
public struct Query: PacketKind, Equatable {
    public static let code = KindTable.query

    public init() {}
    public init(reading reader: inout ByteReader) throws(DecodeError) {}
    public func write(to bytes: inout [UInt8]) {}
}
