import Wire

/// We are leaving (kind 2): whoever lists us forgets us now rather than at expiry.
public struct Goodbye: PacketKind, Equatable {
    public static let code = KindTable.goodbye

    public init() {}
    public init(reading reader: inout ByteReader) throws(DecodeError) {}
    public func write(to bytes: inout [UInt8]) {}
}
