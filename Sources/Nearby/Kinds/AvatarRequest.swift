import Foundation
import Wire

/// An image avatar asked for by its hash (kind 3), to the peer that announced it.
package struct AvatarRequest: PacketKind, Equatable {
    package static let code = KindTable.avatarRequest
    package var hash: Data

    package init(hash: Data) { self.hash = hash }

    package init(reading reader: inout ByteReader) throws(DecodeError) {
        guard let hash = reader.take(32) else { throw .malformedPayload("too short") }
        self.init(hash: Data(hash))
    }

    package func write(to bytes: inout [UInt8]) throws {
        guard hash.count == 32 else { throw DecodeError.malformedPayload("avatar hash") }
        bytes += hash
    }
}
