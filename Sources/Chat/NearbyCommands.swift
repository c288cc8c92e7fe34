import Accounts
import ChatViews
import Foundation
import Nearby
import Shell
import Storage
import Terminal

/// `nearby` (`who`): the people nearby this plane lets us see, and how each is reached; a page
/// of a crowd at a terminal, one number for a script (`--count`), or what came and went
/// (`stats`). Chat's commands, on the shell's thread: each visits the engine once.
struct NearbyCommands {
    let chat: ChatMode

    func register(in shell: Shell) {
        shell.register(Command("nearby", aliases: ["who"], scope: .mode("chat"),
                               arguments: [.positional("what", .dynamic({ [Candidate("stats", "packets sent, received and dropped")] }),
                                                       optional: true,
                                                       help: "stats: packets sent, received, dropped and skipped instead; "
                                                           + "a number: that page of a crowd at a terminal"),
                                           .switch("--count", help: "only how many it would list, a number (for scripts)")],
                               summary: "the people nearby you can see, and how each is reached") { invocation in
            if invocation.arguments.isSet("--count") {
                guard invocation.arguments["what"] == nil else { throw UserError("nearby --count takes nothing else") }
                return try count(invocation.shell)
            }
            switch invocation.arguments["what"] {
            case "stats": try printStatistics(invocation.shell)
            case nil: try list(invocation.shell, page: 1)
            case let what?:
                guard let page = Int(what), page >= 1 else { throw UserError("nearby takes stats or a page number (from 1), not \(SafeText.visible(what))") }
                try list(invocation.shell, page: page)
            }
        })
    }

    /// `nearby --count`: how many rows `nearby` would list, without drawing them (a script
    /// polling a crowd of 500 asks the engine for one number).
    func count(_ shell: Shell) throws {
        guard chat.profiles.current != nil else { throw ProfileError.notLoggedIn }
        guard let context = chat.context else { throw UserError("you are offline: chat brings you online") }
        let visible = context.engine.sync { context.presence.peers().filter(context.rules.canSee).count }
        shell.console.print(String(visible + chat.localPeers().count))
    }

    func list(_ shell: Shell, page: Int) throws {
        guard chat.profiles.current != nil else { throw ProfileError.notLoggedIn }
        guard let context = chat.context else { throw UserError("you are offline: chat brings you online") }
        let now = shell.session.clock()
        // Renamed by a rule (amnesia): no avatar, no fingerprint either.
        // One visit to the engine for the whole list (a crowd of 500 made it 500 visits, each
        // queued behind whatever the engine was doing). How each is reached, the preferred
        // way first: lan, broker, or lan+broker.
        let (visible, names, vias, pictures, verified) = context.engine.sync {
            let visible = context.presence.peers().filter(context.rules.canSee)
            return (visible, visible.map { context.rules.shownName(of: $0.signingKey) },
                    visible.map { context.network.reach.transportNames(of: $0).joined(separator: "+") },
                    visible.map { peer -> Data? in
                        guard case .image(let hash) = peer.announcement.avatar else { return nil }
                        return context.presence.avatars.pixels(hash)
                    },
                    Set(visible.map(\.signingKey).filter(context.rules.isVerified)))
        }
        let locals = chat.localPeers()
        guard !visible.isEmpty || !locals.isEmpty else { return shell.console.print("nobody you can see is nearby") }
        // The names' column as wide as the longest (up to 24), so a narrow window keeps a line a peer.
        let mark = ChatText.verifiedMark(ascii: shell.capabilities.ascii)
        func shown(_ peer: Peer, _ renamed: String?) -> String {
            renamed ?? peer.shownHandle + (verified.contains(peer.signingKey) ? mark : "")
        }
        let nameWidth = min(24, (locals.map { SafeText.visible($0.name) } + zip(visible, names).map(shown))
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
            let note = renamed == nil ? ChatText.trustNote(trust.trustedKey(forName: peer.name), peer.signingKey) : ""
            rows.append("\(DisplayWidth.pad(avatar, to: 2)) \(DisplayWidth.pad(shown(peer, renamed), to: nameWidth)) "
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

    func printStatistics(_ shell: Shell) throws {
        guard let context = chat.context else { throw UserError("you are offline: chat brings you online") }
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
        if let inbox = stats.inbox {
            shell.console.print("mailbox: listening on \(inbox.topics) topics, \(inbox.waiting) not yet taken by the broker"
                                + (inbox.refusals > 0 ? " (it refused \(inbox.refusals) subscriptions, each asked again)" : ""))
        }
        chat.views.statistics().forEach { shell.console.print($0) }
    }

    /// A peer's avatar in two columns: its picture (`pixels`, once fetched) as a colour swatch,
    /// else a glyph.
    func avatarCell(_ avatar: AvatarReference, pixels: Data?, capabilities: Capabilities) -> String {
        guard case .image = avatar, capabilities.colorEnabled, !capabilities.ascii, let pixels else {
            return PresenceLines.glyph(avatar, ascii: capabilities.ascii)
        }
        let image = RGBAImage(width: Avatar.imageSize, height: Avatar.imageSize, pixels: [UInt8](pixels))
        return ImageRenderer(capabilities).render(image.scaled(width: 2, height: 2), columns: 2).first ?? ""
    }
}
