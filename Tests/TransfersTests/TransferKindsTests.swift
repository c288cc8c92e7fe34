import Foundation
import Nearby
import Testing
import Wire
@testable import Transfers

/// The kinds of a transfer: read as written, extension fields skipped, and what no
/// honest seance sends refused.
@Suite struct TransferKindsTests {
    let id = Data(repeating: 7, count: 16)
    /// An extension field a later version might add: tag, length, value.
    let extensionField: [UInt8] = [9, 0, 2, 0xAB, 0xCD]

    @Test func eachKindIsReadAsWrittenWithExtensionsSkipped() throws {
        let offer = FileOffer(id: id, name: "Will's map.png", picture: true, size: 300_000, sha256: Data(repeating: 1, count: 32), sentAt: 99)
        #expect(try FileOffer.read(try offer.encoded() + extensionField) == offer)
        #expect(offer.chunkCount == 273)
        let answer = FileAnswer(id: id, decision: .accept, stored: 12)
        #expect(try FileAnswer.read(try answer.encoded() + extensionField) == answer)
        let chunk = FileChunk(id: id, index: 3, data: [1, 2, 3])
        #expect(try FileChunk.read(try chunk.encoded() + extensionField) == chunk)
        let ack = FileChunkAck(id: id, stored: 5, held: [0b101, 0, 1 << 63, 7] + Array(repeating: 9, count: FileChunkAck.heldBits / 64 - 4))
        #expect(try FileChunkAck.read(try ack.encoded() + extensionField) == ack)
        let run = FileChunks(id: id, first: 4, data: Array(1...10))
        #expect(try FileChunks.read(try run.encoded() + extensionField) == run)
    }

    /// A run by mail is cut by the offer's chunk size, the last short; it fits a mail.
    @Test func aRunOfChunksIsCutByTheChunkSizeAndFitsAMail() throws {
        let run = FileChunks(id: id, first: 4, data: Array(1...10))
        #expect(run.chunks(of: 4) == [FileChunk(id: id, index: 4, data: [1, 2, 3, 4]), FileChunk(id: id, index: 5, data: [5, 6, 7, 8]),
                                      FileChunk(id: id, index: 6, data: [9, 10])])
        let full = FileChunks(id: id, first: 0, data: [UInt8](repeating: 0, count: FileChunks.maximumData))
        #expect(try full.encoded().count <= Delivery.mailCapacity)
        var oversized = try FileChunks(id: id, first: 0, data: [1]).encoded()
        oversized.replaceSubrange(20..<22, with: [0xFF, 0xFF])
        oversized += [UInt8](repeating: 0, count: 0xFFFF)
        #expect(throws: DecodeError.self) { try FileChunks.read(oversized) }
    }

    /// A chunk with its headers fits one sealed frame of a datagram.
    @Test func aWholeChunkFitsADatagram() throws {
        let chunk = FileChunk(id: id, index: .max, data: [UInt8](repeating: 0, count: Int(FileChunk.maximumData)))
        #expect(try chunk.encoded().count + 1 <= SealedFrame.maximumPayload)
    }

    @Test func whatNoHonestSeanceSendsIsRefused() throws {
        var tooLarge = try FileOffer(id: id, name: "a", picture: false, size: 10, sha256: Data(count: 32), sentAt: 0).encoded()
        tooLarge.replaceSubrange(17..<25, with: [0, 0, 1, 0, 0, 0, 0, 1])  // 1 TiB and a byte.
        #expect(throws: DecodeError.self) { try FileOffer.read(tooLarge) }
        var noName = try FileOffer(id: id, name: "a", picture: false, size: 10, sha256: Data(count: 32), sentAt: 0).encoded()
        noName.removeLast(2)
        noName.append(0)
        #expect(throws: DecodeError.self) { try FileOffer.read(noName) }
        var badText = try FileOffer(id: id, name: "ab", picture: false, size: 10, sha256: Data(count: 32), sentAt: 0).encoded()
        badText[badText.count - 1] = 0xFF
        #expect(throws: DecodeError.self) { try FileOffer.read(badText) }
        #expect(throws: DecodeError.self) { try FileChunk.read(try FileChunk(id: id, index: 0, data: [1]).encoded().dropLast(1).map { $0 }) }
        var oversized = try FileChunk(id: id, index: 0, data: [1]).encoded()
        oversized.replaceSubrange(20..<22, with: [0x10, 0x00])
        oversized += [UInt8](repeating: 0, count: 0x1000)
        #expect(throws: DecodeError.self) { try FileChunk.read(oversized) }
        var decision = try FileAnswer(id: id, decision: .accept).encoded()
        decision[16] = 42
        #expect(throws: DecodeError.self) { try FileAnswer.read(decision) }
        #expect(throws: (any Error).self) { try FileOffer(id: id, name: String(repeating: "x", count: 256), picture: false, size: 1,
                                                           sha256: Data(count: 32), sentAt: 0).encoded() }
    }
}
