import Accounts
import Foundation
import Nearby
import Shell
import Terminal

/// What a room's parts share while online (`RoomsOnline`, `RoomHost`, `RoomGuest`,
/// `RoomTalk`): the state on the engine, the feature's context and how the terminal draws.
struct RoomParts: Sendable {
    let context: FeatureContext
    let state: EngineBound<RoomsOnline.State>
    let capabilities: Capabilities
    /// Where notices go (above the prompt).
    let inbox: AsyncInbox
}

/// One of the rooms' parts, with the shared state and what they all say. Engine state: every
/// method runs on the engine.
protocol RoomPart {
    var parts: RoomParts { get }
}

extension RoomPart {
    var context: FeatureContext { parts.context }
    var me: Data { parts.context.me }
    var now: Double { parts.context.engine.now }

    /// Where this shell stands: in no room, listening, hosting or a guest.
    var place: RoomsOnline.Place {
        get { parts.state.value.place }
        nonmutating set { parts.state.value.place = newValue }
    }

    /// A peer as this shell names it: ourselves as we are, the others as the rules say (a
    /// curse may make strangers of them), else by their handle, else by their key.
    func name(of key: Data) -> String {
        // Ourselves first: amnesia makes strangers of the others only.
        if key == me { return SafeText.visible(context.profile.handle) }
        return context.rules.shownName(of: key) ?? context.presence.peer(key)?.shownHandle ?? "#" + PeerIdentity.fingerprint(of: key)
    }

    /// A notice about rooms above the prompt.
    func post(_ text: String, alert: Alert? = nil) {
        let line = Styler(parts.capabilities).apply(.cyan, parts.capabilities.ascii ? "@" : "◎") + " " + text
        if let alert { parts.inbox.post(line, alert: alert) } else { parts.inbox.post(line) }
    }

    func post(warning text: String) {
        parts.inbox.post(Styler(parts.capabilities).apply(.yellow + .bold, "!") + " " + text)
    }

    /// Sends `packet` to the present peer with this key, if any.
    func send<Kind: PacketKind>(_ packet: Kind, to key: Data) {
        if let peer = context.presence.peer(key) { context.network.send(packet, to: peer) }
    }

    /// What the engine's alarm is owed: the second's work while in a room or listening (from
    /// now, when it had none), copies waiting; and the broker's room topics wanted only while
    /// something watches for beacons.
    func settle() {
        parts.state.update { state in
            if case .none = state.place {
                state.nextTick = nil
            } else if state.nextTick == nil {
                state.nextTick = now
            }
        }
        if let next = parts.state.value.nextTick { context.deadlines.wake(at: next) }
        let wanted = RoomsOnline.isInterested(place)
        guard wanted != parts.state.value.watching else { return }
        parts.state.value.watching = wanted
        context.network.subscribe(topic: RoomsOnline.everyRoom, wanted)
    }
}
