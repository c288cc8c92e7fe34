import Foundation
import Wire

/// A direct packet for someone away (kind 26), left with a broker that holds it until they
/// connect: signed by its sender (no session can be made with someone who is not there), with
/// the sender's announcement, which says what a present peer's would (name, agreement key,
/// plane), and the packet it carries: one of delivery's (a message, several, an
/// acknowledgement), whose fragments are sealed end to end as ever. The inner packet runs to
/// the end of the payload: this kind has no extension fields.
package struct Mail: PacketKind, Equatable {
    package static let code = KindTable.mail
    /// How long mail is held: a reader takes none older (by its frame's time), and a writer is
    /// told of what was not acknowledged within it.
    package static let lifetime = 7 * 86_400.0
    /// The kinds a mail may carry.
    package static let carried: Set<UInt8> = [KindTable.message, KindTable.messages, KindTable.ack]

    package var recipient: Data
    package var announcement: Announcement
    package var kind: UInt8
    package var body: [UInt8]

    package init(recipient: Data, announcement: Announcement, kind: UInt8, body: [UInt8]) {
        self.recipient = recipient
        self.announcement = announcement
        self.kind = kind
        self.body = body
    }

    /// `packet`, for `recipient`, from whoever `announcement` describes.
    package init<Kind: PacketKind>(_ packet: Kind, for recipient: Data, from announcement: Announcement) throws {
        self.init(recipient: recipient, announcement: announcement, kind: Kind.code, body: try packet.encoded())
    }

    package init(reading reader: inout ByteReader) throws(DecodeError) {
        guard let recipient = reader.take(32), let length = reader.uint16(), let said = reader.take(Int(length)) else {
            throw .malformedPayload("too short")
        }
        let announcement = try Announcement.read(Array(said))
        guard let kind = reader.byte(), Self.carried.contains(kind) else { throw .malformedPayload("carried kind") }
        guard let rest = reader.take(reader.remaining), !rest.isEmpty else { throw .malformedPayload("nothing carried") }
        let body = Array(rest)
        self.init(recipient: Data(recipient), announcement: announcement, kind: kind, body: body)
    }

    package func write(to bytes: inout [UInt8]) throws {
        let said = try announcement.encoded()
        guard recipient.count == 32, said.count <= Int(UInt16.max), Self.carried.contains(kind), !body.isEmpty else {
            throw DecodeError.malformedPayload("mail fields")
        }
        bytes += recipient
        bytes.appendBigEndian(UInt16(said.count))
        bytes += said
        bytes.append(kind)
        bytes += body
    }
}
