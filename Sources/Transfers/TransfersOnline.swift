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
        let network = context.network
        network.handle(FileOffer.self) { [self] offer, sender, peer in offered(offer, from: sender, peer: peer) }
        network.handle(FileAnswer.self) { [self] answer, sender, _ in answered(answer, from: sender) }
        network.handle(FileChunk.self) { [self] chunk, sender, _ in received(chunk, from: sender) }
        network.handle(FileChunkAck.self) { [self] ack, sender, _ in acknowledged(ack, from: sender) }
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
                    context.network.send(transfer.offer, to: peer)
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
        for chunk in chunks { context.network.send(chunk, to: peer) }
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
            return context.network.drop("file answer to nothing offered")
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
            return context.network.drop("file acknowledgement to nothing sent")
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
    func tell(_ transfer: Transfer, stored: Int, line: String, new: Bool = false, alert: Alert? = nil) {
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
    func tellArrived(_ transfer: Transfer, sender: String) {
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

    func showProgress(of transfer: Transfer, stored: Int, progress: inout Progress, now: Double) {
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
