import Foundation
import Wire

/// How far the receiver has come (kind 24): every chunk below `stored` is written to its
/// database; bit k of `held` (a window's worth, 512 bits, the first word's lowest bit first)
/// says chunk `stored + 1 + k` arrived too and waits in memory for the ones before it (the
/// sender does not send those again).
///
///     id 16 · stored 4 · held 64
package struct FileChunkAck: PacketKind, Equatable {
    package static let code = KindTable.fileChunkAck

    package var id: Data
    package var stored: UInt32
    package var held: [UInt64]
    /// Bits in `held`: as many as chunks in flight.
    package static let heldBits = 512
    static let heldWords = heldBits / 64

    package init(id: Data, stored: UInt32, held: [UInt64] = Array(repeating: 0, count: heldWords)) {
        self.id = id
        self.stored = stored
        self.held = held
    }

    package init(reading reader: inout ByteReader) throws(DecodeError) {
        guard let id = reader.take(16), let stored = reader.uint32() else { throw .malformedPayload("file chunk acknowledgement too short") }
        var held: [UInt64] = []
        for _ in 0..<Self.heldWords {
            guard let word = reader.uint64() else { throw .malformedPayload("file chunk acknowledgement too short") }
            held.append(word)
        }
        self.init(id: Data(id), stored: stored, held: held)
    }

    package func write(to bytes: inout [UInt8]) throws {
        guard id.count == 16, held.count == Self.heldWords else { throw DecodeError.malformedPayload("file chunk acknowledgement") }
        bytes += id
        bytes.appendBigEndian(stored)
        for word in held { bytes.appendBigEndian(word) }
    }
}
