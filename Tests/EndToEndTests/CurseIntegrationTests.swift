import Crypto
import Foundation
import Glibc
import TestSupport
import Testing

/// A Ghost and two Humans, will and mike, on the suite's loopback, each a shell driven step by
/// step: mike online; will online (after `willFirst`, where PASSWORD is the password file's
/// path) with its conversation with mike open; the ghost online, with will in its table.
final class CurseScene {
    let shells: LoopbackShells
    let ghostData: String, willData: String, mikeData: String
    private(set) var ghost: PipeDriver!, will: PipeDriver!, mike: PipeDriver!

    init(willFirst: [String] = [], prepare: (CurseScene) throws -> Void = { _ in }) throws {
        shells = try LoopbackShells()
        ghostData = try shells.makeProfile("ghost")
        willData = try shells.makeProfile("will")
        mikeData = try shells.makeProfile("mike")
        try prepare(self)
        mike = try shell(mikeData, battery: 90)
        will = try shell(willData, battery: 90)
        ghost = try shell(ghostData, battery: 3)
        try mike.send(login("mike") + "\nchat")
        let first = willFirst.map { $0.replacingOccurrences(of: "PASSWORD", with: shells.password) }
        try will.send(([login("will")] + first + ["chat", "open mike --wait 20"]).joined(separator: "\n"))
        #expect(try will.read(until: "mike#", timeout: 20))
        try ghost.send(login("ghost") + "\nchat\nopen will --wait 20\n/back")
        #expect(try ghost.read(until: "will#", timeout: 20))
    }

    func login(_ name: String) -> String { "login \(name) --password-file \(shells.password)" }

    /// A shell on this scene's network, on the plane `battery` gives.
    func shell(_ data: String, battery: Int) throws -> PipeDriver {
        try shells.driver(["--data-dir", data, "--battery", "\(battery)", "--seed", "7"])
    }

    deinit { [mike, will, ghost].forEach { $0?.close() } }
}

/// Curses between real shells: a Ghost curses a Human, the effects show on the Human's screen
/// and on the screen of the Human it writes to, the curses outlive a restart, candles lift,
/// medallions bounce, spells repel, and only a Ghost casts.
@Suite(.enabled(if: inPrivateNetwork, "runs only inside scripts/in-netns (make test)"))
struct CurseIntegrationTests {
    @Test func aGhostCursesAHumanAndBothScreensShowIt() throws {
        let scene = try CurseScene()
        let (ghost, will, mike, willData) = (scene.ghost!, scene.will!, scene.mike!, scene.willData)

        // A Human cannot cast.
        try mike.send("curse will silence 5")
        #expect(try mike.readError(until: "only a Ghost can curse, and you are Human", timeout: 10))

        // The mirror: what will sends reaches mike reversed, and will's own screen shows it so.
        try ghost.send("curse will mirror 5")
        #expect(try ghost.read(until: "your curse took hold: will#", timeout: 10))
        #expect(try will.read(until: "cursed you with mirror for 5 min", timeout: 10))
        try will.send("hello mike")
        #expect(try mike.read(until: "ekim olleh", timeout: 10))
        #expect(try query(willData, "SELECT text FROM message WHERE outgoing = 1") == ["ekim olleh"])

        // Silence: will cannot send at all.
        try ghost.send("curse will silence 5")
        #expect(try will.read(until: "cursed you with silence", timeout: 10))
        try will.send("are you there")
        #expect(try will.readError(until: "you are silenced by ghost#", timeout: 10))
        try will.send("/curses")
        #expect(try will.read(until: "silence", timeout: 10))

        // Both outlive a restart: listed by a new process, still enforced when it is online.
        will.close()
        let again = try scene.shell(willData, battery: 90)
        defer { again.close() }
        try again.send(scene.login("will") + "\ncurses")
        #expect(try again.read(until: "silence", timeout: 10))
        #expect(again.output.contains("mirror") && again.output.contains("from ghost#"), "\(again.output)")
        try again.send("chat")
        #expect(try again.read(until: "you are still cursed: silence from ghost#", timeout: 10))
        #expect(try query(willData, "SELECT count(*) FROM curse WHERE endedAt IS NULL") == ["2"])
    }

    /// Amnesia, blindness and possession; a Holy candle lifts the curse that ends last; a
    /// Saint's medallion makes the next one bounce, and the caster hears it.
    @Test func candlesAndMedallionsAgainstAmnesiaBlindnessAndPossession() throws {
        let scene = try CurseScene(willFirst: ["store", "buy candle 3 --password-file PASSWORD", "buy medallion --password-file PASSWORD"])
        let (ghost, will, mikeData, willData) = (scene.ghost!, scene.will!, scene.mikeData, scene.willData)
        try will.send("/back")

        try ghost.send("curse will amnesia 10")
        #expect(try will.read(until: "cursed you with amnesia", timeout: 10))
        try will.send("nearby\necho :::amnesia")
        #expect(try will.read(until: ":::amnesia", timeout: 10))
        let forgetful = will.output.components(separatedBy: "cursed you with amnesia").last ?? ""
        #expect(forgetful.contains("a stranger") && !forgetful.contains("mike#"), "\(forgetful)")

        try ghost.send("curse will blind 5")
        #expect(try will.read(until: "cursed you with blind", timeout: 10))
        try will.send("nearby\necho :::blind")
        #expect(try will.read(until: ":::blind", timeout: 10))
        let blind = will.output.components(separatedBy: "cursed you with blind").last ?? ""
        #expect(blind.contains("nobody you can see is nearby"), "\(blind)")

        // The candle lifts amnesia (it ends last); blindness stays; the second candle lifts it.
        try will.send("store\nuse candle")
        #expect(try will.read(until: "the curse of amnesia from ghost#", timeout: 10))
        try will.send("use candle\nchat\nnearby\necho :::sighted")
        #expect(try will.read(until: ":::sighted", timeout: 10))
        let sighted = will.output.components(separatedBy: "the curse of blind from ghost#").last ?? ""
        #expect(sighted.contains("mike#"), "\(sighted)")  // (A Human never sees the Ghost: the planes.)
        // The names' column is as wide as the one name in it: the line keeps to a narrow window.
        #expect(sighted.split(separator: "\n").contains { $0.range(of: #"mike#[0-9a-f]{4} Human +seen"#, options: .regularExpression) != nil },
                "\(sighted)")

        // Possession: mike gets as many words, none of them will's.
        try ghost.send("curse will possession 5")
        #expect(try will.read(until: "cursed you with possession", timeout: 10))
        try will.send("open mike\nhello there mike\n/back")
        #expect(eventually(timeout: 10) { (try? query(mikeData, "SELECT text FROM message WHERE outgoing = 0")) ?? [] != [] })
        let possessed = try query(mikeData, "SELECT text FROM message WHERE outgoing = 0").first ?? ""
        #expect(possessed.split(separator: " ").count == 3 && !possessed.contains("hello") && !possessed.contains("mike"), "\(possessed)")
        try will.send("store\nuse candle\nchat")
        #expect(try will.read(until: "the curse of possession from ghost#", timeout: 10))

        // The medallion: the next curse bounces.
        try will.send("store\nwear medallion\nchat")
        #expect(try will.read(until: "curses bounce off until it breaks", timeout: 10))
        try ghost.send("curse will silence 5")
        #expect(try ghost.read(until: "your curse bounced off will#", timeout: 10))
        #expect(try will.read(until: "bounced off your Saint's medallion", timeout: 10))
        #expect(try query(willData, "SELECT kind FROM curse WHERE endedAt IS NULL") == [])
    }

    /// A spell (as a spectre would have taught it) spoken by the cursed Human at the Ghost: the
    /// curse ends on the Human's side, the Ghost's screen says it was repelled, and the Ghost's
    /// next curse is refused for half an hour.
    @Test func aSpellStopsTheGhost() throws {
        let scene = try CurseScene { scene in
            // The spell will learnt, where a spectre would have put it.
            let key = try #require(Data(hex: try query(scene.willData, "SELECT hex(signingKey) FROM profile").first ?? ""))
            let fingerprint = SHA256.hash(data: key).prefix(16).map { String(format: "%02x", $0) }.joined()
            _ = try query(scene.willData, "INSERT INTO setting (key, value) VALUES ('spell.\(fingerprint)', 'the lamp is lit and the house is mine')")
        }
        let (ghost, will, mike) = (scene.ghost!, scene.will!, scene.mike!)
        try ghost.send("curse will silence 30")
        #expect(try will.read(until: "cursed you with silence", timeout: 20))
        try will.send("/spell ghost")
        #expect(try will.read(until: "you speak the spell", timeout: 10))
        #expect(try ghost.read(until: "repelled you with a spell", timeout: 10))
        try will.send("free again")
        #expect(try mike.read(until: "free again", timeout: 10))
        try ghost.send("curse will mirror 5")
        #expect(try ghost.readError(until: "repelled you with a spell: you cannot curse them for", timeout: 10))
    }
}

extension Data {
    init?(hex: String) {
        var bytes: [UInt8] = []
        var index = hex.startIndex
        while index < hex.endIndex {
            let next = hex.index(index, offsetBy: 2, limitedBy: hex.endIndex) ?? hex.endIndex
            guard let byte = UInt8(hex[index..<next], radix: 16) else { return nil }
            bytes.append(byte)
            index = next
        }
        self.init(bytes)
    }
}
