import Foundation
import Wire

/// How far the receiver has come (kind 24): every chunk below `stored` is written to its
/// database; bit k of `held` (a window's worth, 256 bits, the first word's lowest bit first)
/// says chunk `stored + 1 + k` arrived too and waits in memory for the ones before it (the
/// sender does not send those again).
///
///     id 16 · stored 4 · held 32
package struct FileChunkAck: PacketKind, Equatable {
    package static let code = KindTable.fileChunkAck

    package var id: Data
    package var stored: UInt32
    package var held: [UInt64]
    /// Bits in `held`: as many as chunks in flight.
    package static let heldBits = 256

    package init(id: Data, stored: UInt32, held: [UInt64] = [0, 0, 0, 0]) {
        self.id = id
        self.stored = stored
        self.held = held
    }

    package init(reading reader: inout ByteReader) throws(DecodeError) {
        guard let id = reader.take(16), let stored = reader.uint32(), let a = reader.uint64(), let b = reader.uint64(),
              let c = reader.uint64(), let d = reader.uint64() else {
            throw .malformedPayload("file chunk acknowledgement too short")
        }
        self.init(id: Data(id), stored: stored, held: [a, b, c, d])
    }

    package func write(to bytes: inout [UInt8]) throws {
        guard id.count == 16, held.count == 4 else { throw DecodeError.malformedPayload("file chunk acknowledgement") }
        bytes += id
        bytes.appendBigEndian(stored)
        for word in held { bytes.appendBigEndian(word) }
    }
}
