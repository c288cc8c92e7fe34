import Crypto
import Foundation

/// Presence's own kinds, as the engine handles them: announcements and goodbyes fill the
/// table, a query is answered, avatars are traded.
extension NearbyService {
    func registerPresenceKinds() {
        handlePacket(Announcement.self) { [unowned self] announcement, packet, route in heard(.announce(announcement), in: packet, by: route) }
        handlePacket(Goodbye.self) { [unowned self] _, packet, route in heard(.goodbye, in: packet, by: route) }
        handlePacket(Query.self) { [unowned self] _, packet, reply in answerQuery(from: packet.sender, reply: reply, now: engine.now) }
        handlePacket(AvatarRequest.self) { [unowned self] request, packet, _ in answerAvatarRequest(from: packet.sender, hash: request.hash) }
        handlePacket(AvatarImage.self) { [unowned self] image, _, _ in
            if state.value.requested[image.hash] != nil { state.value.avatars[image.hash] = image.pixels }
        }
    }

    /// An announcement or a goodbye: the table changes, the transports' gate learns who is heard.
    /// Its own time counts (`FrameTime`): one older than its own expiry is no presence (a
    /// broker's stale retained message, a replay), one from the future is dropped.
    private func heard(_ news: PresenceNews, in packet: Packet, by route: Route) {
        let now = engine.now, stamp = Double(packet.timestamp) / 1000
        let isKept = keeping.contains { $0.name == route.transport }
        guard let heardAt = FrameTime.heard(stamp: stamp, now: now) else {
            if case .announce(let announcement) = news, !isKept { clockOff(announcement, of: packet.sender, offset: stamp - now) }
            return drop("from the future")
        }
        if case .announce(let announcement) = news, heardAt + timing.lifetime(ofInterval: PresenceTable.interval(of: announcement)) < now {
            // Heard live on the LAN, it is a peer whose clock is behind ours (or a replay).
            if !isKept { clockOff(announcement, of: packet.sender, offset: stamp - now) }
            return drop("stale")
        }
        let events = state.value.table.receive(news, in: packet, from: route, isKept: isKept, now: heardAt,
                                               said: FrameTime.said(stamp: stamp, now: now))
        if case .announce = news, let peer = state.value.table.peer(packet.sender) {
            // Refreshed by this transport just now (not a replay the table refused): until its
            // next refresh is due, its answers to others' queries there tell us nothing.
            if let heard = peer.routes.first(where: { $0.transport == route.transport && $0.lastSeen == heardAt }) {
                gate.accepted(peer.signingKey, on: route.transport, packet: packet, interval: heard.interval,
                              isRefresh: !heard.isKept && !packet.flags.contains(.answer), now: now)
            }
            // Every announcement may prompt the avatar request again: the first can be refused
            // when it reaches the peer before our own announcement did.
            fetchAvatar(of: peer, now: now)
        }
        for event in events { left(event) }
        // A newcomer may expire before anything else is due.
        wake(at: state.value.table.nextExpiry)
        events.forEach(onEvent)
    }

    /// One of the clocks is off (ours or the peer's): said once, naming the first peer heard so.
    private func clockOff(_ announcement: Announcement, of key: Data, offset: Double) {
        guard !state.value.toldClock else { return }
        state.value.toldClock = true
        onEvent(.clockOff(name: announcement.name, handle: PeerIdentity.handle(name: announcement.name, signingKey: key), offset: offset))
    }

    /// A peer that left is no longer heard (its answers to queries are read again).
    func left(_ event: PresenceEvent) {
        guard case .left(let peer, _) = event else { return }
        let now = engine.now
        state.value.schedule.shrink(to: timing.interval(amongPeers: state.value.table.refreshedCount), now: now)
        gate.forget(peer.signingKey)
        // Back, it will be a new process, perhaps: a fresh handshake.
        state.value.sessions.forget(peer.signingKey)
    }

    /// The keys the user blocked (on the engine): from now on every frame in their name is
    /// dropped on the transports' threads before any check, so they get no answer, handshake
    /// or acknowledgement; those present leave the table now, and their sessions with them.
    package func block(_ keys: Set<Data>) {
        gate.block(keys)
        for key in keys {
            guard let event = state.value.table.removeBlocked(key) else { continue }
            left(event)
            onEvent(event)
        }
    }

    /// Room beacons dropped so far because their signer is blocked (from any thread).
    package var blockedBeacons: Int { gate.blockedBeacons }

    /// Our announcement on the transports that refresh presence (the LAN), signed, with the
    /// last link of our refresh chain revealed; those that keep it have theirs from
    /// `publishKept`.
    func announce(as flags: FrameFlags = []) {
        guard !refreshing.isEmpty else { return }
        send(lanAnnouncement(), flags: flags, on: refreshing)
    }

    /// Our announcement as the LAN carries it: with our refresh chain's last link revealed,
    /// which the next proof follows. It stands from now on: until it changes, a refresh is a
    /// proof.
    func lanAnnouncement() -> Announcement {
        state.value.lastSigned = state.value.announcement
        state.value.proofsSinceSigned = 0
        var announcement = state.value.announcement
        announcement.refreshChain = state.value.chain.head
        return announcement
    }

    /// A refresh on the LAN: the next link of our chain when our announcement is the one last
    /// signed there (past the start-up's two), unsigned, some 80 bytes that cost a receiver a
    /// hash; else — it changed, the chain is spent (a new one then), or `proofsPerSignature`
    /// proofs went since — the announcement, signed. The signed one now and then is what lets
    /// a receiver that lost track of us (our signed announcement lost, or proofs enough to
    /// expire us) list us again without asking, as every signed refresh did.
    func refresh() {
        guard !refreshing.isEmpty else { return }
        if state.value.schedule.isPastStartUp, state.value.lastSigned == state.value.announcement,
           state.value.proofsSinceSigned < Self.proofsPerSignature {
            if let link = state.value.chain.next() {
                state.value.proofsSinceSigned += 1
                let proof = RefreshProof(sender: myKey, unicastPort: state.value.announcement.unicastPort, link: link)
                return broadcastFrame(proof.encoded(), as: .presence, on: refreshing)
            }
            state.value.chain = RefreshChain()
        }
        announce()
    }

    /// Unchanged refreshes sent as proofs between two signed ones: three in four refreshes cost
    /// a hash instead of a signature check, and whoever lost track of us lists us again within
    /// four of our intervals (a peer expires after 3.5 of them without a refresh).
    static let proofsPerSignature = 3

    /// A refresh proof of someone's, on the engine: a route refreshed (its answers to others'
    /// queries tell us nothing until its next refresh is due), or counted and dropped. One we
    /// cannot check (we lost track of its sender: not heard, or too many refreshes missed)
    /// makes us ask its sender who it is, directly, a few a minute at most (past our first
    /// seconds online, when the crowd's answers come anyway): its answer is signed.
    func proved(_ proof: RefreshProof, from route: Route) {
        guard refreshing.contains(where: { $0.name == route.transport }) else { return drop("malformed") }
        let now = engine.now
        switch state.value.table.proved(proof.link, of: proof.sender, by: route, now: now) {
        case .refreshed(let interval):
            state.value.statistics.received += 1
            state.value.statistics.proved += 1
            gate.proved(proof.sender, on: route.transport, interval: interval, now: now)
        case .repeated: drop("refresh proof: repeated")
        case .forged: drop("refresh proof: forged")
        case .untracked:
            guard let direct = transports.first(where: { $0.name == route.transport })?.directRoute(
                    from: route, port: proof.unicastPort, signingKey: proof.sender) else { return drop("refresh proof: untracked") }
            if let provers = state.value.unknownProvers {
                // Our first seconds online: its answer to our query is likely on its way; asked
                // when they end if it has not come.
                if provers.count < Self.unknownProversKept { state.value.unknownProvers?[proof.sender] = direct }
                return drop("refresh proof: untracked")
            }
            guard state.update({ $0.askingLost.take(now: now) }), let bytes = frame(Query()) else { return drop("refresh proof: untracked") }
            _ = send(bytes, by: [direct])
        }
    }

    /// The most senders of unchecked proofs remembered in our first seconds online.
    static let unknownProversKept = 64

    /// Our first seconds online are over: whoever sent a proof we could not check then and has
    /// not answered since is asked now, directly, within the questions' budget; more of them
    /// than that budget means our query, not their answers, was lost (mDNS asks again, RFC 6762
    /// §5.2): we ask everyone once more. The rest list themselves at their next signed refresh.
    func askUnknownProvers() {
        guard state.value.running, let provers = state.value.unknownProvers else { return }
        state.value.unknownProvers = nil
        let now = engine.now
        let unknown = provers.filter { state.value.table.peer($0.key) == nil }
        if unknown.count > Int(Self.lostAskBurst) { return send(Query()) }
        for route in unknown.values {
            guard state.update({ $0.askingLost.take(now: now) }), let bytes = frame(Query()) else { return }
            _ = send(bytes, by: [route])
        }
    }

    /// Publishes our announcement on the transports that keep presence (a broker) when what it
    /// says changed, when `again` (they lost it), and once a `KeptPresence.interval` otherwise:
    /// never with the LAN's refreshes. It advertises that interval, by which others expire it.
    func publishKept(now: Double, again: Bool = false) {
        guard !keeping.isEmpty, state.value.running else { return }
        var announcement = state.value.announcement
        announcement.intervalMilliseconds = UInt32(KeptPresence.interval * 1000)
        guard again || state.value.kept.isDue(announcement, now: now) else { return }
        state.value.kept.published(announcement, at: now)
        send(announcement, on: keeping)
    }

    /// A transport that keeps presence withdrew what stood for someone (an empty datagram on
    /// their presence route: a goodbye, or a will). Ours, while we are here, is published again
    /// (at most once a second: anyone can publish an empty message anywhere); another's takes
    /// that route away, and with its last route the peer.
    func withdrawn(_ route: Route) {
        guard keeping.contains(where: { $0.name == route.transport }) else { return drop("malformed") }
        let now = engine.now
        if route.address == PeerIdentity.longFingerprint(of: myKey) {
            guard now - state.value.kept.lastWithdrawn >= 1 else { return }
            state.value.kept.lastWithdrawn = now
            return publishKept(now: now, again: true)
        }
        let events = state.value.table.withdraw(route)
        for event in events { left(event) }
        events.forEach(onEvent)
    }

    /// A transport came back (or went): told above. A broker back after a loss has lost what it
    /// held of us if its will went out meanwhile, and others may have left without our hearing:
    /// ours is published again, fresh, and whoever it does not hand again within
    /// `KeptPresence.resync` is taken as gone.
    func transportChanged(_ name: String, _ change: TransportState) {
        if change == .up, keeping.contains(where: { $0.name == name }) {
            let now = engine.now
            publishKept(now: now, again: true)
            engine.after(KeptPresence.resync) { [weak self] in
                guard let self, state.value.running else { return }
                let events = state.value.table.withdrawUnconfirmed(on: name, since: now)
                for event in events { left(event) }
                events.forEach(onEvent)
            }
        }
        onEvent(.transport(name, change))
    }

    /// The query's answer range in a small group (`PresenceTiming.answerWindow` widens it with
    /// the crowd), and the least time between two of our answers: many queries at once (a crowd
    /// arriving, or a flood) cost one announcement each quarter second, or each answer window
    /// when that is longer.
    package static let answerDelay = PresenceTiming.answerWindow(amongPeers: 0)
    static let answerGap = 0.25

    /// Someone asked who is there: our announcement goes to them after a random delay in the
    /// answer window (20–120 ms in a small group: a crowd does not answer at once), unless an
    /// answer is already on its way, which then goes to them too. It goes to each asker that
    /// announced itself, at its address, so that a crowd's answers to a newcomer cost the
    /// others nothing (multicast, each arrival brought every member the whole crowd's answers:
    /// N² datagrams on the link); to everyone when an asker is unknown or many asked at once
    /// (newcomers arriving together then share one answer). The gap runs from our last answer
    /// only: a refresh just sent went before the newcomer listened (it asked since), so holding
    /// the answer back for it made one peer in a crowd of 50 answer up to 250 ms late.
    private func answerQuery(from asker: Data, reply: Route, now: Double) {
        let direct = state.value.table.peer(asker) != nil && refreshing.contains { $0.name == reply.transport }
        guard state.value.answer == nil else { return state.value.answer!.add(direct ? reply : nil) }
        state.value.answer = PendingAnswer()
        state.value.answer!.add(direct ? reply : nil)
        let window = PresenceTiming.answerWindow(amongPeers: state.value.table.refreshedCount)
        let earliest = state.value.lastAnswered + max(Self.answerGap, window.upperBound) - now
        let delay = max(state.update { Double.random(in: window, using: &$0.random) }, earliest)
        engine.after(delay) { [self] in
            guard let answer = state.value.answer else { return }
            state.value.answer = nil
            state.value.lastAnswered = engine.now
            guard let routes = answer.routes else { return announce(as: .answer) }
            if let bytes = frame(lanAnnouncement(), flags: .answer, ours: true) { _ = send(bytes, by: routes) }
        }
    }

    static let avatarAnswerGap = 10.0

    /// Our avatar goes only to a peer that announced itself, at the address it announced (not
    /// to the request's source, which can be forged), at most once per `avatarAnswerGap`.
    private func answerAvatarRequest(from key: Data, hash: Data) {
        guard let ownAvatar, ownAvatarHash == hash else { return }
        let now = engine.now
        guard let peer = state.value.table.peer(key) else { return drop("avatar request") }
        if let last = state.value.avatarAnswered[key], now - last < Self.avatarAnswerGap { return drop("avatar request") }
        if state.value.avatarAnswered.count >= state.value.table.capacity * 2 {
            state.value.avatarAnswered = state.value.avatarAnswered.filter { now - $0.value < Self.avatarAnswerGap }
        }
        state.value.avatarAnswered[key] = now
        send(AvatarImage(hash: hash, pixels: ownAvatar), to: peer)
    }

    static let avatarRetryGap = 1.0

    /// Asks a peer for its image avatar, until it comes, at most once per `avatarRetryGap`.
    private func fetchAvatar(of peer: Peer, now: Double) {
        guard case .image(let hash) = peer.announcement.avatar, state.value.avatars[hash] == nil else { return }
        if let asked = state.value.requested[hash], now - asked < Self.avatarRetryGap { return }
        if state.value.requested.count >= state.value.table.capacity * 2 {
            // Keys come and go: keep only the pictures of peers still here.
            let present = Set(state.value.table.peers.values.compactMap { peer -> Data? in
                if case .image(let hash) = peer.announcement.avatar { return hash }
                return nil
            })
            state.value.requested = state.value.requested.filter { present.contains($0.key) }
            state.value.avatars = state.value.avatars.filter { present.contains($0.key) }
        }
        state.value.requested[hash] = now
        send(AvatarRequest(hash: hash), to: peer)
    }
}

/// What the transports that keep presence (a broker) hold of us: published when it changes,
/// and once an `interval` besides, so that its age tells a present peer from a replay of one
/// that left (a thousand profiles on a broker publish a few an hour where the LAN's refreshes
/// would be 200 a second).
struct KeptPresence {
    /// How often a kept announcement is published when nothing changes, as it advertises.
    static let interval = PresenceTable.maximumInterval
    /// After a reconnection, how long the broker has to hand every presence it keeps again.
    static let resync = 10.0

    private var published: Announcement?
    private var publishedAt = -Double.infinity
    /// When ours was last withdrawn by someone (published again at most once a second).
    var lastWithdrawn = -Double.infinity

    func isDue(_ announcement: Announcement, now: Double) -> Bool {
        announcement != published || now >= publishedAt + Self.interval
    }

    mutating func published(_ announcement: Announcement, at now: Double) {
        published = announcement
        publishedAt = now
    }

    /// When the next publication falls due with nothing changed (never without such transports).
    func nextDue(_ none: Bool) -> Double { none ? .infinity : publishedAt + Self.interval }
}

/// An answer to queries waiting for its moment: the routes of those who asked, or nil to answer
/// everyone (one asker unknown, or more than `maximumRoutes`).
struct PendingAnswer {
    static let maximumRoutes = 8
    private(set) var routes: [Route]? = []

    mutating func add(_ route: Route?) {
        guard let route, var list = routes, list.count < Self.maximumRoutes else { return routes = nil }
        if !list.contains(route) { list.append(route) }
        routes = list
    }
}
