import Foundation
import Wire

/// Every message from the recipient up to fragment `sequence` has been shown (kind 7).
public struct ReadReceipt: PacketKind, Equatable {
    public static let code = KindTable.read
    public var recipient: Data
    public var sequence: UInt32

    public init(recipient: Data, sequence: UInt32) {
        self.recipient = recipient
        self.sequence = sequence
    }

    public init(reading reader: inout ByteReader) throws(DecodeError) {
        guard let recipient = reader.take(32), let sequence = reader.uint32() else { throw .malformedPayload("too short") }
        self.init(recipient: Data(recipient), sequence: sequence)
    }

    public func write(to bytes: inout [UInt8]) throws {
        guard recipient.count == 32 else { throw DecodeError.malformedPayload("recipient") }
        bytes += recipient
        bytes.appendBigEndian(sequence)
    }
}
