import Foundation

/// How presence is kept up: on the LAN a signed announcement and then the links of a refresh
/// chain, through a broker an announcement it keeps (on the engine).
extension Presence {
    /// Our announcement on the transports that refresh presence (the LAN), signed, with the
    /// last link of our refresh chain revealed; those that keep it have theirs from
    /// `publishKept`.
    func announce(as flags: FrameFlags = []) {
        guard !router.refreshing.isEmpty else { return }
        router.broadcast(lanAnnouncement(), flags: flags, on: router.refreshing)
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
        guard !router.refreshing.isEmpty else { return }
        if state.value.schedule.isPastStartUp, state.value.lastSigned == state.value.announcement,
           state.value.proofsSinceSigned < Self.proofsPerSignature {
            if let link = state.value.chain.next() {
                state.value.proofsSinceSigned += 1
                let proof = RefreshProof(sender: router.myKey, unicastPort: state.value.announcement.unicastPort, link: link)
                return router.broadcastFrame(proof.encoded(), as: .presence, on: router.refreshing)
            }
            state.value.chain = RefreshChain()
        }
        announce()
    }

    /// Unchanged refreshes sent as proofs between two signed ones: three in four refreshes cost
    /// a hash instead of a signature check, and whoever lost track of us lists us again within
    /// four of our intervals (a peer expires after 3.5 of them without a refresh).
    static let proofsPerSignature = 3

    /// A refresh proof of someone's: a route refreshed (its answers to others' queries tell us
    /// nothing until its next refresh is due), or counted and dropped. One we cannot check (we
    /// lost track of its sender: not heard, or too many refreshes missed) makes us ask its
    /// sender who it is (`Questions.untracked`): its answer is signed.
    func proved(_ proof: RefreshProof, from route: Route) {
        guard router.refreshing.contains(where: { $0.name == route.transport }) else { return router.drop("malformed") }
        let now = engine.now
        switch directory.update({ $0.proved(proof.link, of: proof.sender, by: route, now: now) }) {
        case .refreshed(let interval):
            router.countProved()
            router.gate.proved(proof.sender, on: route.transport, interval: interval, now: now)
        case .repeated: router.drop("refresh proof: repeated")
        case .forged: router.drop("refresh proof: forged")
        case .untracked:
            guard let direct = router.transports.first(where: { $0.name == route.transport })?.directRoute(
                    from: route, port: proof.unicastPort, signingKey: proof.sender),
                  questions.untracked(proof.sender, at: direct, now: now) else { return router.drop("refresh proof: untracked") }
        }
    }

    /// Publishes our announcement on the transports that keep presence (a broker) when what it
    /// says changed, when `again` (they lost it), and once a `KeptPresence.interval` otherwise:
    /// never with the LAN's refreshes. It advertises that interval, by which others expire it.
    func publishKept(now: Double, again: Bool = false) {
        guard !router.keeping.isEmpty, state.value.running else { return }
        var announcement = state.value.announcement
        announcement.intervalMilliseconds = UInt32(KeptPresence.interval * 1000)
        guard again || state.value.kept.isDue(announcement, now: now) else { return }
        state.value.kept.published(announcement, at: now)
        router.broadcast(announcement, on: router.keeping)
    }

    /// A transport that keeps presence withdrew what stood for someone (an empty datagram on
    /// their presence route: a goodbye, or a will). Ours, while we are here, is published again
    /// (at most once a second: anyone can publish an empty message anywhere); another's takes
    /// that route away, and with its last route the peer.
    func withdrawn(_ route: Route) {
        guard router.reach.isBroker(route) else { return router.drop("malformed") }
        let now = engine.now
        if route.address == PeerIdentity.longFingerprint(of: router.myKey) {
            guard now - state.value.kept.lastWithdrawn >= 1 else { return }
            state.value.kept.lastWithdrawn = now
            return publishKept(now: now, again: true)
        }
        told(directory.update { $0.withdraw(route) })
    }

    /// A transport came back (or went): told above. A broker back after a loss has lost what it
    /// held of us if its will went out meanwhile, and others may have left without our hearing:
    /// ours is published again, fresh, and whoever it does not hand again within
    /// `KeptPresence.resync` is taken as gone.
    func transportChanged(_ name: String, _ change: TransportState) {
        if change == .up, router.keeping.contains(where: { $0.name == name }) {
            let now = engine.now
            publishKept(now: now, again: true)
            engine.after(KeptPresence.resync) { [weak self] in
                guard let self, state.value.running else { return }
                told(directory.update { $0.withdrawUnconfirmed(on: name, since: now) })
            }
        }
        onEvent(.transport(name, change))
    }
}

/// What the transports that keep presence (a broker) hold of us: published when it changes,
/// and once an `interval` besides, so that its age tells a present peer from a replay of one
/// that left (a thousand profiles on a broker publish a few an hour where the LAN's refreshes
/// would be 200 a second).
struct KeptPresence {
    /// How often a kept announcement is published when nothing changes, as it advertises: a
    /// copy older than this (and a quarter more, `PresenceTiming.keptLifetime`) is no live
    /// client's, so a captured one published again after the will lists nobody for long.
    static let interval = 600.0
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
