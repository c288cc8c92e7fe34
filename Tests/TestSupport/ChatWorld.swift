import Accounts
import Curses
import Foundation
import Nearby
import Rooms
import Shell
import Spectres
import Terminal
import Wire

public enum WorldError: Error { case notInRange }

/// Shells on an in-memory network with one manual clock, each online as the program goes
/// online (`Online`, with curses, spectres and rooms): for their tests, deterministic, without
/// sockets or sleeping. `step` moves the clock and runs until nothing is left to do.
public final class ChatWorld: @unchecked Sendable {
    public final class Node {
        public let name: String
        public let profile: Profile
        public let identity: Identity
        public let online: Online
        public let battery: Battery
        public let curses: Curses
        public let spectres: Spectres
        public let rooms = Rooms()
        public let inbox = AsyncInbox()
        public let database: SeanceDatabase
        let dataDirectory: DataDirectory

        init(_ name: String, plane: Plane, gift: Bool, world: ChatWorld) throws {
            self.name = name
            dataDirectory = DataDirectory(path: world.directory + "/\(name)")
            try dataDirectory.create()
            database = try testDatabase(world.directory + "/\(name).sqlite")
            (profile, identity) = try ProfileStore(database: database, rounds: 1 << 10)
                .create(name: name, password: "correct horse", avatar: nil, gift: gift, now: world.scheduler.now)
            battery = Battery(override: Self.level(of: plane))
            let network = world.network
            online = Online(battery: battery, timing: PresenceTiming(interval: 1, jitter: 0, startupGap: 0.5)) { _ in
                [MemoryTransport(network: network, address: name)]
            }
            curses = Curses(login: LoginSession())
            spectres = Spectres(curses: curses)
            online.add(curses)
            online.add(spectres)
            online.add(local: spectres)
            online.add(rooms)
        }

        /// A battery level on each plane.
        static func level(of plane: Plane) -> Int {
            switch plane {
            case .human: 100
            case .dying: 40
            case .hollow: 20
            case .undead: 8
            case .ghost: 3
            }
        }

        /// Online as the program is: engine, presence, delivery and every feature.
        public func goOnline(_ world: ChatWorld) throws {
            var random = SeededRandom(seed: world.seed)
            try online.goOnline(as: (profile, identity), database: database, dataDirectory: dataDirectory, inbox: inbox,
                                scheduler: world.scheduler, random: &random)
        }

        public func goOffline() { online.goOffline() }

        /// What is running while online.
        public var context: FeatureContext { online.context! }
        public var engine: Engine { context.engine }
        public var service: NearbyService { context.presence }
        public var delivery: DeliveryService { context.delivery }
        /// The rules as the shell's thread asks them (on the engine).
        public var rules: EngineRules { EngineRules(rules: context.rules) }

        /// This node's plane; set, it is announced as a battery change is.
        public var plane: Plane {
            get { battery.reading.plane }
            set {
                try? battery.setOverride(Self.level(of: newValue))
                online.batteryChanged()
            }
        }

        public func notices() -> [String] { inbox.drainLines() }
    }

    /// The rules of one node, each question asked on its engine.
    public struct EngineRules {
        let rules: Rules

        public func allowsSight(of peer: Peer?) -> Bool { rules.engine.sync { rules.allowsSight(of: peer) } }
        public func shownName(of key: Data) -> String? { rules.engine.sync { rules.shownName(of: key) } }
        public func outgoing(_ line: String) throws -> String { try rules.engine.sync { try rules.outgoing(line) } }
    }

    let directory = temporaryDirectory("world")
    public let scheduler = ManualScheduler()
    public let network = MemoryNetwork()
    public private(set) var nodes: [Node] = []
    let seed: UInt64

    /// Shells named and placed as `specs` says (with the gift for names in `gifted`), online.
    /// Without `network`, presence stops at once (no announcements, no alarm every second): for
    /// simulating many hours of a feature alone.
    public init(_ specs: [(String, Plane)], gifted: Set<String> = [], seed: UInt64 = 5, network: Bool = true) throws {
        self.seed = seed
        for (name, plane) in specs { nodes.append(try Node(name, plane: plane, gift: gifted.contains(name), world: self)) }
        for node in nodes {
            try node.goOnline(self)
            if !network { node.service.stop() }
        }
        step(0)
    }

    deinit {
        for node in nodes { node.goOffline() }
        removeDirectory(directory)
    }

    /// Moves the clock and runs everything that falls due, and all it causes, on every engine.
    public func step(_ seconds: Double) { scheduler.advance(by: seconds) }

    /// A caster that skips its own checks: the packet, straight onto the network.
    public func forgeCast(from caster: Node, on target: Node, kind: CurseKind, minutes: UInt8 = 5) throws {
        guard let peer = caster.service.peer(target.identity.signingPublicKey) else { throw WorldError.notInRange }
        caster.service.send(CurseCast(target: target.identity.signingPublicKey, kind: kind, minutes: minutes,
                                      id: Data((0..<16).map { _ in UInt8.random(in: 0...255) })), to: peer)
        step(0)
    }
}
