import Foundation
import Wire

/// Fragments of direct messages for `recipient`, in sequence order, as they are (kind 29): the
/// session's frame around them is their seal, so they carry none of their own (a sealed one,
/// kind 5 or 18, is sealed again by that frame). Sent only to a peer whose announcement lists
/// this kind among those it reads, and only ever in a session. Each fragment runs behind its
/// 2-byte length to the end of the payload: this kind has no extension fields.
package struct SessionFragments: PacketKind, Equatable {
    package static let code = KindTable.sessionFragments
    /// The longest a fragment's bytes may be: its header and a full piece of text.
    static let maximumFragment = MessageCrypto.headerSize + MessageCrypto.fragmentText

    package var recipient: Data
    package var fragments: [Fragment]

    package init(recipient: Data, fragments: [Fragment]) {
        self.recipient = recipient
        self.fragments = fragments
    }

    package init(reading reader: inout ByteReader) throws(DecodeError) {
        guard let recipient = reader.take(32) else { throw .malformedPayload("too short") }
        let fragments = try reader.lengthPrefixed { (bytes) throws(DecodeError) in
            guard bytes.count <= Self.maximumFragment, let fragment = Fragment(plaintext: bytes) else { throw .malformedPayload("fragment") }
            return fragment
        }
        guard !fragments.isEmpty else { throw .malformedPayload("no fragment") }
        self.init(recipient: Data(recipient), fragments: fragments)
    }

    package func write(to bytes: inout [UInt8]) throws {
        guard recipient.count == 32, !fragments.isEmpty,
              fragments.allSatisfy({ $0.text.count <= MessageCrypto.fragmentText }) else {
            throw DecodeError.malformedPayload("session fragments fields")
        }
        bytes += recipient
        for fragment in fragments {
            bytes.appendBigEndian(UInt16(fragment.byteCount))
            fragment.write(to: &bytes)
        }
    }
}
