import Crypto
import Foundation
import Glibc
import Nearby
import Testing

/// Real seance processes on the suite's loopback (inside its private namespace), each test on a
/// port of its own, facing a `FakePeer` that forges, floods and replays.
final class LoopbackShells {
    let scratch = Scratch()
    let port = UInt16.random(in: 20_000...60_000)
    lazy var password = scratch.write("password", "correct horse\n")

    func makeProfile(_ name: String, avatar: String? = nil) throws -> String {
        let data = scratch.path + "/" + name
        let result = try runSeance(["--data-dir", data, "-c", "profile new \(name) --password-file \(password)"
                                        + (avatar.map { " --avatar \($0)" } ?? "")], scratch: scratch)
        guard result.status == 0 else { throw TestNetwork.SetupError(output: result.stderr) }
        return data
    }

    /// Starts seance logged in as `name` (data in `data`) with `lines` as its script.
    func start(_ name: String, data: String, lines: [String], arguments: [String] = []) throws -> TestNetwork.Run {
        let script = scratch.write("script-\(name)-\(UUID().uuidString.prefix(4))",
                                   (["login \(name) --password-file \(password)"] + lines).joined(separator: "\n") + "\n")
        return try TestNetwork.Run.launch(seanceBinary, ["--data-dir", data, "--interface", "lo", "--port", "\(port)",
                                                         "--announce-interval", "0.2"] + arguments + [script],
                                          environment: ["HOME": scratch.path, "PATH": "/usr/bin:/bin"],
                                          outputPath: scratch.path + "/out-\(name)-\(UUID().uuidString.prefix(4))")
    }

}

@Suite(.enabled(if: inPrivateNetwork, "runs only inside scripts/in-netns (make test)"))
struct HostilePeerIntegrationTests {
    static let escapes = "\u{1B}[2J\u{1B}]0;pwned\u{7}\u{1B}]52;c;ZXZpbA==\u{7}\u{9B}31m"

    /// Names, avatars and messages with escape sequences, from a forged peer and typed into an
    /// ordinary seance: not one ESC, BEL or C1 byte reaches the receiver's output, live or
    /// replayed from the database.
    @Test func escapesFromPeersNeverReachTheTerminal() throws {
        let shells = LoopbackShells()
        let bob = try shells.makeProfile("bob"), alice = try shells.makeProfile("alice")
        let listener = GroupListener(port: shells.port)
        // bob is driven step by step (so load on the machine cannot reorder anything); his whole
        // output is checked at the end.
        let driver = try PipeDriver(arguments: ["--data-dir", bob, "--interface", "lo", "--port", "\(shells.port)",
                                                "--announce-interval", "0.2"], scratch: shells.scratch)
        defer { driver.close() }
        try driver.send("login bob --password-file \(shells.password)\nchat")
        #expect(try driver.read(until: "nobody you can see is nearby", timeout: 20))
        // alice types escapes into an ordinary seance, in a conversation.
        let runA = try shells.start("alice", data: alice, lines: ["chat", "open bob --wait 20", "typed" + Self.escapes, "/sleep 2"])
        defer { runA.kill() }
        let (bobKey, bobAnnouncement) = try #require(listener.announcement(of: "bob", timeout: 5))
        // eve: a valid name, a message full of escapes; mallory: a name with escapes (dropped).
        let eve = FakePeer(port: shells.port), mallory = FakePeer(port: shells.port), noise = FakePeer(port: shells.port)
        mallory.multicast(try mallory.packet(mallory.announcement(name: "mallory" + Self.escapes)))
        mallory.multicast(try mallory.packet(mallory.announcement(name: "mallory", avatar: .emoji("\u{1B}[2J"))))
        eve.multicast(try eve.packet(eve.announcement(name: "eve")))
        noise.multicast(try noise.packet(noise.announcement(name: "noise")))
        #expect(try driver.read(until: "eve#", timeout: 20))
        for bytes in try eve.message("forged" + Self.escapes, to: bobAnnouncement, key: bobKey, sequence: 1) {
            eve.send(bytes, port: bobAnnouncement.unicastPort)
        }
        // Noise that does not decrypt makes no conversation.
        noise.send(try noise.packet(MessageFragment(recipient: bobKey, sealed: Data(repeating: 7, count: 64))), port: bobAnnouncement.unicastPort)
        #expect(try driver.read(until: "forged", timeout: 20))
        #expect(try driver.read(until: "typed", timeout: 30))
        try driver.send("nearby\nnearby stats\nchats\nopen eve\n/open alice\n/back\nback\necho END")
        #expect(try driver.read(until: "END", timeout: 20))
        _ = runA.wait()
        let output = driver.output
        let bytes = Array(output.utf8)
        #expect(!bytes.contains(0x1B) && !bytes.contains(0x07), "\(output.debugDescription)")
        #expect(!output.unicodeScalars.contains { (0x80...0x9F).contains($0.value) }, "\(output.debugDescription)")
        #expect(output.contains("forged^[[2J^[]0;pwned^G"), "\(output)")
        #expect(output.contains("typed^[[2J"), "\(output)")
        #expect(!output.contains("mallory"), "\(output)")
        #expect(output.contains("malformed 2") || output.contains("malformed"), "\(output)")
        #expect(try query(bob, "SELECT peerName FROM conversation ORDER BY peerName") == ["alice", "eve"])
    }

    /// After a goodbye, a captured announcement replayed (from anywhere) does not bring the peer
    /// back; a newer one does.
    @Test func aReplayedAnnouncementAfterGoodbyeIsIgnored() throws {
        let shells = LoopbackShells()
        let bob = try shells.makeProfile("bob")
        let runB = try shells.start("bob", data: bob, lines: ["chat", "echo ready", "sleep 1.5", "echo one", "nearby", "sleep 1.5", "echo two",
                                                            "nearby", "sleep 1.5", "echo three", "nearby"])
        defer { runB.kill() }
        // Each step waits for bob's listing before it (a loaded machine delays bob, not the
        // steps), and has bob's 1.5 s before the next.
        func listed(after marker: String) -> String? {
            runB.output.components(separatedBy: "\n" + marker + "\n").dropFirst().first.flatMap { $0.contains("\n") ? $0 : nil }
        }
        #expect(eventually(timeout: 30) { runB.output.contains("ready\n") }, "\(runB.output)")
        let eve = FakePeer(port: shells.port)
        let captured = try eve.packet(eve.announcement(name: "eve", intervalMilliseconds: 60_000))
        eve.multicast(captured)
        #expect(eventually(timeout: 30) { listed(after: "one") != nil }, "\(runB.output)")
        eve.multicast(try eve.packet(Goodbye()))
        usleep(200_000)
        for _ in 0..<5 { eve.multicast(captured) }
        #expect(eventually(timeout: 30) { listed(after: "two") != nil }, "\(runB.output)")
        eve.multicast(try eve.packet(eve.announcement(name: "eve", intervalMilliseconds: 60_000)))
        let output = runB.wait()
        let sections = output.components(separatedBy: "\n").split { ["one", "two", "three"].contains($0) }.map { $0.joined(separator: "\n") }
        try #require(sections.count == 4, "\(output)")
        #expect(sections[1].contains("eve#"), "\(output)")
        #expect(sections[2].contains("nobody you can see is nearby"), "\(output)")
        #expect(sections[3].contains("eve#"), "\(output)")
    }

    /// An avatar goes only to a peer that announced itself, to the port it announced, and not
    /// again within ten seconds: a forged request reflects nothing.
    @Test func avatarRequestsFromStrangersGetNothing() throws {
        let shells = LoopbackShells()
        let bob = try shells.makeProfile("bob", avatar: packageRoot + "/assets/portraits/eleven.png")
        let listener = GroupListener(port: shells.port)
        let runB = try shells.start("bob", data: bob, lines: ["chat", "sleep 5"])
        defer { runB.kill() }
        let (bobKey, bobAnnouncement) = try #require(listener.announcement(of: "bob", timeout: 5))
        guard case .image(let hash) = bobAnnouncement.avatar else { Issue.record("bob has no image avatar"); return }
        _ = bobKey
        let stranger = FakePeer(port: shells.port)
        for _ in 0..<5 { stranger.send(try stranger.packet(AvatarRequest(hash: hash)), port: bobAnnouncement.unicastPort) }
        #expect(stranger.receive(timeout: 1).isEmpty)
        stranger.multicast(try stranger.packet(stranger.announcement(name: "stranger")))
        usleep(200_000)
        for _ in 0..<5 { stranger.send(try stranger.packet(AvatarRequest(hash: hash)), port: bobAnnouncement.unicastPort) }
        let answers = stranger.receive(timeout: 1).filter { $0.kind == AvatarImage.code }
        #expect(answers.count == 1)
    }

    /// 10,000 made-up keys announcing an interval of 2^32-1 ms: the table stays bounded, a
    /// waiting outbox does not make the idle shell work harder, and a real message still comes
    /// through at once.
    @Test func aFloodOfKeysNeitherGrowsTheShellNorStopsAPeer() throws {
        let shells = LoopbackShells()
        let bob = try shells.makeProfile("bob"), alice = try shells.makeProfile("alice")
        let listener = GroupListener(port: shells.port)
        // The keys first: making them takes a while in a debug build, and bob's clock runs.
        var generator = SeededRandom(seed: 10_000)
        let keys = (0..<10_000).map { _ in Curve25519.Signing.PrivateKey() }
        // bob writes to decoy, who never acknowledges: the message waits, retransmitted.
        let decoy = FakePeer(port: shells.port)
        let runB = try shells.start("bob", data: bob, lines: ["chat", "sleep 1", "open decoy", "are you there?", "/back",
                                                            "sleep 60"])
        defer { runB.kill() }
        _ = try #require(listener.announcement(of: "bob", timeout: 5))
        for _ in 0..<5 {
            decoy.multicast(try decoy.packet(decoy.announcement(name: "decoy", intervalMilliseconds: 60_000)))
            usleep(200_000)
        }
        for (index, key) in keys.enumerated() {
            let flooder = FakePeer(port: shells.port, signing: key)
            flooder.multicast(try flooder.packet(flooder.announcement(name: "f\(UInt32.random(in: 0...UInt32.max, using: &generator))",
                                                                      intervalMilliseconds: UInt32.max)))
            if index % 200 == 0 { usleep(10_000) }
        }
        // However long bob takes to check what reached it, a line from a peer gets through (how
        // fast is `make bench`'s to say, not a test's).
        let runA = try shells.start("alice", data: alice, lines: ["chat", "open bob --wait 60", "through the crowd", "/sleep 60"])
        defer { runA.kill() }
        #expect(eventually(timeout: 60) {
            (try? query(bob, "SELECT count(*) FROM message WHERE outgoing = 0 AND text = 'through the crowd'")) == ["1"]
        }, "\(runB.output.suffix(2_000))")
        runB.kill()
        let output = runB.wait()
        #expect(Int(try query(bob, "SELECT count(*) FROM knownPeer").first ?? "") ?? .max <= 5_000)
        #expect(output.components(separatedBy: "\n").count < 1_000, "\(output.count) bytes of output")
    }
}

/// A program driving seance through pipes, over a chat session: each command's answer comes
/// before the next command is sent, and notices (an arrival, a message) come as they happen.
@Suite(.enabled(if: inPrivateNetwork, "runs only inside scripts/in-netns (make test)"))
struct PipeDrivenChatTests {
    /// ann, driven through pipes, online and alone so far; ben's profile made, to start.
    func annOnline(_ shells: LoopbackShells) throws -> (driver: PipeDriver, ben: String) {
        let ann = try shells.makeProfile("ann"), ben = try shells.makeProfile("ben")
        let driver = try PipeDriver(arguments: ["--data-dir", ann, "--interface", "lo", "--port", "\(shells.port)",
                                                "--announce-interval", "0.2"], scratch: shells.scratch)
        do {
            try driver.send("login ann --password-file \(shells.password)")
            #expect(try driver.read(until: "logged in as ann#", timeout: 10))
            try driver.send("chat")
            #expect(try driver.read(until: "nobody you can see is nearby", timeout: 10))
        } catch {
            driver.close()
            throw error
        }
        return (driver, ben)
    }

    @Test func aDriverSeesAnswersAndNoticesAsTheyHappen() throws {
        let shells = LoopbackShells()
        let (driver, ben) = try annOnline(shells)
        defer { driver.close() }
        let runB = try shells.start("ben", data: ben, lines: ["chat", "open ann --wait 30", "hello ann", "/sleep 4"])
        defer { runB.kill() }
        #expect(try driver.read(until: "ben#", timeout: 10))       // The arrival, unasked.
        #expect(try driver.read(until: "hello ann", timeout: 10))  // The message notice.
        try driver.send("open ben")
        #expect(try driver.read(until: "every line you type is sent", timeout: 10))
        try driver.send("hi ben")
        #expect(try driver.read(until: "#2 sending", timeout: 10))
        try driver.send("/nearby")
        #expect(try driver.read(until: "seen ", timeout: 10))
        // ben has the conversation open: he is shown it at once, and his receipt says when.
        #expect(try driver.read(until: "#2 read", timeout: 10))
        try driver.send("/tap 2")
        #expect(try driver.read(until: "#2: sent Today ", timeout: 10))
        #expect(try driver.read(until: ", read Today ", timeout: 10))
        try driver.send("/tap 1")
        #expect(try driver.read(until: "#1: sent Today ", timeout: 10))  // ben's, shown here when ann opened him.
        #expect(try driver.read(until: ", read Today ", timeout: 10))
    }

    /// Going offline (or leaving) with messages nobody has confirmed says how many wait, and
    /// for whom; they go when both are online again.
    @Test func goingOfflineSaysWhatWaitsInTheOutbox() throws {
        let shells = LoopbackShells()
        let (driver, ben) = try annOnline(shells)
        defer { driver.close() }
        let runB = try shells.start("ben", data: ben, lines: ["chat", "sleep 1"])
        defer { runB.kill() }
        #expect(try driver.read(until: "ben#", timeout: 10))
        try driver.send("open ben")
        #expect(try driver.read(until: "every line you type is sent", timeout: 10))
        #expect(try driver.read(until: "ben#", timeout: 10) && driver.read(until: " left", timeout: 10))
        try driver.send("are you there?\nstill there?\n/chats")
        #expect(try driver.read(until: "2 waiting", timeout: 10))
        try driver.send("/offline")
        #expect(try driver.read(until: "2 messages to ben#", timeout: 10))
        #expect(try driver.read(until: " wait in the outbox: they go when you are both online", timeout: 10))
        #expect(try driver.read(until: "offline", timeout: 10))
    }
}

/// Online in every mode: `chat` brings you online, and you stay reachable while you play
/// zombies, until `offline`.
@Suite(.enabled(if: inPrivateNetwork, "runs only inside scripts/in-netns (make test)"))
struct OnlineEverywhereTests {
    @Test func aMessageReachesSomeonePlayingZombiesUntilOffline() throws {
        let shells = LoopbackShells()
        let ann = try shells.makeProfile("ann"), ben = try shells.makeProfile("ben")
        let flags = ["--interface", "lo", "--port", "\(shells.port)", "--announce-interval", "0.2"]
        let annShell = try PipeDriver(arguments: ["--data-dir", ann] + flags, scratch: shells.scratch)
        defer { annShell.close() }
        try annShell.send("login ann --password-file \(shells.password)\nchat\nzombies")
        #expect(try annShell.read(until: "W: 0  L: 0", timeout: 20))
        let runB = try shells.start("ben", data: ben, lines: ["chat", "open ann --wait 30", "hello while you play", "/sleep 30"])
        defer { runB.kill() }
        // The message comes as a notice while ann is in zombies mode.
        #expect(try annShell.read(until: "hello while you play", timeout: 30),
                "ben said: \(runB.output)")
        #expect(annShell.output.contains("✉ ben#"), "\(annShell.output)")
        try annShell.send("offline\necho END")
        #expect(try annShell.read(until: "END", timeout: 20))
        #expect(annShell.output.contains("offline\n"))
        // ann's goodbye reaches ben: he is told she left.
        let left = Date().addingTimeInterval(20)
        while Date() < left, !(runB.output).contains("- ann#") { usleep(100_000) }
        #expect((runB.output).contains("- ann#"))
    }
}

/// A profile is online in one shell at a time: two engines on it would give out the same
/// message numbers and sequences. A second shell is told who holds it and stays offline; once
/// the first leaves (however it ends), the second can go online.
@Suite(.enabled(if: inPrivateNetwork, "runs only inside scripts/in-netns (make test)"))
struct OneShellPerProfileTests {
    @Test func aProfileGoesOnlineInOneShellAtATime() throws {
        let shells = LoopbackShells()
        let ann = try shells.makeProfile("ann")
        let flags = ["--data-dir", ann, "--interface", "lo", "--port", "\(shells.port)", "--announce-interval", "0.2"]
        let first = try PipeDriver(arguments: flags, scratch: shells.scratch)
        try first.send("login ann --password-file \(shells.password)\nchat")
        #expect(try first.read(until: "nobody you can see is nearby", timeout: 20))

        let refused = try runSeance(flags, stdin: "login ann --password-file \(shells.password)\nchat\n", scratch: shells.scratch)
        #expect(refused.status != 0)
        #expect(refused.stderr.contains("ann#") && refused.stderr.contains("is online in another seance (process \(first.process.processIdentifier)): leave chat there first"),
                "\(refused.stderr)")
        #expect(!refused.stdout.contains("announcing"))

        // Killed, it holds nothing: the lock ends with the process.
        kill(first.process.processIdentifier, SIGKILL)
        first.close()
        let after = try runSeance(flags, stdin: "login ann --password-file \(shells.password)\nchat\noffline\n", scratch: shells.scratch)
        #expect(after.status == 0, "\(after.stderr)")
        #expect(after.stdout.contains("announcing ann#"))
    }
}
