import ChatViews
import Foundation
import Nearby
import Runtime
import Shell
import Storage
import Terminal

/// A room's lines: said to every member the planes allow, each copy sealed to its recipient and
/// sent again until acknowledged (`ReliableCopies`, with the backoff messages have); received,
/// stored once and acknowledged.
extension RoomsOnline {
    /// The members of the room we are in (the host included, us excluded), and the stored room.
    func audience(_ state: State, me: Data) -> (room: RoomID, host: Data, stored: StoredRoom, members: [Data])? {
        switch state.place {
        case .hosting(let hosting): return (hosting.room, me, hosting.stored, Array(hosting.members.keys))
        case .guest(let guest): return (guest.room, guest.host, guest.stored, [guest.host] + guest.roster.map(\.key).filter { $0 != me })
        case .none, .listening: return nil
        }
    }

    /// The members in reach that our plane reaches (a file sent in the room goes to each).
    func reachableMembers() -> [Peer]? {
        let me = context.me
        return context.engine.sync {
            audience(state.value, me: me).map { $0.members.compactMap(context.presence.peer).filter(context.rules.canWrite) }
        }
    }

    /// Says `text` to every member our plane reaches; stored, and its bubble returned.
    func say(_ text: String) throws -> ChatMessage {
        let size = text.utf8.count
        guard size <= Self.maximumLine else {
            throw UserError("a room line is at most \(Self.maximumLine) bytes (this one is \(size)): say it in parts, or open a conversation")
        }
        let me = context.me
        return try context.engine.sync {
            guard let audience = audience(state.value, me: me) else {
                throw UserError("you are in no room: room host MAJOR MINOR, or room listen")
            }
            let mine = context.rules.plane
            let present = audience.members.compactMap(context.presence.peer)
            let reachable = present.filter(context.rules.canWrite)
            guard !reachable.isEmpty else {
                throw UserError(present.isEmpty ? "nobody else is in room \(audience.room) yet"
                                : "nobody in room \(audience.room) is on a plane you reach (you are \(mine.name))")
            }
            let now = context.engine.now
            let id = Data((0..<16).map { _ in UInt8.random(in: 0...255) })
            let fragment = Fragment(sequence: 0, isLast: true, sentAt: UInt64(now * 1000), text: Data(text.utf8))
            var lines: [Data: RoomLine] = [:]
            for (recipient, sealed) in try ReliableCopies<RoomLine>.seal(fragment, from: context.identity, to: reachable, purpose: .room) {
                lines[recipient] = RoomLine(room: audience.room, host: audience.host, id: id, recipient: recipient, sealed: sealed)
            }
            let message = try RoomStore(database: context.database).sent(in: audience.stored.id, id: id, me: me, myName: context.profile.name,
                                                                          text: text, copies: lines.count, now: now)
            state.value.copies.sent(id, copies: lines, now: now)
            state.value.lines[id] = (audience.stored.id, message.number)
            for peer in reachable { context.network.send(lines[peer.signingKey]!, to: peer) }
            armResend()
            ensureTimer(context)
            return message
        }
    }

    func received(_ line: RoomLine, from sender: Data, peer: Peer?) {
        let me = context.me
        guard line.recipient == me, let audience = audience(state.value, me: me),
              audience.room == line.room, audience.host == line.host, audience.members.contains(sender) else { return }
        // The plane table binds the receiver too: only a sender whose plane reaches ours.
        guard let peer, let theirs = Plane(wireValue: peer.announcement.plane), theirs.canReach(context.rules.plane),
              let key = try? MessageCrypto.key(mine: context.identity.agreement, theirs: peer.announcement.agreementKey, mySigningKey: me,
                                               theirSigningKey: sender, purpose: .room),
              let fragment = try? MessageCrypto.open(line.sealed, key: key, sender: sender, recipient: me),
              let text = String(data: fragment.text, encoding: .utf8) else { return }
        let now = context.engine.now
        let stored = try? RoomStore(database: context.database).received(in: audience.stored.id, id: line.id, sender: sender,
                                                                         senderName: peer.name, text: text,
                                                                         sentAt: min(Double(fragment.sentAt) / 1000, now), now: now)
        // Acknowledged whether new or a copy sent again (our first acknowledgement may be lost).
        context.network.send(RoomLineAck(room: line.room, host: line.host, id: line.id), to: peer)
        guard var message = stored ?? nil else { return }
        message.sender = context.rules.shownName(of: sender) ?? peer.shownHandle
        if state.value.showing {
            let capabilities = capabilities
            context.inbox.post(.lines { [message] columns in ConversationView(capabilities: capabilities, columns: columns).bubble(message) })
        } else if !context.rules.isMuted(sender) && !context.rules.isMuted(place: Self.place(line.room)) {
            let preview = ConversationView.preview(text, width: 40)
            post(context, "room \(line.room) · \(message.sender!): \(preview)   (room, to read it there)",
                 alert: Alert(who: message.sender!, what: "wrote in room \(line.room)", text: text))
        }
    }

    func acknowledged(_ ack: RoomLineAck, from sender: Data) {
        let now = context.engine.now
        guard let line = state.value.lines[ack.id] else { return }
        let outcome = state.value.copies.acknowledge(ack.id, from: sender, now: now)
        guard outcome != .unknown else { return }
        if outcome == .all { state.value.lines[ack.id] = nil }
        armResend()
        guard let result = try? RoomStore(database: context.database).acknowledged(in: line.room, id: ack.id, me: context.me, now: now),
              result.all, state.value.showing else { return }
        // Written over the state under the line's bubble while it is on screen.
        let capabilities = capabilities
        context.inbox.post(.update([Overwrite(mark: Rooms.stateMark(result.row), id: result.number) { columns in
            ConversationView(capabilities: capabilities, columns: columns).statusTail(number: result.number, state: .delivered)
        }]) { missed in missed.isEmpty ? nil : Styler(capabilities).dim("#\(result.number) delivered to everyone") })
    }

    /// Copies whose time has come go again; those given up are told.
    func resend() {
        let due = state.value.copies.due(now: context.engine.now)
        for (peer, line) in due.again { if let peer = context.presence.peer(peer) { context.network.send(line, to: peer) } }
        for (id, key) in due.lost {
            guard let line = state.value.lines[id] else { continue }
            post(context, "#\(line.number) did not reach \(name(of: key, context))")
        }
        // A line with no copy left waiting is done with.
        state.value.lines = state.value.lines.filter { id, _ in state.value.copies.isWaiting(id) }
        armResend()
    }

    /// The timer for the next copy due again, if any waits.
    func armResend() {
        state.value.resendTimer?.cancel()
        state.value.resendTimer = state.value.copies.nextDue.map { due in
            context.engine.after(max(0, due - context.engine.now)) { [self] in resend() }
        }
    }
}
