/// A square of the room, row 0 at the top, column 0 at the left.
package struct Position: Hashable, Sendable, CustomStringConvertible {
    package var row: Int
    package var column: Int

    package init(_ row: Int, _ column: Int) {
        self.row = row
        self.column = column
    }

    package func moved(_ direction: Direction) -> Position {
        Position(row + direction.delta.row, column + direction.delta.column)
    }

    /// The four squares up, down, left and right (some may be outside the room).
    package var neighbours: [Position] { Direction.allCases.map { moved($0) } }

    package func isNeighbour(of other: Position) -> Bool {
        abs(row - other.row) + abs(column - other.column) == 1
    }

    package var description: String { "(\(row),\(column))" }
}

package enum Direction: String, CaseIterable, Sendable {
    case up, down, left, right

    var delta: (row: Int, column: Int) {
        switch self {
        case .up: return (-1, 0)
        case .down: return (1, 0)
        case .left: return (0, -1)
        case .right: return (0, 1)
        }
    }
}

package enum Variant: String, CaseIterable, Sendable {
    /// Two zombies.
    case classic
    /// One zombie and a block the player cannot walk through.
    case blocker
    /// One zombie and a flashlight that lights the room and wakes the zombie.
    case flashlight

    var zombieCount: Int { self == .classic ? 2 : 1 }

    package var summary: String {
        switch self {
        case .classic: return "two zombies hidden in the dark"
        case .blocker: return "one zombie and a block in the way"
        case .flashlight: return "one zombie and a flashlight: it lights the room, and the zombie hunts you"
        }
    }
}

/// One layout of the dark room: where everything is, and what the player has seen.
package struct Room: Hashable, Sendable {
    package static let size = 5
    /// The SOS signpost shines in the top-left corner.
    package static let sos = Position(0, 0)
    /// The player starts in the opposite corner.
    package static let start = Position(size - 1, size - 1)

    package var player: Position
    package var zombies: [Position]
    package var block: Position?
    package var flashlight: Position?
    /// True once the flashlight has been seen: everything is visible and the zombie hunts.
    package var isLit: Bool

    package init(player: Position = Room.start, zombies: [Position], block: Position? = nil,
                flashlight: Position? = nil, isLit: Bool = false) {
        self.player = player
        self.zombies = zombies
        self.block = block
        self.flashlight = flashlight
        self.isLit = isLit
    }

    package static func contains(_ position: Position) -> Bool {
        (0..<size).contains(position.row) && (0..<size).contains(position.column)
    }

    /// Whether the player can see `position`: his own square and the four next to it, the SOS
    /// (it shines), or anything once the room is lit.
    package func isVisible(_ position: Position) -> Bool {
        isLit || position == player || position == Room.sos || position.isNeighbour(of: player)
    }

    /// Why a move is refused, or nil when it is allowed.
    package func obstacle(_ direction: Direction) -> Obstacle? {
        let target = player.moved(direction)
        if !Room.contains(target) { return .wall }
        if target == block { return .block }
        return nil
    }

    package enum Obstacle: String, Sendable {
        case wall = "a wall"
        case block = "a block"
    }

    // MARK: Placement

    /// Squares where nothing may be placed: the start, the SOS, and the squares next to them.
    static let reserved: Set<Position> = {
        var squares: Set<Position> = [start, sos]
        for corner in [start, sos] { squares.formUnion(corner.neighbours.filter(contains)) }
        return squares
    }()

    static let placeable: [Position] = (0..<size).flatMap { r in (0..<size).map { Position(r, $0) } }
        .filter { !reserved.contains($0) }

    /// A random layout for `variant`, drawn again until the round can be won.
    package static func random(_ variant: Variant, using rng: inout some RandomNumberGenerator) -> Room {
        while true {
            var squares = placeable
            squares.shuffle(using: &rng)
            let zombies = Array(squares.prefix(variant.zombieCount))
            var rest = squares.dropFirst(variant.zombieCount)
            let block = variant == .blocker ? rest.popFirst() : nil
            let flashlight = variant == .flashlight ? rest.popFirst() : nil
            let room = Room(zombies: zombies, block: block, flashlight: flashlight)
            if room.isSolvable { return room }
        }
    }

    /// True when some sequence of moves wins the round: a search over every state the round can
    /// reach (player, zombies, lit or not), with the same rules as play (`step`). For the dark
    /// variants this is a path that never passes next to a zombie; with the flashlight it also
    /// follows the chase once the room is lit, so a room where the zombie, woken at once,
    /// shadows the player to the end is drawn again.
    package var isSolvable: Bool {
        guard !zombies.contains(where: { $0 == player || $0.isNeighbour(of: player) }) else { return false }
        var seen: Set<Room> = [self]
        var frontier = [self]
        while let room = frontier.popLast() {
            for direction in Direction.allCases {
                let (next, outcome) = room.step(direction)
                switch outcome {
                case .reachedSOS: return true
                case .moved where seen.insert(next).inserted: frontier.append(next)
                default: continue
                }
            }
        }
        return false
    }

    /// What one move does.
    package enum StepOutcome: Equatable, Sendable {
        case refused(Obstacle)
        case moved
        /// A zombie is next to the player: found (this beats reaching the SOS in the same move).
        case found
        case reachedSOS
    }

    /// The room after the player moves one square, and what happened: the rules of a move, in
    /// one place for play and for the solvability search.
    package func step(_ direction: Direction) -> (room: Room, outcome: StepOutcome) {
        if let obstacle = obstacle(direction) { return (self, .refused(obstacle)) }
        var next = self
        next.player = player.moved(direction)
        if isLit { next.zombies = next.zombies.map { next.chaseStep(from: $0) } }
        if let flashlight = next.flashlight, next.isVisible(flashlight) { next.isLit = true }
        if next.zombies.contains(where: { $0 == next.player || $0.isNeighbour(of: next.player) }) { return (next, .found) }
        if next.player.isNeighbour(of: Room.sos) { return (next, .reachedSOS) }
        return (next, .moved)
    }

    // MARK: The chase

    /// One step of a hunting zombie toward the player: along the axis where the distance is
    /// larger (vertical on a tie); when that square is the block or the SOS, along the other
    /// axis if that also closes in; otherwise it waits.
    package func chaseStep(from zombie: Position) -> Position {
        let dRow = player.row - zombie.row, dColumn = player.column - zombie.column
        let vertical = dRow == 0 ? nil : Position(zombie.row + dRow.signum(), zombie.column)
        let horizontal = dColumn == 0 ? nil : Position(zombie.row, zombie.column + dColumn.signum())
        let preferred = abs(dRow) >= abs(dColumn) ? [vertical, horizontal] : [horizontal, vertical]
        for case let step? in preferred where step != block && step != Room.sos && step != player
            && !zombies.contains(step) {
            return step
        }
        return zombie
    }
}
