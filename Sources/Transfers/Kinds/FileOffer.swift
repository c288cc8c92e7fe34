import Foundation
import Wire

/// A file offered to one peer (kind 21), sent again until answered, and again after either
/// side went away: what it is called, whether it is a picture, its size and how it is cut,
/// and the SHA-256 the whole must have. The name is the sender's: the receiver shows it
/// sanitized and never uses it as a path.
///
///     id 16 · flags 1 (bit 0: picture) · size 8 · chunk size 2 · SHA-256 32 · sent at 8 (ms)
///     · name length 1 · name (UTF-8, 1–255 bytes)
package struct FileOffer: PacketKind, Equatable {
    package static let code = KindTable.fileOffer
    /// The largest file sent (1 TiB: well within 2^32 chunks; an older seance takes 16 MiB at
    /// most, and refuses a larger offer as malformed).
    package static let maximumSize: UInt64 = 1 << 40

    package var id: Data
    package var name: String
    package var picture: Bool
    package var size: UInt64
    package var chunkSize: UInt16
    package var sha256: Data
    package var sentAt: UInt64

    package init(id: Data, name: String, picture: Bool, size: UInt64, chunkSize: UInt16 = FileChunk.maximumData, sha256: Data, sentAt: UInt64) {
        self.id = id
        self.name = name
        self.picture = picture
        self.size = size
        self.chunkSize = chunkSize
        self.sha256 = sha256
        self.sentAt = sentAt
    }

    /// How many chunks the file is cut into.
    package var chunkCount: Int { Int((size + UInt64(chunkSize) - 1) / UInt64(chunkSize)) }

    package init(reading reader: inout ByteReader) throws(DecodeError) {
        guard let id = reader.take(16), let flags = reader.byte(), let size = reader.uint64(), let chunkSize = reader.uint16(),
              let hash = reader.take(32), let sentAt = reader.uint64(), let length = reader.byte(), let name = reader.take(Int(length)) else {
            throw .malformedPayload("file offer too short")
        }
        guard (1...Self.maximumSize).contains(size) else { throw .malformedPayload("file size") }
        guard (1...FileChunk.maximumData).contains(chunkSize) else { throw .malformedPayload("chunk size") }
        guard length > 0, let text = String(validating: name, as: UTF8.self) else { throw .malformedPayload("file name") }
        self.init(id: Data(id), name: text, picture: flags & 1 != 0, size: size, chunkSize: chunkSize, sha256: Data(hash), sentAt: sentAt)
    }

    package func write(to bytes: inout [UInt8]) throws {
        let name = Array(name.utf8)
        guard id.count == 16, sha256.count == 32, (1...255).contains(name.count), (1...Self.maximumSize).contains(size),
              (1...FileChunk.maximumData).contains(chunkSize) else { throw DecodeError.malformedPayload("file offer") }
        bytes += id
        bytes.append(picture ? 1 : 0)
        bytes.appendBigEndian(size)
        bytes.appendBigEndian(chunkSize)
        bytes += sha256
        bytes.appendBigEndian(sentAt)
        bytes.append(UInt8(name.count))
        bytes += name
    }
}
