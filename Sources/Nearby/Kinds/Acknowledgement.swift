import Foundation
import Wire

/// Every fragment from the recipient up to `sequence` arrived and is stored, in order (kind 6).
package struct Acknowledgement: SequenceMark, Equatable {
    package static let code = KindTable.ack
    package var recipient: Data
    package var sequence: UInt32

    package init(recipient: Data, sequence: UInt32) {
        self.recipient = recipient
        self.sequence = sequence
    }
}

/// A kind that marks how far a conversation's fragments have come, for one recipient: its key
/// (32 bytes), then a fragment sequence number (4 bytes). The acknowledgement and the read
/// receipt are read and written alike.
package protocol SequenceMark: PacketKind {
    var recipient: Data { get }
    var sequence: UInt32 { get }
    init(recipient: Data, sequence: UInt32)
}

extension SequenceMark {
    package init(reading reader: inout ByteReader) throws(DecodeError) {
        guard let recipient = reader.take(32), let sequence = reader.uint32() else { throw .malformedPayload("too short") }
        self.init(recipient: Data(recipient), sequence: sequence)
    }

    package func write(to bytes: inout [UInt8]) throws {
        guard recipient.count == 32 else { throw DecodeError.malformedPayload("recipient") }
        bytes += recipient
        bytes.appendBigEndian(sequence)
    }
}
