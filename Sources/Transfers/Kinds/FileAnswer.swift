import Foundation
import Wire

/// What the receiver makes of an offer, or either side stopping a transfer (kind 22):
///
///     id 16 · decision 1 · stored 4 (chunks the receiver holds, from the first: send from there)
package struct FileAnswer: PacketKind, Equatable {
    package static let code = KindTable.fileAnswer

    package enum Decision: UInt8, Sendable {
        /// Send, from chunk `stored` on (a resumed transfer starts where the receiver stopped).
        case accept = 1
        /// The receiver's user is asked first (a stranger's file, or a large one).
        case asking = 2
        /// The receiver's user said no.
        case decline = 3
        /// Either side stopped it; nothing more is sent or kept.
        case cancel = 4
        /// The receiver has all of it already (an offer sent again after the last acknowledgement was lost).
        case complete = 5
        /// Over what the receiver lets one peer hold, or send at once.
        case refuse = 6
    }

    package var id: Data
    package var decision: Decision
    package var stored: UInt32

    package init(id: Data, decision: Decision, stored: UInt32 = 0) {
        self.id = id
        self.decision = decision
        self.stored = stored
    }

    package init(reading reader: inout ByteReader) throws(DecodeError) {
        guard let id = reader.take(16), let code = reader.byte(), let stored = reader.uint32() else {
            throw .malformedPayload("file answer too short")
        }
        guard let decision = Decision(rawValue: code) else { throw .malformedPayload("file answer decision") }
        self.init(id: Data(id), decision: decision, stored: stored)
    }

    package func write(to bytes: inout [UInt8]) throws {
        guard id.count == 16 else { throw DecodeError.malformedPayload("file answer") }
        bytes += id
        bytes.append(decision.rawValue)
        bytes.appendBigEndian(stored)
    }
}
