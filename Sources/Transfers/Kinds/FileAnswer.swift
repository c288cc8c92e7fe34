import Foundation
import Wire

/// What the receiver makes of an offer, or either side stopping a transfer (kind 22):
///
///     id 16 · decision 1 · stored 4 (chunks the receiver holds, from the first: send from there)
///
/// Extension field 1 (34 bytes), with an acceptance, on the LAN: the receiver's TCP port (2)
/// and a key of 32 random bytes for this acceptance alone; the sender may send the file on a
/// TCP connection sealed with it (`FileStream`) instead of in chunks.
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
    /// Where, and under which key, the receiver takes the file on a stream.
    package var stream: StreamOffer?

    package struct StreamOffer: Equatable, Sendable {
        package var port: UInt16
        package var key: Data
    }

    package init(id: Data, decision: Decision, stored: UInt32 = 0, stream: StreamOffer? = nil) {
        self.id = id
        self.decision = decision
        self.stored = stored
        self.stream = stream
    }

    package init(reading reader: inout ByteReader) throws(DecodeError) {
        guard let id = reader.take(16), let code = reader.byte(), let stored = reader.uint32() else {
            throw .malformedPayload("file answer too short")
        }
        guard let decision = Decision(rawValue: code) else { throw .malformedPayload("file answer decision") }
        self.init(id: Data(id), decision: decision, stored: stored)
        while let (tag, value) = try reader.extensionField() {
            guard tag == 1 else { continue }
            guard value.count == 34 else { throw .malformedPayload("file answer stream") }
            stream = StreamOffer(port: value.prefix(2).reduce(0) { $0 << 8 | UInt16($1) }, key: Data(value.dropFirst(2)))
        }
    }

    package func write(to bytes: inout [UInt8]) throws {
        guard id.count == 16 else { throw DecodeError.malformedPayload("file answer") }
        bytes += id
        bytes.append(decision.rawValue)
        bytes.appendBigEndian(stored)
        if let stream {
            guard stream.key.count == 32 else { throw DecodeError.malformedPayload("file answer stream") }
            bytes.append(1)
            bytes.appendBigEndian(UInt16(34))
            bytes.appendBigEndian(stream.port)
            bytes += stream.key
        }
    }
}
