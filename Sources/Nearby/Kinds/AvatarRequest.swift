import Foundation
import Wire

/// An image avatar asked for by its hash (kind 3), to the peer that announced it.
public struct AvatarRequest: PacketKind, Equatable {
    public static let code = KindTable.avatarRequest
    public var hash: Data

    public init(hash: Data) { self.hash = hash }

    public init(reading reader: inout ByteReader) throws(DecodeError) {
        guard let hash = reader.take(32) else { throw .malformedPayload("too short") }
        self.init(hash: Data(hash))
    }

    public func write(to bytes: inout [UInt8]) throws {
        guard hash.count == 32 else { throw DecodeError.malformedPayload("avatar hash") }
        bytes += hash
    }
}
