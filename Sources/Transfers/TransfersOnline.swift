import ChatViews
import Foundation
import Nearby
import Runtime
import Shell
import Terminal

/// Transfers while online: the engine's part. Offers go until answered (again whenever the
/// peer comes back, which is how a transfer resumes: the answer says where the receiver
/// stopped); chunks go a window at a time (`SendWindow`), are written in order as they come
/// (`ReceiveWindow`, `TransferReceiver`'s) and acknowledged once written, so that a kill at any
/// moment loses only what was not acknowledged yet. Everything here runs on the engine, whose
/// one alarm wakes it when something of ours is due.
final class TransfersOnline: TransferPart, Sendable {
    /// A file of ours going to one peer.
    struct Sending {
        var transfer: Transfer
        /// Once the peer accepted (from where it stopped).
        var window: SendWindow?
        /// The window's chunks, read from the database once each.
        var cache: [Int: [UInt8]] = [:]
        var offeredAt = -Double.infinity
        var progress: Progress?
        /// On a stream (`FileStream`) instead of in chunks, while it goes.
        var stream: StreamSender?
        /// Every byte went on the stream: the receiver's acknowledgement is waited for, and
        /// asked for again with the offer when it does not come (it may be lost).
        var streamSent = false
        /// The keys of the streams begun: none is begun twice under one (its blocks' nonces
        /// would start again), however late an answer naming one comes.
        var streamKeys: Set<Data> = []
        /// When the last stream ended short.
        var streamEndedAt = -Double.infinity
        /// On a stream: the chunks stored when it began, and as the receiver last said.
        var streamStored = (from: 0, reached: 0)
        /// A stream failed without moving the file on (none can be made, or nothing goes on
        /// it): chunks from then on. One cut short by the receiver's restart is tried again.
        var streamFailed = false
        /// A stream ended short, and the receiver has not said since where it stands: its next
        /// acceptance tells whether the stream moved the file on. (The acknowledgements that
        /// came while it went cannot: the last ones are lost with the connection, or sealed in
        /// a session the receiver's restart ended, and a stream that moved the file was taken
        /// for one that never could.)
        var streamEndedShort = false
    }

    /// A file coming from one peer, accepted.
    struct Receiving {
        var transfer: Transfer
        var window: ReceiveWindow
        var flushScheduled = false
        var progress: Progress
    }

    /// A stream of theirs expected at our listener: for which transfer, and its terms.
    struct ExpectedStream {
        var key: Key
        var terms: StreamListener.Expected
        /// A connection has presented it: no other may (`TransferReceiver.take(expected:)`).
        var taken = false
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
        /// Offers refused and chunks dropped, by reason (`nearby stats`).
        var refused: [String: Int] = [:]
        /// Chunks of transfers not known here, looked up once each (a flood of made-up ids
        /// must not cost a database read a chunk).
        var unknown: Set<Key> = []
        /// Transfers of theirs complete here, with their chunk counts: a chunk of one (its
        /// sender missed our last acknowledgement) gets that acknowledgement again.
        var finished: [Key: Int] = [:]
        /// Offers told above the prompt: a burst, then a few a second (a crowd of keys offering
        /// must not scroll everything else away).
        var offerNotices = NoticeLimiter(what: "offers", seeAll: Advice.command("transfers") + " lists them")
        /// Streams we offered, by transfer id, until they end.
        var expected: [Data: ExpectedStream] = [:]
        /// Until then offers from strangers are refused as busy without a look at the database
        /// (the offers waiting for the user were at their bound when last counted).
        var busyUntil = -Double.infinity
        /// Transfers the user stopped while their peer was away, told when it comes back.
        var untold: [Key: FileAnswer.Decision] = [:]
        /// Where streams of theirs come (nil: not opened yet, the port was taken, or no LAN).
        var listener: StreamListener?
        var listenedOn: UInt16 = 0
    }

    /// A peer may hold this much of our disk in unfinished transfers taken without asking, and
    /// have this many offers unfinished at once; everyone together, this many offers waiting
    /// for the user. What the user accepts is bounded by the disk alone, less a margin.
    static let quota = 64 << 20
    static let diskMargin = 64 << 20
    static let unfinishedLimit = 16
    static let waitingLimit = 64
    /// Pictures up to this size from someone the user wrote to are accepted at once.
    static let automaticLimit = 1 << 20
    /// Offers go again this often until answered (while the receiver asks its user, less often).
    static let offerInterval = 1.0
    /// How long a sender waits for a fresh stream while the receiver still names the one that
    /// ended short here (its end lets go of a quiet one within `FileStream.timeout`).
    static let freshStreamWait = 2 * FileStream.timeout
    static let askingInterval = 5.0
    /// The bar under a transfer is drawn again at most this often.
    static let progressInterval = 0.25

    let parts: TransferParts
    let receiver: TransferReceiver
    let mail: TransferMail
    private var state: EngineBound<State> { parts.state }

    /// On the engine: registers the kinds, the observer of who comes back and the deadline;
    /// what was moving when we last went offline goes on, what a kill left half-stored goes.
    init(_ context: FeatureContext, capabilities: Capabilities, inbox: AsyncInbox, overwrites: Bool) {
        parts = TransferParts(context: context, state: EngineBound(State(), engine: context.engine), capabilities: capabilities,
                              inbox: inbox, overwrites: overwrites, inView: EngineBound(nil, engine: context.engine))
        receiver = TransferReceiver(parts)
        mail = TransferMail(parts, receiver: receiver)
        let network = context.network
        network.handle(FileOffer.self) { [self] offer, sender, peer in receiver.offered(offer, from: sender, peer: peer) }
        network.handle(FileAnswer.self) { [self] answer, sender, _ in answered(answer, from: sender) }
        mail.takeAnswers { [self] answer, sender in answered(answer, from: sender) }
        network.handle(FileChunk.self) { [self] chunk, sender, _ in receiver.received(chunk, from: sender) }
        network.handle(FileChunkAck.self) { [self] ack, sender, _ in acknowledged(ack, from: sender) }
        context.observe { [self] event in
            switch event {
            case .reachable(let peer, _):
                // Someone our files wait for came back (or everyone, with a transport): the
                // offer goes again, and its answer says where to go on from.
                for (id, sending) in state.value.sending where peer == nil || sending.transfer.peerKey == peer!.signingKey {
                    state.value.sending[id]?.offeredAt = -.infinity
                }
                receiver.tellUntold(peer)
                tick()
            case .presence(.left(let peer, _)):
                wait(for: peer.signingKey)
                mail.peerLeft(peer.signingKey)
            default:
                break
            }
        }
        context.deadlines.add("transfers", next: { [self] in nextDue }) { [self] _ in tick() }
        try? store.removeUnstored(myKey: context.me)
        for transfer in (try? store.transfers(myKey: context.me, unfinished: true)) ?? [] where transfer.outgoing {
            state.value.sending[transfer.transferID] = Sending(transfer: transfer)
        }
    }

    /// Nothing more is sent; what moves goes on the next time online.
    func stop() {
        for sending in state.value.sending.values { sending.stream?.stop() }
        state.value.sending = [:]
        state.value.listener?.stop()
        state.value.listener = nil
    }

    // MARK: Ours

    /// Starts sending `transfer` (stored just now by the shell).
    func send(_ transfer: Transfer) {
        state.value.sending[transfer.transferID] = Sending(transfer: mail.mailIfAway(transfer))
        tick()
    }

    /// When something of ours is next due: an offer to send again, a chunk's timeout, a bar to
    /// draw. A peer away is waited for by its coming back (`OnlineEvent.reachable`), not by
    /// its deadlines; an offer the receiver's user has not answered for hours goes again at
    /// its interval.
    private var nextDue: Double? {
        var next: Double?
        for sending in state.value.sending.values {
            guard reachable(sending.transfer.peerKey) != nil else { continue }
            var due: Double?
            if sending.stream != nil && !sending.streamSent {
                due = overwrites ? sending.progress.map { $0.shownAt + Self.progressInterval } : nil
            } else if let window = sending.window, sending.transfer.state == .moving {
                due = window.deadline(timing: timer(sending.transfer.peerKey))
                if overwrites, let progress = sending.progress { due = min(due ?? .infinity, progress.shownAt + Self.progressInterval) }
            } else {
                due = sending.offeredAt + (sending.transfer.state == .asking ? Self.askingInterval : Self.offerInterval)
            }
            if let due { next = min(next ?? due, due) }
        }
        return next
    }

    /// The bars of what moves between us and `peer`, gone away: they wait for it.
    private func wait(for peer: Data) {
        let now = context.engine.now
        for (id, sending) in state.value.sending where sending.transfer.peerKey == peer && sending.transfer.state == .moving {
            guard var progress = sending.progress else { continue }
            showWaiting(sending.transfer, stored: sending.window?.stored ?? sending.transfer.stored, progress: &progress, now: now)
            state.value.sending[id]!.progress = progress
        }
        for (key, receiving) in state.value.receiving where key.peer == peer {
            var progress = receiving.progress
            showWaiting(receiving.transfer, stored: receiving.window.stored, progress: &progress, now: now)
            state.value.receiving[key]!.progress = progress
        }
    }

    /// The peer's round trip and timeout, as `PeerTiming` has them.
    private func timer(_ peer: Data) -> RetransmissionTimer { context.network.peerTiming.update(peer) { $0 } }

    /// Offers that are due go, chunks that are due go, bars are drawn.
    private func tick() {
        let now = context.engine.now
        for id in Array(state.value.sending.keys) {
            guard let transfer = state.value.sending[id]?.transfer, let peer = reachable(transfer.peerKey) else { continue }
            switch transfer.state {
            case .offered, .asking, .moving:
                // Moving but resumed from the database (no window yet): the offer finds out
                // where the receiver is.
                let sending = state.value.sending[id]!
                let waiting = transfer.state != .moving || (sending.window == nil && sending.stream == nil) || sending.streamSent
                let interval = transfer.state == .asking ? Self.askingInterval : Self.offerInterval
                if waiting, now - state.value.sending[id]!.offeredAt >= interval {
                    state.value.sending[id]!.offeredAt = now
                    context.network.send(transfer.offer, to: peer)
                }
                if !waiting && sending.stream == nil { sendDue(id, to: peer, now: now) }
            default:
                break
            }
        }
        if let next = nextDue { context.deadlines.wake(at: next) }
    }

    /// Sends what the window of `id` says is due, and draws its bar.
    private func sendDue(_ id: Data, to peer: Peer, now: Double) {
        // In place: a copy of the sending state would copy its window's chunks each time.
        guard state.value.sending[id]?.window != nil else { return }
        let due = context.network.peerTiming.update(peer.signingKey) { timer in state.value.sending[id]!.window!.due(now: now, timing: &timer) }
        let chunks = chunks(due, of: id)
        for chunk in chunks { context.network.send(chunk, to: peer) }
        let (transfer, stored) = (state.value.sending[id]!.transfer, state.value.sending[id]!.window!.stored)
        if var progress = state.value.sending[id]!.progress {
            showProgress(of: transfer, stored: stored, progress: &progress, now: now)
            state.value.sending[id]!.progress = progress
        }
    }

    /// The chunks `indices` of `id`, from the window's cache, read from the user's file once;
    /// a file changed (or gone) since it was sent fails the transfer, and the receiver is told.
    private func chunks(_ indices: [Int], of id: Data) -> [FileChunk] {
        guard !indices.isEmpty, let transfer = state.value.sending[id]?.transfer else { return [] }
        let missing = indices.filter { state.value.sending[id]!.cache[$0] == nil }
        if !missing.isEmpty {
            do {
                for (index, data) in try store.chunks(missing, of: transfer) { state.value.sending[id]!.cache[index] = data }
            } catch {
                if let peer = context.presence.peer(transfer.peerKey) { receiver.answer(id, .cancel, to: peer) }
                finish(transfer, as: .failed, reason: "\(error); send it again")
                return []
            }
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
            if answer.decision == .cancel { return receiver.cancelled(Key(peer: sender, id: answer.id)) }
            return context.network.drop("file answer to nothing offered")
        }
        let transfer = sending.transfer
        let now = context.engine.now
        switch answer.decision {
        case .accept:
            // The same acceptance heard again (an offer of ours crossed it): the stream goes on.
            let repeated = answer.stream.map { sending.streamKeys.contains($0.key) } ?? false
            if repeated && sending.stream != nil { return }
            let from = min(Int(answer.stored), transfer.chunkCount)
            let movedOn = max(from, sending.streamStored.reached) > sending.streamStored.from
            // That stream moved the file on and ended short here, not yet at the receiver's end,
            // which offers it still (its connection went quiet): none is begun twice under one
            // key, and chunks would carry the rest. The offer goes again (`tick`) until that
            // end, having let go of it, offers a fresh one; after `freshStreamWait`, chunks.
            if repeated && sending.streamEndedShort && movedOn && now - sending.streamEndedAt < Self.freshStreamWait { return }
            if sending.streamEndedShort && !repeated {
                sending.streamEndedShort = false
                sending.streamFailed = !movedOn
            }
            sending.progress = Progress(since: now, from: from)
            sending.stream?.stop()
            sending.stream = nil
            sending.streamSent = false
            if let offer = answer.stream, !repeated, !sending.streamFailed, let peer = reachable(sender), let host = context.network.reach.streamHost(of: peer) {
                // On the LAN: a stream, at the link's speed; chunks if it fails.
                sending.window = nil
                sending.cache = [:]
                sending.streamStored = (from, from)
                sending.streamKeys.insert(offer.key)
                let job = StreamSender.Job(id: answer.id, path: store.path(of: transfer), source: transfer.source, size: transfer.size,
                                           from: from * transfer.chunkSize, host: host, port: offer.port, key: offer.key)
                sending.stream = StreamSender(job, engine: context.engine) { [weak self] stream, failure, changed in
                    self?.streamEnded(answer.id, stream, failure: failure, changed: changed)
                }
            } else {
                sending.window = SendWindow(count: transfer.chunkCount, from: from)
                sending.cache = sending.cache.filter { $0.key >= from }
            }
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
                   + "or \(Self.quota >> 20) MiB one person may have unfinished there, or \(Self.waitingLimit) offers wait there already)")
        }
    }

    private func acknowledged(_ ack: FileChunkAck, from sender: Data) {
        guard let sending = state.value.sending[ack.id], sending.transfer.peerKey == sender, sending.window != nil || sending.stream != nil else {
            return context.network.drop("file acknowledgement to nothing sent")
        }
        let now = context.engine.now
        if sending.stream != nil {
            // On a stream the receiver says how far it has stored; all of it, it is done.
            guard Int(ack.stored) < sending.transfer.chunkCount else { return finish(sending.transfer, as: .complete) }
            state.value.sending[ack.id]!.streamStored.reached = max(sending.streamStored.reached, Int(ack.stored))
            showProgress(of: sending.transfer, stored: Int(ack.stored), progress: &state.value.sending[ack.id]!.progress, now: now)
            return
        }
        let progressed = context.network.peerTiming.update(sender) { timer in
            state.value.sending[ack.id]!.window!.acknowledged(stored: Int(ack.stored), held: ack.held, now: now, timing: &timer)
        }
        guard progressed else { return }
        let window = state.value.sending[ack.id]!.window!
        guard !window.isComplete else { return finish(sending.transfer, as: .complete) }
        // What the receiver stored leaves the cache.
        for index in state.value.sending[ack.id]!.cache.keys where index < window.stored {
            state.value.sending[ack.id]!.cache[index] = nil
        }
        if let peer = reachable(sender) { sendDue(ack.id, to: peer, now: now) }
        // A deadline now later than the alarm set fires it for nothing once, and rearms (an
        // acknowledgement is frequent, an alarm changed is not cheap).
        if let next = nextDue { context.deadlines.wake(at: next) }
    }

    /// A stream of ours ended: every byte sent (the receiver's acknowledgement ends it), a file
    /// changed (the transfer fails), or a connection lost: the transfer goes on from where the
    /// receiver says it stands (the offer again), on a stream again if this one moved it on.
    private func streamEnded(_ id: Data, _ stream: StreamSender, failure: FileStream.Failure?, changed: Bool) {
        // One stopped for a newer has nothing to say.
        guard let sending = state.value.sending[id], sending.stream === stream else { return }
        guard let failure else {
            state.value.sending[id]!.streamSent = true
            state.value.sending[id]!.offeredAt = context.engine.now
            return tick()
        }
        state.value.sending[id]!.stream = nil
        if changed {
            if let peer = context.presence.peer(sending.transfer.peerKey) { receiver.answer(id, .cancel, to: peer) }
            return finish(sending.transfer, as: .failed, reason: "\(store.path(of: sending.transfer)) changed since you sent it; send it again")
        }
        state.value.sending[id]!.streamEndedShort = true
        state.value.sending[id]!.streamEndedAt = context.engine.now
        state.value.sending[id]!.offeredAt = -.infinity
        context.network.drop("file stream: \(failure)")
        tick()
    }

    /// Ours ended: stored, told, forgotten here.
    private func finish(_ transfer: Transfer, as end: Transfer.State, reason: String? = nil) {
        state.value.sending[transfer.transferID]?.stream?.stop()
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

    /// The user stopped or declined a transfer: it goes from both sides here.
    func stopped(_ transfer: Transfer, as end: Transfer.State) {
        state.value.sending[transfer.transferID] = nil
        receiver.stopped(transfer, as: end)
    }

    /// Stored, how far it has come (what `transfers` shows of those moving).
    func stored(of transfer: Transfer) -> Int {
        if let sending = state.value.sending[transfer.transferID] { return sending.window?.stored ?? transfer.stored }
        return receiver.stored(of: transfer)
    }
}
