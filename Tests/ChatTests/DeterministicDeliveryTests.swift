import Accounts
import Foundation
import Glibc
import Nearby
import Storage
import Synchronization
import Testing
@testable import Chat

/// Retransmission on a manual clock over the in-memory network: a lost fragment goes again
/// after the first backoff (0.25 s), not before, with no sleeping.
@Suite struct DeterministicDeliveryTests {
    @Test func aLostFragmentIsSentAgainAfterTheBackoff() throws {
        var template = Array("/tmp/seance-manual-XXXXXX".utf8CString)
        let directory = template.withUnsafeMutableBufferPointer { String(cString: mkdtemp($0.baseAddress!)!) }
        defer { _ = system("rm -rf \(directory)") }
        let scheduler = ManualScheduler()
        let network = MemoryNetwork()
        let received = Mutex<[String]>([])
        func node(_ name: String) throws -> (NearbyService, DeliveryService, Identity, Engine) {
            let identity = Identity()
            let engine = Engine(scheduler: scheduler)
            let service = NearbyService(transport: MemoryTransport(network: network, address: name),
                                        timing: PresenceTiming(interval: 1, jitter: 0, startupGap: 0.5), signer: identity.signing,
                                        announcement: Announcement(name: name, agreementKey: identity.agreementPublicKey, plane: 0,
                                                                   avatar: .none, unicastPort: 0, intervalMilliseconds: 0),
                                        engine: engine) { _ in }
            let delivery = DeliveryService(store: MessageStore(database: try SeanceDatabase(path: directory + "/\(name).sqlite")),
                                           identity: identity, myPlane: { .human }, engine: engine, clock: { scheduler.now }) { event in
                if case .received(_, let message, _) = event { received.withLock { $0.append(message.text) } }
            }
            delivery.attach(service)
            try service.start()
            return (service, delivery, identity, engine)
        }
        let (annService, ann, _, annEngine) = try node("ann")
        let (benService, benDelivery, ben, benEngine) = try node("ben")
        defer { annService.stop(); benService.stop() }
        func settle() { for _ in 0..<3 { annEngine.sync {}; benEngine.sync {} } }
        scheduler.advance(by: 0)
        settle()
        // The first message fragment is lost on the way; everything else arrives.
        let lost = Mutex(false)
        network.setLoss { bytes in
            guard bytes.count > 5, bytes[5] == 5 else { return false }
            return lost.withLock { done in defer { done = true }; return !done }
        }
        let benPeer = try #require(annService.peer(ben.signingPublicKey))
        _ = try ann.send("hello", in: try ann.conversation(with: benPeer))
        settle()
        #expect(received.withLock { $0 }.isEmpty)
        scheduler.advance(by: 0.2)  // Not yet: the first retry is due at 0.25 s.
        settle()
        #expect(received.withLock { $0 }.isEmpty)
        scheduler.advance(by: 0.15)  // The retry, at the first 50 ms tick at or after 0.25 s.
        settle()
        #expect(received.withLock { $0 } == ["hello"], "ann sent \(annService.statistics)")
        withExtendedLifetime(benDelivery) {}  // The service holds its delivery weakly.
    }
}
