import Foundation
import Wire

/// A room's numbers, as a beacon carries them: `MAJOR.MINOR`, each 0–65535.
package struct RoomID: Hashable, Comparable, Sendable, CustomStringConvertible {
    package var major: UInt16
    package var minor: UInt16

    package init(major: UInt16, minor: UInt16) {
        self.major = major
        self.minor = minor
    }

    package var description: String { "\(major).\(minor)" }

    package static func < (lhs: RoomID, rhs: RoomID) -> Bool { (lhs.major, lhs.minor) < (rhs.major, rhs.minor) }

    init?(reading reader: inout ByteReader) {
        guard let major = reader.uint16(), let minor = reader.uint16() else { return nil }
        self.init(major: major, minor: minor)
    }

    func write(to bytes: inout [UInt8]) {
        bytes.appendBigEndian(major)
        bytes.appendBigEndian(minor)
    }
}

/// How near a guest is to the host, as the guest estimates it (`ProximityEstimator`).
package enum Proximity: UInt8, CaseIterable, Comparable, Sendable {
    case immediate = 0, near = 1, far = 2

    package var name: String { String(describing: self) }

    package static func < (lhs: Proximity, rhs: Proximity) -> Bool { lhs.rawValue < rhs.rawValue }
}

/// The host's beacon, to everyone in range every second: the room's numbers, a counter (guests
/// count how many of the last ones reached them), the interval, and whether the room is closing.
package struct Beacon: PacketKind, Equatable {
    package static let code = KindTable.beacon
    package var room: RoomID
    package var counter: UInt32
    package var intervalMilliseconds: UInt16
    package var closing: Bool

    package init(room: RoomID, counter: UInt32, intervalMilliseconds: UInt16, closing: Bool = false) {
        self.room = room
        self.counter = counter
        self.intervalMilliseconds = intervalMilliseconds
        self.closing = closing
    }

    package init(reading reader: inout ByteReader) throws(DecodeError) {
        guard let room = RoomID(reading: &reader), let counter = reader.uint32(), let interval = reader.uint16(),
              let flags = reader.byte(), flags <= 1 else { throw .malformedPayload("beacon") }
        self.init(room: room, counter: counter, intervalMilliseconds: interval, closing: flags == 1)
    }

    package func write(to bytes: inout [UInt8]) {
        room.write(to: &bytes)
        bytes.appendBigEndian(counter)
        bytes.appendBigEndian(intervalMilliseconds)
        bytes.append(closing ? 1 : 0)
    }
}

/// A guest to the host, every two seconds and whenever its proximity changes: "I am in your
/// room, this near". The first one joins; the host's roster answers it, echoing `nonce` (the
/// guest times the round trip).
package struct RoomProbe: PacketKind, Equatable {
    package static let code = KindTable.roomProbe
    package var room: RoomID
    package var nonce: UInt64
    package var proximity: Proximity

    package init(room: RoomID, nonce: UInt64, proximity: Proximity) {
        self.room = room
        self.nonce = nonce
        self.proximity = proximity
    }

    package init(reading reader: inout ByteReader) throws(DecodeError) {
        guard let room = RoomID(reading: &reader), let nonce = reader.uint64(), let code = reader.byte(),
              let proximity = Proximity(rawValue: code) else { throw .malformedPayload("room probe") }
        self.init(room: room, nonce: nonce, proximity: proximity)
    }

    package func write(to bytes: inout [UInt8]) {
        room.write(to: &bytes)
        bytes.appendBigEndian(nonce)
        bytes.append(proximity.rawValue)
    }
}

/// The host to a guest: who is in the room (the host aside) and how near each is; in answer to
/// a probe (`echo` is its nonce) or when the membership changed (`echo` 0).
package struct RoomRoster: PacketKind, Equatable {
    package static let code = KindTable.roomRoster
    package struct Member: Equatable, Sendable {
        package var key: Data
        package var proximity: Proximity
        package init(key: Data, proximity: Proximity) {
            self.key = key
            self.proximity = proximity
        }
    }

    /// Guests a room holds: a roster must fit one datagram.
    package static let capacity = 30

    package var room: RoomID
    package var echo: UInt64
    package var members: [Member]

    package init(room: RoomID, echo: UInt64, members: [Member]) {
        self.room = room
        self.echo = echo
        self.members = members
    }

    package init(reading reader: inout ByteReader) throws(DecodeError) {
        guard let room = RoomID(reading: &reader), let echo = reader.uint64(), let count = reader.byte(),
              Int(count) <= Self.capacity else { throw .malformedPayload("room roster") }
        var members: [Member] = []
        for _ in 0..<count {
            guard let key = reader.take(32), let code = reader.byte(), let proximity = Proximity(rawValue: code) else {
                throw .malformedPayload("room roster")
            }
            members.append(Member(key: Data(key), proximity: proximity))
        }
        self.init(room: room, echo: echo, members: members)
    }

    package func write(to bytes: inout [UInt8]) {
        room.write(to: &bytes)
        bytes.appendBigEndian(echo)
        bytes.append(UInt8(min(members.count, Self.capacity)))
        for member in members.prefix(Self.capacity) {
            bytes += member.key
            bytes.append(member.proximity.rawValue)
        }
    }
}

/// A guest leaving (to the host), or the host closing the room (to each guest).
package struct RoomMembership: PacketKind, Equatable {
    package static let code = KindTable.roomMembership
    package enum Action: UInt8, Sendable { case leave = 1, close = 2 }
    package var room: RoomID
    package var action: Action

    package init(room: RoomID, action: Action) {
        self.room = room
        self.action = action
    }

    package init(reading reader: inout ByteReader) throws(DecodeError) {
        guard let room = RoomID(reading: &reader), let code = reader.byte(), let action = Action(rawValue: code) else {
            throw .malformedPayload("room membership")
        }
        self.init(room: room, action: action)
    }

    package func write(to bytes: inout [UInt8]) {
        room.write(to: &bytes)
        bytes.append(action.rawValue)
    }
}

/// One member's copy of a line said in a room, sealed to that member alone (`MessageCrypto`,
/// purpose `room`). `host` names the room with its numbers (numbers alone can be reused).
package struct RoomLine: PacketKind, Equatable {
    package static let code = KindTable.roomLine
    package var room: RoomID
    package var host: Data
    package var id: Data
    package var recipient: Data
    package var sealed: Data

    package init(room: RoomID, host: Data, id: Data, recipient: Data, sealed: Data) {
        self.room = room
        self.host = host
        self.id = id
        self.recipient = recipient
        self.sealed = sealed
    }

    package init(reading reader: inout ByteReader) throws(DecodeError) {
        guard let room = RoomID(reading: &reader), let host = reader.take(32), let id = reader.take(16),
              let recipient = reader.take(32), reader.remaining > MessageCrypto.overhead,
              let sealed = reader.take(reader.remaining) else { throw .malformedPayload("room line") }
        self.init(room: room, host: Data(host), id: Data(id), recipient: Data(recipient), sealed: Data(sealed))
    }

    package func write(to bytes: inout [UInt8]) {
        room.write(to: &bytes)
        bytes += host
        bytes += id
        bytes += recipient
        bytes += sealed
    }
}

/// A member's acknowledgement of its copy of a room line.
package struct RoomLineAck: PacketKind, Equatable {
    package static let code = KindTable.roomLineAck
    package var room: RoomID
    package var host: Data
    package var id: Data

    package init(room: RoomID, host: Data, id: Data) {
        self.room = room
        self.host = host
        self.id = id
    }

    package init(reading reader: inout ByteReader) throws(DecodeError) {
        guard let room = RoomID(reading: &reader), let host = reader.take(32), let id = reader.take(16) else {
            throw .malformedPayload("room acknowledgement")
        }
        self.init(room: room, host: Data(host), id: Data(id))
    }

    package func write(to bytes: inout [UInt8]) {
        room.write(to: &bytes)
        bytes += host
        bytes += id
    }
}
