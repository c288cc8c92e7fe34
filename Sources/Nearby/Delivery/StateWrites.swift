import Foundation
import Storage

/// States written together: acknowledgements, first transmissions and what was shown, at most
/// once per `interval` under a stream; read receipts go with them.
///
/// Engine state: every method runs on the engine.
final class StateWrites: DeliveryPart, Sendable {
    let parts: DeliveryParts

    /// Under a stream of acknowledgements, states are written at most this often.
    static let interval = 0.05

    init(_ parts: DeliveryParts) { self.parts = parts }

    /// Writes the states gathered so far: at once (once the engine has handled what is already
    /// queued) when nothing was written in the last `interval`, else when it has passed. A lone
    /// acknowledgement waits for nothing; a stream of them costs one transaction per interval,
    /// not one each.
    func schedule() {
        guard !parts.box.value.flushScheduled else { return }
        parts.box.value.flushScheduled = true
        let write: @Sendable () -> Void = { [weak self] in
            guard let self else { return }
            parts.box.value.flushScheduled = false
            parts.box.value.lastFlush = clock()
            flush(now: parts.box.value.lastFlush)
        }
        let wait = parts.box.value.lastFlush + Self.interval - clock()
        if wait <= 0 { engine.async(write) } else { _ = engine.after(wait, write) }
    }

    /// Records acknowledgements, first transmissions and what was shown with the engine's turn
    /// (`GroupCommit`), and sends the read receipts once they are written.
    func flush(now: Double) {
        var work: [(key: Data, conversation: Int64, acknowledged: UInt32?, before: UInt32, sentThrough: UInt32?)] = []
        var shown: [(Int64, Data, Int64)] = []
        for (key, var link) in links {
            let acknowledged = link.acknowledged > link.conversationRecord.acknowledgedSequence ? link.acknowledged : nil
            let statesChanged = acknowledged != nil || link.sentThrough > 0
            guard statesChanged || link.shownUpTo > 0 else { continue }
            if statesChanged {
                work.append((key, link.conversation, acknowledged, link.conversationRecord.acknowledgedSequence,
                             link.sentThrough > 0 ? link.sentThrough : nil))
            }
            if link.shownUpTo > 0 { shown.append((link.conversation, key, link.shownUpTo)) }
            link.conversationRecord.acknowledgedSequence = link.acknowledged
            link.sentThrough = 0
            link.shownUpTo = 0
            links[key] = link
        }
        guard !work.isEmpty || !shown.isEmpty else { return }
        var receipts: [(peerKey: Data, sequence: UInt32)] = []
        var changes: [(conversation: Int64, sent: [Int64], delivered: [Int64])] = []
        commits.write({ db in
            for (conversation, peerKey, number) in shown {
                if let sequence = try MessageStore.markShown(db, conversation, upTo: number, now: now) { receipts.append((peerKey, sequence)) }
            }
            for (_, conversation, acknowledged, _, sentThrough) in work {
                // Only messages still `sending` become `sent`: one acknowledged or read meanwhile
                // never goes back.
                let changed = try MessageStore.recordStates(db, conversation, sentThrough: sentThrough, acknowledgedUpTo: acknowledged, now: now)
                changes.append((conversation, changed.sent, changed.delivered))
            }
        }, then: { [weak self] error in
            guard let self else { return }
            guard error == nil else {
                // Not written (the database refused): written next time.
                for (key, _, _, before, _) in work { links[key]?.conversationRecord.acknowledgedSequence = before }
                for (_, key, number) in shown { links[key]?.shownUpTo = max(links[key]?.shownUpTo ?? 0, number) }
                return
            }
            // What was read is told once it is written.
            for (peerKey, sequence) in receipts {
                if let peer = presentPeer(peerKey) { transmit(ReadReceipt(recipient: peer.signingKey, sequence: sequence), to: peer) }
            }
            for (conversation, sent, delivered) in changes {
                if !sent.isEmpty { parts.onEvent(.stateChanged(conversation: conversation, numbers: sent, state: .sent)) }
                if !delivered.isEmpty { parts.onEvent(.stateChanged(conversation: conversation, numbers: delivered, state: .delivered)) }
            }
        })
    }
}
