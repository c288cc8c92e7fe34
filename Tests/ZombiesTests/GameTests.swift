import Shell
import Terminal
import Testing
@testable import Zombies

@Suite struct GameTests {
    var rng = SeededRandom(seed: 1)

    func game(_ room: Room, variant: Variant = .classic) -> Game { Game(variant: variant, room: room) }

    @Test func walkingToTheSOSWins() {
        var g = game(Room(player: Position(2, 0), zombies: [Position(4, 0), Position(0, 4)]))
        #expect(g.move(.up) == .roundOver(.won))
        #expect(g.wins == 1 && g.losses == 0 && g.lives == 3)
        #expect(g.outcome == .won)
    }

    @Test func aZombieNextToThePlayerCatchesHim() {
        var g = game(Room(player: Position(4, 4), zombies: [Position(2, 3), Position(0, 4)]))
        #expect(g.move(.up) == .moved)  // (3,4): (2,3) is diagonal, unseen.
        #expect(g.move(.up) == .roundOver(.caught))  // (2,4): (2,3) is next to him.
        #expect(g.lives == 2)
        #expect(g.wins == 0 && g.losses == 0)
    }

    @Test func theZombieWinsWhenOneMoveRevealsBoth() {
        var g = game(Room(player: Position(0, 2), zombies: [Position(1, 1), Position(4, 0)]))
        #expect(g.move(.left) == .roundOver(.caught))  // (0,1): next to the SOS and to the zombie at (1,1).
        #expect(g.wins == 0)
    }

    @Test func refusedMovesChangeNothing() {
        var g = game(Room(player: Position(4, 4), zombies: [Position(0, 4), Position(2, 0)]))
        let before = g
        #expect(g.move(.down) == .refused(.wall))
        #expect(g.move(.right) == .refused(.wall))
        #expect(g == before)
        var b = game(Room(player: Position(3, 2), zombies: [Position(0, 4)], block: Position(2, 2)), variant: .blocker)
        #expect(b.move(.up) == .refused(.block))
        #expect(b.room.player == Position(3, 2))
    }

    @Test mutating func livesAndCountersAcrossRoundsAndGames() {
        var g = game(Room(player: Position(3, 4), zombies: [Position(2, 3), Position(0, 4)]))
        #expect(g.move(.up) == .roundOver(.caught))
        #expect(g.lives == 2)
        g.dismiss(using: &rng)
        #expect(g.outcome == nil && g.lives == 2 && g.room.player == Room.start)  // Try again keeps the lives.
        // Lose the remaining two lives in forced rooms.
        for expected in [Outcome.caught, .lost] {
            g = Game(replacingRoomOf: g, with: Room(player: Position(3, 4), zombies: [Position(2, 3), Position(0, 4)]))
            #expect(g.move(.up) == .roundOver(expected))
            if expected == .caught { g.dismiss(using: &rng) }
        }
        #expect(g.lives == 0 && g.losses == 1 && g.wins == 0)
        g.dismiss(using: &rng)
        #expect(g.lives == 3 && g.losses == 1)  // A new game.
        g = Game(replacingRoomOf: g, with: Room(player: Position(2, 0), zombies: [Position(4, 0)]))
        #expect(g.move(.up) == .roundOver(.won))
        g.dismiss(using: &rng)
        #expect(g.wins == 1 && g.losses == 1 && g.lives == 3)
    }

    @Test mutating func aWinRestoresFullLives() {
        var g = game(Room(player: Position(3, 4), zombies: [Position(2, 3), Position(0, 4)]))
        _ = g.move(.up)
        g.dismiss(using: &rng)
        g = Game(replacingRoomOf: g, with: Room(player: Position(2, 0), zombies: [Position(4, 0)]))
        #expect(g.lives == 2)
        _ = g.move(.up)
        g.dismiss(using: &rng)
        #expect(g.lives == 3)
    }

    @Test mutating func newGameKeepsTheScore() {
        var g = Game(variant: .classic, wins: 4, losses: 2, room: Room(player: Position(3, 4), zombies: [Position(2, 3)]))
        _ = g.move(.up)
        g.newGame(.blocker, using: &rng)
        #expect(g.variant == .blocker && g.lives == 3 && g.wins == 4 && g.losses == 2 && g.outcome == nil)
        #expect(g.room.block != nil)
    }
}

@Suite struct FlashlightTests {
    @Test func revealingTheFlashlightLightsTheRoom() {
        var g = Game(variant: .flashlight, room: Room(player: Position(4, 4), zombies: [Position(0, 3)], flashlight: Position(2, 4)))
        #expect(g.move(.up) == .moved)  // (3,4) sees (2,4).
        #expect(g.room.isLit)
        #expect(g.room.zombies == [Position(0, 3)])  // It wakes now and moves from the next move on.
    }

    @Test func theZombieHuntsOneStepPerMove() {
        var g = Game(variant: .flashlight, room: Room(player: Position(3, 4), zombies: [Position(0, 2)], flashlight: Position(2, 4), isLit: true))
        #expect(g.move(.left) == .moved)  // Player (3,3); zombie: 3 rows vs 1 column → (1,2).
        #expect(g.room.zombies == [Position(1, 2)])
        #expect(g.move(.left) == .roundOver(.caught))  // Player (3,2); zombie (2,2): next to him.
        #expect(g.room.zombies == [Position(2, 2)])
    }

    @Test func aDarkZombieNeverMoves() {
        var g = Game(variant: .flashlight, room: Room(player: Position(4, 4), zombies: [Position(0, 3)], flashlight: Position(0, 4)))
        _ = g.move(.up)
        _ = g.move(.left)
        #expect(g.room.zombies == [Position(0, 3)])
        #expect(!g.room.isLit)
    }
}

@Suite struct ViewTests {
    let emoji = ZombiesView(ascii: false, styler: Styler(enabled: false))
    let ascii = ZombiesView(ascii: true, styler: Styler(enabled: false))

    @Test func startingRoomInASCII() {
        let g = Game(variant: .classic, room: Room(zombies: [Position(2, 2), Position(0, 4)]))
        #expect(ascii.render(g) == """
            S # # # #
            # # # # #
            # # # # #
            # # # # .
            # # # . @
            <3 <3 <3  W: 0  L: 0
            <  ^  -  -
            """)
    }

    @Test func emojiRowsAllHaveTheSameWidth() {
        let g = Game(variant: .blocker, room: Room(player: Position(2, 2), zombies: [Position(2, 1)], block: Position(1, 2), isLit: false))
        let rows = emoji.render(g).split(separator: "\n").prefix(5)
        #expect(rows.allSatisfy { $0.displayWidth == 10 })
        #expect(rows[2] == "⬛️🧟🚶‍♂️⬜️⬛️")
        #expect(rows[1] == "⬛️⬛️🚧⬛️⬛️")
        #expect(rows[0] == "🆘⬛️⬛️⬛️⬛️")
    }

    @Test func refusedArrowsAreGreyedOrDashed() {
        let g = Game(variant: .blocker, room: Room(player: Position(0, 4), zombies: [Position(4, 0)], block: Position(1, 4)))
        #expect(ascii.controls(g) == "<  -  -  -")  // Up: wall, down: block, right: wall.
        let coloured = ZombiesView(ascii: false, styler: Styler(enabled: true))
        let row = coloured.controls(g)
        #expect(row.contains(Style.dim.escape + "↑"))
        #expect(row.contains(Style.bold.escape + "←"))
    }

    @Test func litRoomShowsTheFlashlightAndZombie() {
        let g = Game(variant: .flashlight, room: Room(player: Position(3, 4), zombies: [Position(0, 2)], flashlight: Position(2, 4), isLit: true))
        #expect(ascii.render(g).split(separator: "\n")[0] == "S . Z . .")
        #expect(ascii.render(g).split(separator: "\n")[2] == ". . . . F")
    }

    @Test func messages() {
        #expect(emoji.message(.won) == "You won! 🥳")
        #expect(emoji.message(.caught) == "Try again! 🤞")
        #expect(emoji.message(.lost) == "You lost! 💀")
        #expect(ascii.message(.lost) == "You lost!")
        let box = emoji.coveringMessage(.won, covering: "").split(separator: "\n")
        #expect(Set(box.map { $0.displayWidth }).count == 1)  // A clean rectangle.
        #expect(box.contains { $0.contains("You won! 🥳") })
    }

    /// Seed 004: the end-of-round message covers the whole game, not a part of it.
    @Test(arguments: [false, true]) func theMessageCoversTheWholeGame(asciiView: Bool) {
        let view = asciiView ? ascii : emoji
        var caught = Game(variant: .classic, room: Room(player: Position(0, 1), zombies: [Position(0, 2)]))
        #expect(caught.move(.right) == .roundOver(.caught))
        let room = view.render(caught).split(separator: "\n")
        let box = view.coveringMessage(caught.outcome!, covering: view.render(caught)).split(separator: "\n")
        #expect(box.count >= room.count)
        #expect(box[0].displayWidth >= room.map { $0.strippingANSI.displayWidth }.max()!)
        #expect(Set(box.map { $0.strippingANSI.displayWidth }).count == 1)
        // A taller game (a wider room one day) is covered too.
        let tall = Array(repeating: "x", count: 11).joined(separator: "\n")
        #expect(view.coveringMessage(.lost, covering: tall).split(separator: "\n").count == 11)
    }

    /// A text-default symbol made emoji by U+FE0F (❤️ ☠️ 🖼️) is drawn two columns wide by some
    /// terminals and one by others (tmux among them), so no glyph drawn here is one: each is
    /// ASCII, or begins with a scalar that is an emoji by default, or is one of the squares
    /// (⬜ ⬛, emoji by default too).
    @Test func everyGlyphIsDrawnAlikeByEveryTerminal() {
        let g = emoji.glyphs
        var texts = [g.floor, g.dark, g.player, g.zombie, g.sos, g.block, g.flashlight, g.life]
        texts += [Outcome.won, .caught, .lost].map { emoji.message($0) }
        for text in texts {
            for character in text where !character.isASCII {
                #expect(character.unicodeScalars.first!.properties.isEmojiPresentation, "\(text): \(character)")
            }
        }
        for outcome in [Outcome.won, .caught, .lost] {
            #expect(Set(emoji.coveringMessage(outcome, covering: "").split(separator: "\n").map { $0.displayWidth }).count == 1)
        }
    }
}
