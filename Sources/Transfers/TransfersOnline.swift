import ChatViews
import Foundation
import Nearby
import Runtime
import Shell
import Terminal

/// Transfers while online: the engine's part. Offers go until answered (again whenever the
/// peer comes back, which is how a transfer resumes: the answer says where the receiver
/// stopped); chunks go a window at a time (`SendWindow`), are written in order as they come
/// (`ReceiveWindow`) and acknowledged once written, so that a kill at any moment loses only
/// what was not acknowledged yet. Everything here runs on the engine.
final class TransfersOnline: Sendable {
    /// A file of ours going to one peer.
    struct Sending {
        var transfer: Transfer
        /// Once the peer accepted (from where it stopped).
        var window: SendWindow?
        /// The window's chunks, read from the database once each.
        var cache: [Int: [UInt8]] = [:]
        var offeredAt = -Double.infinity
        var progress: Progress?
    }

    /// A file coming from one peer, accepted.
    struct Receiving {
        var transfer: Transfer
        var window: ReceiveWindow
        var flushScheduled = false
        var progress: Progress
    }

    /// Where a transfer's rate is measured from, and when its bar was last drawn.
    struct Progress {
        var since: Double
        var from: Int
        var shownAt = -Double.infinity
    }

    struct Key: Hashable {
        var peer: Data
        var id: Data
    }

    struct State {
        var sending: [Data: Sending] = [:]
        var receiving: [Key: Receiving] = [:]
        var timer: Cancellable?
        /// Offers refused and chunks dropped, by reason (`nearby stats`).
        var refused: [String: Int] = [:]
        /// Chunks of transfers not known here, looked up once each (a flood of made-up ids
        /// must not cost a database read a chunk).
        var unknown: Set<Key> = []
        /// Transfers of theirs complete here, with their chunk counts: a chunk of one (its
        /// sender missed our last acknowledgement) gets that acknowledgement again.
        var finished: [Key: Int] = [:]
    }

    /// A peer may hold this much of our disk in unfinished transfers, and have this many
    /// offers unfinished at once.
    static let quota = 64 << 20
    static let unfinishedLimit = 16
    /// Pictures up to this size from someone we have a conversation with are accepted at once.
    static let automaticLimit = 1 << 20
    /// Offers go again this often until answered (while the receiver asks its user, less often).
    static let offerInterval = 1.0
    static let askingInterval = 5.0
    /// The shortest wait of the alarm (a chunk's timeout is at least 20 ms).
    static let tick = 0.005
    /// The bar under a transfer is drawn again at most this often.
    static let progressInterval = 0.25

    let context: FeatureContext
    let state: EngineBound<State>
    let capabilities: Capabilities
    /// The terminal can write over lines printed earlier (the bar is updated in place).
    let overwrites: Bool
    /// The conversation shown in the shell now (set by chat through `Transfers`).
    let inView: EngineBound<Int64?>

    init(_ context: FeatureContext, capabilities: Capabilities, overwrites: Bool) {
        self.context = context
        self.capabilities = capabilities
        self.overwrites = overwrites
        state = EngineBound(State(), engine: context.engine)
        inView = EngineBound(nil, engine: context.engine)
    }

    var store: TransferStore { TransferStore(database: context.database) }

    func start() {
        let presence = context.presence
        presence.handle(FileOffer.self) { [self] offer, sender, peer in offered(offer, from: sender, peer: peer) }
        presence.handle(FileAnswer.self) { [self] answer, sender, _ in answered(answer, from: sender) }
        presence.handle(FileChunk.self) { [self] chunk, sender, _ in received(chunk, from: sender) }
        presence.handle(FileChunkAck.self) { [self] ack, sender, _ in acknowledged(ack, from: sender) }
        context.observe { [self] event in
            // Someone our files wait for came back: the offer goes again, and its answer
            // says where to go on from.
            if case .presence(.arrived(let peer)) = event {
                for (id, sending) in state.value.sending where sending.transfer.peerKey == peer.signingKey {
                    state.value.sending[id]?.offeredAt = -.infinity
                }
                tick()
            }
        }
        // What was moving when we last went offline goes on; what a kill left half-stored goes.
        try? store.removeUnstored(myKey: context.me)
        for transfer in (try? store.transfers(myKey: context.me, unfinished: true)) ?? [] where transfer.outgoing {
            state.value.sending[transfer.transferID] = Sending(transfer: transfer)
        }
        rearm()
    }

    func stop() {
        state.value.timer?.cancel()
        state.value.timer = nil
    }

    // MARK: Ours

    /// Starts sending `transfer` (stored just now by the shell).
    func send(_ transfer: Transfer) {
        state.value.sending[transfer.transferID] = Sending(transfer: transfer)
        tick()
    }

    /// One alarm, at the next thing due: an offer to send again, a chunk's timeout, a bar to
    /// draw. Nothing due (a peer away, an offer the receiver's user has not answered for
    /// hours): a check a second, not a wake-up every few milliseconds.
    private func rearm() {
        let now = context.engine.now
        var next = Double.infinity
        for sending in state.value.sending.values {
            // A peer away is waited for by its arrival (and a check a second), not by its deadlines.
            guard reachable(sending.transfer.peerKey) != nil else { continue }
            if let window = sending.window, sending.transfer.state == .moving {
                if let deadline = window.deadline { next = min(next, deadline) }
                if overwrites, let progress = sending.progress { next = min(next, progress.shownAt + Self.progressInterval) }
            } else {
                next = min(next, sending.offeredAt + (sending.transfer.state == .asking ? Self.askingInterval : Self.offerInterval))
            }
        }
        state.value.timer?.cancel()
        state.value.timer = nil
        guard !state.value.sending.isEmpty else { return }
        let delay = min(1, max(Self.tick, next - now))
        state.value.timer = context.engine.after(delay) { [weak self] in self?.tick() }
    }

    /// Offers that are due go, chunks that are due go, bars are drawn.
    func tick() {
        let now = context.engine.now
        for id in Array(state.value.sending.keys) {
            guard let transfer = state.value.sending[id]?.transfer, let peer = reachable(transfer.peerKey) else { continue }
            switch transfer.state {
            case .offered, .asking, .moving:
                // Moving but resumed from the database (no window yet): the offer finds out
                // where the receiver is.
                let waiting = transfer.state != .moving || state.value.sending[id]!.window == nil
                let interval = transfer.state == .asking ? Self.askingInterval : Self.offerInterval
                if waiting, now - state.value.sending[id]!.offeredAt >= interval {
                    state.value.sending[id]!.offeredAt = now
                    context.presence.send(transfer.offer, to: peer)
                }
                if !waiting { sendDue(id, to: peer, now: now) }
            default:
                break
            }
        }
        rearm()
    }

    /// Sends what the window of `id` says is due, and draws its bar.
    private func sendDue(_ id: Data, to peer: Peer, now: Double) {
        // In place: a copy of the sending state would copy its window's chunks each time.
        guard state.value.sending[id]?.window != nil else { return }
        let due = state.value.sending[id]!.window!.due(now: now)
        let chunks = chunks(due, of: id)
        for chunk in chunks { context.presence.send(chunk, to: peer) }
        let (transfer, stored) = (state.value.sending[id]!.transfer, state.value.sending[id]!.window!.stored)
        if var progress = state.value.sending[id]!.progress {
            showProgress(of: transfer, stored: stored, progress: &progress, now: now)
            state.value.sending[id]!.progress = progress
        }
    }

    /// The chunks `indices` of `id`, from the window's cache, read from the database once.
    private func chunks(_ indices: [Int], of id: Data) -> [FileChunk] {
        guard !indices.isEmpty, let number = state.value.sending[id]?.transfer.number else { return [] }
        let missing = indices.filter { state.value.sending[id]!.cache[$0] == nil }
        if !missing.isEmpty, let read = try? store.chunks(missing, of: number) {
            for (index, data) in read { state.value.sending[id]!.cache[index] = data }
        }
        return indices.compactMap { index in
            state.value.sending[id]!.cache[index].map { FileChunk(id: id, index: UInt32(index), data: $0) }
        }
    }

    /// The peer with this key if it is in reach and our plane reaches it.
    private func reachable(_ key: Data) -> Peer? {
        guard let peer = context.presence.peer(key), context.rules.canWrite(peer) else { return nil }
        return peer
    }

    private func answered(_ answer: FileAnswer, from sender: Data) {
        guard var sending = state.value.sending[answer.id], sending.transfer.peerKey == sender else {
            // Theirs, stopped by its sender; or ours, which their end found damaged once whole.
            if answer.decision == .cancel { return cancelled(Key(peer: sender, id: answer.id)) }
            return context.presence.dropped("file answer to nothing offered")
        }
        let transfer = sending.transfer
        let now = context.engine.now
        switch answer.decision {
        case .accept:
            let from = min(Int(answer.stored), transfer.chunkCount)
            sending.window = SendWindow(count: transfer.chunkCount, from: from)
            sending.cache = sending.cache.filter { $0.key >= from }
            sending.progress = Progress(since: now, from: from)
            if transfer.state != .moving {
                sending.transfer.state = .moving
                try? store.set(transfer.number, state: .moving)
            }
            state.value.sending[answer.id] = sending
            tick()
        case .asking:
            guard transfer.state == .offered else { return }
            sending.transfer.state = .asking
            state.value.sending[answer.id] = sending
            try? store.set(transfer.number, state: .asking)
            tell(sending.transfer, stored: 0, line: "\(name(of: sender)) is asked whether to take \(TransferView.shownName(transfer.name))")
        case .complete:
            finish(sending.transfer, as: .complete)
        case .decline:
            finish(sending.transfer, as: .declined, reason: "\(name(of: sender)) said no")
        case .cancel:
            finish(sending.transfer, as: .cancelled, reason: "\(name(of: sender)) stopped it")
        case .refuse:
            finish(sending.transfer, as: .failed, reason: "\(name(of: sender))'s seance refused it (over the \(Self.unfinishedLimit) files "
                   + "or \(Self.quota >> 20) MiB one person may have unfinished there)")
        }
    }

    private func acknowledged(_ ack: FileChunkAck, from sender: Data) {
        guard let sending = state.value.sending[ack.id], sending.transfer.peerKey == sender, sending.window != nil else {
            return context.presence.dropped("file acknowledgement to nothing sent")
        }
        let now = context.engine.now
        guard state.value.sending[ack.id]!.window!.acknowledged(stored: Int(ack.stored), held: ack.held, now: now) else { return }
        let window = state.value.sending[ack.id]!.window!
        guard !window.isComplete else { return finish(sending.transfer, as: .complete) }
        // What the receiver stored leaves the cache.
        for index in state.value.sending[ack.id]!.cache.keys where index < window.stored {
            state.value.sending[ack.id]!.cache[index] = nil
        }
        if let peer = reachable(sender) { sendDue(ack.id, to: peer, now: now) }
        // The alarm only when there was none: one set earlier for a deadline now later fires
        // for nothing once, and rearms (an acknowledgement is frequent, an alarm changed is not cheap).
        if state.value.timer == nil { rearm() }
    }

    /// Ours ended: stored, told, forgotten here.
    private func finish(_ transfer: Transfer, as end: Transfer.State, reason: String? = nil) {
        state.value.sending[transfer.transferID] = nil
        var ended = transfer
        ended.state = end
        ended.reason = reason
        try? store.set(transfer.number, state: end, stored: end == .complete ? transfer.chunkCount : nil, reason: reason)
        let what = "\(transfer.picture ? "picture" : "file") \(transfer.number) (\(TransferView.shownName(transfer.name)))"
        let line = end == .complete ? "\(what) delivered to \(name(of: transfer.peerKey))"
            : "\(what) to \(name(of: transfer.peerKey)): \(end.rawValue)" + (reason.map { ", " + $0 } ?? "")
        tell(ended, stored: end == .complete ? transfer.chunkCount : 0, line: line)
    }

    // MARK: Theirs

    private func offered(_ offer: FileOffer, from sender: Data, peer: Peer?) {
        guard let peer, let theirs = Plane(wireValue: peer.announcement.plane), theirs.canReach(context.rules.plane) else {
            return context.presence.dropped("file offer from nobody in reach")
        }
        let key = Key(peer: sender, id: offer.id)
        if let receiving = state.value.receiving[key] {
            return answer(offer.id, .accept, stored: receiving.window.stored, to: peer)
        }
        let messages = MessageStore(database: context.database)
        let now = context.engine.now
        let existing = try? messages.existingConversation(myKey: context.me, peerKey: sender)
        if let existing, let known = try? store.transfer(offer.id, in: existing.id, outgoing: false) {
            return resume(known, offer: offer, peer: peer)
        }
        guard let holding = try? store.holding(of: sender, myKey: context.me) else { return }
        guard holding.unfinished < Self.unfinishedLimit else {
            refuse("more than \(Self.unfinishedLimit) unfinished from one person")
            return answer(offer.id, .refuse, to: peer)
        }
        let knownPerson = existing.map { (try? store.hasMessages($0.id)) ?? false } ?? false
        let automatic = offer.picture && Int(offer.size) <= Self.automaticLimit && knownPerson && holding.bytes + Int(offer.size) <= Self.quota
        guard let conversation = try? messages.conversation(myKey: context.me, peerKey: sender, peerName: peer.name,
                                                            peerAgreementKey: peer.announcement.agreementKey, now: now),
              let (transfer, _) = try? store.offered(offer, in: conversation, state: automatic ? .moving : .asking, now: now) else { return }
        if automatic {
            accept(transfer, peer: peer, new: true)
        } else {
            answer(offer.id, .asking, to: peer)
            let who = name(of: sender)
            let what = "\(transfer.picture ? "a picture" : "a file"), \(TransferView.size(transfer.size))"
            let line = "\(who) offers \(TransferView.shownName(transfer.name)) (\(what)): /accept \(transfer.number) or /decline \(transfer.number)"
            tell(transfer, stored: 0, line: line, new: true, alert: Alert(who: who, what: "offers you a file"))
        }
    }

    /// An offer of a transfer stored already (sent again, or after either side came back).
    private func resume(_ transfer: Transfer, offer: FileOffer, peer: Peer) {
        switch transfer.state {
        case .moving: accept(transfer, peer: peer)
        case .complete: answer(offer.id, .complete, stored: transfer.chunkCount, to: peer)
        case .asking: answer(offer.id, .asking, to: peer)
        case .declined: answer(offer.id, .decline, to: peer)
        case .cancelled, .failed, .offered, .storing: answer(offer.id, .cancel, to: peer)
        }
    }

    /// Takes `transfer` (accepted at once, by `/accept`, or resumed): from what is stored on.
    /// `new`: nothing of it is on the screen yet (accepted at once).
    func accept(_ transfer: Transfer, peer: Peer?, new: Bool = false) {
        let key = Key(peer: transfer.peerKey, id: transfer.transferID)
        let now = context.engine.now
        if state.value.receiving[key] == nil {
            let window = ReceiveWindow(count: transfer.chunkCount, chunkSize: transfer.chunkSize, size: transfer.size, stored: transfer.stored)
            state.value.receiving[key] = Receiving(transfer: transfer, window: window, progress: Progress(since: now, from: transfer.stored))
            state.value.unknown.remove(key)
            if transfer.stored == 0 {
                tell(transfer, stored: 0, line: "\(name(of: transfer.peerKey)) sends \(TransferView.shownName(transfer.name)) "
                     + "(\(transfer.picture ? "a picture" : "a file"), \(TransferView.size(transfer.size)))", new: new)
            }
        }
        if let peer { answer(transfer.transferID, .accept, stored: state.value.receiving[key]!.window.stored, to: peer) }
    }

    private func received(_ chunk: FileChunk, from sender: Data) {
        let key = Key(peer: sender, id: chunk.id)
        if let count = state.value.finished[key] {
            // Whole here already: the sender did not hear so.
            if let peer = context.presence.peer(sender) { context.presence.send(FileChunkAck(id: chunk.id, stored: UInt32(count)), to: peer) }
            return
        }
        if state.value.receiving[key] == nil {
            // After a restart here, the sender goes on where it was: the transfer is found again.
            guard !state.value.unknown.contains(key) else { return context.presence.dropped("file chunk of nothing accepted") }
            let conversation = try? MessageStore(database: context.database).existingConversation(myKey: context.me, peerKey: sender)
            let transfer = conversation.flatMap { try? store.transfer(chunk.id, in: $0.id, outgoing: false) }
            if let transfer, transfer.state == .complete {
                remember(finished: key, count: transfer.chunkCount)
                return received(chunk, from: sender)
            }
            guard let transfer, transfer.state == .moving else {
                if state.value.unknown.count >= 256 { state.value.unknown.removeAll() }
                state.value.unknown.insert(key)
                return context.presence.dropped("file chunk of nothing accepted")
            }
            accept(transfer, peer: context.presence.peer(sender))
        }
        guard state.value.receiving[key] != nil else { return }
        // In place: a copy would copy every chunk waiting to be written.
        if state.value.receiving[key]!.window.take(Int(chunk.index), chunk.data) == .invalid {
            return refuse("file chunk of the wrong size or place")
        }
        // A quarter of a window in order is written and acknowledged at once: the sender goes on
        // while the rest come, rather than waiting for the whole window's turn to end.
        if state.value.receiving[key]!.window.unwritten.count >= SendWindow.size / 4 { return flush(key) }
        if !state.value.receiving[key]!.flushScheduled {
            state.value.receiving[key]!.flushScheduled = true
            // After the chunks already handed to the engine: they are written together.
            context.engine.async { [weak self] in self?.flush(key) }
        }
    }

    /// Writes what came in order, acknowledges it, and finishes a complete transfer.
    private func flush(_ key: Key) {
        guard let receiving = state.value.receiving[key] else { return }
        state.value.receiving[key]!.flushScheduled = false
        let unwritten = receiving.window.unwritten
        if !unwritten.isEmpty {
            // Not acknowledged when the database refuses: the sender sends it again.
            guard (try? store.received(unwritten, from: receiving.window.stored, in: receiving.transfer.number)) != nil else { return }
            state.value.receiving[key]!.window.written()
        }
        let (stored, held) = state.value.receiving[key]!.window.acknowledgement
        if let peer = context.presence.peer(key.peer) {
            context.presence.send(FileChunkAck(id: key.id, stored: UInt32(stored), held: held), to: peer)
        }
        var progress = receiving.progress
        showProgress(of: receiving.transfer, stored: stored, progress: &progress, now: context.engine.now)
        state.value.receiving[key]!.progress = progress
        if state.value.receiving[key]!.window.isComplete { complete(key) }
    }

    /// Keeps at most 256 of the transfers complete here, for chunks sent again after the end.
    private func remember(finished key: Key, count: Int) {
        if state.value.finished.count >= 256 { state.value.finished.removeAll() }
        state.value.finished[key] = count
    }

    /// Every chunk is in: the hash over all of them decides whether it is shown.
    private func complete(_ key: Key) {
        guard let receiving = state.value.receiving.removeValue(forKey: key) else { return }
        var transfer = receiving.transfer
        if (try? store.hash(of: transfer.number)) == transfer.sha256 {
            remember(finished: key, count: transfer.chunkCount)
            transfer.state = .complete
            try? store.set(transfer.number, state: .complete, stored: transfer.chunkCount)
            tellArrived(transfer, sender: name(of: transfer.peerKey))
        } else {
            transfer.state = .failed
            transfer.reason = "it was damaged on the way (its hash did not match): nothing was kept"
            try? store.set(transfer.number, state: .failed, reason: transfer.reason)
            if let peer = context.presence.peer(key.peer) { answer(key.id, .cancel, to: peer) }
            tell(transfer, stored: 0, line: "\(TransferView.shownName(transfer.name)) from \(name(of: key.peer)): failed, \(transfer.reason!)")
        }
    }

    /// Stopped by its sender; or, when ours and delivered, refused by the receiver once whole.
    private func cancelled(_ key: Key) {
        let conversation = try? MessageStore(database: context.database).existingConversation(myKey: context.me, peerKey: key.peer)
        if let conversation, var ours = try? store.transfer(key.id, in: conversation.id, outgoing: true), ours.state == .complete {
            ours.state = .failed
            ours.reason = "\(name(of: key.peer))'s end found it damaged once whole (its hash did not match)"
            try? store.set(ours.number, state: .failed, reason: ours.reason)
            return tell(ours, stored: 0, line: "\(TransferView.shownName(ours.name)) to \(name(of: key.peer)): failed, \(ours.reason!)")
        }
        guard let conversation, var transfer = try? store.transfer(key.id, in: conversation.id, outgoing: false), !transfer.state.isFinal else {
            return context.presence.dropped("file answer to nothing offered")
        }
        state.value.receiving[key] = nil
        transfer.state = .cancelled
        transfer.reason = "\(name(of: key.peer)) stopped it"
        try? store.set(transfer.number, state: .cancelled, reason: transfer.reason)
        tell(transfer, stored: 0, line: "\(TransferView.shownName(transfer.name)) from \(name(of: key.peer)): cancelled, \(transfer.reason!)")
    }

    /// The user stopped, declined or accepted a transfer (from the shell, through the engine).
    func stopped(_ transfer: Transfer, as end: Transfer.State) {
        state.value.sending[transfer.transferID] = nil
        state.value.receiving[Key(peer: transfer.peerKey, id: transfer.transferID)] = nil
        try? store.set(transfer.number, state: end, reason: end == .declined ? "you said no" : "you stopped it")
        if let peer = context.presence.peer(transfer.peerKey) {
            answer(transfer.transferID, end == .declined ? .decline : .cancel, to: peer)
        }
    }

    /// Accepts `/accept N`: false when it would take the sender past its quota.
    func accepted(_ transfer: Transfer) throws {
        let holding = try store.holding(of: transfer.peerKey, myKey: context.me)
        guard holding.bytes + transfer.size <= Self.quota else {
            refuse("over a person's \(Self.quota >> 20) MiB")
            throw UserError("\(name(of: transfer.peerKey)) already holds \(TransferView.size(holding.bytes)) of your disk in unfinished files: "
                            + "taking this one would pass the \(Self.quota >> 20) MiB one person may hold (cancel one first)")
        }
        try store.set(transfer.number, state: .moving)
        var moving = transfer
        moving.state = .moving
        accept(moving, peer: context.presence.peer(transfer.peerKey))
    }

    private func answer(_ id: Data, _ decision: FileAnswer.Decision, stored: Int = 0, to peer: Peer) {
        context.presence.send(FileAnswer(id: id, decision: decision, stored: UInt32(stored)), to: peer)
    }

    private func refuse(_ reason: String) {
        state.value.refused[reason, default: 0] += 1
        context.presence.dropped("file: " + reason)
    }

    /// Stored, how far it has come (what `transfers` shows of those moving).
    func stored(of transfer: Transfer) -> Int {
        if let sending = state.value.sending[transfer.transferID] { return sending.window?.stored ?? transfer.stored }
        return state.value.receiving[Key(peer: transfer.peerKey, id: transfer.transferID)]?.window.stored ?? transfer.stored
    }

    var refusals: [String: Int] { state.value.refused }

    // MARK: What the user sees

    func name(of key: Data) -> String {
        context.rules.shownName(of: key) ?? context.presence.peer(key)?.shownHandle
            ?? ((try? MessageStore(database: context.database).existingConversation(myKey: context.me, peerKey: key))??.shownHandle ?? "someone")
    }

    /// The picture of a complete transfer, if it is one that decodes.
    static func picture(_ transfer: Transfer, store: TransferStore) -> RGBAImage? {
        guard transfer.picture, let bytes = try? store.contents(of: transfer.number) else { return nil }
        return try? ImageDecoder.decode(bytes)
    }

    /// A line about `transfer`. At a terminal, a transfer new to the screen (one offered to
    /// us) gets its bar under the line, written over as it moves; one on the screen already
    /// has its bar written over, and the line is printed only when the bar has scrolled away.
    private func tell(_ transfer: Transfer, stored: Int, line: String, new: Bool = false, alert: Alert? = nil) {
        let inbox = context.inbox
        let capabilities = capabilities
        if !overwrites {
            inbox.post(line)
        } else if new {
            inbox.post(.markedLines { columns in
                [MarkedLine(line), MarkedLine(TransferView(capabilities: capabilities, columns: columns).progressRow(transfer, stored: stored, rate: nil),
                                              mark: Transfers.progressMark(transfer.number))]
            })
        } else {
            inbox.post(.update([Overwrite(mark: Transfers.progressMark(transfer.number), id: transfer.number) { columns in
                TransferView(capabilities: capabilities, columns: columns).progressRow(transfer, stored: stored, rate: nil)
            }]) { missed in missed.isEmpty ? nil : line })
        }
        if let alert { inbox.post(.alert(alert)) }
    }

    /// A file of theirs is complete: in the conversation shown, its bubble (a picture drawn);
    /// elsewhere a line, and the bell.
    private func tellArrived(_ transfer: Transfer, sender: String) {
        let inbox = context.inbox
        let (capabilities, store) = (capabilities, store)
        let what = "\(transfer.picture ? "picture" : "file") \(transfer.number)"
        if inView.value == transfer.conversation {
            if overwrites {
                // The bar under the placeholder says it came; the picture is drawn below.
                inbox.post(.update([Overwrite(mark: Transfers.progressMark(transfer.number), id: transfer.number) { columns in
                    TransferView(capabilities: capabilities, columns: columns).progressRow(transfer, stored: transfer.chunkCount, rate: nil)
                }]) { _ in nil })
            }
            // Decoded where it is drawn, on the shell's thread (the decoder is the visions' too).
            inbox.post(.lines { columns in
                let view = TransferView(capabilities: capabilities, columns: columns)
                return view.bubble(transfer, picture: Self.picture(transfer, store: store), sender: sender) + [view.numberRow(transfer)]
            })
        } else if !context.rules.isMuted(transfer.peerKey) {
            inbox.post(Styler(capabilities).apply(.magenta, capabilities.ascii ? "*" : "✉") + " \(sender) sent \(what) "
                       + "(\(TransferView.shownName(transfer.name)), \(TransferView.size(transfer.size)))   (open \(sender))",
                       alert: Alert(who: sender, what: "sent you \(transfer.picture ? "a picture" : "a file")"))
        }
        if !overwrites, inView.value == transfer.conversation {
            inbox.post("\(what) received from \(sender)")
        }
    }

    /// The bar under a transfer, written over in place at a terminal (scripts get no bars).
    private func showProgress(of transfer: Transfer, stored: Int, progress: inout Progress?, now: Double) {
        guard var current = progress else { return }
        showProgress(of: transfer, stored: stored, progress: &current, now: now)
        progress = current
    }

    private func showProgress(of transfer: Transfer, stored: Int, progress: inout Progress, now: Double) {
        guard overwrites, now - progress.shownAt >= Self.progressInterval else { return }
        progress.shownAt = now
        let elapsed = now - progress.since
        let rate = elapsed > 0.2 ? Double((stored - progress.from) * transfer.chunkSize) / elapsed : nil
        let capabilities = capabilities
        context.inbox.post(.update([Overwrite(mark: Transfers.progressMark(transfer.number), id: transfer.number) { columns in
            TransferView(capabilities: capabilities, columns: columns).progressRow(transfer, stored: stored, rate: rate)
        }]) { _ in nil })
    }
}
