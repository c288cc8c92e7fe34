import Foundation
import Nearby
import Runtime
import Shell
import Terminal

/// Transfers while online, theirs: offers taken at once, asked about, refused or resumed;
/// chunks written in order and acknowledged once written; the hash checked at the end. Every
/// method runs on the engine.
final class TransferReceiver: TransferPart, Sendable {
    typealias Key = TransfersOnline.Key
    let parts: TransferParts
    private var state: EngineBound<TransfersOnline.State> { parts.state }

    init(_ parts: TransferParts) { self.parts = parts }

    func offered(_ offer: FileOffer, from sender: Data, peer: Peer?) {
        guard let peer, context.rules.canHear(from: peer) else {
            return context.network.drop("file offer from nobody in reach")
        }
        let key = Key(peer: sender, id: offer.id)
        if let receiving = state.value.receiving[key] {
            // Heard again (it crossed our answer): the same answer, with the stream it offered,
            // so the sender's stream under way goes on. That stream ended here (cut short: a
            // connection that went quiet for `FileStream.timeout`): a fresh one, or the rest
            // of the file would go in chunks.
            guard let expected = state.value.expected[offer.id] else {
                let stored = receiving.window.stored
                return answer(offer.id, .accept, stored: stored, to: peer,
                              stream: streamOffer(for: receiving.transfer, key: key, stored: stored, peer: peer))
            }
            let stream = state.value.listener.flatMap { expected.key == key ? FileAnswer.StreamOffer(port: $0.port, key: expected.terms.key) : nil }
            return answer(offer.id, .accept, stored: receiving.window.stored, to: peer, stream: stream)
        }
        let messages = MessageStore(database: context.database)
        let now = context.engine.now
        let existing = try? messages.existingConversation(myKey: context.me, peerKey: sender)
        if let existing, let known = try? store.transfer(offer.id, in: existing.id, outgoing: false) {
            return resume(known, offer: offer, peer: peer)
        }
        // A stranger (no conversation) cannot be taken at once, only asked about: while the
        // offers waiting are known to be at their bound, refused without reading more (a flood
        // of keys then costs one lookup an offer).
        if existing == nil, now < state.value.busyUntil {
            refuse("busy: \(TransfersOnline.waitingLimit) offers wait for your answer")
            return answer(offer.id, .refuse, to: peer)
        }
        guard let holding = existing == nil ? (bytes: 0, unfinished: 0) : try? store.holding(of: sender, myKey: context.me) else { return }
        guard holding.unfinished < TransfersOnline.unfinishedLimit else {
            refuse("more than \(TransfersOnline.unfinishedLimit) unfinished from one person")
            return answer(offer.id, .refuse, to: peer)
        }
        // Only from someone the user wrote to: their writing first is no consent.
        let chosen = existing.map { (try? messages.hasWritten(in: $0.id)) ?? false } ?? false
        let automatic = offer.picture && Int(offer.size) <= TransfersOnline.automaticLimit && chosen && holding.bytes + Int(offer.size) <= TransfersOnline.quota
        // Everyone's offers waiting for the user together are bounded too: keys cost nothing.
        if !automatic, ((try? store.waitingForAnswer(myKey: context.me)) ?? 0) >= TransfersOnline.waitingLimit {
            // Looked at again in a second: the user may answer some meanwhile.
            state.value.busyUntil = now + 1
            refuse("busy: \(TransfersOnline.waitingLimit) offers wait for your answer")
            return answer(offer.id, .refuse, to: peer)
        }
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
            let (shown, held) = state.update { $0.offerNotices.admit(now: now) }
            guard shown else { return }
            if let held { parts.inbox.post(held) }
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
            state.value.receiving[key] = TransfersOnline.Receiving(transfer: transfer, window: window, progress: TransfersOnline.Progress(since: now, from: transfer.stored))
            state.value.unknown.remove(key)
            if transfer.stored == 0 {
                tell(transfer, stored: 0, line: "\(name(of: transfer.peerKey)) sends \(TransferView.shownName(transfer.name)) "
                     + "(\(transfer.picture ? "a picture" : "a file"), \(TransferView.size(transfer.size)))", new: new)
            }
        }
        guard let peer else { return }
        let stored = state.value.receiving[key]!.window.stored
        answer(transfer.transferID, .accept, stored: stored, to: peer, stream: streamOffer(for: transfer, key: key, stored: stored, peer: peer))
    }

    // MARK: Streams

    /// The listener for streams of theirs, on the LAN's port (`FileStream`): opened the first
    /// time it is wanted (the port is the LAN's once it runs), again if the port changed.
    private func listener() -> StreamListener? {
        let port = context.network.directPort
        guard port != 0 else { return nil }
        if state.value.listenedOn == port { return state.value.listener }
        state.value.listener?.stop()
        state.value.listenedOn = port
        let engine = context.engine
        // Released with the listener when going offline (`TransfersOnline.stop`).
        let receiver = self
        state.value.listener = StreamListener(port: port, engine: engine, events: .init(
            expect: { id in engine.sync { receiver.take(expected: id) } },
            progress: { id, key, bytes in engine.async { receiver.streamed(id, key: key, bytes: bytes) } },
            ended: { id, key, result in engine.async { receiver.streamEnded(id, key: key, result) } }))
        return state.value.listener
    }

    /// The terms of the stream expected for `id`, for the first connection that presents it: a
    /// second under the same key is refused (its blocks' nonces would start again, over other
    /// bytes), whoever makes it.
    private func take(expected id: Data) -> StreamListener.Expected? {
        guard let expected = state.value.expected[id], !expected.taken else { return nil }
        state.value.expected[id]!.taken = true
        return expected.terms
    }

    /// A stream for a transfer accepted from a peer on the LAN: a fresh key for this acceptance
    /// alone, sealed to the peer in the answer; nil when streams cannot be had (no listener, a
    /// peer heard only through a broker).
    private func streamOffer(for transfer: Transfer, key: Key, stored: Int, peer: Peer) -> FileAnswer.StreamOffer? {
        guard context.network.reach.streamHost(of: peer) != nil, let listener = listener() else { return nil }
        var random = SystemRandomNumberGenerator()
        let secret = Data((0..<32).map { _ in UInt8.random(in: 0...255, using: &random) })
        state.value.expected[transfer.transferID] = TransfersOnline.ExpectedStream(
            key: key, terms: StreamListener.Expected(key: secret, path: store.path(of: transfer), size: transfer.size,
                                                     from: stored * transfer.chunkSize))
        return FileAnswer.StreamOffer(port: listener.port, key: secret)
    }

    /// A stream stored this many bytes from the first: the whole chunks among them are said to
    /// be stored (in the database, then to the sender), as chunks written are.
    private func streamed(_ id: Data, key: Data, bytes: Int) {
        guard let expected = state.value.expected[id], expected.terms.key == key, let receiving = state.value.receiving[expected.key] else { return }
        let transfer = receiving.transfer
        let chunks = bytes >= transfer.size ? transfer.chunkCount : bytes / transfer.chunkSize
        guard chunks > receiving.window.stored, (try? store.stored(chunks, of: transfer)) != nil else { return }
        state.value.receiving[expected.key]!.window = ReceiveWindow(count: transfer.chunkCount, chunkSize: transfer.chunkSize, size: transfer.size,
                                                                    stored: chunks)
        if let peer = context.presence.peer(expected.key.peer) {
            context.network.send(FileChunkAck(id: id, stored: UInt32(chunks)), to: peer)
        }
        showProgress(of: transfer, stored: chunks, progress: &state.value.receiving[expected.key]!.progress, now: context.engine.now)
    }

    /// A stream ended: whole, its hash decides (as for chunks); cut short, what it stored stays
    /// and the sender goes on from there (its offer again).
    private func streamEnded(_ id: Data, key: Data, _ result: Result<Data, FileStream.Failure>) {
        guard let expected = state.value.expected[id], expected.terms.key == key else { return }
        state.value.expected[id] = nil
        switch result {
        case .success(let hash):
            guard let receiving = state.value.receiving[expected.key], receiving.window.isComplete else { return }
            complete(expected.key, hash: hash)
        case .failure(let failure):
            context.network.drop("file stream: \(failure)")
        }
    }

    func received(_ chunk: FileChunk, from sender: Data) {
        let key = Key(peer: sender, id: chunk.id)
        if let count = state.value.finished[key] {
            // Whole here already: the sender did not hear so.
            if let peer = context.presence.peer(sender) { context.network.send(FileChunkAck(id: chunk.id, stored: UInt32(count)), to: peer) }
            return
        }
        if state.value.receiving[key] == nil {
            // After a restart here, the sender goes on where it was: the transfer is found again.
            guard !state.value.unknown.contains(key) else { return context.network.drop("file chunk of nothing accepted") }
            let conversation = try? MessageStore(database: context.database).existingConversation(myKey: context.me, peerKey: sender)
            let transfer = conversation.flatMap { try? store.transfer(chunk.id, in: $0.id, outgoing: false) }
            if let transfer, transfer.state == .complete {
                remember(finished: key, count: transfer.chunkCount)
                return received(chunk, from: sender)
            }
            guard let transfer, transfer.state == .moving else {
                if state.value.unknown.count >= 256 { state.value.unknown.removeAll() }
                state.value.unknown.insert(key)
                return context.network.drop("file chunk of nothing accepted")
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

    /// A run of chunks (by mail): each taken as if it came alone, cut by the offer's chunk size.
    func received(_ run: FileChunks, from sender: Data) {
        func known() -> Transfer? {
            let conversation = try? MessageStore(database: context.database).existingConversation(myKey: context.me, peerKey: sender)
            return conversation.flatMap { try? store.transfer(run.id, in: $0.id, outgoing: false) }
        }
        guard let chunkSize = (state.value.receiving[Key(peer: sender, id: run.id)]?.transfer ?? known())?.chunkSize else {
            return context.network.drop("file chunk of nothing accepted")
        }
        for chunk in run.chunks(of: chunkSize) { received(chunk, from: sender) }
    }

    /// Writes what came in order, acknowledges it, and finishes a complete transfer.
    private func flush(_ key: Key) {
        guard let receiving = state.value.receiving[key] else { return }
        state.value.receiving[key]!.flushScheduled = false
        let unwritten = receiving.window.unwritten
        if !unwritten.isEmpty {
            // Not acknowledged when the database refuses: the sender sends it again.
            guard (try? store.received(unwritten, from: receiving.window.stored, of: receiving.transfer)) != nil else { return }
            state.value.receiving[key]!.window.written()
        }
        let (stored, held) = state.value.receiving[key]!.window.acknowledgement
        if let peer = context.presence.peer(key.peer) {
            context.network.send(FileChunkAck(id: key.id, stored: UInt32(stored), held: held), to: peer)
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

    /// Every chunk is in: the hash over all of them (read from the file, or kept as a stream
    /// wrote it) decides whether it is shown.
    private func complete(_ key: Key, hash: Data? = nil) {
        guard let receiving = state.value.receiving.removeValue(forKey: key) else { return }
        var transfer = receiving.transfer
        if (hash ?? (try? store.hash(of: transfer))) == transfer.sha256 {
            remember(finished: key, count: transfer.chunkCount)
            transfer.state = .complete
            try? store.set(transfer.number, state: .complete, stored: transfer.chunkCount)
            tellArrived(transfer, sender: name(of: transfer.peerKey))
            // Its sender away (it came by mail, or it left at the end): told by mail.
            if context.presence.peer(key.peer) == nil {
                _ = context.delivery.mail(FileAnswer(id: key.id, decision: .complete, stored: UInt32(transfer.chunkCount)), to: key.peer)
            }
        } else {
            transfer.state = .failed
            transfer.reason = "it was damaged on the way (its hash did not match): nothing was kept"
            try? store.set(transfer.number, state: .failed, reason: transfer.reason)
            if let peer = context.presence.peer(key.peer) { answer(key.id, .cancel, to: peer) }
            tell(transfer, stored: 0, line: "\(TransferView.shownName(transfer.name)) from \(name(of: key.peer)): failed, \(transfer.reason!)")
        }
    }

    /// Stopped by its sender; or, when ours and delivered, refused by the receiver once whole.
    func cancelled(_ key: Key) {
        let conversation = try? MessageStore(database: context.database).existingConversation(myKey: context.me, peerKey: key.peer)
        if let conversation, var ours = try? store.transfer(key.id, in: conversation.id, outgoing: true), ours.state == .complete {
            ours.state = .failed
            ours.reason = "\(name(of: key.peer))'s end found it damaged once whole (its hash did not match)"
            try? store.set(ours.number, state: .failed, reason: ours.reason)
            return tell(ours, stored: 0, line: "\(TransferView.shownName(ours.name)) to \(name(of: key.peer)): failed, \(ours.reason!)")
        }
        guard let conversation, var transfer = try? store.transfer(key.id, in: conversation.id, outgoing: false), !transfer.state.isFinal else {
            return context.network.drop("file answer to nothing offered")
        }
        state.value.receiving[key] = nil
        transfer.state = .cancelled
        transfer.reason = "\(name(of: key.peer)) stopped it"
        try? store.set(transfer.number, state: .cancelled, reason: transfer.reason)
        tell(transfer, stored: 0, line: "\(TransferView.shownName(transfer.name)) from \(name(of: key.peer)): cancelled, \(transfer.reason!)")
    }

    /// The user stopped or declined a transfer (from the shell, through the engine).
    func stopped(_ transfer: Transfer, as end: Transfer.State) {
        state.value.receiving[Key(peer: transfer.peerKey, id: transfer.transferID)] = nil
        var ended = transfer
        (ended.state, ended.reason) = (end, end == .declined ? "you said no" : "you stopped it")
        try? store.set(transfer.number, state: end, reason: ended.reason)
        showEnd(of: ended)
        let decision: FileAnswer.Decision = end == .declined ? .decline : .cancel
        if let peer = context.presence.peer(transfer.peerKey) {
            answer(transfer.transferID, decision, to: peer)
        } else if state.value.untold.count < TransfersOnline.waitingLimit {
            state.value.untold[Key(peer: transfer.peerKey, id: transfer.transferID)] = decision
        }
    }

    /// The peer came back (or, nil, everyone did): what the user stopped meanwhile is told.
    func tellUntold(_ peer: Peer?) {
        for (key, decision) in state.value.untold where peer == nil || key.peer == peer!.signingKey {
            guard let reached = peer ?? context.presence.peer(key.peer) else { continue }
            answer(key.id, decision, to: reached)
            state.value.untold[key] = nil
        }
    }

    /// Accepts `/accept N`: refused when the disk has not room for it (and a margin).
    func accepted(_ transfer: Transfer) throws {
        if let free = store.files.freeSpace(), free < transfer.size + TransfersOnline.diskMargin {
            throw UserError("file \(transfer.number) is \(TransferView.size(transfer.size)) and the disk has \(TransferView.size(free)) free: "
                            + "make room first (transfers delete N, transfers clean)")
        }
        try store.set(transfer.number, state: .moving)
        var moving = transfer
        moving.state = .moving
        accept(moving, peer: context.presence.peer(transfer.peerKey))
    }

    func answer(_ id: Data, _ decision: FileAnswer.Decision, stored: Int = 0, to peer: Peer, stream: FileAnswer.StreamOffer? = nil) {
        // A writer whose mail brought the offer may be away: it hears where we stand when both
        // are online (its offer goes again then).
        guard context.presence.peer(peer.signingKey) != nil else { return }
        context.network.send(FileAnswer(id: id, decision: decision, stored: UInt32(stored), stream: stream), to: peer)
    }

    func refuse(_ reason: String) {
        state.value.refused[reason, default: 0] += 1
        context.network.drop("file: " + reason)
    }

    /// Stored, how far a transfer of theirs has come.
    func stored(of transfer: Transfer) -> Int {
        state.value.receiving[Key(peer: transfer.peerKey, id: transfer.transferID)]?.window.stored ?? transfer.stored
    }

    var refusals: [String: Int] { state.value.refused }
}
