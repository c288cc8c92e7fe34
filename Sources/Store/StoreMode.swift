import Accounts
import Foundation
import Glibc
import Shell
import Storage
import Terminal

/// Store mode (seed 000): Holy candles and Saint's medallions for the logged-in profile, with
/// signed receipts. Nothing is charged: prices are recorded, and `receipts` adds them up.
package final class StoreMode {
    private let session: LoginSession
    /// The curses a candle can lift; set by the curses feature (none until then).
    package var curses: CurseBook?
    /// Waits out the password delay; tests replace it.
    var sleep: (Double) -> Void = LoginSession.sleep

    package init(session: LoginSession) { self.session = session }

    package func register(in shell: Shell) {
        shell.register(Mode(name: "store", summary: "Holy candles and Saint's medallions against ghost curses",
                            enter: { shell in try self.showCatalogue(shell) }))
        let items = ArgumentKind.choice(Item.allCases.map { Candidate($0.rawValue, "\($0.name), \(dollars($0.priceCents))") })
        shell.register(mode: "store", "catalogue", aliases: ["catalog"], summary: "what the store sells, and what it does") { shell, _ in
            try self.showCatalogue(shell)
        }
        shell.register(mode: "store", "buy", arguments: [
            .positional("item", items, help: "candle or medallion"),
            .positional("count", optional: true, help: "how many, 1 to 99 (default 1)"),
            .option("--password-file", "file", .path, help: "the profile's password, on the file's first line (batch)"),
        ], summary: "buy items: shows the total and asks your password") { shell, arguments in
            try self.buy(arguments["item"]!, count: arguments["count"], passwordFile: arguments["file"], shell)
        }
        shell.register(mode: "store", "inventory", summary: "what you hold, and the medallion you wear") { shell, _ in
            try self.showInventory(shell)
        }
        shell.register(mode: "store", "receipts",
                       arguments: [.positional("all", .choice([Candidate("all", "every receipt, not only the newest the window holds")]),
                                               optional: true, help: "every receipt (at a terminal, only the newest the window holds are shown)")],
                       summary: "your purchases, newest first, and the total spent") { shell, arguments in
            if let word = arguments["all"], word != "all" { throw UserError("receipts takes 'all' or nothing, not '\(word)'") }
            try self.showReceipts(all: arguments["all"] != nil, shell)
        }
        let receiptIDs = ArgumentKind.dynamic { [unowned self, unowned shell] in
            guard let login = self.session.current, let ledger = try? self.ledger(shell) else { return [] }
            return ((try? ledger.receipts(profile: login.profile.id)) ?? []).map {
                Candidate($0.id, "\(Item(rawValue: $0.item)?.label($0.quantity) ?? $0.item), \(dollars($0.totalCents))")
            }
        }
        shell.register(mode: "store", "receipt", arguments: [.positional("id", receiptIDs, help: "a receipt's id (its first characters do)")],
                       summary: "show one receipt and check its signature") { shell, arguments in
            try self.showReceipt(arguments["id"]!, shell)
        }
        // The item may be left out: a candle is all one uses, a medallion all one wears.
        shell.register(mode: "store", "use", arguments: [.positional("item", .choice([Candidate("candle", "lift the curse that ends last")]),
                                                                     optional: true, help: "candle (the default)")],
                       summary: "light a Holy candle against the curse on you that ends last") { shell, arguments in
            guard (arguments["item"] ?? "candle") == "candle" else { throw UserError("only a candle is used: use candle (a medallion is worn)") }
            try self.useCandle(shell)
        }
        shell.register(mode: "store", "wear", arguments: [.positional("item", .choice([Candidate("medallion", "an hour of protection")]),
                                                                      optional: true, help: "medallion (the default)")],
                       summary: "put on a Saint's medallion: curses bounce off for an hour") { shell, arguments in
            guard (arguments["item"] ?? "medallion") == "medallion" else { throw UserError("only a medallion is worn: wear medallion (a candle is used)") }
            try self.wearMedallion(shell)
        }
    }

    private func ledger(_ shell: Shell) throws -> Ledger { Ledger(database: try shell.session.openDatabase()) }

    private func login() throws -> LoginSession.Login {
        guard let login = session.current else { throw ProfileError.notLoggedIn }
        return login
    }

    private func view(_ shell: Shell) -> StoreView {
        StoreView(styler: shell.styler, ascii: shell.capabilities.ascii, columns: shell.console.columns)
    }

    // MARK: Commands

    private func showCatalogue(_ shell: Shell) throws {
        for line in view(shell).catalogue() { shell.console.print(line) }
    }

    private func buy(_ itemName: String, count: String?, passwordFile: String?, _ shell: Shell) throws {
        let login = try login()
        guard let item = Item(rawValue: itemName.lowercased()) else { throw StoreError.unknownItem(itemName) }
        guard let quantity = Int(count ?? "1") else { throw StoreError.badQuantity(0) }
        let order = try Order(item, quantity: quantity)
        shell.console.print("\(item.label(quantity)) for \(shell.styler.bold(dollars(order.totalCents)))")
        // The password is the confirmation: a wrong one, or a cancelled prompt, buys nothing.
        let password = try passwordFile.map { try PasswordFile.read($0, standardInputIsCommands: shell.standardInputIsCommands) }
            ?? shell.ask("Password for \(login.profile.name), to confirm:", field: "--password-file FILE", secret: true)
        let store = ProfileStore(database: try shell.session.openDatabase())
        let confirmed = try session.reauthenticate(password: password, store: store, now: shell.session.clock(), wait: sleep)
        let receipt = try Receipt.signed(order, id: Receipt.newID(using: &shell.session.random), signer: confirmed.identity.signing,
                                         time: shell.session.clock())
        try ledger(shell).record(receipt, profile: login.profile.id)
        shell.console.print("bought \(item.label(quantity)) \(item.glyph(ascii: shell.capabilities.ascii)) — receipt \(receipt.id)")
    }

    private func showInventory(_ shell: Shell) throws {
        let login = try login()
        let ledger = try ledger(shell)
        let now = shell.session.clock()
        for line in view(shell).inventory(try ledger.inventory(profile: login.profile.id),
                                          worn: try ledger.protectingMedallion(profile: login.profile.id, now: now), now: now) {
            shell.console.print(line)
        }
    }

    /// At a terminal the newest that fit the window (unless `all`); in a script, all of them.
    private func showReceipts(all: Bool, _ shell: Shell) throws {
        let login = try login()
        let receipts = try ledger(shell).receipts(profile: login.profile.id)
        let rows = all || !shell.capabilities.interactive ? nil : shell.console.rows
        for line in view(shell).receipts(receipts, rows: rows) { shell.console.print(line) }
    }

    private func showReceipt(_ id: String, _ shell: Shell) throws {
        let login = try login()
        let receipt = try ledger(shell).receipt(id, profile: login.profile.id)
        for line in view(shell).receipt(receipt, owner: login.profile.handle, problem: receipt.problem(ownerKey: login.profile.signingKey)) {
            shell.console.print(line)
        }
    }

    private func useCandle(_ shell: Shell) throws {
        let login = try login()
        guard let lifted = try ledger(shell).useCandle(profile: login.profile.id, curses: curses, now: shell.session.clock()) else {
            // Refused like every other action that cannot be done now (exit status 1 in a script).
            throw UserError("no curse is on you: the candle is kept for when one is")
        }
        shell.console.print("the candle burns down, and \(lifted) is lifted")
    }

    private func wearMedallion(_ shell: Shell) throws {
        let login = try login()
        let medallion = try ledger(shell).wearMedallion(profile: login.profile.id, now: shell.session.clock())
        shell.console.printProse("you wear a Saint's medallion \(Item.medallion.glyph(ascii: shell.capabilities.ascii)): "
                            + "curses bounce off until it breaks at \(StoreView.clock(medallion.breaksAt))")
    }
}
