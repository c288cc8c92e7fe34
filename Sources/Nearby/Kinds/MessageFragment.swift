import Foundation
import Wire

/// One sealed fragment of a direct message (kind 5), for `recipient` (see `MessageCrypto`). The
/// sealed box runs to the end of the payload: this kind has no extension fields.
public struct MessageFragment: PacketKind, Equatable {
    public static let code = KindTable.message
    public var recipient: Data
    public var sealed: Data

    public init(recipient: Data, sealed: Data) {
        self.recipient = recipient
        self.sealed = sealed
    }

    public init(reading reader: inout ByteReader) throws(DecodeError) {
        guard let recipient = reader.take(32) else { throw .malformedPayload("too short") }
        let sealed = Data(reader.take(reader.remaining) ?? [])
        guard sealed.count >= MessageCrypto.overhead else { throw .malformedPayload("sealed message too short") }
        self.init(recipient: Data(recipient), sealed: sealed)
    }

    public func write(to bytes: inout [UInt8]) throws {
        guard recipient.count == 32, sealed.count >= MessageCrypto.overhead else { throw DecodeError.malformedPayload("message fields") }
        bytes += recipient
        bytes += sealed
    }
}
