import Foundation
import Testing
@testable import Wire

/// Refresh proofs: a link follows the last one heard when hashing it back as many times gives
/// that one, a few links on at most; nothing else does. The frame reads back exactly.
@Suite struct RefreshChainTests {
    @Test func eachLinkFollowsTheOnesRevealedBeforeIt() throws {
        var chain = RefreshChain(length: 40, seed: Array(repeating: 7, count: 32))
        let first = chain.head
        #expect(first.index == 0)
        let links = (1...40).compactMap { _ in chain.next() }
        #expect(links.map(\.index) == Array(1...40))
        #expect(chain.next() == nil, "spent")
        #expect(first.isFollowed(by: links[0]))
        #expect(links[0].isFollowed(by: links[1]))
        #expect(first.isFollowed(by: links[15]), "sixteen links on: refreshes missed")
        #expect(!first.isFollowed(by: links[16]), "seventeen: too far to hash back")
        #expect(!links[1].isFollowed(by: links[0]) && !links[1].isFollowed(by: links[1]), "an earlier link, or the same")
        var forged = links[2]
        forged.value[0] ^= 1
        #expect(!links[1].isFollowed(by: forged))
        #expect(!links[1].isFollowed(by: ChainLink(index: 3, value: links[1].value)), "the link heard, given a later index")
        #expect(!first.isFollowed(by: ChainLink(index: 1, value: [])))
        // A chain from another seed never follows this one.
        var other = RefreshChain(length: 40, seed: Array(repeating: 8, count: 32))
        #expect(!first.isFollowed(by: other.next()!))
        // Seeds come from the system's generator: two chains are never alike.
        #expect(RefreshChain(length: 1).head != RefreshChain(length: 1).head)
    }

    @Test func aProofReadsBackAndNothingElseReadsAsOne() throws {
        var chain = RefreshChain(length: 4)
        let proof = RefreshProof(sender: Data(repeating: 9, count: 32), unicastPort: 47_778, link: chain.next()!)
        let bytes = proof.encoded()
        #expect(bytes.count == RefreshProof.size)
        #expect(Array(bytes[0..<8]) == Wire.magic + [SessionWire.version, KindTable.refreshProof, 0, 0])
        #expect(try RefreshProof(decoding: bytes) == proof)
        #expect(throws: DecodeError.truncated) { try RefreshProof(decoding: Array(bytes.dropLast())) }
        #expect(throws: DecodeError.malformedPayload("extra bytes")) { try RefreshProof(decoding: bytes + [0]) }
        var other = bytes
        other[5] = KindTable.sealed
        #expect(throws: DecodeError.unknownType(KindTable.sealed)) { try RefreshProof(decoding: other) }
    }
}
