import Accounts
import Crypto
import Foundation
import GRDB
import Nearby
import Shell
import Storage
import Synchronization
import Terminal

/// What the network side needs to know of this shell, shared across threads: the plane (for
/// filtering and announcing) and the running service.
/// The delivery service, handed to the presence callback once it exists.
final class DeliveryBox: Sendable {
    private let box = Mutex<DeliveryService?>(nil)
    var delivery: DeliveryService? { box.withLock { $0 } }
    func set(_ delivery: DeliveryService) { box.withLock { $0 = delivery } }
}

final class PlaneLink: Sendable {
    let plane = Mutex(Plane.human)
    let service = Mutex<NearbyService?>(nil)
    /// Told of our own change of plane, to say who came into or went out of sight.
    let onOwnChange = Mutex<(@Sendable (_ from: Plane, _ to: Plane, _ peers: [Peer]) -> Void)?>(nil)

    func planeChanged(to plane: Plane) {
        let old = self.plane.withLock { current in
            defer { current = plane }
            return current
        }
        guard old != plane, let service = service.withLock({ $0 }) else { return }
        service.setPlane(plane.wireValue)
        onOwnChange.withLock { $0 }?(old, plane, service.peers())
    }

    /// Which run of the battery poll is current: going offline and online again within one
    /// period must not leave two polls running.
    private let pollGeneration = Mutex(0)

    /// Reads the battery every `seconds` while the service runs.
    func poll(_ battery: Battery, every seconds: Double) {
        let generation = pollGeneration.withLock { value in
            value += 1
            return value
        }
        schedulePoll(battery, every: seconds, generation: generation)
    }

    private func schedulePoll(_ battery: Battery, every seconds: Double, generation: Int) {
        DispatchQueue.global().asyncAfter(deadline: .now() + seconds) { [weak self] in
            guard let self, self.pollGeneration.withLock({ $0 }) == generation, self.service.withLock({ $0 }) != nil else { return }
            self.planeChanged(to: battery.reading.plane)
            self.schedulePoll(battery, every: seconds, generation: generation)
        }
    }
}

/// Chat mode, part 1: while in it, this profile is announced on the local network and every
/// peer the planes let you see is listed, with arrivals, departures and plane changes shown live.
public final class ChatMode {
    let profiles: Profiles
    private let battery: Battery
    private let timing: PresenceTiming
    let link = PlaneLink()
    /// What features add to the plane table and the views (a curse's blindness, …).
    public let rules = Rules()
    /// Features that go online and offline with chat: each registers its packet kinds, rules
    /// and timers when the engine exists, and lets go of them when it stops.
    public var features: [ChatFeature] = []
    /// Those to talk to who are no network peers (spectres): listed and opened like peers.
    public var localPresences: [LocalPresence] = []
    /// The local one `open` chose, if any (instead of a conversation).
    var openLocal: LocalPeer?
    var service: NearbyService? { link.service.withLock { $0 } }
    static let batteryPollSeconds = 30.0
    /// Delivery of conversations; exists while in chat mode.
    var delivery: DeliveryService?
    /// The log checkpointed off the engine while online (`BackgroundCheckpoints`).
    private var checkpoints: BackgroundCheckpoints?
    /// This profile online in this shell only (`ProfileLock`).
    private var profileLock: ProfileLock?
    /// The conversation `open` chose, and the oldest message shown of it (for `older`).
    var openConversation: Conversation? {
        didSet { if openConversation == nil { openBox?.set(nil, markShown: nil) } }
    }
    var oldestShown: Int64?
    var openBox: OpenConversationBox?
    /// Sent messages slide into place at a terminal, unless `--no-anim`.
    let animate: Bool

    /// Makes the transports each time the user goes online (the LAN's sockets, a broker's
    /// connection), the preferred first.
    private let makeTransports: (_ signingKey: Data) -> [Transport]

    public init(profiles: Profiles, battery: Battery, timing: PresenceTiming, animate: Bool = true,
                makeTransports: @escaping (_ signingKey: Data) -> [Transport]) {
        self.makeTransports = makeTransports
        self.profiles = profiles
        self.battery = battery
        self.timing = timing
        self.animate = animate
    }

    public func register(in shell: Shell) {
        shell.register(Mode(
            name: "chat", summary: "find people nearby (and the dead), on the local network or through a broker",
            prompt: {
                if let local = self.openLocal { return "chat:" + SafeText.visible(local.name) }
                return self.openConversation.map { "chat:" + (self.rules.shownName(of: $0.peerKey) ?? SafeText.visible($0.peerName)) } ?? "chat"
            },
            enter: { shell in try self.enter(shell) },
            // Leaving chat mode closes the conversation; you stay online in every mode until
            // `offline`, `logout` or the end of the session.
            leave: { _ in self.closeConversation() },
            messages: MessageInput(isActive: { (self.openConversation != nil || self.openLocal != nil) && self.delivery != nil },
                                   send: { shell, line in try self.sendLine(line, shell) })))
        registerConversationCommands(in: shell)
        shell.register(Command("nearby", aliases: ["who"], scope: .mode("chat"),
                               arguments: [.positional("what", .choice([Candidate("stats", "packets sent, received and dropped")]),
                                                       optional: true,
                                                       help: "stats: packets sent, received, dropped and skipped instead")],
                               summary: "the people nearby you can see, and how each is reached") { invocation in
            if invocation.arguments["what"] == "stats" { return try self.printStatistics(invocation.shell) }
            try self.list(invocation.shell)
        })
        shell.register(Command("offline", scope: .global, summary: "stop being announced and reachable (chat brings you back)") { invocation in
            guard self.service != nil else { return invocation.shell.console.print("you are not online") }
            self.takeOffline(invocation.shell)
        })
        shell.onExit.append { [unowned self, unowned shell] in self.goOffline(telling: shell.console) }
        let ascii = shell.capabilities.ascii
        shell.promptMarks.append { [unowned self] in self.service == nil ? "" : (ascii ? "*" : "●") }
        shell.register(Command("trust", scope: .mode("chat"),
                               arguments: [.positional("peer", help: "name#fingerprint of the key to trust for that name")],
                               summary: "trust this key for its name (others using the name are flagged)") { invocation in
            let shown = try ChatMode.trust(invocation.arguments["peer"]!, in: invocation.shell.session.openDatabase())
            invocation.shell.console.print("\(shown) is now the trusted key for its name")
        })
        let link = self.link
        battery.observe { reading in link.planeChanged(to: reading.plane) }
        // Another profile, or none: this one is no longer announced.
        profiles.session.onChange.append { [unowned self, unowned shell] in
            if self.service != nil { self.takeOffline(shell) }
        }
    }

    // MARK: Entering and leaving

    private func enter(_ shell: Shell) throws {
        if service == nil { try goOnline(shell) }
        try list(shell)
    }

    /// Announces this profile on every transport and brings the features online; a mode that
    /// needs the network (rooms) calls it when the user is not online yet.
    public func goOnline(_ shell: Shell) throws {
        guard let (profile, identity) = profiles.current else { throw ProfileError.notLoggedIn }
        guard service == nil else { return }
        let database = try shell.session.openDatabase()
        // Released by `goOffline`, or when this throws before the end.
        let lock: ProfileLock
        do {
            lock = try ProfileLock(in: shell.session.dataDirectory, id: PeerIdentity.longFingerprint(of: identity.signingPublicKey))
        } catch .held(let process) {
            let holder = process.map { "another seance (process \($0))" } ?? "another seance"
            throw UserError("\(profile.handle) is online in \(holder): leave chat there first, or log in as another profile")
        } catch {
            throw UserError("\(profile.handle) cannot go online: \(error)")
        }
        let plane = battery.reading.plane
        link.plane.withLock { $0 = plane }
        var avatar = AvatarReference.none
        var pixels: Data?
        switch profile.avatar {
        case .emoji(let emoji)?: avatar = .emoji(emoji)
        case .image(let image)?:
            pixels = Data(image.pixels)
            avatar = .image(Data(SHA256.hash(data: Data(image.pixels))))
        case nil: break
        }
        let announcement = Announcement(name: profile.name, agreementKey: identity.agreementPublicKey, plane: plane.wireValue,
                                        avatar: avatar, unicastPort: 0, intervalMilliseconds: 0)
        let inbox = shell.console.inbox
        let styler = shell.styler
        let ascii = shell.capabilities.ascii
        let link = self.link
        let deliveryBox = DeliveryBox()
        let limiter = NoticeLimiter()
        let rules = self.rules
        // One serial engine for presence and delivery: every packet, timer and database write
        // the network causes happens there, never on the socket's thread.
        let engine = Engine()
        let service = NearbyService(transports: makeTransports(identity.signingPublicKey), timing: timing, signer: identity.signing,
                                    announcement: announcement, ownAvatarPixels: pixels, engine: engine,
                                    // Jitter and answer delays follow --seed like every other choice.
                                    random: SeededRandom(seed: shell.session.random.next())) { event in
            let lines = ChatMode.liveLines(for: event, myPlane: link.plane.withLock { $0 }, database: database,
                                           styler: styler, ascii: ascii, rules: rules)
            for line in limiter.admit(lines, now: Date().timeIntervalSince1970) { inbox.post(line) }
            if case .arrived(let peer) = event { deliveryBox.delivery?.peerArrived(peer) }
            if case .changed(_, let peer) = event { deliveryBox.delivery?.peerArrived(peer) }
            // What was sent while the broker was away was dropped (never queued in the client).
            if case .transport(_, .up) = event { deliveryBox.delivery?.transportReturned() }
        }
        let delivery = makeDelivery(store: MessageStore(database: database), identity: identity, engine: engine, shell: shell)
        deliveryBox.set(delivery)
        let context = OnlineContext(service: service, delivery: delivery, engine: engine, profile: profile, identity: identity,
                                    database: database, inbox: inbox, styler: styler, rules: rules,
                                    myPlane: { link.plane.withLock { $0 } }, random: SeededRandom(seed: shell.session.random.next()),
                                    capabilities: shell.capabilities)
        do {
            // Features register their kinds and rules before the first packet can arrive.
            for feature in features { try feature.online(context) }
            try service.start()
        } catch {
            features.forEach { $0.offline() }
            rules.clear()
            throw error
        }
        link.service.withLock { $0 = service }
        delivery.attach(service)
        do {
            try delivery.loadOutboxes()
        } catch {
            goOffline()  // Nothing half-started stays behind: sockets, loop, timers.
            throw error
        }
        self.delivery = delivery
        profileLock = lock
        // Online is long-running: the log is checkpointed beside the engine, not in its commits
        // (without it, SQLite's own checkpoints stay: slower now and then, never wrong).
        checkpoints = try? BackgroundCheckpoints(database, scheduler: engine.scheduler)
        link.onOwnChange.withLock {
            $0 = { old, new, peers in
                // Blind (a curse) sees nobody come or go, whatever the planes.
                let seen = peers.filter(rules.allowsSight)
                for line in ChatMode.sightLines(from: old, to: new, peers: seen, styler: styler, ascii: ascii) { inbox.post(line) }
            }
        }
        // The battery is read again every 30 s; a change of plane is announced at once.
        link.poll(battery, every: Self.batteryPollSeconds)
        let transports = service.transports.map(\.description).joined(separator: " and ")
        shell.console.print("announcing \(profile.handle) as \(plane.name) on \(transports)")
    }

    func closeConversation() {
        openConversation = nil
        openLocal = nil
        oldestShown = nil
    }

    /// The local ones present now (spectres), when sight allows.
    func localPeers() -> [LocalPeer] {
        guard rules.allowsSight(of: nil) else { return [] }
        return localPresences.flatMap { $0.present() }
    }

    /// `offline`, or a logout: out of chat mode if there, then offline, and say so.
    private func takeOffline(_ shell: Shell) {
        if shell.currentMode == "chat" { shell.leaveMode() }
        goOffline(telling: shell.console)
        shell.console.print("offline")
    }

    /// Says goodbye and releases everything going online took, and tells `console` (when
    /// given) what waits in the outbox. Safe to call when offline.
    func goOffline(telling console: Console? = nil) {
        // Lines typed last are written (and sent once) before anything stops.
        let waiting = delivery?.waiting() ?? []
        if let console {
            for summary in waiting {
                let peer = summary.conversation.shownHandle
                console.print(summary.waiting == 1 ? "1 message to \(peer) waits in the outbox: it goes when you are both online"
                                                   : "\(summary.waiting) messages to \(peer) wait in the outbox: they go when you are both online")
            }
        }
        closeConversation()
        delivery = nil
        link.onOwnChange.withLock { $0 = nil }
        let running = link.service.withLock { service in
            defer { service = nil }
            return service
        }
        // Features first: a room's host still tells its guests, with the transports up.
        if running != nil { features.forEach { $0.offline() } }
        running?.stop()
        checkpoints?.stop()
        checkpoints = nil
        rules.clear()
        profileLock?.release()
        profileLock = nil
    }

    // MARK: Views

    func list(_ shell: Shell) throws {
        guard profiles.current != nil else { throw ProfileError.notLoggedIn }
        guard let service else { throw UserError("you are offline: chat brings you online") }
        let mine = link.plane.withLock { $0 }
        let now = shell.session.clock()
        let visible = service.peers().filter { (Plane(wireValue: $0.announcement.plane).map(mine.canReach) ?? false) && rules.allowsSight(of: $0) }
        let locals = localPeers()
        guard !visible.isEmpty || !locals.isEmpty else { return shell.console.print("nobody you can see is nearby") }
        // Renamed by a rule (amnesia): no avatar, no fingerprint either.
        let names = visible.map { rules.shownName(of: $0.signingKey) }
        // The names' column as wide as the longest (up to 24), so a narrow window keeps a line a peer.
        let nameWidth = min(24, (locals.map { SafeText.visible($0.name) } + zip(visible, names).map { $1 ?? $0.shownHandle })
            .map(\.displayWidth).max() ?? 0)
        for local in locals {
            let glyph = shell.capabilities.ascii ? "~" : local.glyph
            shell.console.print("\(DisplayWidth.pad(glyph, to: 2)) \(DisplayWidth.pad(SafeText.visible(local.name), to: nameWidth)) "
                                + "\(DisplayWidth.pad(local.kind, to: 7)) open \(Tokenizer.quote(local.name)) to ask it something")
        }
        for (peer, renamed) in zip(visible, names) {
            let plane = Plane(wireValue: peer.announcement.plane)?.name ?? "?"
            let age = max(0, Int(now - peer.lastSeen))
            let avatar = renamed == nil ? avatarCell(peer, service: service, capabilities: shell.capabilities) : ""
            // How it is reached, the preferred way first: lan, broker, or lan+broker.
            let via = service.routeNames(of: peer).joined(separator: "+")
            shell.console.print("\(DisplayWidth.pad(avatar, to: 2)) \(DisplayWidth.pad(renamed ?? peer.shownHandle, to: nameWidth)) "
                                + "\(DisplayWidth.pad(plane, to: 7)) seen \(age)s ago via \(via)")
        }
    }

    private func printStatistics(_ shell: Shell) throws {
        guard let service else { throw UserError("you are offline: chat brings you online") }
        let stats = service.statistics
        // Packets dropped by the wire checks and by the delivery checks, by reason.
        let all = stats.dropped.merging(delivery?.droppedCounts ?? [:], uniquingKeysWith: +)
        let dropped = all.sorted { $0.key < $1.key }.map { "\($0.key) \($0.value)" }.joined(separator: ", ")
        let resent = delivery?.resentCount ?? 0
        shell.console.print("sent \(stats.sent) packets (\(stats.sentBytes) bytes), received \(stats.received), "
                            + "dropped \(all.values.reduce(0, +))" + (dropped.isEmpty ? "" : " (\(dropped))")
                            + (stats.redundant > 0 ? ", skipped \(stats.redundant) (redundant answers)" : "")
                            + (resent > 0 ? ", resent \(resent) message fragments (no acknowledgement in time)" : ""))
    }

    /// A peer's avatar in two columns: its picture (once fetched) as a colour swatch, else a glyph.
    func avatarCell(_ peer: Peer, service: NearbyService, capabilities: Capabilities) -> String {
        guard case .image(let hash) = peer.announcement.avatar, capabilities.colorEnabled, !capabilities.ascii,
              let pixels = service.avatarPixels(hash) else {
            return Self.glyph(peer.announcement.avatar, ascii: capabilities.ascii)
        }
        let image = RGBAImage(width: Avatar.imageSize, height: Avatar.imageSize, pixels: [UInt8](pixels))
        return ImageRenderer(capabilities).render(image.scaled(width: 2, height: 2), columns: 2).first ?? ""
    }

    static func glyph(_ avatar: AvatarReference, ascii: Bool) -> String {
        switch avatar {
        case .none: return ascii ? "-" : "👤"
        case .emoji(let emoji): return ascii ? "*" : SafeText.visible(emoji)
        case .image: return ascii ? "[]" : "📷"
        }
    }

    /// What to print above the prompt for one presence event: only about peers the table lets
    /// this plane see, plus a warning when a known name comes with a new key.
    static func liveLines(for event: PresenceEvent, myPlane: Plane, database: SeanceDatabase,
                          styler: Styler, ascii: Bool, rules: Rules = Rules()) -> [String] {
        func visible(_ peer: Peer) -> Bool {
            (Plane(wireValue: peer.announcement.plane).map(myPlane.canReach) ?? false) && rules.allowsSight(of: peer)
        }
        func describe(_ peer: Peer) -> String {
            if let renamed = rules.shownName(of: peer.signingKey) {
                return styler.bold(renamed) + " (" + (Plane(wireValue: peer.announcement.plane)?.name ?? "?") + ")"
            }
            return glyph(peer.announcement.avatar, ascii: ascii) + " " + styler.bold(peer.shownHandle)
                + " (" + (Plane(wireValue: peer.announcement.plane)?.name ?? "?") + ")"
        }
        func named(_ peer: Peer) -> String { rules.shownName(of: peer.signingKey) ?? peer.shownHandle }
        switch event {
        case .arrived(let peer):
            var lines: [String] = []
            if let previous = remember(peer, in: database) {
                lines.append(styler.apply(.yellow + .bold, "!") + " \(peer.shownHandle) uses the name of \(previous), whom you trust, "
                             + "with another key: possibly an impersonation (trust \(peer.shownHandle) to switch)")
            }
            if visible(peer) { lines.append(styler.apply(.green, "+") + " " + describe(peer) + " is nearby") }
            return lines
        case .changed(let old, let new):
            switch (visible(old), visible(new)) {
            case (true, true): return [styler.apply(.cyan, "~") + " " + describe(new) + " changed"]
            case (false, true): return [styler.apply(.green, "+") + " " + describe(new) + " is nearby"]
            case (true, false): return [styler.apply(.red, "-") + " \(named(old)) passed beyond your sight"]
            case (false, false): return []
            }
        case .left(let peer, let reason):
            // An evicted peer was the least established of a full table: usually one of a
            // flood of made-up keys, not worth a line each.
            guard visible(peer), reason != .evicted else { return [] }
            return [styler.apply(.red, "-") + " \(named(peer)) " + (reason == .goodbye ? "left" : "is out of range")]
        case .transport(let name, .down(let why)):
            return [styler.apply(.yellow + .bold, "!") + " \(name): " + SafeText.visible(why)]
        case .transport(let name, .up):
            return [styler.apply(.green, "+") + " \(name): connected again"]
        case .alsoOnlineElsewhere(let transport):
            return [styler.apply(.yellow + .bold, "!") + " this profile is online in another seance too (heard by \(transport)): "
                    + "both number their messages alike and peers drop some of them — leave chat in one of them"]
        }
    }

    /// Who comes into or goes out of sight when our own plane changes.
    static func sightLines(from old: Plane, to new: Plane, peers: [Peer], styler: Styler, ascii: Bool) -> [String] {
        peers.compactMap { peer in
            guard let plane = Plane(wireValue: peer.announcement.plane) else { return nil }
            switch (old.canReach(plane), new.canReach(plane)) {
            case (false, true):
                return styler.apply(.green, "+") + " " + glyph(peer.announcement.avatar, ascii: ascii) + " "
                    + styler.bold(peer.shownHandle) + " (\(plane.name)) is nearby"
            case (true, false): return styler.apply(.red, "-") + " \(peer.shownHandle) passed beyond your sight"
            default: return nil
            }
        }
    }

    /// Keys remembered at most. Beyond it new keys are checked but not recorded: the records
    /// that matter most (the first key seen for a name) are the old ones, and a flood of new
    /// keys must not push them out.
    static let knownPeerLimit = 5_000

    /// Records the key under its name (the first key of a name is trusted) and returns the
    /// handle of the trusted key when this one is another: it is flagged every time it appears,
    /// never the trusted one. A key we have a conversation with is never flagged.
    static func remember(_ peer: Peer, in database: SeanceDatabase) -> String? {
        try? database.write { db -> String? in
            try db.execute(sql: """
                INSERT OR IGNORE INTO knownPeer (signingKey, name, firstSeen, trusted)
                SELECT ?, ?, ?, NOT EXISTS (SELECT 1 FROM knownPeer WHERE name = ? AND trusted)
                WHERE (SELECT count(*) FROM knownPeer) < ?
                """, arguments: [peer.signingKey, peer.name, peer.lastSeen, peer.name, knownPeerLimit])
            let trusted = try Data.fetchOne(db, sql: "SELECT signingKey FROM knownPeer WHERE name = ? AND trusted ORDER BY firstSeen LIMIT 1",
                                            arguments: [peer.name])
            guard let trusted, trusted != peer.signingKey else { return nil }
            let talkedTo = try Bool.fetchOne(db, sql: "SELECT EXISTS (SELECT 1 FROM conversation WHERE peerKey = ?)",
                                             arguments: [peer.signingKey]) ?? false
            return talkedTo ? nil : SafeText.visible(PeerIdentity.handle(name: peer.name, signingKey: trusted))
        } ?? nil
    }

    /// `trust NAME#FP`: that key becomes the trusted one for its name.
    static func trust(_ handle: String, in database: SeanceDatabase) throws -> String {
        let (name, fingerprint) = PeerIdentity.split(handle)
        guard let fingerprint else { throw UserError("give the key to trust as name#fingerprint (see nearby)") }
        return try database.write { db in
            let keys = try Data.fetchAll(db, sql: "SELECT signingKey FROM knownPeer WHERE name = ?", arguments: [name])
            guard let key = keys.first(where: { PeerIdentity.fingerprint(of: $0) == fingerprint }) else {
                throw UserError("no key \(SafeText.visible(handle)) has been seen nearby")
            }
            try db.execute(sql: "UPDATE knownPeer SET trusted = (signingKey = ?) WHERE name = ?", arguments: [key, name])
            return SafeText.visible(PeerIdentity.handle(name: name, signingKey: key))
        }
    }
}

extension Peer {
    /// `name#abcd` made safe for the terminal: the name came from the network.
    public var shownHandle: String { SafeText.visible(handle) }
}

extension Conversation {
    /// `name#abcd` made safe for the terminal: the stored name came from the network.
    public var shownHandle: String { SafeText.visible(handle) }
}

/// Presence notices above the prompt, at most `burst` at once and `perSecond` after that: a
/// crowd of made-up keys must not scroll everything else away. What is held back is counted in
/// one line when notices flow again.
final class NoticeLimiter: Sendable {
    private struct State {
        var tokens: Double
        var last: Double?
        var held = 0
    }
    private let state: Mutex<State>
    let burst: Double
    let perSecond: Double

    init(burst: Double = 20, perSecond: Double = 2) {
        self.burst = burst
        self.perSecond = perSecond
        state = Mutex(State(tokens: burst))
    }

    /// The lines to print now (possibly none, possibly with a count of those held back).
    func admit(_ lines: [String], now: Double) -> [String] {
        guard !lines.isEmpty else { return [] }
        return state.withLock { state in
            state.tokens = min(burst, state.tokens + perSecond * max(0, now - (state.last ?? now)))
            state.last = now
            guard state.tokens >= 1 else {
                state.held += lines.count
                return []
            }
            state.tokens -= 1
            defer { state.held = 0 }
            return (state.held > 0 ? ["… \(state.held) more presence notices not shown (nearby lists who is here)"] : []) + lines
        }
    }
}

/// A feature that lives while chat is online (curses, spectres, rooms): told when the engine
/// exists, before the first packet, and when it stops.
public protocol ChatFeature: AnyObject {
    func online(_ context: OnlineContext) throws
    func offline()
}

/// What a feature may use while online. Packet handlers, timers and the database writes the
/// network causes run on `engine`; notices go through `inbox`.
public struct OnlineContext: @unchecked Sendable {
    public let service: NearbyService
    public let delivery: DeliveryService
    public let engine: Engine
    public let profile: Profile
    public let identity: Identity
    public let database: SeanceDatabase
    public let inbox: AsyncInbox
    public let styler: Styler
    public let rules: Rules
    /// This shell's plane now.
    public let myPlane: @Sendable () -> Plane
    /// Seeded from `--seed`, like every other random choice.
    public let random: SeededRandom
    /// How the terminal draws, for what arrives while the user types (a room's bubbles).
    public let capabilities: Capabilities

    public init(service: NearbyService, delivery: DeliveryService, engine: Engine, profile: Profile, identity: Identity,
                database: SeanceDatabase, inbox: AsyncInbox, styler: Styler, rules: Rules, myPlane: @escaping @Sendable () -> Plane,
                random: SeededRandom, capabilities: Capabilities = .plain) {
        self.capabilities = capabilities
        self.service = service
        self.delivery = delivery
        self.engine = engine
        self.profile = profile
        self.identity = identity
        self.database = database
        self.inbox = inbox
        self.styler = styler
        self.rules = rules
        self.myPlane = myPlane
        self.random = random
    }
}

/// Someone to talk to who is no network peer (a spectre): listed by `nearby`, opened like a
/// peer, and answering on this machine.
public struct LocalPeer: Sendable {
    public let name: String
    /// What it is, shown after its name: `spectre`.
    public let kind: String
    public let glyph: String
    /// Its answer to a line; nil once it has gone.
    public let answer: @Sendable (String) -> String?

    public init(name: String, kind: String, glyph: String, answer: @escaping @Sendable (String) -> String?) {
        self.name = name
        self.kind = kind
        self.glyph = glyph
        self.answer = answer
    }
}

/// A feature with local ones to talk to.
public protocol LocalPresence: AnyObject {
    /// Those present now.
    func present() -> [LocalPeer]
}
