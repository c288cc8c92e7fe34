import Foundation
import TestSupport
import Glibc
import Testing

/// A real MQTT server for a test, started by the test on one of its namespace hosts (never in
/// the machine's own network) and stopped by it: Debian's mosquitto, or one node of a NATS
/// cluster with MQTT enabled.
final class BrokerProcess {
    let namespace: String
    let address: String
    let port: Int
    private let command: [String]
    private let logPath: String
    private var process: Child?

    var url: String { "mqtt://\(address):\(port)" }

    init(namespace: String, address: String, port: Int, command: [String], logPath: String) throws {
        self.namespace = namespace
        self.address = address
        self.port = port
        self.command = command
        self.logPath = logPath
        try start()
    }

    /// mosquitto on `host` of `net`, anonymous, without persistence (a restart forgets
    /// everything retained: the clients must publish their presence again); `verbose`, its log
    /// has every packet (who published and subscribed to what).
    static func mosquitto(on net: TestNetwork, host: Int, verbose: Bool = false) throws -> BrokerProcess {
        let address = "198.18.0.\(host)", port = 1883
        let config = net.scratch.write("mosquitto-\(host).conf", """
            listener \(port) \(address)
            allow_anonymous true
            persistence false
            set_tcp_nodelay true
            log_dest stdout
            \(verbose ? "log_type all" : "")
            """)
        return try BrokerProcess(namespace: net.namespace(host), address: address, port: port,
                                 command: ["/usr/sbin/mosquitto", "-c", config], logPath: net.scratch.path + "/mosquitto-\(host).log")
    }

    /// Node `index` (1-based) of a NATS cluster on `hosts` of `net`: JetStream (which NATS's
    /// MQTT needs) and MQTT on 1883, routes to every node, its own too, as the README says
    /// (NATS sizes the MQTT streams by the routes it is given: the two others alone make them
    /// R2, and a node killed then takes the mail they hold out of reach).
    static func natsNode(on net: TestNetwork, hosts: [Int], index: Int) throws -> BrokerProcess {
        let host = hosts[index - 1], address = "198.18.0.\(host)"
        let routes = hosts.map { "nats-route://198.18.0.\($0):6222" }.joined(separator: ", ")
        let store = net.scratch.path + "/nats-\(index)"
        let config = net.scratch.write("nats-\(index).conf", NATSCluster.configuration(node: index, address: address, routes: routes, store: store))
        return try BrokerProcess(namespace: net.namespace(host), address: address, port: 1883,
                                 command: ["/usr/sbin/nats-server", "-c", config], logPath: net.scratch.path + "/nats-\(index).log")
    }

    func start() throws {
        _ = FileManager.default.createFile(atPath: logPath, contents: nil)
        process = try Child(["/usr/sbin/ip", "netns", "exec", namespace] + command, stdout: .file(logPath, append: true),
                            stderr: .file(logPath, append: true))
    }

    /// Ends the server at once (no clean shutdown), as a crash would.
    func kill() {
        guard let process, process.isRunning else { return }
        process.kill()
        waitForExit(process, timeout: 30)
        self.process = nil
    }

    var log: String { (try? String(contentsOfFile: logPath, encoding: .utf8)) ?? "" }

    /// The log without a dead route's endless retries (what a failure's report should show).
    var news: String { log.split(separator: "\n").filter { !$0.contains("Error trying to connect to route") }.joined(separator: "\n") }

    /// Runs a mosquitto client (`mosquitto_sub`, `mosquitto_pub`) against this broker from
    /// `host`'s namespace; its output.
    func client(_ tool: String, from namespace: String, _ arguments: String) throws -> String {
        try sh("ip netns exec \(namespace) \(tool) -h \(address) -p \(port) \(arguments) 2>&1")
    }

    /// Waits until the broker takes connections (a publish from its own host gets through).
    func waitUntilReady(timeout: Double = 20) throws -> Bool {
        let deadline = Date().addingTimeInterval(timeout)
        while Date() < deadline {
            let result = try sh("ip netns exec \(namespace) mosquitto_pub -h \(address) -p \(port) -i ready-check -q 1 -t seance-test/ready -m x >/dev/null 2>&1 && echo ok")
            if result.contains("ok") { return true }
            usleep(200_000)
        }
        return false
    }

    /// Waits until a QoS 1 message published on this broker reaches a subscriber on `other`
    /// (a cluster whose JetStream is still forming takes the publish but does not carry it yet).
    func waitUntilCarrying(to other: BrokerProcess, timeout: Double = 40) throws -> Bool {
        let deadline = Date().addingTimeInterval(timeout)
        var attempt = 0
        while Date() < deadline {
            attempt += 1
            let topic = "seance-test/probe-\(attempt)"
            let result = try sh("""
                (ip netns exec \(other.namespace) timeout -k 2 5 mosquitto_sub -h \(other.address) -p \(other.port) -i probe-sub-\(attempt) -q 1 \
                    -t \(topic) -C 1 -W 3 > /tmp/seance-probe-\(attempt).$$ 2>&1 &)
                sleep 0.5
                ip netns exec \(namespace) timeout -k 2 5 mosquitto_pub -h \(address) -p \(port) -i probe-pub-\(attempt) -q 1 -t \(topic) -m carried >/dev/null 2>&1
                sleep 1; cat /tmp/seance-probe-\(attempt).$$; rm -f /tmp/seance-probe-\(attempt).$$
                """)
            if result.contains("carried") { return true }
        }
        return false
    }

    /// Waits until this NATS node says it is healthy (`/healthz` on its monitoring port: its
    /// JetStream has a leader and every stream and consumer it holds is current), as a cluster
    /// that lost a node is once its elections are over: only then does it hold and hand over
    /// MQTT sessions and their messages again.
    func waitUntilHealthy(timeout: Double = 120) throws -> Bool {
        let deadline = Date().addingTimeInterval(timeout)
        while Date() < deadline {
            let answer = try sh("""
                ip netns exec \(namespace) timeout -k 2 5 python3 -c "import urllib.request as u; print(u.urlopen('http://\(address):8222/healthz', timeout=3).read().decode())" 2>&1
                """)
            if answer.contains("\"ok\"") { return true }
            usleep(500_000)
        }
        return false
    }

    deinit { kill() }
}

/// The exact configuration the tests (and the README) use for a three-node NATS cluster with
/// JetStream and MQTT.
enum NATSCluster {
    /// Five hosts sharing no multicast: the cluster on the first three, started and carrying
    /// both ways between nodes 1 and 3 before anyone relies on it; ann's profile on host 4 and
    /// ben's on host 5.
    static func world() throws -> (net: TestNetwork, nodes: [BrokerProcess], a: String, b: String) {
        let net = try TestNetwork(hosts: 5)
        try net.blockMulticast()
        let nodes = try (1...3).map { try BrokerProcess.natsNode(on: net, hosts: [1, 2, 3], index: $0) }
        for node in nodes { #expect(try node.waitUntilReady(timeout: 40), "\(node.log.suffix(1500))") }
        #expect(try nodes[0].waitUntilCarrying(to: nodes[2]) && nodes[2].waitUntilCarrying(to: nodes[0]))
        for node in nodes { #expect(try node.waitUntilHealthy(), "\(node.log.suffix(1500))") }
        return (net, nodes, try net.makeProfile("ann", host: 4), try net.makeProfile("ben", host: 5))
    }

    static func configuration(node: Int, address: String, routes: String, store: String) -> String {
        """
        server_name: seance-\(node)
        listen: \(address):4222
        jetstream {
            store_dir: "\(store)"
        }
        cluster {
            name: seance
            listen: \(address):6222
            routes: [\(routes)]
        }
        mqtt {
            listen: \(address):1883
            stream_replicas: 3
            consumer_replicas: 3
        }
        http: \(address):8222
        """
    }
}

extension TestNetwork {
    /// Drops every multicast frame the bridge would forward: the hosts share no LAN as far as
    /// seance can tell (unicast still passes, to reach a broker).
    func blockMulticast() throws {
        try addBridgeRule("ip daddr 224.0.0.0/4 counter drop")
    }
}
