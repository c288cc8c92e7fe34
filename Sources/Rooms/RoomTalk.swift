import ChatViews
import Crypto
import Foundation
import Nearby
import Runtime
import Shell
import Storage
import Terminal

/// A room's lines: said to every member the planes allow, each copy sealed to its recipient and
/// sent again until acknowledged (`ReliableCopies`, by each peer's round trip as
/// `PeerTiming` measures it); received, stored once and acknowledged. Every method runs on the
/// engine.
final class RoomTalk: RoomPart, Sendable {
    let parts: RoomParts

    init(_ parts: RoomParts) { self.parts = parts }

    /// The members of the room we are in (the host included, us excluded), and the stored room.
    var audience: (room: RoomID, host: Data, stored: StoredRoom, members: [Data])? {
        switch place {
        case .hosting(let hosting): return (hosting.room, me, hosting.stored, Array(hosting.members.keys))
        case .guest(let guest): return (guest.room, guest.host, guest.stored, [guest.host] + guest.roster.map(\.key).filter { $0 != me })
        case .none, .listening: return nil
        }
    }

    /// The members in reach that our plane reaches (a file sent in the room goes to each).
    var reachableMembers: [Peer]? { audience.map { $0.members.compactMap(context.presence.peer).filter(context.rules.canWrite) } }

    /// A line of ours said, waiting to be written with the ones that follow it.
    struct HeldLine {
        var room: Int64
        var id: Data
        var number: Int64
        var text: String
        var sentAt: Double
        /// Its copy for each member, sealed.
        var copies: [Data: RoomLine]
    }

    /// A line as its sender and id make it one.
    struct LineKey: Hashable {
        var sender: Data
        var id: Data
    }

    /// The longest a line said waits for the lines after it (as a conversation's do).
    static let holdLimit = 0.002
    /// Lines received remembered this session at most (then forgotten all at once: a copy that
    /// comes again after that is found by the database, and its number left unused).
    static let receivedLimit = 4_096

    /// Says `text` to every member our plane reaches: numbered now, written with the lines
    /// taken meanwhile (in one transaction), then sent; its bubble returned. Nothing goes out
    /// before it is written.
    ///
    /// - Parameter more: more lines follow at once (a pipe holds them): the write waits for
    ///   them, up to a transaction's rows or `holdLimit` seconds. A line typed goes at once.
    func say(_ typed: String, more: Bool = false) throws -> ChatMessage {
        // A feature's rules (a curse) change the line or refuse it, as they do a conversation's:
        // what they make of it is what is stored and said.
        let text = try context.rules.outgoing(typed)
        // As a conversation's message (`Delivery.SendError.nul`): stored, it would read back cut short.
        guard !text.utf8.contains(0) else { throw UserError("the line contains a NUL character, which cannot be said") }
        let size = text.utf8.count
        guard size <= RoomsOnline.maximumLine else {
            throw UserError("a room line is at most \(RoomsOnline.maximumLine) bytes (this one is \(size)): say it in parts, or open a conversation")
        }
        guard let audience else { throw UserError("you are in no room: room host MAJOR MINOR, or room listen") }
        let present = audience.members.compactMap(context.presence.peer)
        let reachable = present.filter(context.rules.canWrite)
        guard !reachable.isEmpty else {
            throw UserError(present.isEmpty ? "nobody else is in room \(audience.room) yet"
                            : "nobody in room \(audience.room) is on a plane you reach (you are \(context.rules.plane.name))")
        }
        let id = Data((0..<16).map { _ in UInt8.random(in: 0...255) })
        let now = self.now
        let fragment = Fragment(sequence: 0, isLast: true, sentAt: UInt64(now * 1000), text: Data(text.utf8))
        var copies: [Data: RoomLine] = [:]
        for (recipient, sealed) in try ReliableCopies<RoomLine>.seal(fragment, from: context.identity, to: reachable, key: key) {
            copies[recipient] = RoomLine(room: audience.room, host: audience.host, id: id, recipient: recipient, sealed: sealed)
        }
        let number = try takeNumber(in: audience.stored.id)
        let held = parts.state.update { state in
            state.held.append(HeldLine(room: audience.stored.id, id: id, number: number, text: text, sentAt: now, copies: copies))
            return state.held.count
        }
        if more && held < GroupCommit.rowLimit {
            if held == 1 { _ = context.engine.after(Self.holdLimit) { [weak self] in self?.writeHeld() } }
        } else {
            sayHeldNow()
        }
        return ChatMessage(number: number, outgoing: true, text: text, sentAt: now, state: .sent)
    }

    /// The number the next line of stored room `room` takes, taken.
    private func takeNumber(in room: Int64) throws -> Int64 {
        let number = try parts.state.value.nextNumbers[room] ?? RoomStore(database: context.database).nextNumber(in: room)
        parts.state.value.nextNumbers[room] = number + 1
        return number
    }

    /// Writes the lines said and held (with the engine's turn), then sends their copies and
    /// waits for them. Lines the database refused are told, and not sent.
    func writeHeld() {
        let batch = parts.state.update { state in
            defer { state.held = [] }
            return state.held
        }
        guard !batch.isEmpty else { return }
        let me = self.me, name = context.profile.name
        context.commits.write(rows: batch.count, { db in
            for line in batch {
                try RoomStore.sent(db, in: line.room, number: line.number, id: line.id, me: me, myName: name, text: line.text,
                                   copies: line.copies.count, now: line.sentAt)
            }
        }, then: { [self] error in
            if let error {
                let numbers = batch.map { "#\($0.number)" }.joined(separator: ", ")
                return post(warning: "\(numbers) could not be stored, and were not said: \(error)")
            }
            let now = self.now
            let timers = context.network.peerTiming.update { $0 }
            for line in batch {
                parts.state.value.copies.sent(line.id, copies: line.copies, now: now, timing: timers)
                parts.state.value.lines[line.id] = (line.room, line.number)
                for (recipient, copy) in line.copies { send(copy, to: recipient) }
            }
            context.deadlines.wake(at: parts.state.value.copies.nextDue ?? .infinity)
        })
    }

    /// Lines said and held are written and sent now, without waiting for the engine's turn to
    /// end: a line said alone, or before we leave or close the room.
    func sayHeldNow() {
        writeHeld()
        context.commits.commit()
    }

    func received(_ line: RoomLine, from sender: Data, peer: Peer?) {
        guard line.recipient == me, let audience, audience.room == line.room, audience.host == line.host,
              audience.members.contains(sender) else { return }
        // The plane table binds the receiver too: only a sender whose plane reaches ours.
        guard let peer, context.rules.canHear(from: peer), let key = try? key(for: peer),
              let fragment = try? MessageCrypto.open(line.sealed, key: key, sender: sender, recipient: me),
              let text = String(data: fragment.text, encoding: .utf8) else { return }
        let now = self.now
        let lineKey = LineKey(sender: sender, id: line.id)
        let acknowledge = { [self] in _ = context.network.send(RoomLineAck(room: line.room, host: line.host, id: line.id), to: peer) }
        // A NUL, which no seance says, is refused as a conversation refuses it: acknowledged, so
        // that it stops coming, and neither stored nor shown.
        guard !text.utf8.contains(0) else { return acknowledge() }
        // A copy sent again (our acknowledgement was lost, or is not sent yet): acknowledged
        // once what holds the first is committed.
        guard !parts.state.value.receivedLines.contains(lineKey) else {
            return context.commits.write({ _ in }, then: { error in if error == nil { acknowledge() } })
        }
        // Numbered now and written in that order: our own lines held before it go first.
        writeHeld()
        guard let number = try? takeNumber(in: audience.stored.id) else { return }
        parts.state.update { state in
            if state.receivedLines.count >= Self.receivedLimit { state.receivedLines = [] }
            state.receivedLines.insert(lineKey)
        }
        var stored: ChatMessage?
        // Stored with the turn's other writes (a burst in one transaction, as messages are),
        // then acknowledged, whether new or stored in an earlier session, and shown if new.
        context.commits.write({ db in
            stored = try RoomStore.received(db, in: audience.stored.id, number: number, id: line.id, sender: sender, senderName: peer.name,
                                            text: text, sentAt: min(Double(fragment.sentAt) / 1000, now), now: now)
        }, then: { [self] error in
            guard error == nil else {
                // Not stored: it comes again, unacknowledged, and is taken then.
                parts.state.value.receivedLines.remove(lineKey)
                return
            }
            acknowledge()
            if let stored { show(stored, from: peer, in: line.room) }
        })
    }

    /// A line of theirs, stored: a bubble in room mode, else a notice.
    private func show(_ stored: ChatMessage, from peer: Peer, in room: RoomID) {
        var message = stored
        let sender = peer.signingKey
        message.sender = context.rules.shownName(of: sender) ?? peer.shownHandle
        if parts.state.value.showing {
            let capabilities = parts.capabilities
            parts.inbox.post(.lines { [message] columns in ConversationView(capabilities: capabilities, columns: columns).bubble(message) })
        } else if !context.rules.isMuted(sender) && !context.rules.isMuted(place: RoomsOnline.place(room)) {
            let preview = ConversationView.preview(message.text, width: 40)
            post("room \(room) · \(message.sender!): \(preview)   (\(Advice.command("room")), to read it there)",
                 alert: Alert(who: message.sender!, what: "wrote in room \(room)", text: message.text))
        }
    }

    func acknowledged(_ ack: RoomLineAck, from sender: Data) {
        let now = self.now
        guard let line = parts.state.value.lines[ack.id] else { return }
        let outcome = context.network.peerTiming.update { timers in
            parts.state.value.copies.acknowledge(ack.id, from: sender, now: now, timing: &timers)
        }
        guard outcome != .unknown else { return }
        if outcome == .all { parts.state.value.lines[ack.id] = nil }
        let me = self.me
        context.commits.write({ db in try RoomStore.acknowledged(db, in: line.room, id: ack.id, me: me, now: now) }, then: { [self] error in
            guard error == nil, outcome == .all, parts.state.value.showing else { return }
            // Written over the state under the line's bubble while it is on screen.
            let capabilities = parts.capabilities
            parts.inbox.post(.update([Overwrite(mark: Rooms.stateMark(room: line.room, number: line.number), id: line.number) { columns in
                ConversationView(capabilities: capabilities, columns: columns).statusTail(number: line.number, state: .delivered)
            }]) { missed in missed.isEmpty ? nil : Styler(capabilities).dim("#\(line.number) delivered to everyone") })
        })
    }

    /// The key of room lines with `peer`, agreed once while its agreement key stays the same
    /// (an agreement costs ten times the sealing; a line to 7 members made 7).
    private func key(for peer: Peer) throws -> SymmetricKey {
        let theirs = peer.announcement.agreementKey
        if let kept = parts.state.value.keys[peer.signingKey], kept.agreementKey == theirs { return kept.key }
        let key = try MessageCrypto.key(mine: context.identity.agreement, theirs: theirs, mySigningKey: me,
                                        theirSigningKey: peer.signingKey, purpose: .room)
        // Bounded: members of rooms come and go.
        if parts.state.value.keys.count >= 256 { parts.state.value.keys = [:] }
        parts.state.value.keys[peer.signingKey] = (theirs, key)
        return key
    }

    /// Copies whose time has come go again; those given up are told.
    func resend() {
        let now = self.now
        let due = context.network.peerTiming.update { timers in parts.state.value.copies.due(now: now, timing: &timers) }
        for (peer, line) in due.again { send(line, to: peer) }
        for (id, key) in due.lost {
            guard let line = parts.state.value.lines[id] else { continue }
            post("#\(line.number) did not reach \(name(of: key))")
        }
        // A line with no copy left waiting is done with.
        parts.state.update { state in state.lines = state.lines.filter { id, _ in state.copies.isWaiting(id) } }
    }
}
