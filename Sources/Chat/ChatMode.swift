import Accounts
import ChatViews
import Foundation
import Nearby
import Search
import Shell
import Storage
import Terminal

/// Chat mode: its commands and views. Being online is `Online`'s (Nearby); chat brings the user
/// online, lists who is nearby, and prints what happens (`ChatNotices`, its feature part).
package final class ChatMode {
    let profiles: Profiles
    package let online: Online
    /// The local one `open` chose, if any (instead of a conversation).
    var openLocal: LocalPeer?
    /// The conversation `open` chose, and the oldest message shown of it (for `older`).
    var openConversation: Conversation? {
        didSet {
            if openConversation == nil { notices?.setOpen(nil) }
            if openConversation?.id != oldValue?.id { conversationShown.forEach { $0(openConversation?.id) } }
        }
    }
    /// The conversation open now, for features that act in it (`/send`).
    package var conversationInView: Conversation? { openConversation }
    /// Told (on the shell's thread) whenever the conversation shown changes: its row, or nil.
    package var conversationShown: [(Int64?) -> Void] = []
    /// `open N` in a conversation: file N of it, drawn large; false when it has none of that number.
    package var openFile: ((Int64, Shell) throws -> Bool)?
    /// What features draw among a conversation's messages when a page of it is shown (its
    /// pictures and files), laid out by the page's view.
    package var pageExtras: ((Conversation, ConversationView, SeanceDatabase) -> [ConversationView.Extra])?
    /// More lines for `nearby stats`, from features (transfers).
    package var statistics: [() -> [String]] = []
    /// How conversations are drawn: bubbles, or compact (`/compact`, `conversation` in seance.conf).
    var layout: ConversationLayout
    var oldestShown: Int64?
    /// The newest message shown, when a page other than the newest is (`open N` of a search
    /// result): `newer` pages on from it.
    var newestShown: Int64?
    /// The last search's results, for `open N` and `goto N`.
    package var search: Search?
    /// The stored row of the open conversation, if any.
    package var openConversationRow: Int64? { openConversation?.id }
    /// Sent messages slide into place at a terminal, unless `--no-anim`.
    let animate: Bool
    /// How long a script's end waits for what it sent to be acknowledged (`--linger`).
    let linger: Double
    /// A script has been told once that a line looking like a command was sent as a message.
    var toldOfSlash = false
    /// Going online to list who is there (`chat`): arrivals are not told until the list is out.
    private var holdFirstArrivals = false
    /// What chat prints while online; made when going online.
    var notices: ChatNotices?
    /// The place shown now that `mute` with no name mutes (a room: `room 1.2`), if any; set by
    /// the app from the feature that shows it.
    package var placeInView: () -> String? = { nil }
    /// How the terminal draws, known once the mode is registered; the console, whose line
    /// reader (made after registration) decides whether lines can be written over.
    private var capabilities = Capabilities.plain
    private var console: Console?

    package init(profiles: Profiles, online: Online, animate: Bool = true, linger: Double = 2, layout: ConversationLayout = .bubbles) {
        self.profiles = profiles
        self.online = online
        self.animate = animate
        self.linger = linger
        self.layout = layout
    }

    /// While online: the engine and what runs on it.
    var context: FeatureContext? { online.context }
    var delivery: Delivery? { context?.delivery }

    /// The peers present now, from the shell's thread (one visit to the engine).
    func presentPeers() -> [Peer] {
        guard let context else { return [] }
        return context.engine.sync { context.presence.peers() }
    }

    package func register(in shell: Shell) {
        capabilities = shell.capabilities
        console = shell.console
        // First of the features: its notices of arrivals come before any feature's own.
        online.add(self)
        shell.register(Mode(
            name: "chat", summary: "find people nearby (and the dead), on the local network or through a broker",
            prompt: {
                if let local = self.openLocal { return "chat:" + SafeText.visible(local.name) }
                return self.openConversation.map { "chat:" + (self.renamed($0) ?? SafeText.visible($0.peerName)) } ?? "chat"
            },
            enter: { shell in try self.enter(shell) },
            // Leaving chat mode closes the conversation; you stay online in every mode until
            // `offline`, `logout` or the end of the session.
            leave: { _ in self.closeConversation() },
            messages: MessageInput(isActive: { (self.openConversation != nil || self.openLocal != nil) && self.delivery != nil },
                                   send: { shell, line in try self.sendLine(line, shell) })))
        registerConversationCommands(in: shell)
        registerSearchJumps(in: shell)
        shell.register(Command("nearby", aliases: ["who"], scope: .mode("chat"),
                               arguments: [.positional("what", .dynamic({ [Candidate("stats", "packets sent, received and dropped")] }),
                                                       optional: true,
                                                       help: "stats: packets sent, received, dropped and skipped instead; "
                                                           + "a number: that page of a crowd at a terminal"),
                                           .switch("--count", help: "only how many it would list, a number (for scripts)")],
                               summary: "the people nearby you can see, and how each is reached") { invocation in
            if invocation.arguments.isSet("--count") {
                guard invocation.arguments["what"] == nil else { throw UserError("nearby --count takes nothing else") }
                return try self.count(invocation.shell)
            }
            switch invocation.arguments["what"] {
            case "stats": try self.printStatistics(invocation.shell)
            case nil: try self.list(invocation.shell, page: 1)
            case let what?:
                guard let page = Int(what), page >= 1 else { throw UserError("nearby takes stats or a page number (from 1), not \(SafeText.visible(what))") }
                try self.list(invocation.shell, page: page)
            }
        })
        shell.register(Command("offline", scope: .global, summary: "stop being announced and reachable (chat brings you back)") { invocation in
            guard self.online.isOnline else { return invocation.shell.console.print("you are not online") }
            self.takeOffline(invocation.shell)
        })
        shell.onEndOfInput.append { [unowned self, unowned shell] in
            if !shell.isInteractive { self.awaitAcknowledgements(shell) }
        }
        shell.onExit.append { [unowned self, unowned shell] in self.goOffline(telling: shell.console) }
        let ascii = shell.capabilities.ascii
        // Online, and at a terminal how many messages wait to be read (`chat●2>`), as a phone's badge.
        let interactive = shell.capabilities.interactive
        shell.promptMarks.append { [unowned self] in
            guard let context = self.context else { return "" }
            let unread = interactive ? (try? MessageStore(database: context.database).unreadCount(myKey: context.me,
                                                                                                 besides: self.openConversation?.id)) ?? 0 : 0
            return (ascii ? "*" : "●") + (unread > 0 ? String(unread) : "")
        }
        shell.console.redrawAfterResize = { [unowned self, unowned shell] in self.redrawAfterResize(shell) }
        shell.register(Command("trust", scope: .mode("chat"),
                               arguments: [.positional("peer", help: "name#fingerprint of the key to trust for that name")],
                               summary: "trust this key for its name (others using the name are flagged)") { invocation in
            let store = TrustStore(database: try invocation.shell.session.openDatabase())
            let shown = SafeText.visible(try store.trust(invocation.arguments["peer"]!))
            invocation.shell.console.print("\(shown) is now the trusted key for its name")
        })
        registerBattery(in: shell)
        registerBlockCommands(in: shell)
        // Another profile, or none: this one is no longer announced.
        profiles.session.onChange.append { [unowned self, unowned shell] in
            if self.online.isOnline { self.takeOffline(shell) }
        }
    }

    // MARK: Entering and leaving

    private func enter(_ shell: Shell) throws {
        let wasOnline = online.isOnline
        // Arrivals are held from the first packet on: the list names those already there.
        holdFirstArrivals = !wasOnline
        defer { holdFirstArrivals = false }
        try goOnline(shell)
        if !wasOnline { try awaitFirstAnswers(shell) }
        try list(shell, page: 1)
    }

    /// Just online: everyone in range answers our question within a fraction of a second (up to
    /// `NearbyService.answerDelay` after it, spread so a crowd does not answer at once). The
    /// list waits for them, arrivals untold meanwhile (the list names them): at least
    /// `firstListing`, longer while answers still come, never more than `firstListingLimit`.
    private func awaitFirstAnswers(_ shell: Shell) throws {
        guard let notices else { return }
        defer { notices.holdArrivals(false) }
        let start = SystemTime.monotonic()
        _ = try shell.wait(upTo: Self.firstListing) { false }
        while notices.sinceLastArrival < Self.answersStopped, SystemTime.monotonic() - start < Self.firstListingLimit {
            _ = try shell.wait(upTo: Self.answersStopped) { false }
        }
    }

    static let firstListing = Presence.answerDelay.upperBound + 0.05
    static let answersStopped = 0.05
    static let firstListingLimit = 1.0

    /// Announces this profile on every transport and brings the features online; a mode that
    /// needs the network (rooms) is given this to call when the user is not online yet.
    package func goOnline(_ shell: Shell) throws {
        guard !online.isOnline else { return }
        guard let login = profiles.current else { throw ProfileError.notLoggedIn }
        let context = try online.goOnline(as: login, database: try shell.session.openDatabase(), dataDirectory: shell.session.dataDirectory,
                                          inbox: shell.console.inbox, scheduler: shell.session.scheduler, random: &shell.session.random)
        let transports = context.network.transports.map(\.description).joined(separator: " and ")
        let plane = context.engine.sync { context.rules.plane }
        shell.console.print("announcing \(login.profile.handle) as \(plane.name) on \(transports)")
    }

    func closeConversation() {
        openConversation = nil
        openLocal = nil
        oldestShown = nil
        newestShown = nil
    }

    /// The local ones present now (spectres), when sight allows.
    func localPeers() -> [LocalPeer] {
        guard let context, context.engine.sync({ context.rules.allowsSight(of: nil) }) else { return [] }
        return online.localPresences.flatMap { $0.present() }
    }

    /// `offline`, or a logout: out of chat mode if there, then offline, and say so.
    private func takeOffline(_ shell: Shell) {
        if shell.currentMode == "chat" { shell.leaveMode() }
        goOffline(telling: shell.console)
        shell.console.print("offline")
    }

    /// At the end of a script: what it sent to peers in reach is given up to `linger` seconds to
    /// be acknowledged (the states print as they come), so that what is then said to wait does.
    func awaitAcknowledgements(_ shell: Shell) {
        guard let context, linger > 0 else { return }
        _ = try? shell.wait(upTo: linger) { !context.engine.sync { context.delivery.awaitsAcknowledgement } }
    }

    /// Goes offline and tells `console` (when given) what waits in the outbox. Safe to call
    /// when offline.
    func goOffline(telling console: Console? = nil) {
        let waiting = online.goOffline()
        if let console {
            for summary in waiting {
                let peer = summary.conversation.shownHandle
                console.print(summary.waiting == 1 ? "1 message to \(peer) waits in the outbox: it goes when you are both online"
                                                   : "\(summary.waiting) messages to \(peer) wait in the outbox: they go when you are both online")
            }
        }
        closeConversation()
    }

    /// The name a rule gives a conversation's peer instead of its own (a curse may hide it).
    func renamed(_ conversation: Conversation) -> String? {
        context.flatMap { context in context.engine.sync { context.rules.shownName(of: conversation.peerKey) } }
    }

    // MARK: Views

    /// `nearby --count`: how many rows `nearby` would list, without drawing them (a script
    /// polling a crowd of 500 asks the engine for one number).
    private func count(_ shell: Shell) throws {
        guard profiles.current != nil else { throw ProfileError.notLoggedIn }
        guard let context else { throw UserError("you are offline: chat brings you online") }
        let visible = context.engine.sync { context.presence.peers().filter(context.rules.canSee).count }
        shell.console.print(String(visible + localPeers().count))
    }

    func list(_ shell: Shell, page: Int) throws {
        guard profiles.current != nil else { throw ProfileError.notLoggedIn }
        guard let context else { throw UserError("you are offline: chat brings you online") }
        let now = shell.session.clock()
        // Renamed by a rule (amnesia): no avatar, no fingerprint either.
        // One visit to the engine for the whole list (a crowd of 500 made it 500 visits, each
        // queued behind whatever the engine was doing). How each is reached, the preferred
        // way first: lan, broker, or lan+broker.
        let (visible, names, vias, pictures) = context.engine.sync {
            let visible = context.presence.peers().filter(context.rules.canSee)
            return (visible, visible.map { context.rules.shownName(of: $0.signingKey) },
                    visible.map { context.network.routeNames(of: $0).joined(separator: "+") },
                    visible.map { peer -> Data? in
                        guard case .image(let hash) = peer.announcement.avatar else { return nil }
                        return context.presence.avatars.pixels(hash)
                    })
        }
        let locals = localPeers()
        guard !visible.isEmpty || !locals.isEmpty else { return shell.console.print("nobody you can see is nearby") }
        // The names' column as wide as the longest (up to 24), so a narrow window keeps a line a peer.
        let nameWidth = min(24, (locals.map { SafeText.visible($0.name) } + zip(visible, names).map { $1 ?? $0.shownHandle })
            .map(\.displayWidth).max() ?? 0)
        for local in locals {
            let glyph = shell.capabilities.ascii ? "~" : local.glyph
            shell.console.print("\(DisplayWidth.pad(glyph, to: 2)) \(DisplayWidth.pad(SafeText.visible(local.name), to: nameWidth)) "
                                + "\(DisplayWidth.pad(local.kind, to: 7)) open \(Tokenizer.quote(local.name)) to ask it something")
        }
        let trust = TrustStore(database: context.database)
        var rows: [String] = []
        for (((peer, renamed), via), picture) in zip(zip(zip(visible, names), vias), pictures) {
            let plane = peer.plane?.name ?? "?"
            let age = Self.age(now - peer.lastSaid)
            let avatar = renamed == nil ? avatarCell(peer.announcement.avatar, pixels: picture, capabilities: shell.capabilities) : ""
            // A key using a name trusted for another key stays marked, every listing.
            let note = renamed == nil ? Self.trustNote(trust.trustedKey(forName: peer.name), peer.signingKey) : ""
            rows.append("\(DisplayWidth.pad(avatar, to: 2)) \(DisplayWidth.pad(renamed ?? peer.shownHandle, to: nameWidth)) "
                        + "\(DisplayWidth.pad(plane, to: 7)) seen \(age) ago via \(via)" + (note.isEmpty ? "" : shell.styler.apply(.yellow, note)))
        }
        // A script gets everyone; a terminal, a window's worth at a time.
        let windowRows = shell.capabilities.interactive ? shell.console.rows - locals.count : Int.max
        for line in Self.nearbyPage(rows, page: page, windowRows: windowRows) { shell.console.print(line) }
    }

    /// Page `page` of the peers' rows for a window `windowRows` high: all of them when they fit
    /// (as a script always gets them); else a heading with everyone in sight counted, the rows
    /// that fit beside it, the line saying how to see more, and the prompt.
    static func nearbyPage(_ rows: [String], page: Int, windowRows: Int) -> [String] {
        guard rows.count > windowRows - 1 else { return page == 1 ? rows : ["everyone in sight fits one page: nearby"] }
        let size = max(1, windowRows - 3)
        let pages = (rows.count + size - 1) / size
        guard page <= pages else { return ["\(rows.count) in sight, \(pages) pages: there is no page \(page)"] }
        var lines = ["\(rows.count) in sight, page \(page) of \(pages)"]
        lines += rows[((page - 1) * size)..<min(rows.count, page * size)]
        if page < pages { lines.append("… 'nearby \(page + 1)' shows more") }
        return lines
    }

    /// How long ago, as `nearby` says it: seconds under two minutes, then minutes, then hours
    /// (a broker's kept announcement may be an hour old).
    static func age(_ seconds: Double) -> String {
        let seconds = max(0, Int(seconds))
        return seconds < 120 ? "\(seconds)s" : seconds < 7_200 ? "\(seconds / 60)m" : "\(seconds / 3_600)h"
    }

    private func printStatistics(_ shell: Shell) throws {
        guard let context else { throw UserError("you are offline: chat brings you online") }
        let (stats, deliveryDropped, resent) = context.engine.sync {
            (context.network.statistics, context.delivery.droppedCounts, context.delivery.resentCount)
        }
        // Packets dropped by the wire checks and by the delivery checks, by reason.
        let all = stats.dropped.merging(deliveryDropped, uniquingKeysWith: +)
        let dropped = all.sorted { $0.key < $1.key }.map { "\($0.key) \($0.value)" }.joined(separator: ", ")
        let skipped = [(stats.redundant, "redundant answers"), (stats.repeats, "repeated refreshes")].filter { $0.0 > 0 }.map { "\($0.0) (\($0.1))" }
        shell.console.print("sent \(stats.sent) packets (\(stats.sentBytes) bytes), received \(stats.received), "
                            + "dropped \(all.values.reduce(0, +))" + (dropped.isEmpty ? "" : " (\(dropped))")
                            + (skipped.isEmpty ? "" : ", skipped " + skipped.joined(separator: ", "))
                            + (stats.proved > 0 ? ", \(stats.proved) of them refreshes proved by their chain (no signature)" : "")
                            + (resent > 0 ? ", resent \(resent) message fragments (no acknowledgement in time)" : ""))
        if !stats.flooders.isEmpty {
            shell.console.print("dropped most from: " + stats.flooders.map { "\(SafeText.visible($0.source)) (\($0.dropped))" }
                .joined(separator: ", "))
        }
        let sessions = stats.sessions
        shell.console.print("sessions: \(sessions.open) open, \(sessions.established) made (\(sessions.started) started here, "
                            + "\(sessions.answered) answered), \(sessions.rekeyed) rekeyed")
        for feature in statistics { feature().forEach { shell.console.print($0) } }
    }

    /// A peer's avatar in two columns: its picture (`pixels`, once fetched) as a colour swatch,
    /// else a glyph.
    func avatarCell(_ avatar: AvatarReference, pixels: Data?, capabilities: Capabilities) -> String {
        guard case .image = avatar, capabilities.colorEnabled, !capabilities.ascii, let pixels else {
            return Self.glyph(avatar, ascii: capabilities.ascii)
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
    /// this plane see (and the sight rules allow, named as the naming rules say), plus a
    /// warning when the peer arriving uses the name of `trusted`, another key.
    static func liveLines(for event: PresenceEvent, trusted: String? = nil, myPlane: Plane, styler: Styler, ascii: Bool,
                          allowsSight: (Peer?) -> Bool = { _ in true }, shownName: (Data) -> String? = { _ in nil }) -> [String] {
        func visible(_ peer: Peer) -> Bool { (peer.plane.map(myPlane.canReach) ?? false) && allowsSight(peer) }
        func describe(_ peer: Peer) -> String {
            if let renamed = shownName(peer.signingKey) { return styler.bold(renamed) + " (" + (peer.plane?.name ?? "?") + ")" }
            return glyph(peer.announcement.avatar, ascii: ascii) + " " + styler.bold(peer.shownHandle) + " (" + (peer.plane?.name ?? "?") + ")"
        }
        func named(_ peer: Peer) -> String { shownName(peer.signingKey) ?? peer.shownHandle }
        switch event {
        case .arrived(let peer):
            var lines: [String] = []
            if let trusted {
                let same = PeerIdentity.split(trusted).name.caseInsensitiveCompare(peer.name) == .orderedSame
                lines.append(styler.apply(.yellow + .bold, "!") + " \(peer.shownHandle) uses " + (same ? "the name of" : "a name that looks like that of")
                             + " \(SafeText.visible(trusted)), whom you trust, with another key: possibly an impersonation "
                             + "(trust \(peer.shownHandle) to switch)")
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
            // flood of made-up keys, not worth a line each. A block is said by its command.
            guard visible(peer), reason != .evicted, reason != .blocked else { return [] }
            return [styler.apply(.red, "-") + " \(named(peer)) " + (reason == .goodbye ? "left" : "is out of range")]
        case .transport(let name, .down(let why)):
            return [styler.apply(.yellow + .bold, "!") + " \(name): " + SafeText.visible(why)]
        case .transport(let name, .up):
            return [styler.apply(.green, "+") + " \(name): connected again"]
        case .alsoOnlineElsewhere(let transport):
            return [styler.apply(.yellow + .bold, "!") + " this profile is online in another seance too (heard by \(transport)): "
                    + "both number their messages alike and peers drop some of them — leave chat in one of them"]
        case .clockOff(_, let handle, let offset):
            let minutes = Int((abs(offset) / 60).rounded())
            let amount = minutes >= 1 ? "\(minutes) min" : "\(Int(abs(offset))) s"
            return [styler.apply(.yellow + .bold, "!") + " \(SafeText.visible(handle))'s announcements are stamped \(amount) "
                    + (offset < 0 ? "behind" : "ahead of") + " your clock: one of the two clocks is off (seance allows "
                    + "\(Int(FrameTime.allowance / 60)) min either way), and they are not listed until it is set right (this is said once)"]
        case .flooded(let source):
            return [styler.apply(.yellow + .bold, "!") + " \(SafeText.visible(source)) sends more than any honest seance would: "
                    + "what is over its allowance is dropped unread ('nearby stats' counts it; this is said once)"]
        case .olderSeance(let peer):
            guard visible(peer) else { return [] }
            return [styler.apply(.yellow + .bold, "!") + " \(named(peer)) runs an older seance, without sessions: nothing direct "
                    + "(messages, curses, rooms) passes between you until they update"]
        }
    }

    /// Who comes into or goes out of sight when our own plane changes.
    static func sightLines(from old: Plane, to new: Plane, peers: [Peer], styler: Styler, ascii: Bool) -> [String] {
        peers.compactMap { peer in
            guard let plane = peer.plane else { return nil }
            switch (old.canReach(plane), new.canReach(plane)) {
            case (false, true):
                return styler.apply(.green, "+") + " " + glyph(peer.announcement.avatar, ascii: ascii) + " "
                    + styler.bold(peer.shownHandle) + " (\(plane.name)) is nearby"
            case (true, false): return styler.apply(.red, "-") + " \(peer.shownHandle) passed beyond your sight"
            default: return nil
            }
        }
    }
}

/// Chat's notices come and go with being online.
extension ChatMode: Feature {
    package func online(_ context: FeatureContext) throws {
        notices = ChatNotices(context, capabilities: capabilities, overwrites: console?.overwrites ?? false,
                              holdingArrivals: holdFirstArrivals)
    }

    package func offline() { notices = nil }
}
