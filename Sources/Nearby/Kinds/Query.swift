import Wire

/// "Who is there?" (kind 8): a newcomer asks, and every peer that hears it announces itself
/// soon (mDNS-style), instead of at its next refresh.
package struct Query: PacketKind, Equatable {
    package static let code = KindTable.query

    package init() {}
    package init(reading reader: inout ByteReader) throws(DecodeError) {}
    package func write(to bytes: inout [UInt8]) {}
}
