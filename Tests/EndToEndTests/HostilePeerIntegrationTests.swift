import Crypto
import Foundation
import Glibc
import Nearby
import Noise
import TestSupport
import Testing

/// Real seance processes on loopback in a network namespace of the test's own (seance's default
/// group and port are the test's alone), facing `FakePeer`s that forge, flood and replay there.
final class LoopbackShells {
    let scratch = Scratch()
    let network: PrivateNetwork
    let port = seancePort
    /// How every shell here goes online: on `lo`, announcing often.
    let flags = ["--interface", "lo", "--announce-interval", "0.2"]
    lazy var password = scratch.write("password", "correct horse\n")

    init() throws { network = try PrivateNetwork() }

    func makeProfile(_ name: String, avatar: String? = nil) throws -> String {
        let data = scratch.path + "/" + name
        let result = try runSeance(["--data-dir", data, "-c", "profile new \(name) --password-file \(password)"
                                        + (avatar.map { " --avatar \($0)" } ?? "")], scratch: scratch)
        guard result.status == 0 else { throw TestNetwork.SetupError(output: result.stderr) }
        return data
    }

    /// Starts seance logged in as `name` (data in `data`) with `lines` typed first.
    func start(_ name: String, data: String, lines: [String], arguments: [String] = []) throws -> TestNetwork.Run {
        try TestNetwork.Run.launch(network.launcher[0], Array(network.launcher.dropFirst()) + [seanceBinary, "--data-dir", data] + flags + arguments,
                                   environment: ["HOME": scratch.path, "PATH": "/usr/bin:/bin"],
                                   outputPath: scratch.path + "/out-\(name)-\(UUID().uuidString.prefix(4))",
                                   lines: ["login \(name) --password-file \(password)"] + lines)
    }

    /// seance on this network, driven step by step through pipes (`flags` come first).
    func driver(_ arguments: [String]) throws -> PipeDriver {
        try PipeDriver(arguments: flags + arguments, scratch: scratch, prefix: network.launcher)
    }

    /// seance run to its end on this network, with `stdin` (`flags` come first).
    func run(_ arguments: [String], stdin: String) throws -> RunResult {
        try runSeance(flags + arguments, stdin: stdin, scratch: scratch, launcher: network.launcher + [seanceBinary])
    }

    /// A forger on this network.
    func peer(signing: Curve25519.Signing.PrivateKey = .init()) throws -> FakePeer {
        try network.inside { FakePeer(port: port, signing: signing) }
    }

    /// A listener to the group on this network.
    func listener() throws -> GroupListener { try network.inside { GroupListener(port: port) } }
}

@Suite(.enabled(if: inPrivateNetwork, "runs only inside scripts/in-netns (make test)"))
struct HostilePeerIntegrationTests {
    static let escapes = "\u{1B}[2J\u{1B}]0;pwned\u{7}\u{1B}]52;c;ZXZpbA==\u{7}\u{9B}31m"

    /// Names, avatars and messages with escape sequences, from a forged peer and typed into an
    /// ordinary seance: not one ESC, BEL or C1 byte reaches the receiver's output, live or
    /// replayed from the database.
    @Test func escapesFromPeersNeverReachTheTerminal() throws {
        let shells = try LoopbackShells()
        let bob = try shells.makeProfile("bob"), alice = try shells.makeProfile("alice")
        let listener = try shells.listener()
        // bob is driven step by step (so load on the machine cannot reorder anything); his whole
        // output is checked at the end.
        let driver = try shells.driver(["--data-dir", bob])
        defer { driver.close() }
        try driver.send("login bob --password-file \(shells.password)\nchat")
        #expect(try driver.read(until: "nobody you can see is nearby", timeout: 20))
        // alice types escapes into an ordinary seance, in a conversation.
        let runA = try shells.start("alice", data: alice, lines: ["chat", "open bob --wait 20", "typed" + Self.escapes])
        defer { runA.kill() }
        let (bobKey, bobAnnouncement) = try #require(listener.announcement(of: "bob", timeout: 5))
        // eve: a valid name, a message full of escapes; mallory: a name with escapes (dropped).
        let eve = try shells.peer(), mallory = try shells.peer(), noise = try shells.peer()
        mallory.multicast(try mallory.packet(mallory.announcement(name: "mallory" + Self.escapes)))
        mallory.multicast(try mallory.packet(mallory.announcement(name: "mallory", avatar: .emoji("\u{1B}[2J"))))
        eve.multicast(try eve.packet(eve.announcement(name: "eve")))
        noise.multicast(try noise.packet(noise.announcement(name: "noise")))
        #expect(try driver.read(until: "eve#", timeout: 20))
        for bytes in try eve.message("forged" + Self.escapes, to: bobAnnouncement, key: bobKey, sequence: 1) {
            eve.send(bytes, port: bobAnnouncement.unicastPort)
        }
        // Noise that does not decrypt makes no conversation.
        noise.send(try noise.sealed(MessageFragment(recipient: bobKey, sealed: Data(repeating: 7, count: 64)), to: bobAnnouncement, key: bobKey),
                   port: bobAnnouncement.unicastPort)
        #expect(try driver.read(until: "forged", timeout: 20))
        #expect(try driver.read(until: "typed", timeout: 30))
        try driver.send("nearby\nnearby stats\nchats\nopen eve\n/open alice\n/back\nback\necho END")
        #expect(try driver.read(until: "END", timeout: 20))
        runA.finish()
        let output = driver.output
        let bytes = Array(output.utf8)
        #expect(!bytes.contains(0x1B) && !bytes.contains(0x07), "\(output.debugDescription)")
        #expect(!output.unicodeScalars.contains { (0x80...0x9F).contains($0.value) }, "\(output.debugDescription)")
        #expect(output.contains("forged^[[2J^[]0;pwned^G"), "\(output)")
        #expect(output.contains("typed^[[2J"), "\(output)")
        #expect(!output.contains("mallory"), "\(output)")
        // mallory's two announcements, at least, were refused as malformed.
        #expect(output.range(of: #"\bmalformed ([2-9]|\d\d+)\b"#, options: .regularExpression) != nil, "\(output)")
        #expect(try query(bob, "SELECT peerName FROM conversation ORDER BY peerName") == ["alice", "eve"])
    }

    /// After a goodbye, a captured announcement replayed (from anywhere) does not bring the peer
    /// back; a newer one does.
    @Test func aReplayedAnnouncementAfterGoodbyeIsIgnored() throws {
        let shells = try LoopbackShells()
        let bob = try shells.makeProfile("bob")
        let runB = try shells.start("bob", data: bob, lines: ["chat", "echo ready"])
        defer { runB.kill() }
        // Each step waits for what bob shows of the one before.
        func listed(after marker: String) -> String? {
            runB.output.components(separatedBy: "\n" + marker + "\n").dropFirst().first.flatMap { $0.contains("\n") ? $0 : nil }
        }
        func arrivals(of name: String) -> Int { runB.output.components(separatedBy: "\n").filter { $0.hasPrefix("+ ") && $0.contains(name + "#") }.count }
        runB.waitFor("ready\n")
        let eve = try shells.peer(), marker = try shells.peer()
        let captured = try eve.packet(eve.announcement(name: "eve", intervalMilliseconds: 60_000))
        eve.multicast(captured)
        runB.waitFor { _ in arrivals(of: "eve") == 1 }
        runB.send("echo one", "nearby")
        runB.waitFor { _ in listed(after: "one") != nil }
        eve.multicast(try eve.packet(Goodbye()))
        runB.waitFor { $0.contains("- eve#") }
        for _ in 0..<5 { eve.multicast(captured) }
        // Bob reads the group in order: once another peer's arrival shows, the replays were read.
        marker.multicast(try marker.packet(marker.announcement(name: "marker", intervalMilliseconds: 60_000)))
        runB.waitFor { _ in arrivals(of: "marker") == 1 }
        runB.send("echo two", "nearby")
        runB.waitFor { _ in listed(after: "two") != nil }
        eve.multicast(try eve.packet(eve.announcement(name: "eve", intervalMilliseconds: 60_000)))
        runB.waitFor { _ in arrivals(of: "eve") == 2 }
        runB.send("echo three", "nearby")
        let output = runB.finish()
        let sections = output.components(separatedBy: "\n").split { ["one", "two", "three"].contains($0) }.map { $0.joined(separator: "\n") }
        try #require(sections.count == 4, "\(output)")
        #expect(sections[1].contains("eve#"), "\(output)")
        // The listing after the replays names the marker, not eve (her return is told after it).
        let listing = sections[2].split(separator: "\n").filter { $0.contains(" seen ") }
        #expect(!listing.contains { $0.contains("eve#") } && listing.contains { $0.contains("marker#") }, "\(output)")
        #expect(sections[3].contains("eve#"), "\(output)")
    }

    /// An avatar goes only to a peer that announced itself, to the port it announced, and not
    /// again within ten seconds: a forged request reflects nothing.
    @Test func avatarRequestsFromStrangersGetNothing() throws {
        let shells = try LoopbackShells()
        let bob = try shells.makeProfile("bob", avatar: packageRoot + "/assets/portraits/eleven.png")
        let listener = try shells.listener()
        let runB = try shells.start("bob", data: bob, lines: ["chat"])
        defer { runB.kill() }
        let (bobKey, bobAnnouncement) = try #require(listener.announcement(of: "bob", timeout: 5))
        guard case .image(let hash) = bobAnnouncement.avatar else { Issue.record("bob has no image avatar"); return }
        let stranger = try shells.peer()
        // Unannounced: a request signed as an older seance sends it is dropped unread, and a
        // handshake is not answered.
        for _ in 0..<5 { stranger.send(try stranger.packet(AvatarRequest(hash: hash)), port: bobAnnouncement.unicastPort) }
        var handshake = HandshakeState(initiator: true, prologue: Array("seance session v3".utf8) + stranger.signingKey + bobKey,
                                       s: stranger.agreement)
        stranger.send(HandshakeFrame(sender: stranger.signingKey, recipient: bobKey, senderIndex: 1, recipientIndex: 0, step: 1,
                                     message: try handshake.writeMessage().message).encoded(), port: bobAnnouncement.unicastPort)
        func statistics() -> [Substring] { runB.output.split(separator: "\n").filter { $0.hasPrefix("sent ") } }
        func count(_ reasons: [String]) {
            for asked in (statistics().count + 1)...(statistics().count + 50) where !reasons.allSatisfy({ statistics().last?.contains($0) ?? false }) {
                runB.send("nearby stats")
                runB.waitFor { _ in statistics().count == asked }
            }
            for reason in reasons { #expect(statistics().last?.contains(reason) == true, "\(runB.output)") }
        }
        count(["older seance 5", "handshake unannounced 1"])
        stranger.multicast(try stranger.packet(stranger.announcement(name: "stranger")))
        runB.waitFor("stranger#")
        for _ in 0..<5 { stranger.send(try stranger.sealed(AvatarRequest(hash: hash), to: bobAnnouncement, key: bobKey), port: bobAnnouncement.unicastPort) }
        let answers = stranger.receive(timeout: 20) { $0.contains { $0.kind == AvatarImage.code } }.filter { $0.kind == AvatarImage.code }
        #expect(answers.count == 1)
        // The other four were refused within ten seconds of the answer, and counted (asked
        // again until bob has read them all).
        count(["avatar request 4"])
    }

    /// 10,000 made-up keys announcing an interval of 2^32-1 ms: the table stays bounded, a
    /// waiting outbox does not make the idle shell work harder, and a real message still comes
    /// through at once.
    @Test func aFloodOfKeysNeitherGrowsTheShellNorStopsAPeer() throws {
        let shells = try LoopbackShells()
        let bob = try shells.makeProfile("bob"), alice = try shells.makeProfile("alice")
        let listener = try shells.listener()
        // The keys first: making them takes a while in a debug build, and bob's clock runs.
        var generator = SeededRandom(seed: 10_000)
        let keys = (0..<10_000).map { _ in Curve25519.Signing.PrivateKey() }
        // bob writes to decoy, who never acknowledges: the message waits, retransmitted.
        let decoy = try shells.peer()
        let runB = try shells.start("bob", data: bob, lines: ["chat"])
        defer { runB.kill() }
        _ = try #require(listener.announcement(of: "bob", timeout: 5))
        decoy.multicast(try decoy.packet(decoy.announcement(name: "decoy", intervalMilliseconds: 60_000)))
        runB.waitFor("decoy#")
        runB.send("open decoy", "are you there?", "/back")
        runB.waitFor("#1 sending")
        for key in keys {
            let flooder = try shells.peer(signing: key)
            flooder.multicast(try flooder.packet(flooder.announcement(name: "f\(UInt32.random(in: 0...UInt32.max, using: &generator))",
                                                                      intervalMilliseconds: UInt32.max)))
        }
        // However long bob takes to check what reached it, a line from a peer gets through (how
        // fast is `make bench`'s to say, not a test's).
        let runA = try shells.start("alice", data: alice, lines: ["chat", "open bob --wait 60", "through the crowd"])
        defer { runA.kill() }
        #expect(eventually(timeout: 60) {
            (try? query(bob, "SELECT count(*) FROM message WHERE outgoing = 0 AND text = 'through the crowd'")) == ["1"]
        }, "\(runB.output.suffix(2_000))")
        runA.finish()
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
        let driver = try shells.driver(["--data-dir", ann])
        do {
            try driver.send("login ann --password-file \(shells.password)")
            #expect(try driver.readError(until: "logged in as ann#", timeout: 10), "a status line: on standard error in a script")
            try driver.send("chat")
            #expect(try driver.read(until: "nobody you can see is nearby", timeout: 10))
        } catch {
            driver.close()
            throw error
        }
        return (driver, ben)
    }

    @Test func aDriverSeesAnswersAndNoticesAsTheyHappen() throws {
        let shells = try LoopbackShells()
        let (driver, ben) = try annOnline(shells)
        defer { driver.close() }
        let runB = try shells.start("ben", data: ben, lines: ["chat", "open ann --wait 30", "hello ann"])
        defer { runB.kill() }
        #expect(try driver.read(until: "ben#", timeout: 10))       // The arrival, unasked.
        #expect(try driver.read(until: "hello ann", timeout: 10))  // The message notice.
        try driver.send("open ben")
        #expect(try driver.read(until: "hello ann", timeout: 10))  // The page, with it.
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
        let shells = try LoopbackShells()
        let (driver, ben) = try annOnline(shells)
        defer { driver.close() }
        let runB = try shells.start("ben", data: ben, lines: ["chat"])
        defer { runB.kill() }
        #expect(try driver.read(until: "ben#", timeout: 10))
        try driver.send("open ben")
        #expect(try driver.read(until: "no messages yet", timeout: 10))
        runB.finish()
        #expect(try driver.read(until: "ben#", timeout: 10) && driver.read(until: " left", timeout: 10))
        try driver.send("are you there?\nstill there?\n/chats")
        #expect(try driver.read(until: "2 waiting", timeout: 10))
        try driver.send("/offline")
        #expect(try driver.read(until: "2 messages to ben#", timeout: 10))
        #expect(try driver.read(until: " wait in the outbox: they go when you are both online", timeout: 10))
        #expect(try driver.readError(until: "offline", timeout: 10))
    }
}

/// Online in every mode: `chat` brings you online, and you stay reachable while you play
/// zombies, until `offline`.
@Suite(.enabled(if: inPrivateNetwork, "runs only inside scripts/in-netns (make test)"))
struct OnlineEverywhereTests {
    @Test func aMessageReachesSomeonePlayingZombiesUntilOffline() throws {
        let shells = try LoopbackShells()
        let ann = try shells.makeProfile("ann"), ben = try shells.makeProfile("ben")
        let annShell = try shells.driver(["--data-dir", ann])
        defer { annShell.close() }
        try annShell.send("login ann --password-file \(shells.password)\nchat\nzombies")
        #expect(try annShell.read(until: "W: 0  L: 0", timeout: 20))
        let runB = try shells.start("ben", data: ben, lines: ["chat", "open ann --wait 30", "hello while you play"])
        defer { runB.kill() }
        // The message comes as a notice while ann is in zombies mode.
        #expect(try annShell.read(until: "hello while you play", timeout: 30),
                "ben said: \(runB.output)")
        #expect(annShell.output.contains("✉ ben#"), "\(annShell.output)")
        try annShell.send("offline\necho END")
        #expect(try annShell.read(until: "END", timeout: 20))
        #expect(try annShell.readError(until: "offline\n", timeout: 5))
        // ann's goodbye reaches ben: he is told she left.
        runB.waitFor("- ann#", timeout: 20)
    }
}

/// A profile is online in one shell at a time: two engines on it would give out the same
/// message numbers and sequences. A second shell is told who holds it and stays offline; once
/// the first leaves (however it ends), the second can go online.
@Suite(.enabled(if: inPrivateNetwork, "runs only inside scripts/in-netns (make test)"))
struct OneShellPerProfileTests {
    @Test func aProfileGoesOnlineInOneShellAtATime() throws {
        let shells = try LoopbackShells()
        let ann = try shells.makeProfile("ann")
        let first = try shells.driver(["--data-dir", ann])
        try first.send("login ann --password-file \(shells.password)\nchat")
        #expect(try first.read(until: "nobody you can see is nearby", timeout: 20))

        let refused = try shells.run(["--data-dir", ann], stdin: "login ann --password-file \(shells.password)\nchat\n")
        #expect(refused.status != 0)
        #expect(refused.stderr.contains("ann#") && refused.stderr.contains("is online in another seance (process \(first.child.pid)): leave chat there first"),
                "\(refused.stderr)")
        #expect(!refused.stdout.contains("announcing") && !refused.stderr.contains("announcing"))

        // Killed, it holds nothing: the lock ends with the process.
        kill(first.child.pid, SIGKILL)
        first.close()
        let after = try shells.run(["--data-dir", ann], stdin: "login ann --password-file \(shells.password)\nchat\noffline\n")
        #expect(after.status == 0, "\(after.stderr)")
        #expect(after.stderr.contains("announcing ann#") && !after.stdout.contains("announcing"), "status lines go to standard error")
    }
}
