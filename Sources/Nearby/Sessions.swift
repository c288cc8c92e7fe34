import Foundation

/// Direct packets in sessions (protocol version 3): what the engine sends through the session
/// table and what it opens. Each direct kind's payload travels sealed under the pair's Noise
/// session, made on demand; broadcasts stay signed (`NearbyService.send(_:as:flags:)`).
extension NearbyService {
    /// On the engine: `inner` (kind and payload) sealed for `peer` and sent by `routes`, or kept
    /// while a handshake makes the session. True when a sealed frame left this machine.
    func sendSealed(_ inner: [UInt8], to peer: Peer, by routes: [Route]) -> Bool {
        guard state.value.running, !routes.isEmpty else { return false }
        guard peer.announcement.speaksSessions else {
            drop("older seance")
            tellOlder(peer)
            return false
        }
        let keys = SessionPeer(signingKey: peer.signingKey, agreementKey: peer.announcement.agreementKey)
        switch state.value.sessions.seal(inner, to: keys, now: engine.now) {
        case .sealed(let frame, let handshake):
            dispatch(handshake)
            return send(frame, by: routes)
        case .waiting(let handshake):
            // The frame goes as soon as the handshake answer comes: as good as sent when the
            // handshake left (now, or when it started), not when it could not (a broker down).
            return dispatch(handshake) || handshake.isEmpty
        }
    }

    /// Sends what the session table produced: handshake messages by every route the peer has,
    /// sealed frames by the preferred one. True when every one left this machine.
    @discardableResult
    func dispatch(_ outputs: [SessionOutput]) -> Bool {
        guard !outputs.isEmpty else { return false }
        var carried = true
        for output in outputs {
            guard let peer = state.value.table.peer(output.peer) else { continue }
            let routes = directRoutes(of: peer)
            if !send(output.bytes, by: output.isHandshake ? routes : Array(routes.prefix(1))) { carried = false }
        }
        wake(at: state.value.sessions.nextDue)
        return carried
    }

    /// On the engine: a frame of version 3, a handshake message or a sealed frame.
    func receiveSession(_ bytes: [UInt8], from route: Route) {
        switch bytes[5] {
        case KindTable.handshake:
            let frame: HandshakeFrame
            do {
                frame = try HandshakeFrame(decoding: bytes)
            } catch {
                return drop(error.counterName)
            }
            // Only a peer that announced itself gets an answer, checked against the key its
            // signed announcement carries.
            let peer = state.value.table.peer(frame.sender).flatMap { peer in
                peer.announcement.speaksSessions ? SessionPeer(signingKey: peer.signingKey, agreementKey: peer.announcement.agreementKey) : nil
            }
            state.value.sessions.statistics.handshakeFrames += 1
            do {
                dispatch(try state.value.sessions.receive(frame, from: peer, now: engine.now))
            } catch {
                drop(error.counterName)
            }
        case KindTable.sealed:
            do {
                let (sender, inner) = try state.value.sessions.open(bytes, now: engine.now)
                // Kind 0: an empty frame that confirms the session.
                guard inner[0] != 0 else { return state.value.sessions.statistics.handshakeFrames += 1 }
                handle(Packet(sealedKind: inner[0], sender: sender, body: Array(inner[1...])), from: route)
            } catch {
                drop(error.counterName)
            }
        default:
            drop("type")
        }
    }

    /// A direct packet signed, as an older seance sends them: counted and dropped unchecked;
    /// a present sender is named to the user once.
    func receivedOlder(from sender: Data) {
        drop("older seance")
        if let peer = state.value.table.peer(sender) { tellOlder(peer) }
    }

    private func tellOlder(_ peer: Peer) {
        guard state.value.toldOlder.insert(peer.signingKey).inserted else { return }
        onEvent(.olderSeance(peer))
    }

    /// What a sealed frame for this shell holds, read without accepting it: its sender and
    /// inner kind (tests that lose frames of one kind).
    package func peekSealed(_ bytes: [UInt8]) -> (sender: Data, kind: UInt8, body: [UInt8])? {
        engine.sync { state.value.sessions.peek(bytes).map { ($0.peer, $0.inner[0], Array($0.inner[1...])) } }
    }

    /// Sessions open now (tests and `nearby stats`).
    package var sessionCount: Int { engine.sync { state.value.sessions.openSessions } }
}
