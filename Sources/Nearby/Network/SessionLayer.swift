import Foundation

/// Direct packets in sessions (protocol version 3): the table of sessions (`SessionTable`, a
/// pure model) on the engine, sealing what goes out and opening what comes in, each checked
/// against the key the peer's signed announcement carries. What it produces to send, the
/// router sends (`Router.dispatch`).
///
/// Engine state: every method runs on the engine.
final class SessionLayer: Sendable {
    private struct State {
        var table: SessionTable
        /// Peers told of once as running an older seance, which makes no sessions.
        var toldOlder: Set<Data> = []
    }

    private let state: EngineBound<State>
    private let directory: PeerDirectory

    init(identity: Identity, timing: SessionTiming, directory: PeerDirectory, engine: Engine) {
        state = EngineBound(State(table: SessionTable(identity: identity, timing: timing)), engine: engine)
        self.directory = directory
    }

    enum Sealed {
        case sealed([UInt8], handshake: [SessionOutput])
        case waiting(handshake: [SessionOutput])
        /// The peer runs an older seance, which makes no sessions.
        case older
    }

    /// `inner` (kind and payload) sealed for `peer`, or kept while a handshake makes the session.
    func seal(_ inner: [UInt8], to peer: Peer, now: Double) -> Sealed {
        guard peer.announcement.speaksSessions else { return .older }
        let keys = SessionPeer(signingKey: peer.signingKey, agreementKey: peer.announcement.agreementKey)
        switch state.value.table.seal(inner, to: keys, now: now) {
        case .sealed(let frame, let handshake): return .sealed(frame, handshake: handshake)
        case .waiting(let handshake): return .waiting(handshake: handshake)
        }
    }

    enum Received {
        /// A handshake message answered (or finished): what to send.
        case answer([SessionOutput])
        /// A sealed frame opened: the direct packet it carried.
        case packet(Packet)
        /// Something for the sessions alone (an empty confirmation).
        case nothing
        case dropped(String)
    }

    /// A frame of version 3, a handshake message or a sealed frame, which came by `route`.
    func receive(_ bytes: [UInt8], from route: Route, now: Double) -> Received {
        switch bytes[5] {
        case KindTable.handshake:
            let frame: HandshakeFrame
            do {
                frame = try HandshakeFrame(decoding: bytes)
            } catch {
                return .dropped(error.counterName)
            }
            // Only a peer that announced itself gets an answer, checked against the key its
            // signed announcement carries.
            let present = directory.peer(frame.sender)
            let peer = present.flatMap { peer in
                peer.announcement.speaksSessions ? SessionPeer(signingKey: peer.signingKey, agreementKey: peer.announcement.agreementKey) : nil
            }
            // What a first message holds is its host's; one from the host the peer is heard at
            // may also cancel a handshake of ours that crossed it.
            let fromItsHost = present?.routes.contains { $0.transport == route.transport && $0.source.host == route.host } ?? false
            state.value.table.statistics.handshakeFrames += 1
            do {
                return .answer(try state.value.table.receive(frame, from: peer, source: Gate.source(of: route), fromItsHost: fromItsHost,
                                                             now: now))
            } catch {
                return .dropped(error.counterName)
            }
        case KindTable.sealed:
            do {
                let (sender, inner) = try state.value.table.open(bytes, now: now)
                // Kind 0: an empty frame that confirms the session.
                guard inner[0] != 0 else {
                    state.value.table.statistics.handshakeFrames += 1
                    return .nothing
                }
                return .packet(Packet(sealedKind: inner[0], sender: sender, body: Array(inner[1...])))
            } catch {
                return .dropped(error.counterName)
            }
        default:
            return .dropped("type")
        }
    }

    /// Handshake messages to send again, and what has lived too long forgotten.
    func tick(now: Double) -> [SessionOutput] { state.value.table.tick(now: now) }

    /// When `tick` next has something to do.
    var nextDue: Double { state.value.table.nextDue }

    /// A peer left: back, it will be a new process, perhaps, and a fresh handshake.
    func forget(_ key: Data) { state.value.table.forget(key) }

    /// True the first time an older seance's peer is to be named.
    func tellOnce(olderSeance key: Data) -> Bool { state.value.toldOlder.insert(key).inserted }

    var statistics: SessionStatistics { state.value.table.statistics }

    /// Sessions open now.
    var openSessions: Int { state.value.table.openSessions }

    /// What a sealed frame for us holds, read without accepting it: its sender and inner kind
    /// (tests that lose frames of one kind).
    func peek(_ bytes: [UInt8]) -> (sender: Data, kind: UInt8, body: [UInt8])? {
        state.value.table.peek(bytes).map { ($0.peer, $0.inner[0], Array($0.inner[1...])) }
    }
}

extension Router {
    /// What a sealed frame for this shell holds, read without accepting it (tests).
    package func peekSealed(_ bytes: [UInt8]) -> (sender: Data, kind: UInt8, body: [UInt8])? { sessions.peek(bytes) }

    /// Sessions open now (tests and `nearby stats`).
    package var sessionCount: Int { sessions.openSessions }
}
