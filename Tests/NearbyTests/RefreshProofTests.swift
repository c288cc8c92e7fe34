import Crypto
import Foundation
import Synchronization
import TestWorld
import Testing
@testable import Nearby

/// Refresh proofs on the manual clock: an unchanged refresh is the next link of its sender's
/// chain, unsigned, and keeps it listed as a signed one would; a change still goes signed at
/// once; a forged, replayed or misplaced proof keeps nobody; a newcomer that missed someone's
/// answer asks it at its next proof.
@Suite struct RefreshProofTests {
    typealias Crowd = DeterministicEngineTests.Crowd

    /// What a network carries: signed announcements that answer nobody, and proofs.
    final class Refreshes: Sendable {
        let signed = Mutex(0), proofs = Mutex(0)
        init(_ network: MemoryNetwork, drop: (@Sendable ([UInt8]) -> Bool)? = nil) {
            network.setLoss { [self] bytes in
                if CrowdTests.isProof(bytes) { proofs.withLock { $0 += 1 } }
                if bytes.count > 5, bytes[5] == KindTable.announce, UncheckedHeader(bytes)?.flags.contains(.answer) == false {
                    signed.withLock { $0 += 1 }
                }
                return drop?(bytes) ?? false
            }
        }
        func reset() {
            signed.withLock { $0 = 0 }
            proofs.withLock { $0 = 0 }
        }
    }

    /// ann online for 5 s, then the network losing what `lose` says of each frame (given ann's
    /// key, and whether the frame is her announcement: `true` an answer, `false` not, nil
    /// another frame); carl joins next.
    func annThenLosing(_ lose: @escaping @Sendable (_ bytes: [UInt8], _ annAnnouncement: Bool?) -> Bool) throws -> Crowd {
        let crowd = Crowd()
        let annKey = try crowd.join("ann").service.publicKey
        crowd.advance(by: 5)
        _ = Refreshes(crowd.network) { bytes in
            guard bytes.count > 40 else { return false }
            let isAnn = bytes[5] == KindTable.announce && bytes[8..<40].elementsEqual(annKey)
            return lose(bytes, isAnn ? UncheckedHeader(bytes)?.flags.contains(.answer) == true : nil)
        }
        return crowd
    }

    @Test func unchangedRefreshesAreProofsAndAChangeIsSignedAtOnce() throws {
        let crowd = Crowd()
        let counted = Refreshes(crowd.network)
        let ann = try crowd.join("ann")
        let ben = try crowd.join("ben")
        crowd.advance(by: 3)
        counted.reset()
        crowd.advance(by: 60)
        let (signed, proofs) = (counted.signed.withLock { $0 }, counted.proofs.withLock { $0 })
        #expect((118...122).contains(signed + proofs), "a refresh a second each")
        #expect(proofs == 3 * signed, "three proofs to one signed: \(proofs), \(signed)")
        #expect(ann.service.statistics.proved >= 44 && ben.service.statistics.proved >= 44)
        #expect(ann.events.all == ["+ben"] && ben.events.all == ["+ann"], "nobody expired")
        #expect(ben.service.statistics.dropped.isEmpty)

        counted.reset()
        ann.service.setPlane(2)
        crowd.advance(by: 0.01)
        #expect(counted.signed.withLock { $0 } == 1, "a change goes signed, at once")
        #expect(ben.service.peers().first?.announcement.plane == 2)
        counted.reset()
        let proved = ben.service.statistics.proved
        crowd.advance(by: 3.5)
        #expect(counted.signed.withLock { $0 } <= 1, "then proofs again, following the link it carried")
        #expect(ben.service.statistics.proved >= proved + 2)
        #expect(ben.events.all == ["+ann"])
    }

    /// ann falls silent (no goodbye). mallory, who heard everything, sends ben ann's proofs
    /// again, proofs of his own making in her name, and her next link from his own address:
    /// none keeps her, and ben lets her go 3.5 intervals after her last proof.
    @Test func aForgedReplayedOrMisplacedProofKeepsNobody() throws {
        let crowd = Crowd()
        let ann = try crowd.join("ann")
        let ben = try crowd.join("ben")
        let heard = Mutex<[[UInt8]]>([])
        let mallory = MemoryTransport(network: crowd.network, address: "mallory")
        try mallory.start { bytes, _ in heard.withLock { $0.append(bytes) } }
        defer { mallory.stop() }
        // ann's chain, seen from inside: mallory could not know her next link; the test can.
        crowd.advance(by: 10)
        let proofs = heard.withLock { $0 }.filter(CrowdTests.isProof).compactMap { try? RefreshProof(decoding: $0) }
            .filter { $0.sender == ann.service.publicKey }
        let last = try #require(proofs.last)
        let next = try #require(ann.engine.sync { ann.service.node.presence.state.update { $0.chain.next() } })
        // She dies: her goodbye never leaves.
        crowd.network.setLoss { $0.count > 5 && $0[5] == KindTable.goodbye }
        ann.service.stop()
        crowd.network.setLoss { _ in false }
        crowd.advance(by: 1)
        // From her own address (mallory took it over) and from his.
        let spoofer = MemoryTransport(network: crowd.network, address: "ann")
        try spoofer.start { _, _ in }
        defer { spoofer.stop() }
        for proof in proofs.suffix(3) { spoofer.broadcast(proof.encoded(), as: .presence) }
        var forged = last
        forged.link = ChainLink(index: last.link.index + 1, value: Array(repeating: 0x5A, count: 32))
        spoofer.broadcast(forged.encoded(), as: .presence)
        mallory.broadcast(RefreshProof(sender: last.sender, unicastPort: last.unicastPort, link: next).encoded(), as: .presence)
        crowd.advance(by: 1)
        let dropped = ben.service.statistics.dropped
        #expect(dropped["refresh proof: repeated"] == 3 && dropped["refresh proof: forged"] == 1, "\(dropped)")
        #expect(ben.service.statistics.proved == proofs.count, "only ann's own proofs, while she was there")
        #expect(ben.service.peers().count == 1)
        // Her last proof came just before she went: 3.5 intervals after it, she is gone.
        crowd.advance(by: 2)
        #expect(ben.events.all == ["+ann", "-ann expired"])
    }

    /// ann's answer to carl is lost, and so are her signed refreshes: carl cannot check her
    /// proofs, so as his first seconds online end he asks her who she is, directly, and lists
    /// her then instead of never.
    @Test func aNewcomerThatMissedAnAnswerAsksAsItsFirstSecondsEnd() throws {
        let lost = Mutex(0)
        let crowd = try annThenLosing { _, annAnnouncement in
            guard let answer = annAnnouncement else { return false }
            return !answer || lost.withLock { $0 += 1; return $0 == 1 }
        }
        let carl = try crowd.join("carl")
        crowd.advance(by: 0.5)
        #expect(lost.withLock { $0 } == 1 && carl.service.peers().isEmpty, "her answer lost")
        // Not in his first seconds online: the crowd's answers are still coming then.
        crowd.advance(by: Questions.firstAskAfter - 0.6)
        #expect(carl.service.peers().isEmpty && carl.service.statistics.dropped["refresh proof: untracked"] ?? 0 >= 1)
        crowd.advance(by: 0.3)
        #expect(carl.service.peers().map(\.name) == ["ann"])
        #expect(lost.withLock { $0 } == 2, "she answered his question")
    }

    /// ann's answer to carl is lost, and so is every question he asks: her proofs cannot list
    /// her, and her next signed refresh does, at most four of her intervals after he came.
    @Test func whoeverLostTrackListsThePeerAtItsNextSignedRefresh() throws {
        let crowd = try annThenLosing { bytes, annAnnouncement in bytes[5] == KindTable.query || annAnnouncement == true }
        let carl = try crowd.join("carl")
        crowd.advance(by: 0.9)
        #expect(carl.service.peers().isEmpty)
        crowd.advance(by: Double(Presence.proofsPerSignature + 1))
        #expect(carl.service.peers().map(\.name) == ["ann"])
        #expect(carl.service.statistics.dropped["refresh proof: untracked"] ?? 0 >= 1, "her proofs came first")
    }

    /// carl's question is lost (and so are ann's signed refreshes): nobody answers, and ann's
    /// proofs cannot list her. Past his first seconds online he asks whoever sent him such
    /// proofs, and lists her then.
    @Test func aNewcomerWhoseQueryIsLostAsksWhoeverItCouldNotCheck() throws {
        let queries = Mutex(0)
        let crowd = try annThenLosing { bytes, annAnnouncement in
            if let answer = annAnnouncement { return !answer }
            return bytes[5] == KindTable.query && queries.withLock { $0 += 1; return $0 == 1 }
        }
        let carl = try crowd.join("carl")
        crowd.advance(by: Questions.firstAskAfter - 0.1)
        #expect(carl.service.peers().isEmpty, "no answer to a lost question")
        crowd.advance(by: 0.11)
        #expect(queries.withLock { $0 } == 2, "his question lost, and the one he asks her as his first seconds end")
        crowd.advance(by: 0.2)
        #expect(carl.service.peers().map(\.name) == ["ann"])
    }
}
