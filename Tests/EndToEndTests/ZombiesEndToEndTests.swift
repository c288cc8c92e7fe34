import Foundation
import Testing

@Suite struct ZombiesEndToEndTests {
    let scratch = Scratch()

    func run(_ stdin: String, _ arguments: [String] = []) throws -> RunResult {
        try runSeance(["--data-dir", scratch.dataDir] + arguments, stdin: stdin, scratch: scratch)
    }

    func fixture(_ name: String) throws -> String {
        try String(contentsOfFile: packageRoot + "/Tests/EndToEndTests/Fixtures/" + name, encoding: .utf8)
    }

    /// A whole scripted game, compared line for line with the expected transcript.
    @Test func scriptedGameMatchesTheTranscript() throws {
        let result = try run(try fixture("zombies-seed7.in"), ["--seed", "7", "--ascii"])
        #expect(result.stdout == (try fixture("zombies-seed7.out")))
        #expect(result.stderr == (try fixture("zombies-seed7.err")))
        #expect(result.status == 1)  // The refused moves are errors.
    }

    @Test func scoreAndVariantSurviveARestart() throws {
        let win = "zombies\nup\nup\nleft\nleft\nup\nleft\nup\nvariant flashlight\n"
        let first = try run(win, ["--seed", "7", "--ascii"])
        #expect(first.stdout.contains("You won!"))
        #expect(first.status == 0)
        let second = try run("zombies stats\n")
        #expect(second.stdout == "wins: 1  losses: 0  lives: 3  variant: flashlight\n")
    }

    @Test func everyOutcomeIsCountedAndPersisted() throws {
        // Zig-zag toward the SOS, round after round: seed 7 gives wins, catches and lost games.
        let script = "zombies\n" + String(repeating: "up\nleft\n", count: 150)
        let played = try run(script, ["--seed", "7", "--ascii"]).stdout.split(separator: "\n")
        let wins = played.filter { $0 == "You won!" }.count
        let catches = played.filter { $0 == "Try again!" }.count
        let losses = played.filter { $0 == "You lost!" }.count
        #expect(wins == 29 && catches == 29 && losses == 5)
        // Every third catch in a row is a lost game: catches and losses must agree.
        #expect(catches >= 2 * losses)
        #expect(try run("zombies stats\n").stdout == "wins: \(wins)  losses: \(losses)  lives: 3  variant: classic\n")
    }

    @Test func emojiRoomLinesUp() throws {
        let result = try run("zombies look\n", ["--seed", "3"])
        let rows = result.stdout.split(separator: "\n").prefix(5)
        #expect(rows.count == 5)
        #expect(rows.first?.hasPrefix("🆘") == true)
        #expect(rows.last?.hasSuffix("⬜️🚶‍♂️") == true)
        #expect(rows.allSatisfy { $0.count == 5 })  // Five grapheme clusters a row, each drawn two columns wide.
    }

    @Test func prefixFormWorksFromTheTop() throws {
        let result = try run("zombies variant blocker\nzombies stats\n", ["--ascii"])
        // The game's line is what a script reads; that a new one began is a status, on stderr.
        #expect(result.stdout.hasSuffix("<  ^  -  -\nwins: 0  losses: 0  lives: 3  variant: blocker\n"), "\(result.stdout)")
        #expect(result.stderr == "a new game of blocker began: full lives, a new room (the score stays)\n")
        let bad = try run("zombies variant spooky\n")
        #expect(bad.stderr == "line 1: unknown variant 'spooky': choose classic, blocker or flashlight\n")
    }

    @Test func aDamagedDatabaseIsReportedAndLeftAlone() throws {
        try FileManager.default.createDirectory(atPath: scratch.dataDir, withIntermediateDirectories: true)
        let junk = "not a database at all, but somebody's notes\n"
        scratch.write("data/seance.sqlite", junk)
        let result = try run("zombies\necho still running\n")
        #expect(result.stderr == "line 1: \(scratch.dataDir)/seance.sqlite is not an SQLite database; it was left untouched (move it away or use --data-dir)\n")
        #expect(result.stdout == "still running\n")
        #expect(try String(contentsOfFile: scratch.dataDir + "/seance.sqlite", encoding: .utf8) == junk)
    }

    @Test func theDataDirectoryIsPrivate() throws {
        _ = try run("zombies stats\n")
        let attributes = try FileManager.default.attributesOfItem(atPath: scratch.dataDir)
        #expect((attributes[.posixPermissions] as? Int) == 0o700)
    }
}
