import Foundation
import Glibc
import TestSupport
import Testing

/// Pictures and files between real processes on namespace hosts (issue 36).
@Suite(.enabled(if: inPrivateNetwork, "runs only inside scripts/in-netns (make test)"))
struct TransferIntegrationTests {
    /// A real picture from the repository, and 5 MiB of noise.
    func files(in net: TestNetwork) throws -> (picture: String, big: String) {
        let picture = packageRoot + "/docs/screenshots/vision.png"
        let big = net.scratch.path + "/big.bin"
        var random = SystemRandomNumberGenerator()
        try Data((0..<(5 << 20)).map { _ in UInt8.random(in: 0...255, using: &random) }).write(to: URL(fileURLWithPath: big))
        return (picture, big)
    }

    func state(_ data: String, _ name: String) -> String {
        (try? query(data, "SELECT state FROM transfer WHERE name = '\(name)'").first) ?? nil ?? ""
    }

    /// The transfer's number at that end (the commands take it).
    func number(_ data: String, _ name: String) -> Int? {
        Int((try? query(data, "SELECT id FROM transfer WHERE name = '\(name)'").first) ?? nil ?? "")
    }

    func stored(_ data: String, _ name: String) -> Int {
        Int((try? query(data, "SELECT stored FROM transfer WHERE name = '\(name)'").first) ?? nil ?? "0") ?? 0
    }

    /// A picture and a 5 MiB file through 10 % loss, the receiver killed half-way through the
    /// file and started again: both arrive byte for byte (ben saves them, and they compare
    /// equal), the picture taken at once (ben wrote to ann first), the file once ben accepted it.
    @Test func aPictureAndAFileCrossLossAndARestartByteForByte() throws {
        let net = try TestNetwork(hosts: 2)
        try net.dropFrames(percent: 10)
        let (picture, big) = try files(in: net)
        let a = try net.makeProfile("ann", host: 1), b = try net.makeProfile("ben", host: 2)
        let runA = try net.start(host: 1, data: a, name: "ann", lines: ["chat"])
        var runB = try net.start(host: 2, data: b, name: "ben", lines: ["chat", "open ann --wait 30", "the map, please"])
        defer { runA.kill(); runB.kill() }
        #expect(runB.waitFor("#1 delivered"))
        runB.send("/back")
        runA.send("open ben")
        runA.send("/send \(picture)", "/send \(big)")
        #expect(runA.waitFor("sending file 2 (big.bin, 5.0 MiB)"))
        // Numbered at ben's end as the offers come: the loss may bring the file's first.
        #expect(runB.waitFor(timeout: 60, { $0.range(of: #"sent picture \d+ \(vision\.png"#, options: .regularExpression) != nil }))
        #expect(runB.waitFor { $0.range(of: #"offers big\.bin \(a file, 5\.0 MiB\): /accept (\d+) or /decline \1"#, options: .regularExpression) != nil })
        let pictureNumber = try #require(number(b, "vision.png")), bigNumber = try #require(number(b, "big.bin"))
        runB.send("accept \(bigNumber)")
        #expect(try eventually(timeout: 60) { stored(b, "big.bin") > 1_600 })
        runB.kill()  // Half-way, no goodbye.
        _ = runB.wait()
        #expect(state(b, "big.bin") == "moving" && stored(b, "big.bin") < 4_766)
        runB = try net.start(host: 2, data: b, name: "ben", lines: ["chat"])
        #expect(try eventually(timeout: 90) { state(b, "big.bin") == "complete" && state(a, "big.bin") == "complete" },
                "ben: \(state(b, "big.bin")) \(stored(b, "big.bin")); ann: \(state(a, "big.bin"))")
        runB.send("save \(pictureNumber) \(net.scratch.path)/got.png", "save \(bigNumber) \(net.scratch.path)/got.bin", "transfers")
        #expect(runB.waitFor("saved file \(bigNumber) as"))
        #expect(FileManager.default.contentsEqual(atPath: picture, andPath: net.scratch.path + "/got.png"))
        #expect(FileManager.default.contentsEqual(atPath: big, andPath: net.scratch.path + "/got.bin"))
        #expect(try net.droppedFrames() > 100)
        // Saved again with no path: the downloads folder, never over the first.
        runB.send("save \(pictureNumber)", "save \(pictureNumber)")
        #expect(runB.waitFor("Downloads/vision (2).png"))
        #expect(FileManager.default.contentsEqual(atPath: picture, andPath: net.scratch.path + "/Downloads/vision.png"))
    }

    /// Issue 49's picture bomb (7,000 × 7,000 at 16 bits: 2.4 MB of zeros, 392 MB decoded) and
    /// a picture at the budget (4,096 × 2,048 at 16 bits, 64 MiB decoded): ben, who wrote to
    /// ann, takes the second at once and accepts the first; the bomb is shown as a file, never
    /// decoded; the other is drawn from a thumbnail decoded once in a child process, and opened
    /// as large as the window holds; ben's shell stays under 100 MiB at its peak throughout.
    @Test func pictureBombsCostTheReceiverNoMemory() throws {
        let net = try TestNetwork(hosts: 2)
        let bomb = net.scratch.path + "/bomb.png", limit = net.scratch.path + "/limit.png"
        try Data(TestPictures.zeros(width: 7_000, height: 7_000, sixteenBit: true)).write(to: URL(fileURLWithPath: bomb))
        try Data(TestPictures.zeros(width: 4_096, height: 2_048, sixteenBit: true)).write(to: URL(fileURLWithPath: limit))
        let a = try net.makeProfile("ann", host: 1), b = try net.makeProfile("ben", host: 2)
        let runA = try net.start(host: 1, data: a, name: "ann", lines: ["chat"])
        let runB = try net.start(host: 2, data: b, name: "ben", lines: ["chat", "open ann --wait 30", "the pictures, please"])
        defer { runA.kill(); runB.kill() }
        #expect(runB.waitFor("#1 delivered"))
        runB.send("/back")
        runA.send("open ben", "/send \(limit)", "/send \(bomb)")
        #expect(runB.waitFor(timeout: 60, { $0.contains("sent picture") && $0.contains("(limit.png") }))
        #expect(runB.waitFor { $0.contains("offers bomb.png (a picture, 2.4 MiB): /accept") })
        let bombNumber = try #require(number(b, "bomb.png")), limitNumber = try #require(number(b, "limit.png"))
        runB.send("accept \(bombNumber)")
        #expect(try eventually(timeout: 60) { state(b, "bomb.png") == "complete" })
        runB.send("open ann", "/open \(limitNumber)", "/back", "echo opened")
        #expect(runB.waitFor("opened"))
        let output = runB.output
        #expect(output.contains("PNG file · 2.4 MiB"), "the bomb, a file: \(output.suffix(2_000))")
        #expect(output.contains("(/save \(limitNumber) to keep it as a file)"))
        #expect(try query(b, "SELECT thumbnailWidth, thumbnailHeight, picture FROM transfer WHERE name = 'limit.png'") == ["24|12|1"])
        #expect(try query(b, "SELECT thumbnail IS NULL, picture FROM transfer WHERE name = 'bomb.png'") == ["1|0"])
        let peak = try #require(runB.peakMemory)
        #expect(peak < 100 << 20, "ben's peak: \(peak >> 20) MiB")
    }

    /// Through mosquitto alone (no LAN in common): the same file arrives, and the broker carries
    /// no byte of it in the clear.
    @Test func aFileGoesThroughTheBrokerSealed() throws {
        let net = try TestNetwork(hosts: 3)
        try net.blockMulticast()
        let broker = try BrokerProcess.mosquitto(on: net, host: 1)
        defer { broker.kill() }
        #expect(try broker.waitUntilReady())
        let a = try net.makeProfile("ann", host: 2), b = try net.makeProfile("ben", host: 3)
        let secret = Data(("the gate is under the Byers' house " + String(repeating: "x", count: 300_000)).utf8)
        let path = net.scratch.path + "/gate.txt"
        try secret.write(to: URL(fileURLWithPath: path))
        let spy = try TestNetwork.Run.launch("/usr/sbin/ip", ["netns", "exec", net.namespace(1), "mosquitto_sub", "-h", broker.address,
                                                             "-p", "\(broker.port)", "-t", "#", "-F", "%p"],
                                             environment: ["PATH": "/usr/bin:/bin"], outputPath: net.scratch.path + "/spy", lines: [])
        defer { spy.kill() }
        let runB = try net.start(host: 3, data: b, name: "ben", arguments: ["--broker", broker.url], lines: ["chat"])
        let runA = try net.start(host: 2, data: a, name: "ann", arguments: ["--broker", broker.url],
                                 lines: ["chat", "open ben --wait 30", "/back", "send ben \(path) --wait 60", "echo sent it"])
        defer { runA.kill(); runB.kill() }
        #expect(runB.waitFor("/accept 1"))
        runB.send("accept 1")
        #expect(runA.waitFor(timeout: 60, { $0.contains("sent it") }))
        #expect(!runA.output.contains("line 4:"), "\(runA.output.suffix(500))")
        runB.send("save 1 \(net.scratch.path)/got.txt")
        #expect(runB.waitFor("saved file 1"))
        #expect(FileManager.default.contentsEqual(atPath: path, andPath: net.scratch.path + "/got.txt"))
        spy.kill()
        let seen = (try? Data(contentsOf: URL(fileURLWithPath: net.scratch.path + "/spy"))) ?? Data()
        #expect(seen.count > 300_000, "the foreign client saw the traffic")
        #expect(seen.range(of: Data("under the Byers".utf8)) == nil, "plaintext on the broker")
    }
}
