import Accounts
import Chat
import Curses
import Foundation
import Nearby
import Rooms
import Shell
import Spectres
import Terminal
import Wire

public enum WorldError: Error { case notInRange }

/// Shells on an in-memory network with a manual clock, each with the features chat brings
/// online (curses, spectres): for their tests, deterministic, without sockets or sleeping.
public final class ChatWorld: @unchecked Sendable {
    public final class Node {
        public let name: String
        public let profile: Profile
        public let identity: Identity
        public let engine: Engine
        public let service: NearbyService
        public let delivery: DeliveryService
        public let curses: Curses
        public let spectres: Spectres
        public let rooms = Rooms()
        public let rules = Rules()
        public let inbox = AsyncInbox()
        /// This node's plane (only tests change it).
        public final class PlaneCell: @unchecked Sendable { public var value: Plane; init(_ value: Plane) { self.value = value } }
        public let plane: PlaneCell
        public let database: SeanceDatabase

        init(_ name: String, plane: Plane, gift: Bool, world: ChatWorld) throws {
            self.name = name
            self.plane = PlaneCell(plane)
            database = try testDatabase(world.directory + "/\(name).sqlite")
            (profile, identity) = try ProfileStore(database: database, rounds: 1 << 10)
                .create(name: name, password: "correct horse", avatar: nil, gift: gift, now: world.scheduler.now)
            engine = Engine(scheduler: world.scheduler)
            service = NearbyService(transport: MemoryTransport(network: world.network, address: name),
                                    timing: PresenceTiming(interval: 1, jitter: 0, startupGap: 0.5), signer: identity.signing,
                                    announcement: Announcement(name: name, agreementKey: identity.agreementPublicKey, plane: plane.wireValue,
                                                               avatar: .none, unicastPort: 0, intervalMilliseconds: 0),
                                    engine: engine) { _ in }
            delivery = DeliveryService(store: MessageStore(database: database), identity: identity, myPlane: { .human }, rules: rules,
                                       engine: engine, clock: { world.scheduler.now }) { _ in }
            delivery.attach(service)
            curses = Curses(profiles: Profiles())
            spectres = Spectres(curses: curses)
            try goOnline(world)
        }

        /// Brings the features online, as chat does.
        public func goOnline(_ world: ChatWorld) throws {
            let plane = self.plane
            let context = OnlineContext(service: service, delivery: delivery, engine: engine, profile: profile, identity: identity,
                                        database: database, inbox: inbox, styler: Styler(.plain), rules: rules,
                                        myPlane: { plane.value }, random: SeededRandom(seed: world.seed))
            try curses.online(context)
            try spectres.online(context)
            try rooms.online(context)
        }

        /// As chat does when going offline.
        public func goOffline() {
            curses.offline()
            spectres.offline()
            rooms.offline()
            rules.clear()
        }

        public func notices() -> [String] { inbox.drainLines() }
    }

    let directory = temporaryDirectory("world")
    public let scheduler = ManualScheduler()
    public let network = MemoryNetwork()
    public private(set) var nodes: [Node] = []
    let seed: UInt64

    /// Shells named and placed as `specs` says (with the gift for names in `gifted`). Without
    /// `network`, no presence runs (no 50 ms tick): for simulating many hours of a feature alone.
    public init(_ specs: [(String, Plane)], gifted: Set<String> = [], seed: UInt64 = 5, network: Bool = true) throws {
        self.seed = seed
        for (name, plane) in specs { nodes.append(try Node(name, plane: plane, gift: gifted.contains(name), world: self)) }
        if network { for node in nodes { try node.service.start() } }
        step(0)
    }

    deinit {
        for node in nodes { node.service.stop() }
        removeDirectory(directory)
    }

    /// Moves the clock and lets every engine finish what that caused.
    public func step(_ seconds: Double) {
        scheduler.advance(by: seconds) { settle() }
        settle()
    }

    /// Lets every engine finish what it was handed (a packet can cause another, and so on).
    func settle() {
        for _ in 0..<4 { for node in nodes { node.engine.sync {} } }
    }

    /// A caster that skips its own checks: the packet, straight onto the network.
    public func forgeCast(from caster: Node, on target: Node, kind: CurseKind, minutes: UInt8 = 5) throws {
        guard let peer = caster.service.peer(target.identity.signingPublicKey) else { throw WorldError.notInRange }
        caster.service.send(CurseCast(target: target.identity.signingPublicKey, kind: kind, minutes: minutes,
                                      id: Data((0..<16).map { _ in UInt8.random(in: 0...255) })), to: peer)
        step(0)
    }
}

