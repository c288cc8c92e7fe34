import Crypto
import Foundation

/// Sending (on the engine): broadcasts signed to everyone in range, direct packets sealed in the
/// peer's session and sent by its preferred live route.
extension Router {
    /// Sends a packet to everyone in range on every transport, or on `only` those (`kind`
    /// tells a broker where; presence's kinds say it themselves).
    package func broadcast<Kind: PacketKind>(_ packet: Kind, as given: BroadcastKind = .other, flags: FrameFlags = [],
                                            on only: [Transport]? = nil) {
        let targets = only ?? transports
        guard !targets.isEmpty, let bytes = frame(packet, flags: flags, ours: true) else { return }
        let kind: BroadcastKind = switch Kind.code {
        case KindTable.announce: .presence
        case KindTable.goodbye: .farewell
        case KindTable.query: .question
        default: given
        }
        broadcastFrame(bytes, as: kind, on: targets)
    }

    /// Sends one frame, made already, to everyone in range on `targets`.
    func broadcastFrame(_ bytes: [UInt8], as kind: BroadcastKind, on targets: [Transport]) {
        for transport in targets { transport.broadcast(bytes, as: kind) }
        count(bytes, copies: targets.count)
    }

    /// Sends a packet to one peer, by its preferred live route (the first transport in
    /// `transports` that still hears it). `everyRoute` sends it by each live route instead: for
    /// a packet sent again, whose first copy may have gone by a route that no longer works.
    /// `reply` is the route a packet being answered came by: used when it is one of the peer's
    /// own direct routes (an answer goes back the way that worked). True when a transport
    /// carried it out of this machine.
    @discardableResult
    package func send<Kind: PacketKind>(_ packet: Kind, to peer: Peer, everyRoute: Bool = false, reply: Route? = nil) -> Bool {
        guard let inner = try? packet.tagged() else { return false }
        let routes = reach.routes(of: peer)
        if let reply, routes.contains(reply) { return sendSealed(inner, to: peer, by: [reply]) }
        return sendSealed(inner, to: peer, by: everyRoute ? routes : Array(routes.prefix(1)))
    }

    /// Sends a payload of kind `code` as it is, sealed in the peer's session: for harnesses that
    /// speak the protocol byte by byte (the fuzzer's, whose payloads no kind would write).
    @discardableResult
    package func sendRaw(kind code: UInt8, body: [UInt8], to peer: Peer) -> Bool {
        sendSealed([code] + body, to: peer, by: Array(reach.routes(of: peer).prefix(1)))
    }


    /// Sends one frame by each of `routes`; true when any carried it.
    func send(_ bytes: [UInt8], by routes: [Route]) -> Bool {
        guard !routes.isEmpty else { return false }
        var carried = false
        for route in routes where transports.first(where: { $0.name == route.transport })?.send(bytes, to: route) == true { carried = true }
        count(bytes, copies: routes.count)
        return carried
    }

    /// The packet signed, with the next sequence number; nil once closed. A broadcast is
    /// remembered as `ours`: it comes back (multicast loopback, a broker's echo).
    func frame<Kind: PacketKind>(_ packet: Kind, flags: FrameFlags = [], ours broadcast: Bool = false) -> [UInt8]? {
        guard isOpen else { return nil }
        let timestamp = UInt64(engine.now * 1000)
        let sequence = nextSequence()
        if broadcast { gate.sent(sequence: sequence, timestamp: timestamp) }
        return try? Packet.encode(packet, signer: signer, timestamp: timestamp, sequence: sequence, flags: flags)
    }

    // MARK: Mail

    /// Whether mail can be left anywhere: a transport that holds it for whoever is away (a
    /// broker) is among ours.
    package var holdsMail: Bool { !keeping.isEmpty }

    /// `mail` for someone away: signed (no session can be made with someone who is not there),
    /// sealed in an envelope to the signed prekey `prekey` (which the mail itself is sealed to),
    /// and left on `topic` (`BrokerTopics`: the pair's, or the recipient's rendezvous) on every
    /// transport that holds mail. True when one took it (a broker that is down takes nothing).
    @discardableResult
    package func sendMail(_ mail: Mail, prekey: Data, topic: String) -> Bool {
        guard holdsMail, let bytes = frame(mail), let sealed = try? Envelope.seal(bytes, to: prekey, as: .signedPrekey) else { return false }
        return send(sealed, by: keeping.map { Route(transport: $0.name, address: topic) })
    }

    // MARK: Sessions

    /// `inner` (kind and payload) sealed for `peer` and sent by `routes`, or kept while a
    /// handshake makes the session. True when a sealed frame left this machine.
    func sendSealed(_ inner: [UInt8], to peer: Peer, by routes: [Route]) -> Bool {
        guard isOpen, !routes.isEmpty else { return false }
        if routes.contains(where: reach.isBroker) { post.talking(to: peer) }
        switch sessions.seal(inner, to: peer, now: engine.now) {
        case .older:
            drop("older seance")
            tellOlder(peer)
            return false
        case .sealed(let frame, let handshake):
            dispatch(handshake)
            return send(frame, by: routes)
        case .waiting(let handshake):
            // The frame goes as soon as the handshake answer comes: as good as sent when the
            // handshake left (now, or when it started), not when it could not (a broker down).
            return dispatch(handshake) || handshake.isEmpty
        }
    }

    /// Sends what the sessions produced: handshake messages by every route the peer has, sealed
    /// frames by the preferred one, an answer to a first message back the way it came (`answering`:
    /// its route). True when every one left this machine.
    @discardableResult
    func dispatch(_ outputs: [SessionOutput], answering: Route? = nil) -> Bool {
        guard !outputs.isEmpty else { return false }
        var carried = true
        for output in outputs {
            guard let peer = directory.peer(output.peer) else { continue }
            let routes: [Route]
            if output.isAnswer, let answering, let back = reach.route(of: peer, from: answering) {
                routes = [back]
            } else {
                let all = reach.routes(of: peer)
                routes = output.isHandshake ? all : Array(all.prefix(1))
            }
            // A handshake message names both keys: through a broker, sealed to the peer alone; a
            // first one goes where the peer surely listens (`BrokerPost.firstContact`).
            var plain = routes
            let broker = routes.filter(reach.isBroker)
            if !broker.isEmpty { post.talking(to: peer) }
            if output.isHandshake, !broker.isEmpty {
                plain = routes.filter { !reach.isBroker($0) }
                let first = !output.isAnswer && output.bytes.count > 80 && output.bytes[80] == 1
                let kept = broker.map { first ? post.firstContact(peer, on: $0) : $0 }
                let sealed = post.sealHandshake(output.bytes, to: peer)
                if sealed == nil || !send(sealed!, by: kept) { carried = false }
            }
            if !plain.isEmpty, !send(output.bytes, by: plain) { carried = false }
            if routes.isEmpty { carried = false }
        }
        deadlines.wake(at: sessions.nextDue)
        return carried
    }

    /// A peer that makes no sessions (an older seance): named to the user once.
    func tellOlder(_ peer: Peer) {
        guard sessions.tellOnce(olderSeance: peer.signingKey) else { return }
        onEvent(.olderSeance(peer))
    }
}
