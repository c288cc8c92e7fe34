import Foundation
import Wire

/// Every message from the recipient up to fragment `sequence` has been shown (kind 7).
package struct ReadReceipt: PacketKind, Equatable {
    package static let code = KindTable.read
    package var recipient: Data
    package var sequence: UInt32

    package init(recipient: Data, sequence: UInt32) {
        self.recipient = recipient
        self.sequence = sequence
    }

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
