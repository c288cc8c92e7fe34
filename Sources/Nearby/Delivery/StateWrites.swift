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

    /// Records acknowledgements, first transmissions and what was shown in the store, and
    /// sends the read receipts.
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
        for (conversation, peerKey, number) in shown {
            guard let sequence = try? store.markShown(conversation, upTo: number, now: now), let peer = presentPeer(peerKey) else { continue }
            transmit(ReadReceipt(recipient: peer.signingKey, sequence: sequence), to: peer)
        }
        for (key, conversation, acknowledged, before, sentThrough) in work {
            // Only messages still `sending` become `sent`: one acknowledged or read meanwhile
            // never goes back.
            guard let changed = try? store.recordStates(conversation, sentThrough: sentThrough, acknowledgedUpTo: acknowledged, now: now) else {
                // Not written (the database refused): the acknowledgement is written next time.
                links[key]?.conversationRecord.acknowledgedSequence = before
                continue
            }
            if !changed.sent.isEmpty { parts.onEvent(.stateChanged(conversation: conversation, numbers: changed.sent, state: .sent)) }
            if !changed.delivered.isEmpty {
                parts.onEvent(.stateChanged(conversation: conversation, numbers: changed.delivered, state: .delivered))
            }
        }
    }
}
