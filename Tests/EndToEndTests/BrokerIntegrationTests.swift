import Foundation
import Glibc
import TestSupport
import Testing
import Wire

/// Chat through real MQTT servers, started by each test on its own namespace hosts: mosquitto,
/// and a three-node NATS cluster. The shells' hosts share no multicast unless a test says so.
@Suite(.enabled(if: inPrivateNetwork, "runs only inside scripts/in-netns (make test)"))
struct BrokerIntegrationTests {


    /// Three hosts: mosquitto on the first, ann's and ben's profiles on the second and third;
    /// sharing the LAN only when `lan`.
    func mosquittoWorld(lan: Bool, verbose: Bool = false) throws -> (net: TestNetwork, broker: BrokerProcess, a: String, b: String) {
        let net = try TestNetwork(hosts: 3)
        if !lan { try net.blockMulticast() }
        let broker = try BrokerProcess.mosquitto(on: net, host: 1, verbose: verbose)
        #expect(try broker.waitUntilReady())
        return (net, broker, try net.makeProfile("ann", host: 2), try net.makeProfile("ben", host: 3))
    }

    func received(_ data: String) throws -> [String] { try query(data, "SELECT text FROM message WHERE outgoing = 0 ORDER BY id") }

    func states(_ data: String) -> String {
        ((try? query(data, "SELECT shownState, count(*) FROM message_shown GROUP BY shownState")) ?? []).joined(separator: ", ")
    }

    func allDelivered(_ data: String, count: Int) throws -> Bool {
        try query(data, "SELECT count(*) FROM message_shown WHERE outgoing = 1 AND shownState IN ('delivered', 'read')") == ["\(count)"]
    }

    /// Whether a listing came after `marker` (a notice printed in between or after it, as a
    /// peer's plane changing, does not hide it): a peer in it, or, with `orNobody`, the answer
    /// that nobody is there (a peer that refreshes every 0.2 s can lapse for a moment under load).
    static func listed(after marker: String, in output: String, orNobody: Bool = false) -> Bool {
        guard let range = output.range(of: marker, options: .backwards) else { return false }
        let answer = output[range.upperBound...]
        return answer.contains(" seen ") || (orNobody && answer.contains("nobody you can see is nearby"))
    }

    /// 1,000 messages one way and 300 the other at the same time, through mosquitto only: each
    /// arrives once and in order; a foreign client subscribed to everything sees none of them,
    /// and neither it nor the broker's own log can tell who wrote to whom (issue 53).
    @Test func twoShellsWithNoLANInCommonChatThroughMosquittoBothWays() throws {
        let (net, broker, a, b) = try mosquittoWorld(lan: false, verbose: true)
        let spy = try TestNetwork.Run.launch("/usr/sbin/ip", ["netns", "exec", net.namespace(1), "mosquitto_sub", "-h", broker.address,
                                                             "-p", "\(broker.port)", "-t", "#", "-F", "%t %l %x"],
                                             environment: ["PATH": "/usr/bin:/bin"], outputPath: net.scratch.path + "/spy", lines: [])
        defer { spy.kill() }
        let toBen = (1...1_000).map { "zanzibar to ben \($0)" }, toAnn = (1...300).map { "quixotic to ann \($0)" }
        let runA = try net.start(host: 2, data: a, name: "ann", arguments: ["--broker", broker.url, "--bail"],
                                 lines: ["chat", "open ben --wait 30"] + toBen + ["/nearby"])
        let runB = try net.start(host: 3, data: b, name: "ben", arguments: ["--broker", broker.url, "--bail"],
                                 lines: ["chat", "open ann --wait 30"] + toAnn + ["/nearby"])
        defer { runA.kill(); runB.kill() }
        let done = try eventually(timeout: 90) { try allDelivered(a, count: 1_000) && allDelivered(b, count: 300) }
        #expect(done, "ann: \(states(a)); ben: \(states(b))")
        #expect(try received(b) == toBen)
        #expect(try received(a) == toAnn)
        runA.kill(); runB.kill()
        let outA = runA.wait()
        #expect(outA.contains("announcing ann#") && outA.contains("broker mqtt://198.18.0.1:1883"), "\(outA.prefix(400))")
        #expect(outA.split(separator: "\n").contains { $0.contains("ben#") && $0.hasSuffix("via broker") }, "\(outA.suffix(600))")
        spy.kill()
        let seen = (try? Data(contentsOf: URL(fileURLWithPath: net.scratch.path + "/spy"))) ?? Data()
        #expect(seen.count > 10_000, "the foreign client saw the traffic")
        let hexOf = { (word: String) in word.utf8.map { String(format: "%02x", $0) }.joined() }
        for word in ["zanzibar", "quixotic"] { #expect(!String(decoding: seen, as: UTF8.self).contains(hexOf(word)), "plaintext '\(word)' on the broker") }
        _ = runB.wait()
        BrokerIntegrationTests.expectNothingLinks(spy: String(decoding: seen, as: UTF8.self), brokerLog: broker.log)
    }

    /// What a subscriber to everything saw (`topic length hex` a line) and the broker's own log
    /// (every packet) tell of who writes to whom: presence names each profile, and nothing else
    /// does. Direct frames go only to topics of 32 hex digits, padded to a few sizes, naming no
    /// signing key; the clients that publish presence publish and subscribe nothing else, and no
    /// client ID names a key.
    static func expectNothingLinks(spy: String, brokerLog: String) {
        var keys: Set<String> = [], ids: Set<String> = [], direct = 0
        let lines = spy.split(separator: "\n").map { $0.split(separator: " ").map(String.init) }.filter { $0.count == 3 }
        for line in lines where line[0].hasPrefix("seance/presence/") {
            ids.insert(String(line[0].dropFirst("seance/presence/".count)))
            // An announcement's header: magic, version, type, flags, then the signing key.
            if line[2].count >= 80 { keys.insert(String(line[2].dropFirst(16).prefix(64))) }
        }
        #expect(ids.count == 2 && keys.count == 2, "ann's and ben's presence: \(ids), \(keys)")
        for line in lines where !line[0].hasPrefix("seance/presence/") {
            let topic = line[0]
            #expect(topic.hasPrefix("seance/t/") && BrokerTopics.isTopic(String(topic.dropFirst("seance/".count))), "\(topic)")
            #expect(BrokerPadding.sizes.contains(Int(line[1]) ?? -1), "\(topic): \(line[1]) bytes")
            for key in keys { #expect(!line[2].contains(key), "\(topic) carries a signing key") }
            for id in ids { #expect(!topic.contains(id.prefix(8)) && !line[2].contains(id), "\(topic) names \(id)") }
            direct += 1
        }
        // Seen at all, so that the checks above looked at something: a frame carries some
        // thirty of these messages' fragments, so 1,300 messages are forty frames at fewest
        // (a faster sender packs more to a frame: this once said more than 100, and saw 94).
        #expect(direct >= 40, "the direct frames were seen: \(direct)")
        // The broker's log: who published or subscribed to what, by client ID.
        var clients: [String: Set<String>] = [:], subscriber: String?
        for line in brokerLog.split(separator: "\n") {
            if let range = line.range(of: "Received PUBLISH from ") {
                let rest = line[range.upperBound...]
                let client = String(rest.prefix { $0 != " " })
                if let open = rest.range(of: "'"), let close = rest[open.upperBound...].range(of: "'") {
                    clients[client, default: []].insert(String(rest[open.upperBound..<close.lowerBound]))
                }
                subscriber = nil
            } else if let range = line.range(of: "Received SUBSCRIBE from ") {
                subscriber = String(line[range.upperBound...].prefix { $0 != " " })
            } else if let client = subscriber, let tab = line.range(of: "\t") {
                clients[client, default: []].insert(String(line[tab.upperBound...].prefix { $0 != " " }))
            } else {
                subscriber = nil
            }
        }
        let seance = clients.filter { $0.key.hasPrefix("seance-") }
        #expect(seance.count >= 4, "two clients each: \(seance.keys.sorted())")
        for (client, topics) in seance {
            for id in ids { #expect(!id.contains(client.dropFirst(client.hasPrefix("seance-m-") ? 9 : 7).prefix(6)), "\(client) names \(id)") }
            let presence = topics.contains { $0.hasPrefix("seance/presence/") }
            let direct = topics.contains { $0.hasPrefix("seance/t/") }
            #expect(!(presence && direct), "\(client) is both presence and mailbox: \(topics.sorted())")
        }
    }

    /// The broker dies mid-stream and comes back (without persistence: it remembers nothing):
    /// both shells say so, reconnect, and every message arrives once, in order.
    @Test func theBrokerKilledAndRestartedMidStreamLosesNothing() throws {
        let (net, broker, a, b) = try mosquittoWorld(lan: false)
        let messages = (1...400).map { "line \($0)" }
        let runB = try net.start(host: 3, data: b, name: "ben", arguments: ["--broker", broker.url], lines: ["chat"])
        let runA = try net.start(host: 2, data: a, name: "ann", arguments: ["--broker", broker.url],
                                 lines: ["chat", "open ben --wait 30"] + messages[..<200])
        defer { runA.kill(); runB.kill() }
        #expect(try eventually(timeout: 30) { (Int(try query(b, "SELECT count(*) FROM message").first ?? "0") ?? 0) >= 40 })
        // The broker dies with the first half on its way; the second half is written while it
        // is gone (nothing is carried, all waits) and goes when it is back.
        broker.kill()
        runA.waitFor("! broker: lost the broker")
        runA.send(Array(messages[200...]))
        try broker.start()
        #expect(try broker.waitUntilReady())
        let all = try eventually(timeout: 90) { try allDelivered(a, count: 400) }
        #expect(all, "ann: \(states(a))")
        #expect(try received(b) == messages)
        runA.kill(); runB.kill()
        let outA = runA.wait()
        #expect(outA.contains("! broker: lost the broker mqtt://198.18.0.1:1883"), "\(outA.suffix(800))")
        #expect(outA.contains("+ broker: connected again"), "\(outA.suffix(800))")
    }

    /// On the same LAN and on the broker: one peer (listed once, reached both ways, the LAN
    /// first), one conversation, each message stored once.
    @Test func aPeerOnBothTheLANAndTheBrokerIsOnePeer() throws {
        let (net, broker, a, b) = try mosquittoWorld(lan: true)
        let messages = (1...200).map { "both ways \($0)" }
        let runB = try net.start(host: 3, data: b, name: "ben", arguments: ["--broker", broker.url], lines: ["chat"])
        let runA = try net.start(host: 2, data: a, name: "ann", arguments: ["--broker", broker.url], lines: ["chat", "open ben --wait 30"])
        defer { runA.kill(); runB.kill() }
        // ben is listed once each time ann asks; the broker (which may connect a moment after the
        // LAN) reaches him too by a later listing. Each listing is asked once the one before is out.
        func listings() -> [Substring] { runA.output.split(separator: "\n").filter { $0.contains("ben#") && $0.contains(" seen ") } }
        for listing in 1...100 where listings().last?.hasSuffix("via lan+broker") != true {
            runA.send("/echo listing \(listing)", "/nearby")
            runA.waitFor { Self.listed(after: "listing \(listing)\n", in: $0) }
        }
        runA.send(messages)
        #expect(try eventually(timeout: 60) { try allDelivered(a, count: 200) })
        #expect(try received(b) == messages)
        #expect(try query(b, "SELECT count(*) FROM conversation") == ["1"])
        runA.kill(); runB.kill()
        let outA = runA.wait(), outB = runB.wait()
        // ben in each listing once (`chat`'s own may list him too); by the last, both ways.
        let listed = outA.split(separator: "\n").filter { $0.contains("ben#") && $0.contains(" seen ") }
        let asked = outA.split(separator: "\n").filter { $0.hasPrefix("listing ") }.count
        #expect((asked...(asked + 1)).contains(listed.count) && listed.last?.hasSuffix("via lan+broker") == true, "\(outA.prefix(2000))")
        // ben lists ann when he goes online, or is told she arrives: once either way.
        let arrivals = outB.split(separator: "\n").filter { $0.contains("ann#") && ($0.contains("is nearby") || $0.contains(" seen ")) }
        #expect(arrivals.count == 1, "ben heard ann arrive once: \(outB.prefix(600))")
    }

    /// ann and ben on the LAN and on mosquitto, refreshing every 0.2 s: a foreign client that
    /// watches the presence topics sees nothing published while 40 of ann's refreshes go out on
    /// the LAN (counted by her own statistics), then one publication when her plane changes.
    @Test func theBrokerIsSentNoRefreshes() throws {
        let (net, broker, a, b) = try mosquittoWorld(lan: true)
        let arguments = ["--broker", broker.url, "--announce-interval", "0.2"]
        let runB = try net.start(host: 3, data: b, name: "ben", arguments: arguments, lines: ["chat"])
        let runA = try net.start(host: 2, data: a, name: "ann", arguments: arguments, lines: ["chat"])
        defer { runA.kill(); runB.kill() }
        for listing in 1...100 where !runA.output.split(separator: "\n").contains(where: { $0.contains("ben#") && $0.hasSuffix("via lan+broker") }) {
            runA.send("echo listing \(listing)", "nearby")
            runA.waitFor { Self.listed(after: "listing \(listing)\n", in: $0, orNobody: true) }
        }
        // Published from now on (not what the broker retained before), and a marker once subscribed.
        let spy = try TestNetwork.Run.launch("/usr/sbin/ip", ["netns", "exec", net.namespace(1), "mosquitto_sub", "-h", broker.address,
                                                            "-p", "\(broker.port)", "-R", "-t", "seance/presence/+", "-t", "spy/ready",
                                                            "-F", "%t %l"],
                                             environment: ["PATH": "/usr/bin:/bin"], outputPath: net.scratch.path + "/spy", lines: [])
        defer { spy.kill() }
        for attempt in 1...50 where !spy.output.contains("spy/ready") {
            _ = try broker.client("mosquitto_pub", from: net.namespace(1), "-t spy/ready -m \(attempt)")
            _ = eventually(timeout: 0.2) { spy.output.contains("spy/ready") }
        }
        func sent() -> Int {
            runA.send("nearby stats")
            var count = 0
            runA.waitFor { output in
                guard let line = output.split(separator: "\n").last(where: { $0.hasPrefix("sent ") }),
                      let number = Int(line.split(separator: " ")[1]) else { return false }
                count = number
                return true
            }
            return count
        }
        let start = sent()
        var now = start
        while now < start + 40 { now = sent() }
        let published = spy.output.split(separator: "\n").filter { $0.hasPrefix("seance/presence/") }
        #expect(published.isEmpty, "published while refreshing the LAN: \(published)")
        runA.send("battery 30")
        #expect(spy.waitFor { $0.split(separator: "\n").contains { $0.hasPrefix("seance/presence/") } })
        runA.send("nearby stats")
        _ = runA.waitFor("sent ")
        #expect(spy.output.split(separator: "\n").filter { $0.hasPrefix("seance/presence/") }.count == 1, "\(spy.output)")
    }

    /// Announcements left retained on the broker by nobody alive, advertising an hour: one
    /// stamped 50 minutes ago (a broker's copy counts for 1.25 of its interval from its own
    /// time: a client still connected would have published again by then), one two hours ago.
    /// ann, connecting, lists the first as seen 50 minutes ago, not just now, and not the
    /// second, which her statistics count as stale.
    @Test func aStaleRetainedAnnouncementIsAsOldAsItSays() throws {
        let (net, broker, a, _) = try mosquittoWorld(lan: false)
        let now = UInt64(Date().timeIntervalSince1970 * 1000)
        for (name, minutesAgo) in [("old", 50), ("older", 120)] {
            let peer = FakePeer(port: 1)
            let frame = try peer.packet(peer.announcement(name: name, intervalMilliseconds: 3_600_000),
                                        timestamp: now - UInt64(minutesAgo) * 60_000)
            let path = net.scratch.path + "/retained-\(name)"
            _ = FileManager.default.createFile(atPath: path, contents: Data(frame))
            let id = PeerIdentity.longFingerprint(of: peer.signing.publicKey.rawRepresentation)
            _ = try broker.client("mosquitto_pub", from: net.namespace(1), "-r -q 1 -t seance/presence/\(id) -f \(path)")
        }
        let runA = try net.start(host: 2, data: a, name: "ann", arguments: ["--broker", broker.url, "--no-lan"],
                                 lines: ["chat", "nearby", "nearby stats"])
        defer { runA.kill() }
        runA.waitFor("sent ")
        let output = runA.finish()
        let old = output.split(separator: "\n").filter { $0.contains("old#") && $0.contains(" seen ") }
        #expect(old.count >= 1 && old.allSatisfy { $0.contains("seen 50m ago via broker") }, "\(output)")
        #expect(!output.contains("older#"), "\(output)")
        #expect(output.contains("stale 1"), "\(output)")
    }

    /// A shell killed with SIGKILL says no goodbye: the broker's will clears its retained
    /// presence, so nobody who comes later sees a ghost of it.
    @Test func theWillClearsThePresenceOfAKilledShell() throws {
        let net = try TestNetwork(hosts: 3)
        let broker = try BrokerProcess.mosquitto(on: net, host: 1)
        #expect(try broker.waitUntilReady())
        let a = try net.makeProfile("ann", host: 2)
        let runA = try net.start(host: 2, data: a, name: "ann", arguments: ["--broker", broker.url, "--no-lan"], lines: ["chat"])
        defer { runA.kill() }
        func retained() throws -> String {
            try broker.client("mosquitto_sub", from: net.namespace(1), "-t 'seance/presence/+' --retained-only -W 1 -F '%t %l'")
        }
        let kept = try eventually(timeout: 20) { try retained().contains("seance/presence/") }
        #expect(kept, "ann's presence is retained: \((try? retained()) ?? "") — ann: \(runA.output)")
        runA.kill()
        _ = runA.wait()
        let cleared = try eventually(timeout: 10) { !(try retained().contains("seance/presence/")) }
        #expect(cleared, "the will cleared it: \((try? retained()) ?? "")")
    }

    /// ann's data copied to a host that shares no LAN with hers: through the broker (where both
    /// publish on one presence topic) each shell is told once that the profile is online twice.
    @Test func theSameProfileOnlineTwiceThroughABrokerIsToldOnEachSide() throws {
        let (net, broker, a, _) = try mosquittoWorld(lan: false)
        let copy = a + "-copy"
        try FileManager.default.copyItem(atPath: a, toPath: copy)
        let runs = try [(2, a), (3, copy)].map { host, data in
            try net.start(host: host, data: data, name: "ann", arguments: ["--broker", broker.url, "--no-lan"], lines: ["chat"])
        }
        defer { runs.forEach { $0.kill() } }
        for run in runs where !run.waitFor("this profile is online in another seance too (heard by broker)") {
            // What its gate made of the frames in our name, for whoever reads the failure.
            Issue.record("nearby stats: \(run.statsLine("sent ") ?? "no answer")")
        }
        for run in runs {
            let out = run.finish()
            let told = out.split(separator: "\n").filter { $0.contains("this profile is online in another seance too (heard by broker)") }
            #expect(told.count == 1, "\(out)")
        }
    }

    /// Three NATS servers clustered (JetStream and MQTT on each): ann on node 1 and ben on
    /// node 3 chat both ways, ann's side a burst of 1,000 lines. No node hangs up on a client
    /// for publishing before it was accepted (libmosquitto would write such a publish first,
    /// and the reconnection that followed once stalled a burst for good).
    @Test func aThreeNodeNATSClusterCarriesAConversationAcrossNodes() throws {
        let (net, nodes, a, b) = try NATSCluster.world()
        let toBen = (1...1_000).map { "across the cluster \($0)" }, toAnn = (1...50).map { "and back \($0)" }
        // Refreshes once a second (the LAN tests' 0.2 s leaves 0.7 s before a peer expires:
        // less than a loaded three-node cluster can promise). Each waits long for the other: beside
        // the whole suite, the cluster once took 65 s to place a client's session (a JetStream
        // consumer, kept on all three nodes), and 40 s was not enough.
        let runA = try net.start(host: 4, data: a, name: "ann", arguments: ["--broker", nodes[0].url, "--no-lan", "--announce-interval", "1"],
                                 lines: ["chat", "open ben --wait 150"] + toBen)
        let runB = try net.start(host: 5, data: b, name: "ben", arguments: ["--broker", nodes[2].url, "--no-lan", "--announce-interval", "1"],
                                 lines: ["chat", "open ann --wait 150"] + toAnn)
        defer { runA.kill(); runB.kill() }
        // Generous (and the shells stay as long): alone this takes seconds, but beside the whole
        // suite on two cores the cluster's own round trips reach a quarter of a second.
        let done = try eventually(timeout: 240) { try allDelivered(a, count: 1_000) && allDelivered(b, count: 50) }
        let sides = "ann: \(states(a)); ben: \(states(b)); ann said: \(runA.output.suffix(600)); ben said: \(runB.output.suffix(600)); "
            + "node 1: \(nodes[0].log.suffix(800)); node 3: \(nodes[2].log.suffix(800))"
        #expect(done, "\(sides)")
        #expect(try received(b) == toBen)
        #expect(try received(a) == toAnn)
        for node in nodes { #expect(!node.log.contains("the first packet should be a CONNECT"), "\(node.log.suffix(800))") }
    }

    /// No broker at the address yet: a notice, the LAN chat goes on; when it comes up, the
    /// shells connect by themselves (with their backoff) and say so.
    @Test func aBrokerNotThereYetIsANoticeAndTheLANGoesOn() throws {
        let net = try TestNetwork(hosts: 3)
        let a = try net.makeProfile("ann", host: 2), b = try net.makeProfile("ben", host: 3)
        let url = "mqtt://198.18.0.1:1883"
        let runB = try net.start(host: 3, data: b, name: "ben", arguments: ["--broker", url], lines: ["chat"])
        let runA = try net.start(host: 2, data: a, name: "ann", arguments: ["--broker", url],
                                 lines: ["chat", "open ben --wait 30", "over the lan"])
        defer { runA.kill(); runB.kill() }
        #expect(try eventually(timeout: 30) { try allDelivered(a, count: 1) }, "\(runA.output)")
        #expect(runA.output.contains("! broker: cannot reach the broker \(url)"), "\(runA.output)")
        let broker = try BrokerProcess.mosquitto(on: net, host: 1)
        #expect(try broker.waitUntilReady())
        #expect(eventually(timeout: 40) { runA.output.contains("+ broker: connected again") }, "\(runA.output)")
    }

    /// Wrong credentials: the notice names the broker (password hidden) and says why.
    @Test func wrongCredentialsAreNamedWithoutThePassword() throws {
        let net = try TestNetwork(hosts: 2)
        let passwords = net.scratch.path + "/mosquitto.passwd"
        _ = try sh("mosquitto_passwd -c -b '\(passwords)' ann right-password 2>&1")
        let config = net.scratch.write("secure.conf", """
            listener 1883 198.18.0.1
            allow_anonymous false
            password_file \(passwords)
            persistence false
            """)
        let broker = try BrokerProcess(namespace: net.namespace(1), address: "198.18.0.1", port: 1883,
                                       command: ["/usr/sbin/mosquitto", "-c", config], logPath: net.scratch.path + "/secure.log")
        let a = try net.makeProfile("ann", host: 2)
        let runA = try net.start(host: 2, data: a, name: "ann", arguments: ["--broker", "mqtt://ann:wrong-password@198.18.0.1:1883", "--no-lan"],
                                 lines: ["chat"])
        defer { runA.kill() }
        let told = eventually(timeout: 20) { runA.output.contains("refused the connection") }
        #expect(told, "\(runA.output) — broker: \(broker.log)")
        #expect(runA.output.contains("the broker mqtt://ann:***@198.18.0.1:1883 refused the connection: Connection Refused: not authorised"))
        #expect(!runA.output.contains("wrong-password"))
    }

    /// TLS that cannot work (here: a broker that does not speak it) is named as such.
    @Test func aTLSFailureIsNamed() throws {
        let net = try TestNetwork(hosts: 2)
        let broker = try BrokerProcess.mosquitto(on: net, host: 1)
        #expect(try broker.waitUntilReady())
        let a = try net.makeProfile("ann", host: 2)
        let runA = try net.start(host: 2, data: a, name: "ann", arguments: ["--broker", "mqtts://198.18.0.1:1883", "--no-lan"],
                                 lines: ["chat"])
        defer { runA.kill() }
        let told = eventually(timeout: 20) { runA.output.contains("! broker: cannot use TLS with the broker mqtts://198.18.0.1:1883") }
        #expect(told, "\(runA.output)")
    }
}
