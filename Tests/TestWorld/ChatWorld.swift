import Accounts
import Curses
import Foundation
import Nearby
import Rooms
import Shell
import Spectres
import Terminal
import Transfers
import Wire

package enum WorldError: Error { case notInRange }

/// One manual clock and in-memory networks for everything a test starts: time moves only by
/// `step`, which fires what falls due on every engine and runs until nothing is left to do
/// (`ManualScheduler`), however many hops a packet causes. The one harness of the tests that
/// run engines.
open class World {
    package let scheduler = ManualScheduler()
    /// The networks, by the name their transports carry (`memory`, or `lan` and `broker`).
    package let networks: [String: MemoryNetwork]
    /// The first network.
    package let network: MemoryNetwork

    /// `keeping`: the networks that keep presence, as a broker does.
    package init(networks names: [String] = ["memory"], keeping: Set<String> = []) {
        networks = Dictionary(uniqueKeysWithValues: names.map { ($0, MemoryNetwork(keepsPresence: keeping.contains($0))) })
        network = networks[names[0]]!
    }

    /// Moves the clock and runs everything that falls due, and all it causes, on every engine.
    package func step(_ seconds: Double) { scheduler.advance(by: seconds) }

    deinit { scheduler.cancelAll() }
}

/// Shells on the world's networks, each online as the program goes online (`Online`, with
/// curses, spectres and rooms): for their tests, deterministic, without sockets or sleeping.
package final class ChatWorld: World {
    package final class Node {
        package let name: String
        package let profile: Profile
        package let identity: Identity
        package let online: Online
        package let battery: Battery
        package let curses: Curses
        package let spectres: Spectres
        package let inbox = AsyncInbox()
        package let rooms: Rooms
        package let transfers: Transfers
        package let database: SeanceDatabase
        let dataDirectory: DataDirectory

        init(_ name: String, plane: Plane, gift: Bool, world: ChatWorld) throws {
            self.name = name
            dataDirectory = DataDirectory(path: world.directory + "/\(name)")
            try dataDirectory.create()
            database = try testDatabase(world.directory + "/\(name).sqlite")
            (profile, identity) = try ProfileStore(database: database, rounds: 1 << 10)
                .create(name: name, password: "correct horse", avatar: nil, gift: gift, now: world.scheduler.now)
            battery = Battery(override: Self.level(of: plane))
            let networks = world.transportNames.map { ($0, world.networks[$0]!) }
            online = Online(battery: battery, timing: PresenceTiming(interval: 1, jitter: 0, startupGap: 0.5),
                            sessionTiming: world.sessionTiming,
                            alsoReads: world.olderReaders.contains(name) ? [] : KindTable.announcedReads) { identity in
                networks.map { transport, network in MemoryTransport(network: network, address: name, name: transport, signingKey: identity.signingPublicKey) }
            }
            curses = Curses(login: LoginSession(), inbox: inbox)
            spectres = Spectres(curses: curses)
            rooms = Rooms(inbox: inbox)
            transfers = Transfers(login: LoginSession(), inbox: inbox)
            online.add(curses)
            online.add(spectres)
            online.add(local: spectres)
            online.add(rooms)
            online.add(transfers)
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
        package func goOnline(_ world: ChatWorld) throws {
            var random = SeededRandom(seed: world.seed)
            try online.goOnline(as: (profile, identity), database: database, dataDirectory: dataDirectory, wake: inbox.wake,
                                scheduler: world.scheduler, random: &random)
        }

        package func goOffline() { online.goOffline() }

        /// What is running while online.
        package var context: FeatureContext { online.context! }
        package var engine: Engine { context.engine }
        /// The network and delivery as the shell's thread asks them.
        package var service: NetworkProbe { NetworkProbe(online.node!) }
        package var delivery: DeliveryProbe { DeliveryProbe(delivery: context.delivery, engine: context.engine) }
        /// The rules as the shell's thread asks them (on the engine).
        package var rules: EngineRules { EngineRules(rules: context.rules) }

        /// This node's plane; set, it is announced as a battery change is.
        package var plane: Plane {
            get { battery.reading.plane }
            set {
                try? battery.setOverride(Self.level(of: newValue))
                online.batteryChanged()
            }
        }

        /// The lines told, as printed at the top level (advice spelled as typed there).
        package func notices() -> [String] { inbox.drainLines().map(Advice.plain) }
    }

    /// The rules of one node, each question asked on its engine.
    package struct EngineRules {
        let rules: Rules

        package func allowsSight(of peer: Peer?) -> Bool { rules.engine.sync { rules.allowsSight(of: peer) } }
        package func shownName(of key: Data) -> String? { rules.engine.sync { rules.shownName(of: key) } }
        package func outgoing(_ line: String) throws -> String { try rules.engine.sync { try rules.outgoing(line) } }
    }

    let directory = temporaryDirectory("world")
    package private(set) var nodes: [Node] = []

    /// What a datagram on the network carries: its kind, payload and sender, whether signed or
    /// sealed in a session (then read by its recipient, without accepting it). For tests that
    /// lose frames of one kind; nil for handshakes and what no shell online now can open.
    package var packets: @Sendable ([UInt8]) -> (code: UInt8, body: [UInt8], sender: Data)? {
        let services = nodes.compactMap { $0.online.node.map(NetworkProbe.init) }
        return { bytes in
            if let packet = try? Packet.decode(bytes) { return (packet.kind, packet.body, packet.sender) }
            guard bytes.count > 5, bytes[4] == SessionWire.version, bytes[5] == KindTable.sealed else { return nil }
            for service in services { if let opened = service.peekSealed(bytes) { return (opened.kind, opened.body, opened.sender) } }
            return nil
        }
    }

    let seed: UInt64
    /// The transports of every shell, the preferred first.
    let transportNames: [String]
    let sessionTiming: SessionTiming
    /// Shells that announce no kind read beyond the session protocol's, as an older seance.
    let olderReaders: Set<String>

    /// Shells named and placed as `specs` says (with the gift for names in `gifted`), online on
    /// a transport on each of `transports` (the preferred first). Without `network`, presence
    /// stops at once (no announcements, no expiries; the features keep the alarm): for
    /// simulating many hours of a feature alone. Shells in `olderReaders` read only what every
    /// seance of the session protocol reads (`KindTable.announcedReads` they do not).
    package init(_ specs: [(String, Plane)], gifted: Set<String> = [], seed: UInt64 = 5, network: Bool = true,
                transports: [String] = ["memory"], keeping: Set<String> = [], sessionTiming: SessionTiming = SessionTiming(),
                olderReaders: Set<String> = []) throws {
        self.seed = seed
        self.sessionTiming = sessionTiming
        self.olderReaders = olderReaders
        transportNames = transports
        super.init(networks: transports, keeping: keeping)
        for (name, plane) in specs { nodes.append(try Node(name, plane: plane, gift: gifted.contains(name), world: self)) }
        for node in nodes {
            try node.goOnline(self)
            if !network { node.online.node!.silence() }
        }
        step(0)
    }

    deinit {
        for node in nodes { node.goOffline() }
        removeDirectory(directory)
    }

    /// A caster that skips its own checks: the packet, straight onto the network.
    /// `id`: the casting's (a new one when not given; the same again is a replay).
    package func forgeCast(from caster: Node, on target: Node, kind: CurseKind, minutes: UInt8 = 5, id: Data? = nil) throws {
        guard let peer = caster.service.peer(target.identity.signingPublicKey) else { throw WorldError.notInRange }
        caster.service.send(CurseCast(target: target.identity.signingPublicKey, kind: kind, minutes: minutes,
                                      id: id ?? Data((0..<16).map { _ in UInt8.random(in: 0...255) })), to: peer)
        step(0)
    }
}
