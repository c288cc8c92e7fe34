import Shell
import Storage
import Terminal

/// The zombies mode: the game, kept for the session, with its score and variant in the database.
package final class ZombiesMode {
    private var game: Game?

    package init() {}

    /// Registers the mode and its commands.
    package func register(in shell: Shell) {
        shell.register(Mode(
            name: "zombies", summary: "the dark-room game: find the SOS, avoid the zombies",
            enter: { shell in try self.show(shell) },
            emptyLine: { shell in try self.dismissIfOver(shell) },
            keyCommands: [.up: "up", .down: "down", .left: "left", .right: "right"]))

        for (direction, alias) in [(Direction.up, "k"), (.down, "j"), (.left, "h"), (.right, "l")] {
            shell.register(mode: "zombies", direction.rawValue, aliases: [alias], summary: "move \(direction.rawValue)") { shell, _ in
                try self.move(direction, shell)
            }
        }
        shell.register(mode: "zombies", "look", summary: "draw the room again (after a round: the whole room)") { shell, _ in
            try self.show(shell, revealingTheRoom: true)
        }
        shell.register(mode: "zombies", "new", summary: "start a new game with full lives (the score stays)") { shell, _ in
            var game = try self.loadGame(shell)
            game.newGame(using: &shell.session.random)
            self.game = game
            try self.show(shell)
        }
        shell.register(mode: "zombies", "stats", summary: "wins, losses, lives and variant") { shell, _ in
            try self.dismissIfOver(shell, draw: false)
            shell.console.print(ZombiesView(ascii: shell.capabilities.ascii, styler: shell.styler).stats(try self.loadGame(shell)))
        }
        let variants = Variant.allCases.map { Candidate($0.rawValue, $0.summary) }
        shell.register(mode: "zombies", "variant", arguments: [.positional("name", .choice(variants), optional: true,
                                                          help: "classic, blocker or flashlight")],
                summary: "show or choose the variant (choosing starts a new game)") { shell, arguments in
            try self.chooseVariant(arguments["name"], shell)
        }
    }

    // MARK: Actions

    private func move(_ direction: Direction, _ shell: Shell) throws {
        // A move while the round's message shows starts the next round with that move, as
        // players expect of an arrow key.
        try dismissIfOver(shell, draw: false)
        var game = try loadGame(shell)
        let result = game.move(direction)
        self.game = game
        switch result {
        case .refused(let obstacle):
            throw UserError("you cannot go \(direction.rawValue): there is \(obstacle.rawValue)")
        case .moved:
            try show(shell)
        case .roundOver:
            try saveScore(game, shell)
            try show(shell)
        }
    }

    /// Dismisses the end-of-round message, if one is showing, and starts the next round.
    /// Returns whether there was one.
    @discardableResult
    private func dismissIfOver(_ shell: Shell, draw: Bool = true) throws -> Bool {
        guard var game = self.game, game.outcome != nil else { return false }
        game.dismiss(using: &shell.session.random)
        self.game = game
        if draw { try show(shell) }
        return true
    }

    private func chooseVariant(_ name: String?, _ shell: Shell) throws {
        var game = try loadGame(shell)
        guard let name else {
            for variant in Variant.allCases {
                let mark = variant == game.variant ? "*" : " "
                shell.console.print("\(mark) \(variant.rawValue.padding(12))\(variant.summary)")
            }
            return
        }
        guard let variant = Variant(rawValue: name.lowercased()) else {
            throw UserError("unknown variant '\(name)': choose classic, blocker or flashlight")
        }
        try shell.session.openDatabase().setSetting(Self.variantKey, variant.rawValue)
        game.newGame(variant, using: &shell.session.random)
        self.game = game
        try show(shell)
        // Said after the room (at a terminal the room clears the screen): the old game is over.
        shell.console.status("a new game of \(variant.rawValue) began: full lives, a new room (the score stays)")
    }

    /// Draws the room, or the end-of-round message. At a terminal the screen is cleared first
    /// so the room stays in place, and the message covers the whole game (seed 004); `look`
    /// then shows the room that ended the round, revealed. A batch gets the revealed room and
    /// the message as plain lines.
    private func show(_ shell: Shell, revealingTheRoom: Bool = false) throws {
        let game = try loadGame(shell)
        let view = ZombiesView(ascii: shell.capabilities.ascii, styler: shell.styler)
        let console = shell.console
        guard shell.capabilities.interactive else {
            console.print(view.render(game))
            if let outcome = game.outcome { console.print(view.message(outcome)) }
            return
        }
        console.write("\u{1B}[H\u{1B}[2J")
        switch game.outcome {
        case nil:
            console.print(view.render(game))
        case let outcome? where revealingTheRoom:
            console.print(view.render(game))
            console.print(view.message(outcome) + "  " + shell.styler.dim("Enter or an arrow: next round"))
        case let outcome?:
            console.print(view.coveringMessage(outcome, covering: view.render(game)))
        }
    }

    // MARK: Storage

    static let variantKey = "zombies.variant"

    private func loadGame(_ shell: Shell) throws -> Game {
        if let game { return game }
        let database = try shell.session.openDatabase()
        let score = try database.zombiesScore()
        let variant = try database.setting(Self.variantKey).flatMap(Variant.init(rawValue:)) ?? .classic
        let game = Game(variant: variant, wins: score.wins, losses: score.losses, using: &shell.session.random)
        self.game = game
        return game
    }

    private func saveScore(_ game: Game, _ shell: Shell) throws {
        try shell.session.openDatabase().setZombiesScore(wins: game.wins, losses: game.losses)
    }
}

extension String {
    fileprivate func padding(_ width: Int) -> String { DisplayWidth.pad(self, to: width) }
}
