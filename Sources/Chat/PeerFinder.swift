import Accounts
import ChatViews
import Foundation
import Nearby
import Shell
import Storage
import Terminal

/// Whom a name means: the present peers this plane lets us see, then past conversations; more
/// than one is a question at a terminal, an error in a script. The shell's thread.
struct PeerFinder {
    let chat: ChatMode

    /// Waits (printing what arrives meanwhile) until a peer called `wanted` is in sight, or
    /// `seconds` have passed; `open` then says what it finds.
    func wait(for wanted: String, seconds: Double, _ shell: Shell) throws {
        _ = try shell.wait(upTo: seconds) { !visiblePeers(matching: wanted).isEmpty }
    }

    /// The present peers `wanted` (a name, or `name#fp`) can mean that this plane lets us see.
    func visiblePeers(matching wanted: String) -> [Peer] {
        guard let context = chat.context else { return [] }
        return context.engine.sync { context.presence.peers().filter { $0.answers(to: wanted) && context.rules.canSee($0) } }
    }

    /// The conversation `wanted` (a name, or `name#fp`) means: with a present peer first, then
    /// a past one; made when it is new. More than one person it could mean is asked about at a
    /// terminal and an error in a script; a person blocked is refused.
    func conversation(named wanted: String, _ shell: Shell) throws -> Conversation {
        guard let context = chat.context else { throw UserError("you are offline: chat brings you online") }
        guard let me = chat.profiles.current else { throw ProfileError.notLoggedIn }
        let name = PeerIdentity.split(wanted).name
        let visible = visiblePeers(matching: wanted)
        let store = MessageStore(database: try shell.session.openDatabase())
        let past = try store.conversations(myKey: me.identity.signingPublicKey, peerName: name).filter {
            PeerIdentity.answers(wanted, name: $0.peerName, signingKey: $0.peerKey)
        }
        // Everyone the name could mean, in sight or talked to before: more than one key is a
        // question to ask (at a terminal; a script is told to say which), never a silent pick.
        let trust = TrustStore(database: store.database)
        var choices = visible.map { ($0.handle, $0.shownHandle + ChatText.trustNote(trust.trustedKey(forName: $0.name), $0.signingKey)) }
        for conversation in past where !visible.contains(where: { $0.signingKey == conversation.peerKey }) {
            choices.append((conversation.handle, conversation.shownHandle + " (not in sight)"))
        }
        guard choices.count <= 1 else {
            guard shell.isInteractive else {
                throw UserError("several peers are called \(SafeText.visible(name)): " + choices.map(\.1).joined(separator: ", ")
                                + "; give name#fingerprint")
            }
            shell.console.print("several peers are called \(SafeText.visible(name)):")
            for (index, choice) in choices.enumerated() { shell.console.print("  \(index + 1)  \(choice.1)") }
            let answer = try shell.ask("which one? (1–\(choices.count), or name#fingerprint) ", field: "peer").trimmingCharacters(in: .whitespaces)
            if let number = Int(answer), choices.indices.contains(number - 1) { return try conversation(named: choices[number - 1].0, shell) }
            guard choices.contains(where: { PeerIdentity.split($0.0).fingerprint == PeerIdentity.split(answer).fingerprint }),
                  PeerIdentity.split(answer).fingerprint != nil else {
                throw UserError("'\(SafeText.visible(answer))' is none of them: give a number from 1 to \(choices.count)")
            }
            return try conversation(named: answer, shell)
        }
        if let key = visible.first?.signingKey ?? past.first?.peerKey, PeerChoiceStore(database: store.database).keys(.blocked).contains(key) {
            let handle = visible.first?.shownHandle ?? past.first!.shownHandle
            throw UserError("you blocked \(handle): unblock \(handle) to talk again")
        }
        if let peer = visible.first { return try context.engine.sync { try context.delivery.conversation(with: peer) } }
        if let earlier = past.first { return earlier }
        throw UserError("nobody called \(SafeText.visible(wanted)) is in sight, and you have no conversation with them")
    }
}
