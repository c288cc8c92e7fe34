import Foundation
import Wire

/// A run of a file's chunks in order (kind 28), carried only by mail: a picture for someone
/// away goes as its offer and as few of these as its size allows. The data is the chunks from
/// `first` on, each the offer's chunk size but the file's last, one after another.
///
///     id 16 · first index 4 · length 2 · data
package struct FileChunks: PacketKind, Equatable {
    package static let code = KindTable.fileChunks
    /// The most data a run carries: with its mail's fields, one of the largest frames a broker
    /// carries (`Wire.maximumMail`).
    package static let maximumData = 14_400

    package var id: Data
    package var first: UInt32
    package var data: [UInt8]

    package init(id: Data, first: UInt32, data: [UInt8]) {
        self.id = id
        self.first = first
        self.data = data
    }

    /// The chunks it holds, cut by `chunkSize`, with their indices.
    package func chunks(of chunkSize: Int) -> [FileChunk] {
        stride(from: 0, to: data.count, by: chunkSize).map { offset in
            FileChunk(id: id, index: first + UInt32(offset / chunkSize), data: Array(data[offset..<min(offset + chunkSize, data.count)]))
        }
    }

    package init(reading reader: inout ByteReader) throws(DecodeError) {
        guard let id = reader.take(16), let first = reader.uint32(), let length = reader.uint16(), let data = reader.take(Int(length)) else {
            throw .malformedPayload("file chunks too short")
        }
        guard (1...Self.maximumData).contains(Int(length)) else { throw .malformedPayload("file chunks length") }
        self.init(id: Data(id), first: first, data: Array(data))
    }

    package func write(to bytes: inout [UInt8]) throws {
        guard id.count == 16, (1...Self.maximumData).contains(data.count) else { throw DecodeError.malformedPayload("file chunks") }
        bytes += id
        bytes.appendBigEndian(first)
        bytes.appendBigEndian(UInt16(data.count))
        bytes += data
    }
}
