import Foundation

/// Presence over every transport, a kind owner like any feature: announces this profile (on
/// the LAN refreshed with jitter, its unchanged refreshes proved by a hash chain; through a
/// broker kept), fills the table of peers from announcements and goodbyes (`PeerDirectory`),
/// expires the silent, answers "who is there?", says goodbye on stop. Our own questions are
/// `Questions`', image avatars `Avatars'`.
///
/// Engine state: every method runs on the engine.
package final class Presence: Sendable {
    struct State {
        var schedule: AnnounceSchedule
        var announcement: Announcement
        var running = false
        var random: SeededRandom
        /// What the transports that keep presence (a broker) hold of us.
        var kept = KeptPresence()
        /// Whether the user was told that a clock is off (`PresenceEvent.clockOff`).
        var toldClock = false
        /// Our refresh chain (`RefreshChain`), and the announcement as last signed on the
        /// transports that refresh presence: while it stands, a refresh is the next link.
        var chain = RefreshChain()
        var lastSigned: Announcement?
        /// Proofs sent since our last signed announcement (`refresh`).
        var proofsSinceSigned = 0
        /// The answer to queries scheduled, if any (to whom); when the last one went.
        var answer: PendingAnswer?
        var lastAnswered = -Double.infinity
    }

    let router: Router
    let directory: PeerDirectory
    let deadlines: Deadlines
    package let timing: PresenceTiming
    let onEvent: @Sendable (PresenceEvent) -> Void
    let state: EngineBound<State>
    package let questions: Questions
    package let avatars: Avatars
    var engine: Engine { router.engine }

    /// - Parameters:
    ///   - announcement: what we announce; its interval, keys and version are filled in here.
    ///   - ownAvatarPixels: the 16x16 RGBA avatar to hand out when asked, if it is an image.
    ///   - onEvent: told (on the engine) of every arrival, change and departure.
    package init(router: Router, directory: PeerDirectory, deadlines: Deadlines, announcement: Announcement, agreementKey: Data,
                 ownAvatarPixels: Data?, random: SeededRandom, onEvent: @escaping @Sendable (PresenceEvent) -> Void) {
        self.router = router
        self.directory = directory
        self.deadlines = deadlines
        timing = router.timing
        self.onEvent = onEvent
        var first = announcement
        first.intervalMilliseconds = UInt32(timing.interval * 1000)
        first.agreementKey = agreementKey
        first.sessionVersion = SessionWire.version
        var random = random
        let questionsRandom = SeededRandom(seed: random.next())
        state = EngineBound(State(schedule: AnnounceSchedule(timing: timing, now: router.engine.now), announcement: first, random: random),
                            engine: router.engine)
        avatars = Avatars(router: router, directory: directory, ownPixels: ownAvatarPixels)
        questions = Questions(router: router, directory: directory, random: questionsRandom)
        router.handlePacket(Announcement.self) { [unowned self] announcement, packet, route in heard(.announce(announcement), in: packet, by: route) }
        router.handlePacket(Goodbye.self) { [unowned self] _, packet, route in heard(.goodbye, in: packet, by: route) }
        router.handlePacket(Query.self) { [unowned self] _, packet, reply in answer(packet.sender, reply: reply, now: engine.now) }
        router.listen { [unowned self] news in
            switch news {
            case .proof(let proof, let route): proved(proof, from: route)
            case .withdrawn(let route): withdrawn(route)
            case .oursElsewhere(let transport): heardOursElsewhere(by: transport)
            case .transport(let name, let change): transportChanged(name, change)
            }
        }
        deadlines.add("presence", next: { [unowned self] in nextDeadline }) { [unowned self] now in tick(now: now) }
    }

    /// Announcing from now on, with the LAN's unicast port in the announcement.
    package func start() {
        state.value.running = true
        state.value.announcement.unicastPort = router.directPort
        questions.start()
        deadlines.wake(at: engine.now)
    }

    /// Says goodbye; nothing is announced after it.
    package func stop() {
        guard state.value.running else { return }
        router.broadcast(Goodbye())
        state.value.running = false
    }

    /// This shell's signing key, as peers see it.
    package var publicKey: Data { router.myKey }
    /// What we announce now (mail carries it to whoever is away).
    package var announcement: Announcement { state.value.announcement }

    /// The present peer with this signing key.
    package func peer(_ key: Data) -> Peer? { directory.peer(key) }

    /// The peers heard from, newest state, by name.
    package func peers() -> [Peer] {
        Array(directory.table.peers.values)
            .sorted { ($0.name.lowercased(), $0.fingerprint) < ($1.name.lowercased(), $1.fingerprint) }
    }

    /// A new plane is announced at once.
    package func setPlane(_ plane: UInt8) {
        guard state.value.announcement.plane != plane else { return }
        state.value.announcement.plane = plane
        state.value.schedule.announceSoon(now: engine.now)
        deadlines.wake(at: engine.now)
    }

    /// A new signed prekey (mail's, `Prekeys`) is announced at once.
    package func setSignedPrekey(_ prekey: SignedPrekey) {
        guard state.value.announcement.signedPrekey != prekey else { return }
        state.value.announcement.signedPrekey = prekey
        state.value.schedule.announceSoon(now: engine.now)
        deadlines.wake(at: engine.now)
    }

    /// The earliest of the next announcement (refreshed, or kept by a broker) and the next expiry.
    private var nextDeadline: Double? {
        guard state.value.running else { return nil }
        return min(state.value.schedule.nextAt, state.value.kept.nextDue(router.keeping.isEmpty), directory.table.nextExpiry)
    }

    private func tick(now: Double) {
        // The interval grows with the crowd the LAN carries; the announcement says which, and
        // peers expire us by it (the next one comes that long after this one, jitter aside).
        let interval = timing.interval(amongPeers: directory.table.refreshedCount)
        let due = state.update { $0.schedule.isDue(now: now, interval: interval, using: &$0.random) }
        if due { state.value.announcement.intervalMilliseconds = UInt32(interval * 1000) }
        let events = directory.update { $0.expire(now: now) }
        if due { refresh() }
        publishKept(now: now)
        if due { questions.announced() }
        told(events)
    }

    // MARK: What is heard

    /// An announcement or a goodbye: the table changes, the transports' gate learns who is heard.
    /// Its own time counts (`FrameTime`): one older than its own expiry is no presence (a
    /// broker's copy older than its client would have published again, a replay), one from the
    /// future is dropped; on the LAN, a key not listed yet whose announcement is older than live
    /// is asked first, and listed when something newer of its own comes (`Questions.notLive`).
    private func heard(_ news: PresenceNews, in packet: Packet, by route: Route) {
        let now = engine.now, stamp = Double(packet.timestamp) / 1000
        let isKept = router.reach.isBroker(route)
        guard let heardAt = FrameTime.heard(stamp: stamp, now: now) else {
            if case .announce(let announcement) = news, !isKept { clockOff(announcement, of: packet.sender, offset: stamp - now) }
            return router.drop("from the future")
        }
        if case .announce(let announcement) = news {
            let interval = PresenceTable.interval(of: announcement)
            let lifetime = isKept ? timing.keptLifetime(ofInterval: interval) : timing.lifetime(ofInterval: interval)
            if heardAt + lifetime < now {
                // Heard live on the LAN, it is a peer whose clock is behind ours (or a replay).
                if !isKept { clockOff(announcement, of: packet.sender, offset: stamp - now) }
                return router.drop("stale")
            }
            let freshness = Freshness(timestamp: packet.timestamp, sequence: packet.sequence)
            if !isKept, now - stamp > PresenceTiming.liveness(ofInterval: interval), directory.peer(packet.sender) == nil,
               !questions.confirms(packet.sender, freshness) {
                let direct = router.transports.first { $0.name == route.transport }?.directRoute(
                    from: route, port: announcement.unicastPort, signingKey: packet.sender)
                questions.notLive(packet.sender, freshness, asking: direct, now: now)
                return router.drop("not live")
            }
        }
        let events = directory.update {
            $0.receive(news, in: packet, from: route, isKept: isKept, now: heardAt, said: FrameTime.said(stamp: stamp, now: now))
        }
        if case .announce = news, let peer = directory.peer(packet.sender) {
            // Refreshed by this transport just now (not a replay the table refused): until its
            // next refresh is due, its answers to others' queries there tell us nothing.
            if let heard = peer.routes.first(where: { $0.transport == route.transport && $0.lastSeen == heardAt }) {
                router.gate.accepted(peer.signingKey, on: route.transport, packet: packet, interval: heard.interval,
                                     isRefresh: !heard.isKept && !packet.flags.contains(.answer), now: now)
            }
            // Every announcement may prompt the avatar request again: the first can be refused
            // when it reaches the peer before our own announcement did.
            avatars.fetch(of: peer, now: now)
        }
        // A newcomer may expire before anything else is due.
        deadlines.wake(at: directory.table.nextExpiry)
        told(events)
    }

    /// One of the clocks is off (ours or the peer's): said once, naming the first peer heard so.
    private func clockOff(_ announcement: Announcement, of key: Data, offset: Double) {
        guard !state.value.toldClock else { return }
        state.value.toldClock = true
        onEvent(.clockOff(name: announcement.name, handle: PeerIdentity.handle(name: announcement.name, signingKey: key), offset: offset))
    }

    /// Tells what the table did; a peer that left is forgotten by the network (its answers to
    /// queries are read again, its sessions end) and the interval shrinks with the crowd.
    func told(_ events: [PresenceEvent]) {
        for event in events {
            switch event {
            case .left(let peer, _):
                state.value.schedule.shrink(to: timing.interval(amongPeers: directory.table.refreshedCount), now: engine.now)
                router.forget(peer.signingKey)
            case .restarted(let peer):
                router.forget(peer.signingKey)
            default:
                break
            }
        }
        events.forEach(onEvent)
    }

    /// The keys the user blocked: from now on every frame in their name is dropped on the
    /// transports' threads before any check, so they get no answer, handshake or
    /// acknowledgement; those present leave the table now, and their sessions with them.
    package func block(_ keys: Set<Data>) {
        router.block(keys)
        told(keys.compactMap { key in directory.update { $0.removeBlocked(key) } })
    }

    /// Another seance in our name, heard by `transport`: told once; our refreshes are proofs it
    /// cannot tell from its own, so a signed announcement tells it, and through a broker, where
    /// it took our presence topic, ours again, fresh.
    private func heardOursElsewhere(by transport: String) {
        onEvent(.alsoOnlineElsewhere(transport: transport))
        announce()
        if router.keeping.contains(where: { $0.name == transport }) { publishKept(now: engine.now, again: true) }
    }
}
