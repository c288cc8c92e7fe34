import Crypto
import Foundation
import Synchronization
import LAN
import TestSupport
import TestWorld
import Testing
@testable import Nearby

/// The threading contract: the socket's thread only checks frames; what a packet changes, and
/// every event, happens on the engine's queue.
@Suite(.enabled(if: inPrivateNetwork, "opens sockets: only inside scripts/in-netns"))
struct EngineTests {
    @Test func eventsAreToldOnTheEngineNotOnTheSocketThread() throws {
        // The default group and port, in a network of this test's own.
        let network = try PrivateNetwork()
        let lan = LANTransport.Configuration(interfaces: ["lo"])
        let timing = PresenceTiming(interval: 0.2, startupGap: 0.1)
        func announcement(_ name: String) -> Announcement {
            Announcement(name: name, agreementKey: Data(repeating: 1, count: 32), plane: 0, avatar: .none, unicastPort: 0,
                         intervalMilliseconds: 0)
        }
        let seen = Mutex<[Bool]>([])
        let engine = Mutex<Engine?>(nil)
        let listener = NetworkProbe(transports: [LANTransport(configuration: lan)], timing: timing, announcement: announcement("ann")) { _ in
            seen.withLock { $0.append(engine.withLock { $0 }?.isCurrent == true) }
        }
        engine.withLock { $0 = listener.engine }
        let speaker = NetworkProbe(transports: [LANTransport(configuration: lan)], timing: timing, announcement: announcement("ben"))
        try network.inside {
            try listener.start()
            try speaker.start()
        }
        defer { speaker.stop(); listener.stop() }
        let deadline = Date().addingTimeInterval(10)
        while seen.withLock({ $0.isEmpty }) && Date() < deadline { usleep(20_000) }
        #expect(!seen.withLock { $0 }.isEmpty)
        #expect(seen.withLock { $0 }.allSatisfy { $0 })
    }

    /// On a real socket a peer first heard in an answer has a route with its unicast port,
    /// and its refresh proofs come from the multicast socket's: the same host, so they keep it
    /// (they once went unchecked, and a crowd's members flapped).
    @Test func aPeerFirstHeardInAnAnswerIsKeptByItsProofs() throws {
        let network = try PrivateNetwork()
        let lan = LANTransport.Configuration(interfaces: ["lo"])
        let timing = PresenceTiming(interval: 0.2, jitter: 0, startupGap: 0.1)
        func service(_ name: String) -> NetworkProbe {
            NetworkProbe(transports: [LANTransport(configuration: lan)], timing: timing,
                         announcement: Announcement(name: name, agreementKey: Data(repeating: 1, count: 32), plane: 0, avatar: .none,
                                                    unicastPort: 0, intervalMilliseconds: 0))
        }
        let ann = service("ann"), ben = service("ben")
        try network.inside { try ann.start() }
        defer { ann.stop() }
        // Past her start-up, her refreshes are proofs: ben hears her first in her answer.
        let annDeadline = Date().addingTimeInterval(10)
        while ann.statistics.sent < 4 && Date() < annDeadline { usleep(20_000) }
        try network.inside { try ben.start() }
        defer { ben.stop() }
        // A proof of hers may come before her answer (each socket has its own thread): it is
        // untracked then, and rightly dropped. Once she is listed, none is dropped.
        let deadline = Date().addingTimeInterval(10)
        while ben.peers().isEmpty && Date() < deadline { usleep(20_000) }
        let droppedBefore = ben.statistics.dropped
        #expect(droppedBefore.keys.allSatisfy { $0 == "refresh proof: untracked" }, "\(droppedBefore)")
        let provedBefore = ben.statistics.proved
        while ben.statistics.proved < provedBefore + 5 && Date() < deadline { usleep(20_000) }
        #expect(ben.statistics.proved >= provedBefore + 5, "\(ben.statistics.dropped)")
        #expect(ben.statistics.dropped == droppedBefore)
        #expect(ben.peers().map(\.name) == ["ann"])
    }
}
