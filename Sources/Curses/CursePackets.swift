import Foundation
import Wire

/// A Ghost's curse on a Human, sent to the Human alone. `id` names this casting in the answer.
package struct CurseCast: PacketKind, Equatable {
    package static let code = KindTable.curse
    package var target: Data
    package var kind: CurseKind
    package var minutes: UInt8
    package var id: Data

    package init(target: Data, kind: CurseKind, minutes: UInt8, id: Data) {
        self.target = target
        self.kind = kind
        self.minutes = minutes
        self.id = id
    }

    package init(reading reader: inout ByteReader) throws(DecodeError) {
        guard let target = reader.take(32), let code = reader.byte(), let kind = CurseKind(code: code),
              let minutes = reader.byte(), CurseKind.minutes.contains(Int(minutes)), let id = reader.take(16) else {
            throw .malformedPayload("curse")
        }
        self.init(target: Data(target), kind: kind, minutes: minutes, id: Data(id))
    }

    package func write(to bytes: inout [UInt8]) {
        bytes += target
        bytes.append(kind.code)
        bytes.append(minutes)
        bytes += id
    }
}

/// What became of a curse, told by the cursed side to the caster.
package struct CurseAnswer: PacketKind, Equatable {
    package static let code = KindTable.curseAnswer

    package enum Outcome: UInt8, Sendable {
        case tookHold = 1
        /// A Saint's medallion was worn.
        case bounced = 2
        /// The caster was repelled by a spell and may not curse this one yet.
        case repelled = 3
        /// The caster is not a Ghost (by its own announcement).
        case notAGhost = 4
        /// The target is not a Human.
        case notAHuman = 5
    }

    package var caster: Data
    package var id: Data
    package var outcome: Outcome

    package init(caster: Data, id: Data, outcome: Outcome) {
        self.caster = caster
        self.id = id
        self.outcome = outcome
    }

    package init(reading reader: inout ByteReader) throws(DecodeError) {
        guard let caster = reader.take(32), let id = reader.take(16), let code = reader.byte(),
              let outcome = Outcome(rawValue: code) else { throw .malformedPayload("curse answer") }
        self.init(caster: Data(caster), id: Data(id), outcome: outcome)
    }

    package func write(to bytes: inout [UInt8]) {
        bytes += caster
        bytes += id
        bytes.append(outcome.rawValue)
    }
}

/// A spell, from a Human to a ghost that cursed it: the one packet the plane table lets a Human
/// send to a Ghost. The phrase is one of `Spells.phrases`.
package struct SpellCast: PacketKind, Equatable {
    package static let code = KindTable.spell
    package var target: Data
    package var phrase: String

    package static let maximumPhrase = 200

    package init(target: Data, phrase: String) {
        self.target = target
        self.phrase = phrase
    }

    package init(reading reader: inout ByteReader) throws(DecodeError) {
        guard let target = reader.take(32), let length = reader.byte(), Int(length) <= Self.maximumPhrase,
              let bytes = reader.take(Int(length)), let phrase = String(validating: bytes, as: UTF8.self) else {
            throw .malformedPayload("spell")
        }
        self.init(target: Data(target), phrase: phrase)
    }

    package func write(to bytes: inout [UInt8]) {
        bytes += target
        let utf8 = Array(phrase.utf8.prefix(Self.maximumPhrase))
        bytes.append(UInt8(utf8.count))
        bytes += utf8
    }
}
