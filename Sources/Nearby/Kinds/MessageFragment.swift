import Foundation
import Wire

/// One sealed fragment of a direct message (kind 5), for `recipient` (see `MessageCrypto`). The
/// sealed box runs to the end of the payload: this kind has no extension fields.
package struct MessageFragment: PacketKind, Equatable {
    package static let code = KindTable.message
    package var recipient: Data
    package var sealed: Data

    package init(recipient: Data, sealed: Data) {
        self.recipient = recipient
        self.sealed = sealed
    }

    package init(reading reader: inout ByteReader) throws(DecodeError) {
        guard let recipient = reader.take(32) else { throw .malformedPayload("too short") }
        let sealed = Data(reader.take(reader.remaining) ?? [])
        guard sealed.count >= MessageCrypto.overhead else { throw .malformedPayload("sealed message too short") }
        self.init(recipient: Data(recipient), sealed: sealed)
    }

    package func write(to bytes: inout [UInt8]) throws {
        guard recipient.count == 32, sealed.count >= MessageCrypto.overhead else { throw DecodeError.malformedPayload("message fields") }
        bytes += recipient
        bytes += sealed
    }
}
