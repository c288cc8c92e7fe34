import Foundation
import Nearby
import Shell
import Terminal

/// `transfers`, `transfers delete N` (`/delete N` in a conversation) and `transfers clean`:
/// nothing a transfer leaves stays behind unless the user keeps it. A file seance keeps
/// (received, not saved) is deleted with its transfer; one the user sent or saved stays where
/// it is.
extension Transfers {
    func registerListAndCleanup(in shell: Shell) {
        let actions = [Candidate("delete", "forget file N, and delete it unless you saved it"),
                       Candidate("clean", "forget every file that ended (before --before), deleting those seance keeps")]
        shell.register(Command("transfers", scope: .global,
                               arguments: [.positional("action", .choice(actions), optional: true, help: "delete or clean (none: list them)"),
                                           .positional("N", .integer, optional: true, help: "the file's number, for delete"),
                                           .option("--before", "date", help: "clean only those that ended before: 2026-11-20, 3d, yesterday…")],
                               summary: "the files sent and received, how far those moving have come; delete one, or clean up") { invocation in
            let shell = invocation.shell
            switch invocation.arguments["action"] {
            case nil: try self.list(shell)
            case "delete":
                guard let number = try invocation.arguments.integer("N") else { throw UserError("delete which? transfers delete N") }
                try self.delete(number, shell)
            default:
                let before = try invocation.arguments["--before"].map { text throws -> Double in
                    do throws(TypedDate.Invalid) { return try TypedDate.parse(text, now: shell.session.clock()) } catch {
                        throw UserError(error.description)
                    }
                }
                try self.clean(before: before, shell)
            }
        })
        shell.register(Command("delete", scope: .mode("chat"), arguments: [.positional("N", .integer, help: "the file's number")],
                               summary: "forget file N, and delete it unless you saved it (transfers delete N)") { invocation in
            try self.delete(try invocation.arguments.integer("N")!, invocation.shell)
        })
    }

    private func delete(_ number: Int, _ shell: Shell) throws {
        let transfer = try transfer(number, shell)
        guard transfer.state.isFinal || transfer.state == .storing else {
            throw UserError("file \(number) is \(transfer.state.rawValue): cancel \(number) first")
        }
        try TransferStore(database: try shell.session.openDatabase()).delete([transfer])
        shell.console.print("file \(number) (\(TransferView.shownName(transfer.name))) forgotten" + Self.kept(transfer))
    }

    private func clean(before: Double?, _ shell: Shell) throws {
        let store = TransferStore(database: try shell.session.openDatabase())
        let ended = try store.transfers(myKey: try myKey()).filter { $0.state.isFinal && $0.sentAt < (before ?? .infinity) }
        guard !ended.isEmpty else { return shell.console.print("nothing to clean") }
        try store.delete(ended)
        let freed = ended.filter { !$0.outgoing && $0.localPath == nil && $0.state == .complete }.map(\.size).reduce(0, +)
        shell.console.print("forgot \(ended.count) file\(ended.count == 1 ? "" : "s")" + (freed > 0 ? ", \(TransferView.size(freed)) deleted" : "")
                            + " (files you sent or saved stay where they are)")
    }

    /// What became of the bytes of a transfer forgotten.
    private static func kept(_ transfer: Transfer) -> String {
        if transfer.outgoing { return ": your file stays where it is" }
        if let path = transfer.localPath { return ": the copy you saved stays (\(SafeText.visible(path)))" }
        return transfer.state == .complete ? ", and deleted" : ""
    }
}
