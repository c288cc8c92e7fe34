import Crypto
import Foundation
import Storage

/// States written together: acknowledgements, first transmissions and what was shown, at most
/// once per `flushInterval` under a stream; read receipts go with them.
extension DeliveryService {
    /// Writes the states gathered so far: at once (once the engine has handled what is already
    /// queued) when nothing was written in the last `flushInterval`, else when it has passed.
    /// A lone acknowledgement waits for nothing; a stream of them costs one transaction per
    /// interval, not one each.
    func scheduleFlush() {
        guard !flushScheduled else { return }
        flushScheduled = true
        let write: @Sendable () -> Void = { [weak self] in
            guard let self else { return }
            self.flushScheduled = false
            self.lastFlush = self.clock()
            self.flushStates(now: self.lastFlush)
        }
        let wait = lastFlush + Self.flushInterval - clock()
        if wait <= 0 { engine.async(write) } else { _ = engine.after(wait, write) }
    }

    /// Records acknowledgements, first transmissions and what was shown in the store, and
    /// sends the read receipts.
    func flushStates(now: Double) {
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
            transmit(.receipt(ReadReceipt(recipient: peer.signingKey, sequence: sequence)), to: peer)
        }
        for (key, conversation, acknowledged, before, sentThrough) in work {
            // Only messages still `sending` become `sent`: one acknowledged or read meanwhile
            // never goes back.
            guard let changed = try? store.recordStates(conversation, sentThrough: sentThrough, acknowledgedUpTo: acknowledged, now: now) else {
                // Not written (the database refused): the acknowledgement is written next time.
                links[key]?.conversationRecord.acknowledgedSequence = before
                continue
            }
            if !changed.sent.isEmpty { onEvent(.stateChanged(conversation: conversation, numbers: changed.sent, state: .sent)) }
            if !changed.delivered.isEmpty { onEvent(.stateChanged(conversation: conversation, numbers: changed.delivered, state: .delivered)) }
        }
    }

    /// Incoming messages up to row `number` were shown: they are marked read and the peer is
    /// told (a read receipt), with the state writes (`scheduleFlush`): a stream of messages
    /// shown one by one costs a write and a receipt per interval, not one each.
    package func shown(upTo number: Int64, in conversation: Conversation) {
        engine.sync {
            guard (try? withLink(conversation, { $0.shownUpTo = max($0.shownUpTo, number) })) != nil else { return }
            scheduleFlush()
        }
    }
}
