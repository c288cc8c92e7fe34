import Wire

/// We are leaving (kind 2): whoever lists us forgets us now rather than at expiry.
package struct Goodbye: PacketKind, Equatable {
    package static let code = KindTable.goodbye

    package init() {}
    package init(reading reader: inout ByteReader) throws(DecodeError) {}
    package func write(to bytes: inout [UInt8]) {}
}
