/// How a round ended.
package enum Outcome: Equatable, Sendable {
    /// The player reached the SOS.
    case won
    /// A zombie found the player, who has lives left.
    case caught
    /// A zombie found the player on his last life.
    case lost
}

/// The whole game: the room of the current round, lives, the score and the variant.
/// Rounds follow the seed: a win or a lost game starts a new game with full lives; a catch
/// with lives left re-draws the room and keeps the lives.
package struct Game: Equatable, Sendable {
    package static let startingLives = 3

    package private(set) var variant: Variant
    package private(set) var room: Room
    package private(set) var lives: Int
    package private(set) var wins: Int
    package private(set) var losses: Int
    /// The end of the round, while its message covers the room.
    package private(set) var outcome: Outcome?

    package init(variant: Variant, wins: Int = 0, losses: Int = 0, room: Room) {
        self.variant = variant
        self.room = room
        self.lives = Game.startingLives
        self.wins = wins
        self.losses = losses
    }

    package init(variant: Variant, wins: Int = 0, losses: Int = 0, using rng: inout some RandomNumberGenerator) {
        self.init(variant: variant, wins: wins, losses: losses, room: Room.random(variant, using: &rng))
    }

    /// The same game in another room: for tests that need a given layout mid-game.
    init(replacingRoomOf game: Game, with room: Room) {
        self = game
        self.room = room
    }

    package enum MoveResult: Equatable, Sendable {
        case moved
        case refused(Room.Obstacle)
        case roundOver(Outcome)
    }

    /// Moves the player one square. A refused move changes nothing.
    package mutating func move(_ direction: Direction) -> MoveResult {
        precondition(outcome == nil, "dismiss the end-of-round message first")
        let (next, outcome) = room.step(direction)
        if case .refused(let obstacle) = outcome { return .refused(obstacle) }
        room = next
        switch outcome {
        case .found:
            lives -= 1
            if lives == 0 {
                losses += 1
                return end(.lost)
            }
            return end(.caught)
        case .reachedSOS:
            wins += 1
            return end(.won)
        case .moved, .refused:
            return .moved
        }
    }

    private mutating func end(_ outcome: Outcome) -> MoveResult {
        self.outcome = outcome
        return .roundOver(outcome)
    }

    /// Dismisses the end-of-round message and starts what follows: a new game after a win or a
    /// loss, a new room with the same lives after a catch.
    package mutating func dismiss(using rng: inout some RandomNumberGenerator) {
        guard let outcome else { return }
        self.outcome = nil
        if outcome != .caught { lives = Game.startingLives }
        room = Room.random(variant, using: &rng)
    }

    /// A new game: full lives, a new room; the score stays.
    package mutating func newGame(_ variant: Variant? = nil, using rng: inout some RandomNumberGenerator) {
        if let variant { self.variant = variant }
        outcome = nil
        lives = Game.startingLives
        room = Room.random(self.variant, using: &rng)
    }
}
