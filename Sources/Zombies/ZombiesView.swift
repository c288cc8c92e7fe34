import Terminal

/// Draws the game as text: the room, lives and score, the control row, and the end-of-round
/// message. Every cell of a rendering has the same display width, so the grid lines up.
package struct ZombiesView: Sendable {
    package let ascii: Bool
    package let styler: Styler

    package init(ascii: Bool, styler: Styler) {
        self.ascii = ascii
        self.styler = styler
    }

    struct Glyphs {
        let floor, dark, player, zombie, sos, block, flashlight, life: String
        let separator: String
    }

    var glyphs: Glyphs {
        ascii
            ? Glyphs(floor: ".", dark: "#", player: "@", zombie: "Z", sos: "S", block: "X", flashlight: "F",
                     life: "<3", separator: " ")
            : Glyphs(floor: "⬜️", dark: "⬛️", player: "🚶‍♂️", zombie: "🧟", sos: "🆘", block: "🚧", flashlight: "🔦",
                     life: "💖", separator: "")
    }

    /// The glyph of one square as the player sees it (everything, once the round is over).
    func cell(_ position: Position, in room: Room, revealed: Bool = false) -> String {
        let g = glyphs
        if position == room.player { return g.player }
        if position == Room.sos { return g.sos }
        guard revealed || room.isVisible(position) else { return g.dark }
        if room.zombies.contains(position) { return g.zombie }
        if position == room.block { return g.block }
        if position == room.flashlight { return g.flashlight }
        return g.floor
    }

    /// The room, then lives and score, then the arrows (refused ones greyed out, or `-`). When
    /// the round is over the whole room is shown: the player sees what caught him.
    package func render(_ game: Game) -> String {
        var lines = (0..<Room.size).map { row in
            (0..<Room.size).map { cell(Position(row, $0), in: game.room, revealed: game.outcome != nil) }.joined(separator: glyphs.separator)
        }
        let hearts = Array(repeating: glyphs.life, count: game.lives).joined(separator: ascii ? " " : "")
        lines.append((hearts.isEmpty ? "" : hearts + "  ") + "W: \(game.wins)  L: \(game.losses)")
        lines.append(controls(game))
        return lines.joined(separator: "\n")
    }

    func controls(_ game: Game) -> String {
        let order: [(Direction, String, String)] = [(.left, "←", "<"), (.up, "↑", "^"), (.down, "↓", "v"), (.right, "→", ">")]
        return order.map { direction, arrow, asciiArrow in
            let symbol = ascii ? asciiArrow : arrow
            guard game.outcome == nil, game.room.obstacle(direction) == nil else {
                return styler.enabled && !ascii ? styler.dim(symbol) : "-"
            }
            return styler.bold(symbol)
        }.joined(separator: "  ")
    }

    /// The end-of-round message on one line.
    package func message(_ outcome: Outcome) -> String {
        switch outcome {
        case .won: return ascii ? "You won!" : "You won! 🥳"
        case .caught: return ascii ? "Try again!" : "Try again! 🤞"
        case .lost: return ascii ? "You lost!" : "You lost! 💀"
        }
    }

    /// The message drawn large in a frame that covers the whole game (seed 004: the message
    /// covers the UI): at least as wide and as tall as `covering`, the rendering it hides.
    package func coveringMessage(_ outcome: Outcome, covering: String) -> String {
        let text = styler.bold(message(outcome))
        let hints = [styler.dim("Enter or an arrow: next round"), styler.dim("look: see the room")]
        let hidden = covering.split(separator: "\n", omittingEmptySubsequences: false)
        let contentWidth = ([text] + hints).map { $0.strippingANSI.displayWidth }.max() ?? 0
        let width = max(contentWidth + 4, (hidden.map { $0.strippingANSI.displayWidth }.max() ?? 0) - 2)
        let (h, v, tl, tr, bl, br) = ascii ? ("-", "|", "+", "+", "+", "+") : ("─", "│", "╭", "╮", "╰", "╯")
        func centred(_ s: String) -> String {
            let w = s.strippingANSI.displayWidth
            let left = (width - w) / 2
            return v + String(repeating: " ", count: left) + s + String(repeating: " ", count: width - w - left) + v
        }
        var inside = [centred(""), centred(text), centred("")] + hints.map(centred)
        // More blank rows, below then above, until every row of the game is hidden.
        while inside.count + 2 < hidden.count {
            if inside.count.isMultiple(of: 2) { inside.insert(centred(""), at: 0) } else { inside.append(centred("")) }
        }
        return ([tl + String(repeating: h, count: width) + tr] + inside + [bl + String(repeating: h, count: width) + br])
            .joined(separator: "\n")
    }

    /// `stats`: the score, lives and variant.
    package func stats(_ game: Game) -> String {
        "wins: \(game.wins)  losses: \(game.losses)  lives: \(game.lives)  variant: \(game.variant.rawValue)"
    }
}
