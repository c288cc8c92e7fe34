import Crypto
import Foundation
import Glibc
import Testing

/// Curses between real shells on the suite's loopback, each driven step by step: a Ghost
/// curses a Human, the effects show on the Human's screen and on the screen of the Human it
/// writes to, the curses outlive a restart, and a Human cannot cast.
@Suite(.enabled(if: inPrivateNetwork, "runs only inside scripts/in-netns (make test)"))
struct CurseIntegrationTests {
    @Test func aGhostCursesAHumanAndBothScreensShowIt() throws {
        let shells = LoopbackShells()
        let ghostData = try shells.makeProfile("ghost"), willData = try shells.makeProfile("will"), mikeData = try shells.makeProfile("mike")
        func shell(_ data: String, battery: Int) throws -> PipeDriver {
            try PipeDriver(arguments: ["--data-dir", data, "--interface", "lo", "--port", "\(shells.port)", "--announce-interval", "0.2",
                                       "--battery", "\(battery)", "--seed", "7"], scratch: shells.scratch)
        }
        let mike = try shell(mikeData, battery: 90), will = try shell(willData, battery: 90), ghost = try shell(ghostData, battery: 3)
        defer { mike.close(); will.close(); ghost.close() }
        try mike.send("login mike --password-file \(shells.password)\nchat")
        try will.send("login will --password-file \(shells.password)\nchat\nopen mike --wait 20")
        #expect(try will.read(until: "mike#", timeout: 20))
        try ghost.send("login ghost --password-file \(shells.password)\nchat\nopen will --wait 20\n/back")
        #expect(try ghost.read(until: "will#", timeout: 20))

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
        let again = try shell(willData, battery: 90)
        defer { again.close() }
        try again.send("login will --password-file \(shells.password)\ncurses")
        #expect(try again.read(until: "silence", timeout: 10))
        #expect(again.output.contains("mirror") && again.output.contains("from ghost#"), "\(again.output)")
        try again.send("chat")
        #expect(try again.read(until: "you are still cursed: silence from ghost#", timeout: 10))
        #expect(try query(willData, "SELECT count(*) FROM curse WHERE endedAt IS NULL") == ["2"])
    }

    /// Amnesia and blindness on the Human's own screen; a Holy candle lifts the curse that ends
    /// last; a Saint's medallion makes the next one bounce, and the caster hears it.
    @Test func candlesAndMedallionsAgainstAmnesiaAndBlindness() throws {
        let shells = LoopbackShells()
        let ghostData = try shells.makeProfile("ghost"), willData = try shells.makeProfile("will"), mikeData = try shells.makeProfile("mike")
        func shell(_ data: String, battery: Int) throws -> PipeDriver {
            try PipeDriver(arguments: ["--data-dir", data, "--interface", "lo", "--port", "\(shells.port)", "--announce-interval", "0.2",
                                       "--battery", "\(battery)"], scratch: shells.scratch)
        }
        let mike = try shell(mikeData, battery: 90), will = try shell(willData, battery: 90), ghost = try shell(ghostData, battery: 3)
        defer { mike.close(); will.close(); ghost.close() }
        try mike.send("login mike --password-file \(shells.password)\nchat")
        try will.send("login will --password-file \(shells.password)\nstore\nbuy candle 3 --password-file \(shells.password)\n"
                      + "buy medallion --password-file \(shells.password)\nchat\nopen mike --wait 20\n/back")
        #expect(try will.read(until: "mike#", timeout: 20))
        try ghost.send("login ghost --password-file \(shells.password)\nchat\nopen will --wait 20\n/back")
        #expect(try ghost.read(until: "will#", timeout: 20))

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

        // Possession: mike gets as many words, none of them will's.
        try ghost.send("curse will possession 5")
        #expect(try will.read(until: "cursed you with possession", timeout: 10))
        try will.send("open mike\nhello there mike\n/back")
        #expect(try eventually(timeout: 10) { (try? query(mikeData, "SELECT text FROM message WHERE outgoing = 0")) ?? [] != [] })
        let possessed = try query(mikeData, "SELECT text FROM message WHERE outgoing = 0").first ?? ""
        #expect(possessed.split(separator: " ").count == 3 && !possessed.contains("hello") && !possessed.contains("mike"), "\(possessed)")
        try will.send("store\nuse candle\nchat")
        #expect(try will.read(until: "the curse of possession from ghost#", timeout: 10))

        // The medallion: the next curse bounces.
        try will.send("store\nwear medallion\nchat")
        try ghost.send("sleep 0.5\ncurse will silence 5")
        #expect(try ghost.read(until: "your curse bounced off will#", timeout: 10))
        #expect(try will.read(until: "bounced off your Saint's medallion", timeout: 10))
        #expect(try query(willData, "SELECT kind FROM curse WHERE endedAt IS NULL") == [])
    }

    /// A spell (as a spectre would have taught it) spoken by the cursed Human at the Ghost: the
    /// curse ends on the Human's side, the Ghost's screen says it was repelled, and the Ghost's
    /// next curse is refused for half an hour.
    @Test func aSpellStopsTheGhost() throws {
        let shells = LoopbackShells()
        let ghostData = try shells.makeProfile("ghost"), willData = try shells.makeProfile("will"), mikeData = try shells.makeProfile("mike")
        // The spell will learnt, where the spectre would have put it.
        let key = try #require(Data(hex: try query(willData, "SELECT hex(signingKey) FROM profile").first ?? ""))
        let fingerprint = SHA256.hash(data: key).prefix(16).map { String(format: "%02x", $0) }.joined()
        _ = try query(willData, "INSERT INTO setting (key, value) VALUES ('spell.\(fingerprint)', 'the lamp is lit and the house is mine')")
        func shell(_ data: String, battery: Int) throws -> PipeDriver {
            try PipeDriver(arguments: ["--data-dir", data, "--interface", "lo", "--port", "\(shells.port)", "--announce-interval", "0.2",
                                       "--battery", "\(battery)"], scratch: shells.scratch)
        }
        let mike = try shell(mikeData, battery: 90), will = try shell(willData, battery: 90), ghost = try shell(ghostData, battery: 3)
        defer { mike.close(); will.close(); ghost.close() }
        try mike.send("login mike --password-file \(shells.password)\nchat")
        try will.send("login will --password-file \(shells.password)\nchat\nopen mike --wait 20")
        #expect(try will.read(until: "mike#", timeout: 20))
        try ghost.send("login ghost --password-file \(shells.password)\nchat\nopen will --wait 20\n/back\ncurse will silence 30")
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
