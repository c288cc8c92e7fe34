import Foundation
import Testing

/// Real seance processes on hosts of their own, talking over a bridge.
@Suite(.enabled(if: inPrivateNetwork, "runs only inside scripts/in-netns (make test)"))
struct NearbyIntegrationTests {
    @Test func threeHostsFollowThePlaneTableChangesAndGoodbyes() throws {
        let net = try TestNetwork(hosts: 3)
        let a = try net.makeProfile("ann", host: 1), b = try net.makeProfile("ben", host: 2), c = try net.makeProfile("cal", host: 3)
        // ann stays Dying; ben starts Dying, turns Hollow at 1 s and leaves at 3 s; cal starts Human,
        // turns Undead at 2 s.
        let runA = try net.start(host: 1, data: a, name: "ann", arguments: ["--battery", "40"],
                                 lines: ["chat", "sleep 2.5", "nearby", "sleep 3", "nearby"])
        let runB = try net.start(host: 2, data: b, name: "ben", arguments: ["--battery", "30"],
                                 lines: ["chat", "sleep 1", "battery 20", "sleep 2"])
        let runC = try net.start(host: 3, data: c, name: "cal", arguments: ["--battery", "80"],
                                 lines: ["chat", "sleep 2", "battery 8", "sleep 2.5", "nearby"])
        let (outA, outB, outC) = (runA.wait(), runB.wait(), runC.wait())

        // ann (Dying) sees ben while he is Dying, loses sight when he turns Hollow, never sees cal.
        #expect(outA.contains("ben#") && outA.contains("(Dying) is nearby"), "\(outA)")
        #expect(outA.contains("passed beyond your sight"), "\(outA)")
        #expect(!outA.contains("cal#"), "\(outA)")
        #expect(outA.hasSuffix("nobody you can see is nearby\nnobody you can see is nearby\n"), "\(outA)")
        // ben sees ann the whole time (Dying, then Hollow: both reach Dying), never cal.
        #expect(outB.contains("ann#") && !outB.contains("cal#"), "\(outB)")
        // cal, Human, sees nobody; Undead, he sees both, then ben's goodbye.
        let calLines = outC.split(separator: "\n").map(String.init)
        let turned = try #require(calLines.firstIndex { $0.contains("plane: Undead") })
        #expect(!calLines[..<turned].contains { $0.hasPrefix("+ ") }, "\(outC)")
        #expect(calLines[turned...].contains { $0.contains("ann#") && $0.contains("(Dying) is nearby") }, "\(outC)")
        #expect(calLines[turned...].contains { $0.contains("ben#") && $0.contains("(Hollow) is nearby") }, "\(outC)")
        #expect(calLines.contains { $0.hasPrefix("- ben#") && $0.hasSuffix(" left") }, "\(outC)")
        let last = try #require(calLines.last)
        #expect(last.contains("ann#") && last.contains("Dying"), "\(outC)")
    }

    @Test func aPeerThatVanishesExpires() throws {
        let net = try TestNetwork(hosts: 2)
        let a = try net.makeProfile("ann", host: 1), b = try net.makeProfile("ben", host: 2)
        let runB = try net.start(host: 2, data: b, name: "ben", lines: ["chat", "sleep 30"])
        let runA = try net.start(host: 1, data: a, name: "ann", lines: ["chat", "sleep 2", "nearby", "sleep 2", "nearby"])
        usleep(2_500_000)
        runB.kill()  // No goodbye: ann must notice the silence.
        _ = runB.wait()
        let out = runA.wait()
        let lines = out.split(separator: "\n").map(String.init)
        let gone = try #require(lines.lastIndex { $0.hasPrefix("- ben#") && $0.hasSuffix(" is out of range") }, "\(out)")
        // The last listing names nobody: a spectre (a local spirit, not a peer) may come by,
        // about once in ten minutes, and is all it may show.
        #expect(!lines[(gone + 1)...].contains { $0.contains("ben#") }, "\(out)")
        #expect(lines.last == "nobody you can see is nearby" || lines.last?.contains(" spectre ") == true, "\(out)")
        #expect(lines.contains { $0.contains("ben#") && $0.contains("seen 0s ago") }, "\(out)")
    }

    @Test func discoveryConvergesWithTenPercentLoss() throws {
        let net = try TestNetwork(hosts: 3)
        try net.dropFrames(percent: 10)
        let names = ["ann", "ben", "cal"]
        let data = try names.enumerated().map { try net.makeProfile($0.element, host: $0.offset + 1) }
        let runs = try names.enumerated().map { index, name in
            // Everyone stays a while after listing, so each listing happens while all are present.
            try net.start(host: index + 1, data: data[index], name: name,
                          lines: ["chat", "sleep 3", "nearby", "nearby stats", "sleep 2"])
        }
        for (index, run) in runs.enumerated() {
            let out = run.wait()
            let lines = out.split(separator: "\n").map(String.init)
            let stats = try #require(lines.lastIndex { $0.hasPrefix("sent ") }, "\(out)")
            let listed = lines[(stats - 2)..<stats]  // The two nearby rows just before the stats line.
            for other in names where other != names[index] {
                #expect(listed.contains { $0.contains(other + "#") }, "\(names[index]) misses \(other):\n\(out)")
            }
        }
        #expect(try net.droppedFrames() > 0)  // The loss was real.
    }

    /// ann's data copied to a second machine (the lock file sees one machine only): both
    /// seances are told, once, that the profile is online elsewhere too.
    @Test func theSameProfileOnTwoMachinesIsToldOnEachSide() throws {
        let net = try TestNetwork(hosts: 2)
        let first = try net.makeProfile("ann", host: 1)
        let copy = first + "-copy"
        try FileManager.default.copyItem(atPath: first, toPath: copy)
        let runs = [try net.start(host: 1, data: first, name: "ann", lines: ["chat", "sleep 2"]),
                    try net.start(host: 2, data: copy, name: "ann", lines: ["chat", "sleep 2"])]
        for run in runs {
            let out = run.wait()
            let told = out.split(separator: "\n").filter { $0.contains("this profile is online in another seance too (heard by lan)") }
            #expect(told.count == 1, "\(out)")
        }
    }

    @Test func aKnownNameWithANewKeyIsFlagged() throws {
        let net = try TestNetwork(hosts: 3)
        let first = try net.makeProfile("ann", host: 1)
        let second = try net.makeProfile("ann", host: 2, tag: "-impostor")
        let watcher = try net.makeProfile("cal", host: 3)
        let runW = try net.start(host: 3, data: watcher, name: "cal", lines: ["chat", "sleep 3"])
        let run1 = try net.start(host: 1, data: first, name: "ann", lines: ["chat", "sleep 1"])
        _ = run1.wait()
        let run2 = try net.start(host: 2, data: second, name: "ann", lines: ["chat", "sleep 1"])
        _ = run2.wait()
        let out = runW.wait()
        #expect(out.contains("uses the name of ann#") && out.contains("possibly an impersonation"), "\(out)")
    }

    @Test func imageAvatarsAreFetchedFromThePeer() throws {
        let net = try TestNetwork(hosts: 2)
        let password = net.scratch.write("password", "correct horse\n")
        let pictured = net.scratch.path + "/host1"
        let created = try runSeance(["--data-dir", pictured, "-c", "profile new ann --password-file \(password) "
                                     + "--avatar \(packageRoot)/assets/portraits/max.png"], scratch: net.scratch)
        #expect(created.status == 0, "\(created.stderr)")
        let viewer = try net.makeProfile("ben", host: 2)
        let runA = try net.start(host: 1, data: pictured, name: "ann", lines: ["chat", "sleep 4"])
        let runB = try net.start(host: 2, data: viewer, name: "ben", arguments: ["--color", "always"],
                                 lines: ["chat", "sleep 2.5", "nearby"])
        let out = runB.wait()
        _ = runA.wait()
        let row = try #require(out.split(separator: "\n").last { $0.contains("ann#") && $0.contains("seen") }, "\(out)")
        // The picture arrived: the row starts with coloured half blocks, not the placeholder glyph.
        #expect(row.hasPrefix("\u{1B}[0;38;") && row.contains("▀"), "\(row)")
    }
}

/// mDNS-style discovery: a newcomer asks who is there and hears everyone at once, not at their
/// next refresh (every 5 s here).
@Suite(.enabled(if: inPrivateNetwork, "runs only inside scripts/in-netns (make test)"))
struct NewcomerDiscoveryTests {
    @Test func aNewcomerListsEveryPeerWithinAQuarterSecondTwentyTimesInARow() throws {
        let net = try TestNetwork(hosts: 10)
        var runs: [TestNetwork.Run] = []
        for host in 1...9 {
            let data = try net.makeProfile("p\(host)", host: host)
            runs.append(try net.start(host: host, data: data, name: "p\(host)", arguments: ["--announce-interval", "5"],
                                      lines: ["chat", "sleep 120"]))
        }
        defer { runs.forEach { $0.kill() } }
        let newcomer = try net.makeProfile("new", host: 10)
        usleep(1_500_000)  // The nine are up (their first two announcements are over).
        for attempt in 1...20 {
            // `chat`, then a quarter of a second, then the list: all nine must be in it.
            let run = try net.start(host: 10, data: newcomer, name: "new", arguments: ["--announce-interval", "5"],
                                    lines: ["chat", "sleep 0.25", "echo LIST", "nearby"])
            let output = run.wait()
            let listed = output.components(separatedBy: "LIST\n").last ?? ""
            let seen = (1...9).filter { listed.contains("p\($0)#") }
            #expect(seen.count == 9, "attempt \(attempt): saw \(seen)\n\(output)")
            if seen.count != 9 { break }
        }
    }
}
