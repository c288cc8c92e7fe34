import Crypto
import Foundation
import Nearby
import Storage
import Wire

/// The network layer as a test asks it from its own thread, the way the shell does: each
/// question one explicit visit to the engine.
package struct NetworkProbe: Sendable {
    package let node: NearbyNode
    package var engine: Engine { node.engine }

    package init(_ node: NearbyNode) { self.node = node }

    /// A node of its own on a new engine of `scheduler`'s (presence alone, no profile, no
    /// features): a peer a test plays, or a crowd's member.
    package init(transports: [Transport], timing: PresenceTiming, signer: Curve25519.Signing.PrivateKey = .init(),
                 agreement: Curve25519.KeyAgreement.PrivateKey = .init(), announcement: Announcement, ownAvatarPixels: Data? = nil,
                 scheduler: Scheduler = SystemScheduler(), random: SeededRandom = SeededRandom(),
                 floodLimits: FloodLimits.Settings = FloodLimits.Settings(), label: String = "seance.engine",
                 onEvent: @escaping @Sendable (PresenceEvent) -> Void = { _ in }) {
        let engine = Engine(label: label, scheduler: scheduler)
        node = engine.sync {
            NearbyNode(transports: transports, timing: timing, identity: Identity(signing: signer, agreement: agreement),
                       announcement: announcement, ownAvatarPixels: ownAvatarPixels, deadlines: Deadlines(engine: engine), random: random,
                       floodLimits: floodLimits, onEvent: onEvent)
        }
    }

    package func start() throws { try node.start() }
    package func stop() { node.stop() }

    package var publicKey: Data { node.router.myKey }
    package func peers() -> [Peer] { engine.sync { node.presence.peers() } }
    package func peer(_ key: Data) -> Peer? { engine.sync { node.presence.peer(key) } }
    package var statistics: NearbyStatistics { engine.sync { node.router.statistics } }
    package var sessionCount: Int { engine.sync { node.router.sessionCount } }
    package var blockedBeacons: Int { node.router.blockedBeacons }
    package func routeNames(of peer: Peer) -> [String] { engine.sync { node.router.reach.transportNames(of: peer) } }
    package func setPlane(_ plane: UInt8) { engine.sync { node.presence.setPlane(plane) } }
    package func avatarPixels(_ hash: Data) -> Data? { engine.sync { node.presence.avatars.pixels(hash) } }
    package func peekSealed(_ bytes: [UInt8]) -> (sender: Data, kind: UInt8, body: [UInt8])? { engine.sync { node.router.peekSealed(bytes) } }

    @discardableResult
    package func send<Kind: PacketKind>(_ packet: Kind, to peer: Peer) -> Bool { engine.sync { node.router.send(packet, to: peer) } }

    package func broadcast<Kind: PacketKind>(_ packet: Kind, as kind: BroadcastKind = .other) {
        engine.sync { node.router.broadcast(packet, as: kind) }
    }

    package func handle<Kind: PacketKind>(_ kind: Kind.Type, _ handler: @escaping @Sendable (Kind, _ sender: Data, Peer?) -> Void) {
        engine.sync { node.router.handle(kind, handler) }
    }
}

/// Delivery as a test asks it from its own thread, the way the shell does.
package struct DeliveryProbe: Sendable {
    package let delivery: Delivery
    package let engine: Engine

    @discardableResult
    package func send(_ text: String, in conversation: Conversation, more: Bool = false) throws -> ChatMessage {
        try engine.sync { try delivery.send(text, in: conversation, more: more) }
    }

    package func conversation(with peer: Peer) throws -> Conversation { try engine.sync { try delivery.conversation(with: peer) } }
    package var resentCount: Int { engine.sync { delivery.resentCount } }
    package var droppedCounts: [String: Int] { engine.sync { delivery.droppedCounts } }
    package var signedPrekey: SignedPrekey? { engine.sync { delivery.signedPrekey } }
    package func settle() { engine.sync { delivery.settle() } }
    package func waiting() -> [ConversationSummary] { engine.sync { delivery.waiting() } }
    package func shown(upTo number: Int64, in conversation: Conversation) { engine.sync { delivery.shown(upTo: number, in: conversation) } }
}
