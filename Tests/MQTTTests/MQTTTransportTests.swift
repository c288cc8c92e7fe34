import Foundation
import Glibc
import TestSupport
import Testing
import Wire
@testable import MQTT

/// The transport against a scripted broker on loopback (inside `scripts/in-netns`): what it
/// writes, packet by packet, before and after the broker accepts it.
@Suite(.enabled(if: inPrivateNetwork, "opens sockets: only inside scripts/in-netns"))
struct MQTTTransportTests {
    /// Nothing is published until the broker has answered CONNECT: a clustered broker (NATS)
    /// hangs up on a client whose first packet is a PUBLISH, and libmosquitto wrote one first
    /// when the engine sent while it connected. Then, once accepted, what is sent goes out.
    @Test func nothingIsPublishedBeforeTheBrokerAcceptsTheConnection() throws {
        // The broker's socket and the client's thread, in a network of this test's own.
        let network = try PrivateNetwork()
        let broker = try network.inside { try ScriptedBroker() }
        defer { broker.close() }
        let transport = MQTTTransport(configuration: .init(address: try BrokerAddress(parsing: "mqtt://127.0.0.1:\(broker.port)")),
                                      signingKey: Data(repeating: 7, count: 32))
        let reports = Reports()
        try network.inside { try transport.start(deliver: { _, _ in }, report: { reports.add("\($0)") }) }
        defer { transport.stop() }
        let inbox = Route(transport: "broker", address: BrokerTopics.prefix + String(repeating: "ab", count: 16))
        let frame = [UInt8](repeating: 0x5A, count: 40)

        // Sent while the connection is being made, before and after the broker reads CONNECT.
        transport.broadcast(frame, as: .presence)
        transport.send(frame, to: inbox)
        try broker.accept()
        let first: ScriptedBroker.Packet
        do { first = try broker.packet() } catch {
            // Why the client let its connections go, as it told the shell. (libmosquitto's loop
            // is select()'s, which refuses a descriptor numbered past 1,023: the suite held 1,350
            // while its test worlds were never freed, and this failed then.)
            throw ScriptedBroker.Failure(what: "\(error); the transport said: \(reports.all)")
        }
        #expect(first.type == 0x10, "the first packet is CONNECT, not \(first.type)")
        for _ in 0..<20 {
            transport.send(frame, to: inbox)
            transport.broadcast(frame, as: .presence)
        }
        #expect(broker.packet(within: 300) == nil, "nothing but CONNECT before CONNACK")

        broker.write([0x20, 0x02, 0x00, 0x00])  // CONNACK: accepted.
        // After it: the subscriptions and the retained presence, then a direct frame on asking.
        var published = false
        for attempt in 0..<50 where !published {
            if attempt % 5 == 0 { transport.send(frame, to: inbox) }
            while let packet = broker.packet(within: 20) {
                if packet.type == 0x30, packet.flags & 0x06 == 0x02, packet.body.starts(with: [0x00, UInt8("seance/t/".count + 32)]) {
                    published = true
                }
            }
        }
        #expect(published, "a direct frame is published at QoS 1 once connected")
    }

    /// A subscription the broker refuses (as a NATS node does while its JetStream cannot make
    /// the consumer) is asked again, until granted: else what is mailed to it is never held.
    @Test func aRefusedSubscriptionIsAskedAgain() throws {
        let network = try PrivateNetwork()
        let broker = try network.inside { try ScriptedBroker() }
        defer { broker.close() }
        let transport = MQTTTransport(configuration: .init(address: try BrokerAddress(parsing: "mqtt://127.0.0.1:\(broker.port)")),
                                      signingKey: Data(repeating: 7, count: 32), role: .mailbox, mailboxID: "seance-m-test")
        let topic = BrokerTopics.prefix + String(repeating: "cd", count: 16)
        try network.inside { try transport.start(deliver: { _, _ in }, report: { _ in }) }
        defer { transport.stop() }
        transport.setInbox(topics: [topic], forgetting: [])
        try broker.accept()
        #expect(try broker.packet().type == 0x10)
        broker.write([0x20, 0x02, 0x00, 0x00])
        /// The next SUBSCRIBE: its packet ID and topic filter.
        func subscription() -> (id: [UInt8], topic: String)? {
            while let packet = broker.packet(within: 5_000) {
                guard packet.type == 0x80, packet.body.count > 4 else { continue }
                let length = Int(packet.body[2]) << 8 | Int(packet.body[3])
                return (Array(packet.body[0..<2]), String(decoding: packet.body[4..<(4 + length)], as: UTF8.self))
            }
            return nil
        }
        let first = try #require(subscription())
        #expect(first.topic == "seance/" + topic)
        broker.write([0x90, 0x03] + first.id + [0x80])  // SUBACK: refused.
        let again = try #require(subscription(), "asked again")
        #expect(again.topic == first.topic && transport.inboxStatus == InboxStatus(topics: 1, waiting: 1, refusals: 1))
        broker.write([0x90, 0x03] + again.id + [0x01])  // Granted, at QoS 1.
        let deadline = Date().addingTimeInterval(10)
        while transport.inboxStatus?.waiting != 0 && Date() < deadline { usleep(10_000) }
        #expect(transport.inboxStatus == InboxStatus(topics: 1, waiting: 0, refusals: 1))
    }
}

/// What the transport reported, from its own thread.
final class Reports: @unchecked Sendable {  // Its one field is behind the lock.
    private let lock = NSLock()
    private var lines: [String] = []
    func add(_ line: String) { lock.withLock { lines.append(line) } }
    var all: [String] { lock.withLock { lines } }
}

/// A listening socket on 127.0.0.1 that plays a broker by hand: reads MQTT packets, writes bytes.
final class ScriptedBroker {
    struct Packet { let type: UInt8, flags: UInt8, body: [UInt8] }
    struct Failure: Error { let what: String }

    let port: UInt16
    private let listener: Int32
    private var connection: Int32 = -1
    private var buffer: [UInt8] = []
    /// The connection ended (read 0 bytes); some packet was read on it.
    private var hungUp = false, spoken = false

    init() throws {
        guard let (listener, port) = loopbackSocket(SOCK_STREAM) else {
            throw Failure(what: "cannot listen on loopback: \(String(cString: strerror(errno)))")
        }
        self.listener = listener
        self.port = port
    }

    /// Waits (up to 10 s) for the client to connect.
    func accept() throws {
        var poller = pollfd(fd: listener, events: Int16(POLLIN), revents: 0)
        guard poll(&poller, 1, 10_000) == 1 else { throw Failure(what: "the client did not connect") }
        connection = Glibc.accept(listener, nil, nil)
        guard connection >= 0 else { throw Failure(what: "accept: \(String(cString: strerror(errno)))") }
        (hungUp, spoken, buffer) = (false, false, [])
    }

    /// The next whole packet (up to 10 s). A client that hangs up before its first packet
    /// (libmosquitto gives up a connection it found slow and makes another) is waited for on
    /// its next connection, whose first packet is then the one asked for.
    func packet() throws -> Packet {
        // Up to 30 s in all: the client's backoff between connections is 1, 2, 4… s.
        let deadline = Date().addingTimeInterval(30)
        var silent = 0
        while Date() < deadline {
            if let packet = packet(within: 10_000) { return packet }
            guard hungUp, !spoken else { throw Failure(what: hungUp ? "the client hung up" : "no packet came within 10 s") }
            silent += 1
            Glibc.close(connection)
            try accept()
        }
        throw Failure(what: "the client hung up before its first packet, \(silent) times in 30 s")
    }

    /// The next whole packet, or nil when none comes within `milliseconds`.
    func packet(within milliseconds: Int32) -> Packet? {
        while true {
            if let packet = take() {
                spoken = true
                return packet
            }
            var poller = pollfd(fd: connection, events: Int16(POLLIN), revents: 0)
            guard poll(&poller, 1, milliseconds) == 1 else { return nil }
            var chunk = [UInt8](repeating: 0, count: 4096)
            let count = read(connection, &chunk, chunk.count)
            guard count > 0 else {
                hungUp = true
                return nil
            }
            buffer += chunk[..<count]
        }
    }

    /// A packet off the front of the buffer, when a whole one is there: the fixed header's
    /// type and flags, its remaining length (base-128, least significant first), the body.
    private func take() -> Packet? {
        guard buffer.count >= 2 else { return nil }
        var length = 0, shift = 0, index = 1
        while true {
            guard index < buffer.count, index <= 4 else { return nil }
            length |= Int(buffer[index] & 0x7F) << shift
            shift += 7
            index += 1
            if buffer[index - 1] & 0x80 == 0 { break }
        }
        guard buffer.count >= index + length else { return nil }
        let packet = Packet(type: buffer[0] & 0xF0, flags: buffer[0] & 0x0F, body: Array(buffer[index..<(index + length)]))
        buffer.removeFirst(index + length)
        return packet
    }

    func write(_ bytes: [UInt8]) {
        _ = bytes.withUnsafeBytes { Glibc.write(connection, $0.baseAddress, $0.count) }
    }

    func close() {
        if connection >= 0 { Glibc.close(connection) }
        Glibc.close(listener)
    }
}
