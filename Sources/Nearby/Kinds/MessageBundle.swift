import Foundation
import Wire

/// Several sealed fragments for `recipient`, in sequence order (kind 18): what a burst sends,
/// so that one signature (the costly part of a packet) covers many messages. The boxes run to
/// the end of the payload, each behind its length: this kind has no extension fields.
package struct MessageBundle: PacketKind, Equatable {
    package static let code = KindTable.messages
    package var recipient: Data
    package var sealed: [Data]

    package init(recipient: Data, sealed: [Data]) {
        self.recipient = recipient
        self.sealed = sealed
    }

    package init(reading reader: inout ByteReader) throws(DecodeError) {
        guard let recipient = reader.take(32) else { throw .malformedPayload("too short") }
        let boxes = try reader.lengthPrefixed { (box) throws(DecodeError) in
            guard box.count >= MessageCrypto.overhead else { throw .malformedPayload("sealed message too short") }
            return Data(box)
        }
        guard !boxes.isEmpty else { throw .malformedPayload("no sealed message") }
        self.init(recipient: Data(recipient), sealed: boxes)
    }

    package func write(to bytes: inout [UInt8]) throws {
        guard recipient.count == 32, !sealed.isEmpty,
              sealed.allSatisfy({ $0.count >= MessageCrypto.overhead && $0.count <= Int(UInt16.max) }) else {
            throw DecodeError.malformedPayload("messages fields")
        }
        bytes += recipient
        for box in sealed {
            bytes.appendBigEndian(UInt16(box.count))
            bytes += box
        }
    }
}
