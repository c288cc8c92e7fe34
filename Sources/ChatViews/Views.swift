import Foundation
import Nearby
import Shell
import Storage

/// Where lines are shown: a conversation, or a room.
package enum Place {
    case conversation(Conversation)
    case room(any RoomInView)

    /// The conversation shown, if the place is one.
    package var conversation: Conversation? {
        if case .conversation(let conversation) = self { return conversation }
        return nil
    }
}

/// A room as the views see it while it is shown (`Rooms` is one).
package protocol RoomInView: AnyObject {
    /// Its stored row (searched first while it is shown).
    var row: Int64? { get }
    /// How it is named as a place that can be muted: `room 1.2`.
    var placeName: String? { get }
    /// Its members our plane reaches (a file sent in the room goes to each).
    var membersInReach: [Peer] { get }
}

/// What a feature adds to the places shown in the shell (pictures and files drawn among a
/// conversation's messages, `open N` of its own, lines for `nearby stats`, what follows the
/// place shown): registered once (`Views.add`), as a feature is with `Online`. Each has a
/// default that adds nothing.
package protocol PlaceExtension: AnyObject {
    /// What it draws among `conversation`'s messages, laid out by the page's `view`.
    func extras(in conversation: Conversation, view: ConversationView, database: SeanceDatabase) -> [ConversationView.Extra]
    /// `open N`, where `place` is shown (nil: none): true when N was this extension's.
    func open(_ number: Int64, in place: Place?, _ shell: Shell) throws -> Bool
    /// Lines for `nearby stats`.
    func statistics() -> [String]
    /// The place shown changed (on the shell's thread).
    func shown(_ place: Place?)
}

extension PlaceExtension {
    package func extras(in conversation: Conversation, view: ConversationView, database: SeanceDatabase) -> [ConversationView.Extra] { [] }
    package func open(_ number: Int64, in place: Place?, _ shell: Shell) throws -> Bool { false }
    package func statistics() -> [String] { [] }
    package func shown(_ place: Place?) {}
}

/// Who shows conversations (chat), as extensions ask it: the way online, a person's
/// conversation by name, a conversation opened at a line.
package protocol ConversationOwner: AnyObject {
    /// Brings the user online (announcing who they are), if not already.
    func goOnline(_ shell: Shell) throws
    /// The conversation `wanted` (a name, or `name#fp`) means; asked at a terminal when it
    /// could mean several.
    func conversation(named wanted: String, _ shell: Shell) throws -> Conversation
    /// Opens conversation `id` at message `number`, with the messages around it.
    func open(conversation id: Int64, around number: Int64, _ shell: Shell) throws
}

/// The shell's places and what extends them: the one registry views plug into, as features
/// plug into `Online`. Chat owns conversations, rooms say when one is shown, and extensions
/// (transfers, search) are added once; none of them knows another. The shell's thread only.
package final class Views {
    package private(set) var extensions: [PlaceExtension] = []
    /// Who shows conversations (set by chat when it registers).
    package weak var conversations: ConversationOwner?
    /// The place shown now; every extension is told when it changes.
    package var shown: Place? {
        didSet { extensions.forEach { $0.shown(shown) } }
    }

    package init() {}

    package func add(_ extension: PlaceExtension) { extensions.append(`extension`) }

    /// Whoever shows conversations; an error a user understands when nobody does.
    package func conversationOwner() throws -> ConversationOwner {
        guard let conversations else { throw UserError("conversations are chat's, and chat is not here") }
        return conversations
    }

    /// What every extension draws among `conversation`'s messages.
    package func extras(in conversation: Conversation, view: ConversationView, database: SeanceDatabase) -> [ConversationView.Extra] {
        extensions.flatMap { $0.extras(in: conversation, view: view, database: database) }
    }

    /// `open N`: the first extension whose N it is opens it; false when none claims it.
    package func open(_ number: Int64, _ shell: Shell) throws -> Bool {
        for item in extensions where try item.open(number, in: shown, shell) { return true }
        return false
    }

    /// Every extension's lines for `nearby stats`.
    package func statistics() -> [String] { extensions.flatMap { $0.statistics() } }
}
