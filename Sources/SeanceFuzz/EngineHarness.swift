import Accounts
import App
import Crypto
import Curses
import Foundation
import Nearby
import Rooms
import Runtime
import Shell
import Spectres
import Storage
import Transfers
import Wire

/// One shell online as the program goes online (presence, delivery, curses, spectres, rooms,
/// transfers, on a manual clock and an in-memory network), and a peer it lists with a session made: every
/// kind of the kind table reaches the shell's `handle` from there, a broadcast signed by the
/// peer, a direct kind sealed in their session, whatever its payload. Made once a process.
final class EngineHarness {
    let scheduler = ManualScheduler()
    let network = MemoryNetwork()
    let online: Online
    let peer: NearbyNode
    let peerKey: Curve25519.Signing.PrivateKey
    /// The shell, as the peer lists it.
    let shell: Peer
    /// Every kind number the table knows.
    static let kinds: [UInt8] = Array(1...KindTable.messages) + Array(KindTable.fileOffer...KindTable.fileChunkAck) + [KindTable.mail, KindTable.sessionFragments]

    init() throws {
        let directory = FileManager.default.temporaryDirectory.path + "/seance-fuzz-\(getpid())"
        try? FileManager.default.removeItem(atPath: directory)
        let data = DataDirectory(path: directory)
        try data.create()
        let database = try SeanceDatabase(path: directory + "/seance.sqlite", schema: .seance)
        let (profile, identity) = try ProfileStore(database: database, rounds: 1 << 10)
            .create(name: "target", password: "fuzz-harness", avatar: nil, gift: true, now: scheduler.now)
        let network = network
        online = Online(battery: Battery(override: 100), timing: PresenceTiming(interval: 1, jitter: 0, startupGap: 0.5)) { _ in
            [MemoryTransport(network: network, address: "target")]
        }
        let inbox = AsyncInbox()
        let curses = Curses(login: LoginSession(), inbox: inbox)
        let spectres = Spectres(curses: curses)
        online.add(curses)
        online.add(spectres)
        online.add(local: spectres)
        online.add(Rooms(inbox: inbox))
        online.add(Transfers(login: LoginSession(), inbox: inbox))
        var random = SeededRandom(seed: 1)
        try online.goOnline(as: (profile, identity), database: database, dataDirectory: data, wake: inbox.wake, scheduler: scheduler,
                            random: &random)
        peerKey = FuzzTarget.signer
        let engine = Engine(scheduler: scheduler)
        let peerKey = peerKey
        let peer = engine.sync {
            NearbyNode(transports: [MemoryTransport(network: network, address: "peer")], timing: PresenceTiming(interval: 1, jitter: 0),
                       identity: Identity(signing: peerKey, agreement: FuzzTarget.agreement),
                       announcement: Announcement(name: "peer", agreementKey: Data(repeating: 0, count: 32), plane: 4, avatar: .none,
                                                  unicastPort: 0, intervalMilliseconds: 0),
                       deadlines: Deadlines(engine: engine), random: SeededRandom(seed: 2)) { _ in }
        }
        self.peer = peer
        try peer.start()
        scheduler.advance(by: 1)
        guard let shell = engine.sync({ peer.presence.peer(identity.signingPublicKey) }) else { throw HarnessError.notHeard }
        self.shell = shell
        // A first direct packet makes the session every later one travels in.
        send(kind: KindTable.read, body: [])
        scheduler.advance(by: 1)
    }

    enum HarnessError: Error { case notHeard }

    /// A payload of `kind` from the peer, sealed in its session with the shell.
    private func send(kind: UInt8, body: [UInt8]) {
        let (router, shell) = (peer.router, shell)
        peer.engine.sync { _ = router.sendRaw(kind: kind, body: body, to: shell) }
    }

    /// One input: its first byte picks the kind, its second how long the clock then moves (in
    /// tenths of a second, up to 2.5 s, so timers run too), the rest is the payload.
    func run(_ bytes: [UInt8]) {
        guard bytes.count >= 2 else { return }
        let kind = Self.kinds[Int(bytes[0]) % Self.kinds.count]
        let body = Array(bytes.dropFirst(2).prefix(Wire.maximumDatagram - Wire.headerSize - Wire.signatureSize))
        // Broadcasts and mail travel signed, every other kind in the session.
        if KindTable.broadcasts.contains(kind) || KindTable.signedDirect.contains(kind) {
            let frame = try? Packet.encode(kind: kind, body: body, signer: peerKey, timestamp: UInt64(scheduler.now * 1000),
                                           sequence: UInt32.random(in: 1...UInt32.max))
            if let frame { network.inject(frame, from: "peer", by: "memory") }
        } else {
            send(kind: kind, body: body)
        }
        scheduler.advance(by: Double(bytes[1] % 26) / 10)
    }
}
