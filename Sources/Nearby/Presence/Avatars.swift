import Crypto
import Foundation

/// Image avatars, traded on request: an announcement names a picture by its hash, and the 16x16
/// thumbnail goes only to a peer that asks and announced itself, at the address it announced.
/// A kind owner like any feature.
///
/// Engine state: every method runs on the engine.
package final class Avatars: Sendable {
    struct State {
        var pixels: [Data: Data] = [:]
        /// Hashes asked for, and when.
        var requested: [Data: Double] = [:]
        /// When each peer was last sent our avatar: one answer per key per `answerGap`.
        var answered: [Data: Double] = [:]
    }

    let router: Router
    let directory: PeerDirectory
    /// Our own, and its hash, computed once: every request (a stranger can send many) is
    /// compared with it.
    let ownPixels: Data?, ownHash: Data?
    private let state: EngineBound<State>

    static let answerGap = 10.0
    static let retryGap = 1.0

    init(router: Router, directory: PeerDirectory, ownPixels: Data?) {
        self.router = router
        self.directory = directory
        self.ownPixels = ownPixels
        ownHash = ownPixels.map { Data(SHA256.hash(data: $0)) }
        state = EngineBound(State(), engine: router.engine)
        router.handlePacket(AvatarRequest.self) { [unowned self] request, packet, _ in answer(packet.sender, hash: request.hash) }
        router.handlePacket(AvatarImage.self) { [unowned self] image, _, _ in
            if state.value.requested[image.hash] != nil { state.value.pixels[image.hash] = image.pixels }
        }
    }

    /// The thumbnail of `hash`, once fetched.
    package func pixels(_ hash: Data) -> Data? { state.value.pixels[hash] }

    /// Our avatar goes only to a peer that announced itself, at the address it announced (not
    /// to the request's source, which can be forged), at most once per `answerGap`.
    private func answer(_ key: Data, hash: Data) {
        guard let ownPixels, ownHash == hash else { return }
        let now = router.engine.now
        guard let peer = directory.peer(key) else { return router.drop("avatar request") }
        if let last = state.value.answered[key], now - last < Self.answerGap { return router.drop("avatar request") }
        if state.value.answered.count >= directory.table.capacity * 2 {
            state.value.answered = state.value.answered.filter { now - $0.value < Self.answerGap }
        }
        state.value.answered[key] = now
        router.send(AvatarImage(hash: hash, pixels: ownPixels), to: peer)
    }

    /// Asks a peer for its image avatar, until it comes, at most once per `retryGap`.
    func fetch(of peer: Peer, now: Double) {
        guard case .image(let hash) = peer.announcement.avatar, state.value.pixels[hash] == nil else { return }
        if let asked = state.value.requested[hash], now - asked < Self.retryGap { return }
        if state.value.requested.count >= directory.table.capacity * 2 {
            // Keys come and go: keep only the pictures of peers still here.
            let present = Set(directory.table.peers.values.compactMap { peer -> Data? in
                if case .image(let hash) = peer.announcement.avatar { return hash }
                return nil
            })
            state.value.requested = state.value.requested.filter { present.contains($0.key) }
            state.value.pixels = state.value.pixels.filter { present.contains($0.key) }
        }
        state.value.requested[hash] = now
        router.send(AvatarRequest(hash: hash), to: peer)
    }
}
