import Foundation
import Wire

/// One piece of a file (kind 23): every chunk is the offer's chunk size but the last.
///
///     id 16 · index 4 · length 2 · data
package struct FileChunk: PacketKind, Equatable {
    package static let code = KindTable.fileChunk
    /// The most data a chunk carries: its frame fits a datagram, with room for extension fields.
    package static let maximumData: UInt16 = 1_100

    package var id: Data
    package var index: UInt32
    package var data: [UInt8]

    package init(id: Data, index: UInt32, data: [UInt8]) {
        self.id = id
        self.index = index
        self.data = data
    }

    package init(reading reader: inout ByteReader) throws(DecodeError) {
        guard let id = reader.take(16), let index = reader.uint32(), let length = reader.uint16(), let data = reader.take(Int(length)) else {
            throw .malformedPayload("file chunk too short")
        }
        guard (1...Self.maximumData).contains(length) else { throw .malformedPayload("file chunk length") }
        self.init(id: Data(id), index: index, data: Array(data))
    }

    package func write(to bytes: inout [UInt8]) throws {
        guard id.count == 16, (1...Int(Self.maximumData)).contains(data.count) else { throw DecodeError.malformedPayload("file chunk") }
        bytes += id
        bytes.appendBigEndian(index)
        bytes.appendBigEndian(UInt16(data.count))
        bytes += data
    }
}
