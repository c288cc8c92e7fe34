import Foundation

/// Where a peer is reached: its direct routes on each transport that hears it live, the
/// preferred first (on a broker, the pair's topic this hour: `BrokerPost`), the names of those
/// transports, and the host a TCP connection reaches it at. Engine state: every method runs on
/// the engine.
package struct PeerReach: Sendable {
    let transports: [Transport]
    let timing: PresenceTiming
    let post: BrokerPost
    let engine: Engine

    /// The peer's direct routes, the preferred first.
    func routes(of peer: Peer) -> [Route] {
        live(peer).compactMap { route(of: peer, from: $0.source) }
    }

    /// The peer's direct route on the transport `source` is on, from where it was heard: on a
    /// broker, the pair's topic this hour (whatever topic it came by).
    func route(of peer: Peer, from source: Route) -> Route? {
        guard let transport = transports.first(where: { $0.name == source.transport }) else { return nil }
        if transport.keepsPresence { return post.liveRoute(on: transport.name, to: peer) }
        return transport.directRoute(from: source, port: peer.announcement.unicastPort, signingKey: peer.signingKey)
    }

    /// Whether `route` is a broker's (where a handshake message goes in an envelope).
    func isBroker(_ route: Route) -> Bool { transports.contains { $0.name == route.transport && $0.keepsPresence } }

    /// Where a TCP connection reaches the peer (its host on the LAN), if a transport it is heard
    /// on live has hosts: the preferred first.
    package func streamHost(of peer: Peer) -> String? {
        for route in live(peer) {
            if let host = transports.first(where: { $0.name == route.transport })?.streamHost(of: route.source) { return host }
        }
        return nil
    }

    /// The names of the transports a peer is heard on, the preferred first (what `nearby` shows:
    /// no route derived).
    package func transportNames(of peer: Peer) -> [String] {
        live(peer).map(\.source.transport).filter { name in transports.contains { $0.name == name } }
    }

    private func live(_ peer: Peer) -> [PeerRoute] {
        // One route (most peers): nothing to rank, and live or not it is the one to use. Asked
        // at every packet sent, ranking one made three arrays.
        guard peer.routes.count > 1 else { return peer.routes }
        return peer.liveRoutes(now: engine.now, timing: timing, preference: transports.map(\.name))
    }
}
