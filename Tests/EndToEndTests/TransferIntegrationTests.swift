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
    /// equal), the picture taken at once (ann wrote first), the file once ben accepted it.
    @Test func aPictureAndAFileCrossLossAndARestartByteForByte() throws {
        let net = try TestNetwork(hosts: 2)
        try net.dropFrames(percent: 10)
        let (picture, big) = try files(in: net)
        let a = try net.makeProfile("ann", host: 1), b = try net.makeProfile("ben", host: 2)
        var runB = try net.start(host: 2, data: b, name: "ben", lines: ["chat"])
        let runA = try net.start(host: 1, data: a, name: "ann", lines: ["chat", "open ben --wait 30", "a picture, then the notes"])
        defer { runA.kill(); runB.kill() }
        #expect(runA.waitFor("#1 delivered"))
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
