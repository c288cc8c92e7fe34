import Crypto
import Foundation
import Synchronization
import TestWorld
import Testing
import Wire
@testable import Nearby

// A feature written only against Wire, Nearby and the in-memory transport: its packet kind is
// this one file, and its only hook into the engine is one `handle` registration. Nothing else
// in the package knows about it.

/// "Are you there?" with a number, answered by a pong with the same number.
struct Ping: PacketKind {
    static let code: UInt8 = 240  // KindTable.experimental
    var number: UInt32
    var isPong: Bool

    init(number: UInt32, isPong: Bool) {
        self.number = number
        self.isPong = isPong
    }

    init(reading reader: inout ByteReader) throws(DecodeError) {
        guard let number = reader.uint32(), let flag = reader.byte(), flag <= 1 else { throw .malformedPayload("ping") }
        self.number = number
        isPong = flag == 1
    }

    func write(to bytes: inout [UInt8]) {
        bytes.appendBigEndian(number)
        bytes.append(isPong ? 1 : 0)
    }
}

@Suite struct PingKindTests {
    func service(_ name: String, on network: MemoryNetwork) -> NetworkProbe {
        NetworkProbe(transports: [MemoryTransport(network: network, address: name)], timing: PresenceTiming(interval: 0.2, startupGap: 0.1),
                     announcement: Announcement(name: name, agreementKey: Data(repeating: 1, count: 32), plane: 0,
                                                avatar: .none, unicastPort: 0, intervalMilliseconds: 0))
    }

    @Test func aNewKindNeedsOneFileAndOneRegistration() throws {
        let network = MemoryNetwork()
        let ann = service("ann", on: network), ben = service("ben", on: network)
        let pongs = Mutex<[UInt32]>([]), pingsFrom = Mutex<[String]>([])
        // The feature's registration, on each side: answer pings, collect pongs.
        for node in [ann, ben] {
            let router = node.node.router
            node.handle(Ping.self) { [weak router] ping, _, peer in
                guard let router, let peer else { return }
                if ping.isPong { pongs.withLock { $0.append(ping.number) }; return }
                pingsFrom.withLock { $0.append(peer.name) }
                router.send(Ping(number: ping.number, isPong: true), to: peer)
            }
        }
        try ann.start()
        try ben.start()
        defer { ann.stop(); ben.stop() }
        let deadline = Date().addingTimeInterval(5)
        while (ann.peers().isEmpty || ben.peers().isEmpty) && Date() < deadline { usleep(10_000) }
        ann.broadcast(Ping(number: 7, isPong: false))
        while pongs.withLock({ $0.isEmpty }) && Date() < deadline { usleep(10_000) }
        #expect(pingsFrom.withLock { $0 } == ["ann"])
        #expect(pongs.withLock { $0 } == [7])
        // A kind nobody registered (a later version's, say) is counted and ignored.
        struct Unknown: PacketKind {
            static let code: UInt8 = 241
            init() {}
            init(reading reader: inout ByteReader) throws(DecodeError) {}
            func write(to bytes: inout [UInt8]) {}
        }
        ann.broadcast(Unknown())
        while ben.statistics.dropped["type"] == nil && Date() < deadline { usleep(10_000) }
        #expect(ben.statistics.dropped["type"] == 1)
    }
}
