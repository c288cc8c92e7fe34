import ChatViews
import Foundation
import Nearby
import Runtime
import Shell
import Terminal

/// What transfers' parts share while online (`TransfersOnline`, `TransferReceiver`): the feature's
/// context, the state on the engine, and how transfers are told on screen.
struct TransferParts: Sendable {
    let context: FeatureContext
    let state: EngineBound<TransfersOnline.State>
    let capabilities: Capabilities
    /// Where notices go (above the prompt).
    let inbox: AsyncInbox
    /// The terminal can write over lines printed earlier (the bar is updated in place).
    let overwrites: Bool
    /// The conversation shown in the shell now (set by chat through `Transfers`).
    let inView: EngineBound<Int64?>
}

/// One of transfers' parts, with what they all show and ask. Engine state: every method runs on
/// the engine.
protocol TransferPart {
    var parts: TransferParts { get }
}

extension TransferPart {
    var context: FeatureContext { parts.context }
    var store: TransferStore { TransferStore(database: parts.context.database) }
    var capabilities: Capabilities { parts.capabilities }
    var overwrites: Bool { parts.overwrites }
    var inView: EngineBound<Int64?> { parts.inView }

    /// A peer as the user knows it: as the rules name it, by its handle, or as a conversation
    /// remembers it.
    func name(of key: Data) -> String {
        context.rules.shownName(of: key) ?? context.presence.peer(key)?.shownHandle
            ?? ((try? MessageStore(database: context.database).existingConversation(myKey: context.me, peerKey: key))??.shownHandle ?? "someone")
    }

    /// A line about `transfer`. At a terminal, a transfer new to the screen (one offered to
    /// us) gets its bar under the line, written over as it moves; one on the screen already
    /// has its bar written over, and the line is printed only when the bar has scrolled away.
    func tell(_ transfer: Transfer, stored: Int, line: String, new: Bool = false, alert: Alert? = nil) {
        let (inbox, capabilities) = (parts.inbox, capabilities)
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
        let (inbox, capabilities, store) = (parts.inbox, capabilities, store)
        let what = "\(transfer.picture ? "picture" : "file") \(transfer.number)"
        // Its bar says it came (under the placeholder, or under the offer's line); a picture is
        // drawn below.
        showEnd(of: transfer)
        if inView.value == transfer.conversation {
            // Its thumbnail made where it is drawn, on the shell's thread.
            inbox.post(.lines { columns in
                let view = TransferView(capabilities: capabilities, columns: columns)
                let (shown, picture) = store.drawn(transfer)
                return view.bubble(shown, picture: picture) + [view.numberRow(shown)]
            })
        } else if !context.rules.isMuted(transfer.peerKey) {
            inbox.post(Styler(capabilities).apply(.magenta, capabilities.ascii ? "*" : "✉") + " \(sender) sent \(what) "
                       + "(\(TransferView.shownName(transfer.name)), \(TransferView.size(transfer.size)))   (\(Advice.command("open " + Tokenizer.quote(sender), mode: "chat")))",
                       alert: Alert(who: sender, what: "sent you \(transfer.picture ? "a picture" : "a file")"))
        }
        if !overwrites, inView.value == transfer.conversation {
            inbox.post("\(what) received from \(sender)")
        }
    }

    /// The bar of a transfer that ended written over with how (where it is still on the
    /// screen; the line that says so is someone else's).
    func showEnd(of transfer: Transfer) {
        guard overwrites else { return }
        let capabilities = capabilities
        parts.inbox.post(.update([Overwrite(mark: Transfers.progressMark(transfer.number), id: transfer.number) { columns in
            TransferView(capabilities: capabilities, columns: columns).progressRow(transfer, stored: transfer.chunkCount, rate: nil)
        }]) { _ in nil })
    }

    /// The bar of a transfer whose peer went away: where it stopped, and whom it waits for
    /// (no rate, no time left); its rate is measured afresh when it moves again.
    func showWaiting(_ transfer: Transfer, stored: Int, progress: inout TransfersOnline.Progress, now: Double) {
        guard overwrites else { return }
        progress = TransfersOnline.Progress(since: now, from: stored, shownAt: now)
        let (capabilities, name) = (capabilities, SafeText.visible(name(of: transfer.peerKey)))
        parts.inbox.post(.update([Overwrite(mark: Transfers.progressMark(transfer.number), id: transfer.number) { columns in
            TransferView(capabilities: capabilities, columns: columns).progressRow(transfer, stored: stored, rate: nil, waitingFor: name)
        }]) { _ in nil })
    }

    /// The bar under a transfer, written over in place at a terminal (scripts get no bars).
    func showProgress(of transfer: Transfer, stored: Int, progress: inout TransfersOnline.Progress?, now: Double) {
        guard var current = progress else { return }
        showProgress(of: transfer, stored: stored, progress: &current, now: now)
        progress = current
    }

    func showProgress(of transfer: Transfer, stored: Int, progress: inout TransfersOnline.Progress, now: Double) {
        guard overwrites, now - progress.shownAt >= TransfersOnline.progressInterval else { return }
        progress.shownAt = now
        let elapsed = now - progress.since
        let rate = elapsed > 0.2 ? Double((stored - progress.from) * transfer.chunkSize) / elapsed : nil
        let capabilities = capabilities
        parts.inbox.post(.update([Overwrite(mark: Transfers.progressMark(transfer.number), id: transfer.number) { columns in
            TransferView(capabilities: capabilities, columns: columns).progressRow(transfer, stored: stored, rate: rate)
        }]) { _ in nil })
    }
}
