import Foundation
import Nearby

/// Pictures for someone away: one up to the size a reader takes without asking
/// (`TransfersOnline.automaticLimit`), to someone who wrote to us (whose seance takes it
/// without asking, since its user wrote to us), is left with the brokers as mail: its offer,
/// then its chunks in runs (`FileChunks`), each sealed to the reader's prekey as delivery's
/// mail is. The reader takes them as it would from a present peer, and once the picture is
/// whole mails back that it is, if we are away by then. Mail only speeds a picture up: its
/// offer goes again whenever both are online, and the answer says where the reader stands (a
/// broker that lost some of it costs nothing but time). At most `heldLimit` pictures from us
/// wait with the brokers for one reader. Every method runs on the engine.
final class TransferMail: TransferPart, Sendable {
    /// Pictures mailed to one reader and not yet known to be whole there, at most (with
    /// `automaticLimit`, 4 MiB).
    static let heldLimit = 4

    let parts: TransferParts

    /// Registers the offers and chunks mail brings: they go to `receiver` as a present peer's
    /// would.
    init(_ parts: TransferParts, receiver: TransferReceiver) {
        self.parts = parts
        let delivery = parts.context.delivery
        delivery.handleMail(FileOffer.self) { offer, peer in receiver.offered(offer, from: peer.signingKey, peer: peer) }
        delivery.handleMail(FileChunks.self) { run, peer in receiver.received(run, from: peer.signingKey) }
    }

    /// Of the answers mail brings (to ours), only "whole" is mailed: it goes to `answered`.
    func takeAnswers(_ answered: @escaping @Sendable (FileAnswer, _ sender: Data) -> Void) {
        context.delivery.handleMail(FileAnswer.self) { [context] answer, peer in
            guard answer.decision == .complete else { return context.network.drop("file answer by mail") }
            answered(answer, peer.signingKey)
        }
    }

    /// Leaves `transfer` with the brokers when its reader is away and it is a picture their
    /// seance takes without asking; the transfer as it stands then.
    func mailIfAway(_ transfer: Transfer) -> Transfer {
        let delivery = context.delivery
        guard transfer.outgoing, transfer.picture, transfer.state == .offered, transfer.mailedAt == nil,
              transfer.size <= TransfersOnline.automaticLimit, delivery.isAway(transfer.peerKey),
              (try? MessageStore(database: context.database).hasWritten(in: transfer.conversation, outgoing: false)) == true,
              let held = try? store.mailedUnfinished(in: transfer.conversation), held < Self.heldLimit,
              let chunks = try? store.chunks(Array(0..<transfer.chunkCount), of: transfer) else { return transfer }
        let perRun = max(1, min(FileChunks.maximumData, Delivery.mailCapacity - 64) / transfer.chunkSize)
        let runs = stride(from: 0, to: transfer.chunkCount, by: perRun).map { first in
            FileChunks(id: transfer.transferID, first: UInt32(first),
                       data: (first..<min(first + perRun, transfer.chunkCount)).flatMap { chunks[$0] ?? [] })
        }
        // What a broker did not take comes when both are online: the offer finds out where.
        guard delivery.mail(transfer.offer, to: transfer.peerKey), delivery.mail(runs, to: transfer.peerKey) == runs.count else { return transfer }
        let now = context.engine.now
        try? store.mailed(transfer.number, at: now)
        var mailed = transfer
        mailed.mailedAt = now
        tell(mailed, stored: 0, line: "picture \(transfer.number) (\(TransferView.shownName(transfer.name))) is left with the broker: "
             + "\(name(of: transfer.peerKey)) gets it when they next connect")
        return mailed
    }

    /// Ours waiting for `peer`, gone away, that may go by mail, go.
    func peerLeft(_ peer: Data) {
        for (id, sending) in parts.state.value.sending where sending.transfer.peerKey == peer {
            parts.state.value.sending[id]?.transfer = mailIfAway(sending.transfer)
        }
    }
}
