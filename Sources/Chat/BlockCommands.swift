import Accounts
import ChatViews
import Foundation
import Nearby
import Shell
import Terminal

/// `block`, `unblock`, `blocked`, `mute`, `unmute`: the user's own defence against a person.
/// What is blocked or muted is a key (`PeerChoiceStore`); `Online` applies it to the engine.
/// Everywhere once logged in: in a conversation the person is its peer, in a room the room
/// (`mute`) or a name.
struct BlockCommands {
    let chat: ChatMode
    var online: Online { chat.online }

    func register(in shell: Shell) {
        let seen = ArgumentKind.dynamic { [self] in self.choiceCandidates(shell, list: nil) }
        let blocked = ArgumentKind.dynamic { [self] in self.choiceCandidates(shell, list: .blocked) }
        let muted = ArgumentKind.dynamic { [self] in self.choiceCandidates(shell, list: .muted) }
        shell.register(Command("block", scope: .global,
                               arguments: [.positional("peer", seen, optional: true,
                                                       help: "a name, or name#fingerprint (default: the open conversation's)"),
                                           .switch("--yes", help: "without asking first (scripts must say it)")],
                               summary: "nothing this person sends reaches you, nor ever will (their key: a new key is a stranger)",
                               details: "They still see you nearby, and what they write you stays 'sent': you never answer it. "
                                + "What they write while blocked is never shown or stored, even after unblock (it is taken "
                                + "then, so their seance stops sending it); what they write after the unblock arrives.") {
            invocation in try self.block(invocation.arguments["peer"], confirmed: invocation.arguments.isSet("--yes"), invocation.shell)
        })
        shell.register(Command("unblock", scope: .global, arguments: [.positional("peer", blocked, help: "a name, or name#fingerprint")],
                               summary: "hear from a blocked person again") { invocation in
            let choice = try self.chosen(invocation.arguments["peer"]!, in: .blocked, invocation.shell)
            try self.choices(invocation.shell).unblock(choice.signingKey, now: invocation.shell.session.clock())
            self.online.choicesChanged()
            invocation.shell.console.print("unblocked \(SafeText.visible(choice.handle)): heard again from their next announcement "
                                           + "(what they wrote while blocked stays unseen)")
        })
        shell.register(Command("blocked", scope: .global,
                               arguments: [.option("--format", "format", .choice([Candidate("text", "a line each"),
                                                                                   Candidate("tsv", "name, fingerprint, since (ISO 8601)")]),
                                                   help: "text (the default), or tsv for other tools")],
                               summary: "whom you blocked, and since when") { invocation in
            try self.listBlocked(tsv: invocation.arguments["format"] == "tsv", invocation.shell)
        })
        shell.register(Command("mute", scope: .global,
                               arguments: [.positional("peer", seen, optional: true,
                                                       help: "a name, or name#fingerprint (default: the open conversation or room)")],
                               summary: "keep what this person (or room) sends, silently: no notice, no bell") { invocation in
            try self.mute(invocation.arguments["peer"], true, invocation.shell)
        })
        shell.register(Command("unmute", scope: .global,
                               arguments: [.positional("peer", muted, optional: true,
                                                       help: "a name, or name#fingerprint (default: the open conversation or room)")],
                               summary: "be told again of what this person (or room) sends") { invocation in
            try self.mute(invocation.arguments["peer"], false, invocation.shell)
        })
    }

    private func choices(_ shell: Shell) throws -> PeerChoiceStore {
        guard chat.profiles.current != nil else { throw ProfileError.notLoggedIn }
        return PeerChoiceStore(database: try shell.session.openDatabase())
    }

    /// Keys blocked or muted now (from any thread).
    func blockedKeys(_ shell: Shell) -> Set<Data> { (try? choices(shell).keys(.blocked)) ?? [] }

    /// For Tab: the people of a list, or (nil) everyone seen.
    private func choiceCandidates(_ shell: Shell, list: PeerChoiceStore.List?) -> [Candidate] {
        guard let store = try? choices(shell) else { return [] }
        if let list { return ((try? store.all(list)) ?? []).map { Candidate(SafeText.visible($0.handle), list == .blocked ? "blocked" : "muted") } }
        return chat.presentPeers().map { Candidate($0.shownHandle, "nearby") }
    }

    /// The one key `wanted` means among `candidates`: at a terminal, several are a question;
    /// in a script, an error naming them.
    func pick(_ wanted: String, among candidates: [PeerChoiceStore.Choice], _ shell: Shell) throws -> PeerChoiceStore.Choice {
        var unique: [PeerChoiceStore.Choice] = []
        for candidate in candidates where !unique.contains(where: { $0.signingKey == candidate.signingKey }) { unique.append(candidate) }
        guard unique.count > 1 else {
            guard let only = unique.first else { throw UserError("nobody called \(SafeText.visible(wanted)) has been seen") }
            return only
        }
        let handles = unique.map { SafeText.visible($0.handle) }
        guard shell.isInteractive else {
            throw UserError("several keys are called \(SafeText.visible(wanted)): \(handles.joined(separator: ", ")); give name#fingerprint")
        }
        shell.console.print("several keys are called \(SafeText.visible(wanted)):")
        for (index, handle) in handles.enumerated() { shell.console.print("  \(index + 1)  \(handle)") }
        let answer = try shell.ask("which one? (1–\(unique.count)) ", field: "peer").trimmingCharacters(in: .whitespaces)
        guard let number = Int(answer), unique.indices.contains(number - 1) else {
            throw UserError("'\(SafeText.visible(answer))' is none of them: give a number from 1 to \(unique.count)")
        }
        return unique[number - 1]
    }

    /// Whom `wanted` (nil: the open conversation's peer) means among everyone seen and talked to.
    func person(_ wanted: String?, _ shell: Shell) throws -> PeerChoiceStore.Choice {
        let store = try choices(shell)
        guard let wanted else {
            guard let conversation = chat.conversations.current else { throw UserError("whom? give a name (or open their conversation first)") }
            return .init(signingKey: conversation.peerKey, name: conversation.peerName, since: 0)
        }
        let me = chat.profiles.current!.identity.signingPublicKey
        let talkedTo = try MessageStore(database: store.database).conversations(myKey: me, peerName: PeerIdentity.split(wanted).name)
            .filter { PeerIdentity.answers(wanted, name: $0.peerName, signingKey: $0.peerKey) }
            .map { PeerChoiceStore.Choice(signingKey: $0.peerKey, name: $0.peerName, since: 0) }
        return try pick(wanted, among: try store.seen(wanted) + talkedTo, shell)
    }

    /// Whom `wanted` means among those on `list`.
    private func chosen(_ wanted: String, in list: PeerChoiceStore.List, _ shell: Shell) throws -> PeerChoiceStore.Choice {
        let matching = try choices(shell).all(list).filter { PeerIdentity.answers(wanted, name: $0.name, signingKey: $0.signingKey) }
        guard !matching.isEmpty else { throw UserError("\(SafeText.visible(wanted)) is not \(list == .blocked ? "blocked" : "muted")") }
        return try pick(wanted, among: matching, shell)
    }

    private func block(_ wanted: String?, confirmed: Bool, _ shell: Shell) throws {
        let person = try person(wanted, shell)
        let handle = SafeText.visible(person.handle)
        if !confirmed {
            guard shell.isInteractive else { throw UserError("block asks first: add --yes in a script") }
            let answer = try shell.ask("block \(handle)? nothing they send will reach you, nor what they wrote while blocked ever. [y/N]",
                                       field: Shell.confirmation)
            guard answer.lowercased().hasPrefix("y") else { return shell.console.print("not blocked") }
        }
        let added = try choices(shell).add(person.signingKey, name: person.name, to: .blocked, now: shell.session.clock())
        guard added else { return shell.console.print("\(handle) is blocked already") }
        online.choicesChanged()
        if chat.conversations.current?.peerKey == person.signingKey { chat.conversations.close() }
        shell.console.print("blocked \(handle): nothing they send reaches you now (the conversation is kept: \(Advice.command("chats --all", mode: "chat"))). "
                            + "A new key of theirs would be a stranger.")
    }

    private func mute(_ wanted: String?, _ muting: Bool, _ shell: Shell) throws {
        let store = try choices(shell)
        let now = shell.session.clock()
        if wanted == nil, chat.conversations.current == nil, case .room(let room)? = chat.views.shown, let place = room.placeName {
            let changed = try store.setMuted(place: place, muting, now: now)
            online.choicesChanged()
            return shell.console.print(changed ? "\(muting ? "muted" : "unmuted") \(place)" : "\(place) is \(muting ? "muted" : "not muted") already")
        }
        let person = muting || wanted == nil ? try person(wanted, shell) : try chosen(wanted!, in: .muted, shell)
        let handle = SafeText.visible(person.handle)
        let changed = muting ? try store.add(person.signingKey, name: person.name, to: .muted, now: now) : try store.remove(person.signingKey, from: .muted)
        online.choicesChanged()
        guard changed else { return shell.console.print("\(handle) is \(muting ? "muted" : "not muted") already") }
        shell.console.print(muting ? "muted \(handle): what they send is kept, silently (\(Advice.command("chats", mode: "chat")) marks it)" : "unmuted \(handle)")
    }

    private func listBlocked(tsv: Bool, _ shell: Shell) throws {
        let blocked = try choices(shell).all(.blocked)
        if tsv {
            let formatter = ISO8601DateFormatter()
            for choice in blocked {
                let fields = [choice.name, PeerIdentity.fingerprint(of: choice.signingKey), formatter.string(from: Date(timeIntervalSince1970: choice.since))]
                shell.console.print(fields.map { SafeText.visible($0).replacingOccurrences(of: "\t", with: " ") }.joined(separator: "\t"))
            }
            return
        }
        guard !blocked.isEmpty else { return shell.console.print("nobody is blocked") }
        let view = ConversationView(capabilities: shell.capabilities, columns: shell.console.columns)
        let width = blocked.map { SafeText.visible($0.handle).displayWidth }.max() ?? 0
        for choice in blocked {
            shell.console.print(DisplayWidth.pad(SafeText.visible(choice.handle), to: width) + "   since "
                                + view.sectionTitle(choice.since, now: shell.session.clock()))
        }
    }
}
