import Accounts
import Crypto
import Foundation
import Storage

/// Being online: the one object App builds that takes a profile onto the network and back.
/// Going online makes the engine (on the run's one scheduler), presence on every transport,
/// delivery, the plane kept from the battery, and brings every feature online on that engine;
/// going offline undoes all of it. This object lives on the shell's thread; what it starts
/// lives on the engine.
package final class Online {
    package let battery: Battery
    package let timing: PresenceTiming
    /// When sessions change keys and give up (tests shorten it).
    let sessionTiming: SessionTiming
    let alsoReads: Set<UInt8>
    /// Makes the transports each time the user goes online (the LAN's sockets, a broker's
    /// connection), the preferred first.
    private let makeTransports: (_ identity: Identity) -> [Transport]
    /// Features that go online and offline with the user, in the order they were added.
    package private(set) var features: [Feature] = []
    /// Those to talk to who are no network peers (spectres): listed and opened like peers.
    package private(set) var localPresences: [LocalPresence] = []
    /// While online: what runs, as features see it, and the network layer under it.
    package private(set) var context: FeatureContext?
    package private(set) var node: NearbyNode?
    /// This profile online in this shell only (`ProfileLock`).
    private var lock: ProfileLock?
    /// The log checkpointed off the engine while online (`BackgroundCheckpoints`).
    private var checkpoints: BackgroundCheckpoints?
    private var batteryPoll: Cancellable?

    /// The battery is read again this often; a change of plane is announced at once.
    package static let batteryPollSeconds = 30.0

    /// - Parameter alsoReads: the kinds announced as read beyond the session protocol's (a test
    ///   plays an older seance with fewer).
    package init(battery: Battery, timing: PresenceTiming, sessionTiming: SessionTiming = SessionTiming(),
                alsoReads: Set<UInt8> = KindTable.announcedReads, makeTransports: @escaping (_ identity: Identity) -> [Transport]) {
        self.battery = battery
        self.timing = timing
        self.sessionTiming = sessionTiming
        self.alsoReads = alsoReads
        self.makeTransports = makeTransports
    }

    package func add(_ feature: Feature) { features.append(feature) }
    package func add(local presence: LocalPresence) { localPresences.append(presence) }

    package var isOnline: Bool { context != nil }

    package enum OnlineError: Error, Equatable, CustomStringConvertible {
        case elsewhere(handle: String, process: Int32?)
        case cannotLock(handle: String, reason: String)

        package var description: String {
            switch self {
            case .elsewhere(let handle, let process):
                let holder = process.map { "another seance (process \($0))" } ?? "another seance"
                return "\(handle) is online in \(holder): leave chat there first, or log in as another profile"
            case .cannotLock(let handle, let reason): return "\(handle) cannot go online: \(reason)"
            }
        }
    }

    /// Announces `login` on every transport and brings the features online. Nothing half
    /// started stays behind when it throws.
    @discardableResult
    package func goOnline(as login: LoginSession.Login, database: SeanceDatabase, dataDirectory: DataDirectory,
                         wake: @escaping @Sendable () -> Void, scheduler: Scheduler, random: inout SeededRandom) throws -> FeatureContext {
        if let context { return context }
        let (profile, identity) = login
        // Released by `goOffline`, or when this throws before the end.
        let lock: ProfileLock
        do {
            lock = try ProfileLock(in: dataDirectory, id: PeerIdentity.longFingerprint(of: identity.signingPublicKey))
        } catch .held(let process) {
            throw OnlineError.elsewhere(handle: profile.handle, process: process)
        } catch {
            throw OnlineError.cannotLock(handle: profile.handle, reason: "\(error)")
        }
        let plane = battery.reading.plane
        let (avatar, pixels) = Self.avatar(of: profile)
        var announcement = Announcement(name: profile.name, agreementKey: identity.agreementPublicKey, plane: plane.wireValue,
                                        avatar: avatar, unicastPort: 0, intervalMilliseconds: 0)
        announcement.alsoReads = alsoReads
        // One serial engine for presence, delivery and every feature: every packet, deadline and
        // database write the network causes happens there, never on a socket's thread.
        let engine = Engine(scheduler: scheduler)
        let rules = Rules(plane: plane, engine: engine)
        let events = EngineBound<[@Sendable (OnlineEvent) -> Void]>([], engine: engine)
        @Sendable func tell(_ event: OnlineEvent) { for observer in events.value { observer(event) } }
        let trust = TrustStore(database: database)
        @Sendable func handle(_ event: PresenceEvent) {
            tell(.presence(event))
            switch event {
            case .arrived(let peer): tell(.reachable(peer, returned: true))
            case .changed(_, let peer): tell(.reachable(peer, returned: false))
            // Its sessions are gone: what waits for it goes now, in a fresh one.
            case .restarted(let peer): tell(.reachable(peer, returned: true))
            // What was sent while the broker was away was dropped (never queued in the client).
            case .transport(_, .up): tell(.reachable(nil, returned: false))
            default: break
            }
            // A shell waiting for someone to come into sight looks again.
            wake()
        }
        // Arrivals wait for the end of the engine's turn, then trust on first use records them
        // all in one transaction: a crowd's answers to a newcomer (500 in half a second) cost
        // a commit each otherwise, and a newcomer took seconds to list them. Any other event
        // first tells the arrivals before it, so the order stays.
        let arrivals = EngineBound<[Peer]>([], engine: engine)
        @Sendable func tellArrivals() {
            let peers = arrivals.value
            guard !peers.isEmpty else { return }
            arrivals.value = []
            for (peer, flag) in zip(peers, trust.remember(peers)) {
                if let flag {
                    // Under a verified name: nothing goes to it before the user decides.
                    if flag.verified { rules.hold(peer.signingKey) }
                    tell(.impostor(peer, trusted: flag.trusted, verified: flag.verified))
                }
                handle(.arrived(peer))
            }
        }
        let transports = makeTransports(identity)
        // Jitter and answer delays follow --seed like every other choice.
        let (nodeRandom, featureRandom) = (SeededRandom(seed: random.next()), SeededRandom(seed: random.next()))
        let (node, context): (NearbyNode, FeatureContext)
        do {
            (node, context) = try engine.sync {
                let node = NearbyNode(transports: transports, timing: timing, identity: identity, announcement: announcement,
                                      ownAvatarPixels: pixels, deadlines: Deadlines(engine: engine), random: nodeRandom,
                                      sessionTiming: sessionTiming) { event in
                    if case .arrived(let peer) = event {
                        if arrivals.value.isEmpty { engine.async(tellArrivals) }
                        arrivals.value.append(peer)
                        return
                    }
                    tellArrivals()
                    handle(event)
                }
                let commits = GroupCommit(database: database, engine: engine)
                let delivery = try Delivery(store: MessageStore(database: database), commits: commits, identity: identity, rules: rules,
                                        router: node.router, directory: node.directory, deadlines: node.deadlines) { event in
                    // A writer away is checked as an arriving peer is: a name of someone trusted
                    // with another key is flagged before its mail is shown.
                    if case .mailFrom(let peer) = event, let flag = trust.remember(peer) {
                        if flag.verified { rules.hold(peer.signingKey) }
                        tell(.impostor(peer, trusted: flag.trusted, verified: flag.verified))
                    }
                    tell(.delivery(event))
                }
                let context = FeatureContext(node: node, delivery: delivery, commits: commits, profile: profile, identity: identity, database: database,
                                             rules: rules, random: featureRandom, events: events)
                // Delivery first, then every feature: kinds, rules and deadlines registered
                // before the first packet can arrive.
                try delivery.online(context)
                for feature in features { try feature.online(context) }
                return (node, context)
            }
            // Blocks, mutes and verifications known before the first packet: a broker hands
            // over the mail it held as soon as it takes the connection.
            self.context = context
            choicesChanged()
            try node.start()
        } catch {
            self.context = nil
            features.forEach { $0.offline() }
            lock.release()
            throw error
        }
        self.node = node
        self.lock = lock
        // Online is long-running: the log is checkpointed beside the engine, not in its commits
        // (without it, SQLite's own checkpoints stay: slower now and then, never wrong).
        checkpoints = try? BackgroundCheckpoints(database, scheduler: scheduler)
        let battery = self.battery
        batteryPoll = engine.scheduler.every(Self.batteryPollSeconds, on: engine.queue) {
            Self.planeChanged(to: battery.reading.plane, rules: rules, presence: context.presence, tell: tell)
        }
        return context
    }

    /// Blocks, mutes and verifications were changed in the database (`PeerChoiceStore`,
    /// `TrustStore`): the engine applies them at once. A key newly blocked leaves the table and
    /// its sessions end, and every frame in its name is dropped before any check from now on; a
    /// key no longer held is sent what waited for it.
    package func choicesChanged() {
        guard let context else { return }
        let store = PeerChoiceStore(database: context.database), trust = TrustStore(database: context.database)
        let (blocked, muted, places, unblocked) = (store.keys(.blocked), store.keys(.muted), store.mutedPlaces(), store.unblockedTimes())
        let (verified, held) = (trust.verifiedKeys(), trust.heldKeys())
        context.engine.sync {
            let newly = context.rules.choose(blocked: blocked, muted: muted, mutedPlaces: places, unblockedAt: unblocked)
            context.presence.block(blocked)
            if !newly.isEmpty { context.tellObservers(.blocked(newly)) }
            for key in context.rules.verifications(verified: verified, held: held) {
                if let peer = context.presence.peer(key) { context.tellObservers(.reachable(peer, returned: false)) }
            }
        }
    }

    /// The battery level was set: a new plane is announced at once.
    package func batteryChanged() {
        guard let context else { return }
        let plane = battery.reading.plane
        context.engine.sync {
            Self.planeChanged(to: plane, rules: context.rules, presence: context.presence) { event in
                context.tellObservers(event)
            }
        }
    }

    /// On the engine: a new plane is the rules' and announced at once, and everyone is told.
    private static func planeChanged(to plane: Plane, rules: Rules, presence: Presence, tell: (OnlineEvent) -> Void) {
        let old = rules.plane
        guard old != plane else { return }
        rules.plane = plane
        presence.setPlane(plane.wireValue)
        tell(.planeChanged(from: old, to: plane))
    }

    /// Says goodbye and releases everything going online took; returns what waits in the
    /// outboxes (lines typed last are written, and sent once, before anything stops). Safe to
    /// call when offline.
    @discardableResult
    package func goOffline() -> [ConversationSummary] {
        guard let context, let node else { return [] }
        let waiting = context.engine.sync { context.delivery.waiting() }
        batteryPoll?.cancel()
        batteryPoll = nil
        // Features first: a room's host still tells its guests, with the transports up.
        features.forEach { $0.offline() }
        node.stop()
        context.engine.sync { context.release() }
        checkpoints?.stop()
        checkpoints = nil
        lock?.release()
        lock = nil
        self.context = nil
        self.node = nil
        return waiting
    }

    /// The profile's avatar as announced, and its pixels when it is a picture.
    static func avatar(of profile: Profile) -> (AvatarReference, Data?) {
        switch profile.avatar {
        case .emoji(let emoji)?: return (.emoji(emoji), nil)
        case .image(let image)?:
            let pixels = Data(image.pixels)
            return (.image(Data(SHA256.hash(data: pixels))), pixels)
        case nil: return (.none, nil)
        }
    }
}
