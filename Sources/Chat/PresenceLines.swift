import ChatViews
import Foundation
import Nearby
import Shell
import Terminal

/// What chat says above the prompt of who comes and goes: the lines for one presence event, and
/// for our own plane's change.
enum PresenceLines {
    static func glyph(_ avatar: AvatarReference, ascii: Bool) -> String {
        switch avatar {
        case .none: return ascii ? "-" : "👤"
        case .emoji(let emoji): return ascii ? "*" : SafeText.visible(emoji)
        case .image: return ascii ? "[]" : "📷"
        }
    }

    /// The warning when a key arrives with the name (or a look-alike) of one the user verified:
    /// not the key they checked, and what they write to it waits.
    static func verifiedWarning(_ peer: Peer, verified: String, styler: Styler) -> String {
        styler.apply(.red + .bold, "!!") + " " + styler.bold(peer.shownHandle) + " uses the name of \(SafeText.visible(verified)), "
            + "whom you verified, with another key: it is not the key you checked. What you write to \(peer.shownHandle) waits "
            + "until you decide (verify \(peer.shownHandle) to compare its safety number, or trust \(peer.shownHandle) to take it as theirs)"
    }

    /// A key using the name of `trusted` (or one like it), another key the user trusts.
    static func trustWarning(_ peer: Peer, trusted: String, styler: Styler) -> String {
        let same = PeerIdentity.split(trusted).name.caseInsensitiveCompare(peer.name) == .orderedSame
        return styler.apply(.yellow + .bold, "!") + " \(peer.shownHandle) uses " + (same ? "the name of" : "a name that looks like that of")
            + " \(SafeText.visible(trusted)), whom you trust, with another key: possibly an impersonation "
            + "(trust \(peer.shownHandle) to switch)"
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
            if let trusted { lines.append(trustWarning(peer, trusted: trusted, styler: styler)) }
            if visible(peer) { lines.append(styler.apply(.green, "+") + " " + describe(peer) + " is nearby") }
            return lines
        case .changed(let old, let new):
            switch (visible(old), visible(new)) {
            case (true, true): return [styler.apply(.cyan, "~") + " " + describe(new) + " changed"]
            case (false, true): return [styler.apply(.green, "+") + " " + describe(new) + " is nearby"]
            case (true, false): return [styler.apply(.red, "-") + " \(named(old)) passed beyond your sight"]
            case (false, false): return []
            }
        case .restarted:
            return []  // Still here, in a new session: nothing to see.
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
                    + "what is over its allowance is dropped unread ('\(Advice.command("nearby stats", mode: "chat"))' counts it; this is said once)"]
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
