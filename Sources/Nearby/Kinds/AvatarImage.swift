import Crypto
import Foundation
import Wire

/// A 16x16 RGBA avatar thumbnail and its hash (kind 4), in answer to a request; a thumbnail
/// whose hash does not match is refused.
package struct AvatarImage: PacketKind, Equatable {
    package static let code = KindTable.avatar
    package static let pixelBytes = 16 * 16 * 4
    package var hash: Data
    package var pixels: Data

    package init(hash: Data, pixels: Data) {
        self.hash = hash
        self.pixels = pixels
    }

    package init(reading reader: inout ByteReader) throws(DecodeError) {
        guard let hash = reader.take(32), let pixels = reader.take(Self.pixelBytes) else { throw .malformedPayload("too short") }
        guard Data(SHA256.hash(data: Data(pixels))) == Data(hash) else { throw .malformedPayload("avatar hash mismatch") }
        self.init(hash: Data(hash), pixels: Data(pixels))
    }

    package func write(to bytes: inout [UInt8]) throws {
        guard hash.count == 32, pixels.count == Self.pixelBytes else { throw DecodeError.malformedPayload("avatar") }
        bytes += hash
        bytes += pixels
    }
}
