import Foundation
import Wire

/// Who we are now (kind 1), to everyone in range: name, X25519 key, plane, avatar, the port of
/// direct packets and the refresh interval, by which receivers expire us.
package struct Announcement: PacketKind, Equatable {
    package static let code = KindTable.announce
    package var name: String
    package var agreementKey: Data
    /// Plane index: 0 Human, 1 Dying, 2 Hollow, 3 Undead, 4 Ghost.
    package var plane: UInt8
    package var avatar: AvatarReference
    /// The port the sender receives direct messages on.
    package var unicastPort: UInt16
    /// How often the sender refreshes, in milliseconds: receivers expire it after three misses.
    package var intervalMilliseconds: UInt32
    /// The session protocol the sender speaks (extension field 1): 3, or 0 for an older seance,
    /// which signs its direct packets and makes no sessions.
    package var sessionVersion: UInt8 = SessionWire.version
    /// The last link of the sender's refresh chain it revealed (extension field 2, 36 bytes:
    /// index, link), on the LAN only: its next unchanged refresh is the next link
    /// (`RefreshProof`). The table keeps it with the route, not in the peer's announcement.
    package var refreshChain: ChainLink?
    /// The sender's signed prekey (extension field 3, 40 bytes: the X25519 key, then when it was
    /// made in milliseconds since 1970), from a sender that keeps a mailbox: mail to it is sealed
    /// to this key (`Mail`). The announcement's signature is X3DH's Sig(IK, Encode(SPK)).
    package var signedPrekey: SignedPrekey?
    /// Direct kinds the sender reads beyond those of its session protocol (extension field 4,
    /// a byte each; `KindTable.announcedReads`): only a sender that lists one is sent it.
    package var alsoReads: Set<UInt8> = []

    /// The extension fields: which session protocol the sender speaks, its refresh chain, its
    /// signed prekey, the kinds it also reads.
    static let sessionTag: UInt8 = 1
    static let chainTag: UInt8 = 2
    static let prekeyTag: UInt8 = 3
    static let readsTag: UInt8 = 4
    /// Kinds listed in field 4 at most that are kept: a longer list is read that far.
    static let readsKept = 32

    package var speaksSessions: Bool { sessionVersion >= SessionWire.version }

    package init(name: String, agreementKey: Data, plane: UInt8, avatar: AvatarReference, unicastPort: UInt16,
                intervalMilliseconds: UInt32) {
        self.name = name
        self.agreementKey = agreementKey
        self.plane = plane
        self.avatar = avatar
        self.unicastPort = unicastPort
        self.intervalMilliseconds = intervalMilliseconds
    }

    package init(reading reader: inout ByteReader) throws(DecodeError) {
        guard let agreementKey = reader.take(32), let plane = reader.byte(), let nameLength = reader.byte(),
              let nameBytes = reader.take(Int(nameLength)) else { throw .malformedPayload("too short") }
        guard plane <= 4 else { throw .malformedPayload("plane \(plane)") }
        // Names are checked like local ones: a name that could not be typed here is not shown.
        guard let name = String(validating: nameBytes, as: UTF8.self), NameRules.violation(name) == nil else {
            throw .malformedPayload("name")
        }
        guard let avatarKind = reader.byte(), let avatarLength = reader.byte(), let avatarBytes = reader.take(Int(avatarLength)) else {
            throw .malformedPayload("too short")
        }
        let avatar: AvatarReference
        switch (avatarKind, Int(avatarLength)) {
        case (0, 0): avatar = .none
        case (1, 1...NameRules.maximumEmojiBytes):
            guard let emoji = String(validating: avatarBytes, as: UTF8.self), NameRules.isEmoji(emoji) else {
                throw .malformedPayload("emoji")
            }
            avatar = .emoji(emoji)
        case (2, 32): avatar = .image(Data(avatarBytes))
        default: throw .malformedPayload("avatar")
        }
        guard let port = reader.uint16(), let interval = reader.uint32() else { throw .malformedPayload("too short") }
        guard interval > 0 else { throw .malformedPayload("interval") }
        self.init(name: name, agreementKey: Data(agreementKey), plane: plane, avatar: avatar, unicastPort: port,
                  intervalMilliseconds: interval)
        sessionVersion = 0
        while let (tag, value) = try reader.extensionField() {
            if tag == Self.sessionTag, let version = value.first { sessionVersion = version }
            if tag == Self.chainTag, value.count == 4 + ChainLink.size {
                var field = ByteReader(value)
                refreshChain = ChainLink(index: field.uint32()!, value: Array(value.suffix(ChainLink.size)))
            }
            if tag == Self.prekeyTag, value.count == 40 {
                var field = ByteReader(value)
                let key = Data(field.take(32)!)
                signedPrekey = SignedPrekey(publicKey: key, made: Double(field.uint64()!) / 1000)
            }
            if tag == Self.readsTag { alsoReads = Set(value.prefix(Self.readsKept)) }
        }
    }

    package func write(to bytes: inout [UInt8]) throws {
        let name = Array(name.utf8)
        guard agreementKey.count == 32, (1...128).contains(name.count), plane <= 4 else {
            throw DecodeError.malformedPayload("announcement fields out of range")
        }
        bytes += agreementKey
        bytes.append(plane)
        bytes.append(UInt8(name.count))
        bytes += name
        switch avatar {
        case .none: bytes += [0, 0]
        case .emoji(let emoji):
            let utf8 = Array(emoji.utf8)
            guard (1...32).contains(utf8.count) else { throw DecodeError.malformedPayload("emoji too long") }
            bytes += [1, UInt8(utf8.count)] + utf8
        case .image(let hash):
            guard hash.count == 32 else { throw DecodeError.malformedPayload("avatar hash") }
            bytes += [2, 32] + hash
        }
        bytes.appendBigEndian(unicastPort)
        bytes.appendBigEndian(intervalMilliseconds)
        if sessionVersion > 0 { bytes += [Self.sessionTag, 0, 1, sessionVersion] }
        if let refreshChain {
            guard refreshChain.value.count == ChainLink.size else { throw DecodeError.malformedPayload("refresh chain") }
            bytes += [Self.chainTag, 0, UInt8(4 + ChainLink.size)]
            bytes.appendBigEndian(refreshChain.index)
            bytes += refreshChain.value
        }
        if let signedPrekey {
            guard signedPrekey.publicKey.count == 32, (0..<1e12).contains(signedPrekey.made) else { throw DecodeError.malformedPayload("prekey") }
            bytes += [Self.prekeyTag, 0, 40] + signedPrekey.publicKey
            bytes.appendBigEndian(UInt64(signedPrekey.made * 1000))
        }
        if !alsoReads.isEmpty {
            guard alsoReads.count <= Self.readsKept else { throw DecodeError.malformedPayload("kinds read") }
            bytes += [Self.readsTag, 0, UInt8(alsoReads.count)] + alsoReads.sorted()
        }
    }

    /// Whether the sender said it reads `kind`, one of `KindTable.announcedReads`.
    package func reads(_ kind: UInt8) -> Bool { alsoReads.contains(kind) }
}

/// X3DH's signed prekey (SPK), as announced: its public key and when it was made.
package struct SignedPrekey: Equatable, Sendable {
    package var publicKey: Data
    /// Seconds since 1970, the maker's clock.
    package var made: Double

    package init(publicKey: Data, made: Double) {
        self.publicKey = publicKey
        self.made = made
    }
}

package enum AvatarReference: Equatable, Sendable {
    case none
    case emoji(String)
    /// SHA-256 of the 16x16 RGBA thumbnail; fetched with an avatar request.
    case image(Data)
}
