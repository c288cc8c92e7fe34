import CMosquitto
import Dispatch
import Foundation
import Synchronization
import Wire

/// A broker as a transport, through libmosquitto (MQTT 3.1.1). Topics, under a prefix:
/// `presence/ID` carries every broadcast frame, the latest announcement retained (so a newcomer
/// hears everyone at once) and cleared by a goodbye or, when the process dies, by the will;
/// `inbox/ID` carries direct frames at QoS 1. ID is the signing key's long fingerprint. The
/// broker, and anyone subscribed to everything, sees only signed frames and ciphertext.
///
/// libmosquitto's own thread runs the connection, reconnecting with a capped backoff; its
/// callbacks only hand frames on (the threading contract). Nothing here waits on the network
/// on the caller's thread: the connection is made on a private queue.
public final class MQTTTransport: Transport, @unchecked Sendable {
    public struct Configuration: Sendable, Equatable {
        public var address: BrokerAddress
        /// The CA certificates to check an `mqtts` broker with (PEM); nil: the system's.
        public var caFile: String?
        public var prefix: String
        /// Seconds between keep-alive pings; a dead connection is noticed within 1.5 times this.
        public var keepalive: Int32

        public static let defaultPrefix = "seance/"
        public static let caFileSystem = "/etc/ssl/certs/ca-certificates.crt"

        public init(address: BrokerAddress, caFile: String? = nil, prefix: String = defaultPrefix, keepalive: Int32 = 10) {
            self.address = address
            self.caFile = caFile
            self.prefix = prefix
            self.keepalive = keepalive
        }
    }

    public enum Failure: Error, Equatable, CustomStringConvertible {
        case client(String)
        case tls(broker: String, reason: String)

        public var description: String {
            switch self {
            case .client(let why): return "cannot make an MQTT client: \(why)"
            case .tls(let broker, let reason): return "cannot use TLS with the broker \(broker): \(reason)"
            }
        }
    }

    /// Frames larger than this are not the program's: dropped before anything reads them.
    static let maximumFrame = 65_536
    /// Reconnection: after 1 s, doubling, at most 30 s apart.
    static let reconnectDelay: UInt32 = 1
    static let reconnectDelayMaximum: UInt32 = 30

    private struct State {
        var client: ClientHandle?
        var deliver: (@Sendable ([UInt8], Route) -> Void)?
        var report: (@Sendable (TransportState) -> Void)?
        var connected = false
        /// What `report` was last told (starting counts as up: no news is good news).
        var reportedUp = true
        var stopping = false
        /// Our latest announcement, published again on every (re)connection: a broker that
        /// restarted without persistence has lost it.
        var presence: [UInt8]?
    }

    public let name = "broker"
    public let configuration: Configuration
    /// Our own topics' ID.
    let ownID: String
    private let state = Mutex(State())
    private let queue = DispatchQueue(label: "seance.mqtt")

    public init(configuration: Configuration, signingKey: Data) {
        self.configuration = configuration
        ownID = PeerIdentity.longFingerprint(of: signingKey)
    }

    deinit { stop() }

    public var description: String { "\(name) \(configuration.address)" }
    public var directPort: UInt16 { 0 }

    var presenceTopic: String { configuration.prefix + "presence/" + ownID }
    var inboxTopic: String { configuration.prefix + "inbox/" + ownID }

    /// A peer's direct frames go to its inbox, named by its key (whatever topic its presence
    /// came by: anyone can publish anywhere, only the signature says who it is).
    public func directRoute(from source: Route, port: UInt16, signingKey: Data) -> Route {
        Route(transport: name, address: PeerIdentity.longFingerprint(of: signingKey))
    }

    private static let libraryReady: Bool = { mosquitto_lib_init() == MOSQ_ERR_SUCCESS.rawValue }()

    public func start(deliver: @escaping @Sendable ([UInt8], Route) -> Void, report: @escaping @Sendable (TransportState) -> Void) throws {
        guard Self.libraryReady else { throw Failure.client("libmosquitto did not initialise") }
        // 23 characters at most, as MQTT 3.1.1 promises every broker takes: ours, and unique.
        let clientID = "seance-" + ownID.prefix(10) + "-" + String(format: "%05x", UInt32.random(in: 0..<0x100000))
        guard let client = mosquitto_new(clientID, true, Unmanaged.passUnretained(self).toOpaque()) else {
            throw Failure.client(String(cString: strerror(errno)))
        }
        do {
            try configure(client)
        } catch {
            mosquitto_destroy(client)
            throw error
        }
        let handle = ClientHandle(pointer: client)
        let fresh = State(client: handle, deliver: deliver, report: report)
        state.withLock { $0 = fresh }
        let address = configuration.address, keepalive = configuration.keepalive
        queue.async {
            let client = handle.pointer
            // A host name is looked up here, off the caller's thread. A failure now is retried
            // by the loop like a lost connection.
            let result = mosquitto_connect_async(client, address.host, Int32(address.port), keepalive)
            if result != MOSQ_ERR_SUCCESS.rawValue { self.changed(up: false, why: "cannot reach the broker \(address): \(Self.describe(result))") }
            mosquitto_loop_start(client)
        }
    }

    private func configure(_ client: OpaquePointer) throws {
        mosquitto_int_option(client, MOSQ_OPT_PROTOCOL_VERSION, MQTT_PROTOCOL_V311)
        mosquitto_int_option(client, MOSQ_OPT_TCP_NODELAY, 1)
        let address = configuration.address
        if let user = address.user, mosquitto_username_pw_set(client, user, address.password) != MOSQ_ERR_SUCCESS.rawValue {
            throw Failure.client("the user name or password cannot be used")
        }
        if address.tls {
            let caFile = configuration.caFile ?? Configuration.caFileSystem
            guard access(caFile, R_OK) == 0 else {
                throw Failure.tls(broker: address.description, reason: "cannot read the CA file \(caFile): \(String(cString: strerror(errno)))")
            }
            let result = mosquitto_tls_set(client, caFile, nil, nil, nil, nil)
            if result != MOSQ_ERR_SUCCESS.rawValue { throw Failure.tls(broker: address.description, reason: Self.describe(result)) }
        }
        // If this process dies, the broker clears our retained presence for us.
        mosquitto_will_set(client, presenceTopic, 0, nil, 1, true)
        mosquitto_reconnect_delay_set(client, Self.reconnectDelay, Self.reconnectDelayMaximum, true)
        mosquitto_connect_callback_set(client) { _, context, code in
            guard let context else { return }
            Unmanaged<MQTTTransport>.fromOpaque(context).takeUnretainedValue().connected(code: code)
        }
        mosquitto_disconnect_callback_set(client) { _, context, code in
            guard let context else { return }
            Unmanaged<MQTTTransport>.fromOpaque(context).takeUnretainedValue().disconnected(code: code)
        }
        mosquitto_message_callback_set(client) { _, context, message in
            guard let context, let message else { return }
            Unmanaged<MQTTTransport>.fromOpaque(context).takeUnretainedValue().received(message.pointee)
        }
    }

    // MARK: On libmosquitto's thread

    private func connected(code: Int32) {
        guard code == 0 else {
            // Refused: wrong credentials, not authorised, … libmosquitto tries again later.
            let reason = String(cString: mosquitto_connack_string(code))
            changed(up: false, why: "the broker \(configuration.address) refused the connection: \(reason)")
            return
        }
        let (handle, presence) = state.withLock { state -> (ClientHandle?, [UInt8]?) in
            state.connected = true
            return (state.client, state.presence)
        }
        guard let client = handle?.pointer else { return }
        mosquitto_subscribe(client, nil, configuration.prefix + "presence/+", 1)
        mosquitto_subscribe(client, nil, inboxTopic, 1)
        if let presence { publish(presence, to: presenceTopic, retain: true) }
        changed(up: true, why: "")
    }

    private func disconnected(code: Int32) {
        let stopping = state.withLock { state -> Bool in
            state.connected = false
            return state.stopping
        }
        if !stopping { changed(up: false, why: "lost the broker \(configuration.address) (\(Self.describe(code))); reconnecting") }
    }

    private func received(_ message: mosquitto_message) {
        guard message.payloadlen > 0, message.payloadlen <= Self.maximumFrame, let payload = message.payload,
              let topic = message.topic.map({ String(cString: $0) }) else { return }
        let bytes = Array(UnsafeRawBufferPointer(start: payload, count: Int(message.payloadlen)))
        let presencePrefix = configuration.prefix + "presence/"
        let route: Route
        if topic == inboxTopic {
            // Who sent it is known only once its signature is checked, above this transport.
            route = Route(transport: name, address: "")
        } else if topic.hasPrefix(presencePrefix) {
            let id = String(topic.dropFirst(presencePrefix.count))
            guard id != ownID else { return }
            route = Route(transport: name, address: id)
        } else {
            return
        }
        state.withLock { $0.deliver }?(bytes, route)
    }

    /// Tells the engine when the broker starts or stops carrying, once per change.
    private func changed(up: Bool, why: String) {
        let report = state.withLock { state -> (@Sendable (TransportState) -> Void)? in
            guard !state.stopping, state.reportedUp != up else { return nil }
            state.reportedUp = up
            return state.report
        }
        report?(up ? .up : .down(why))
    }

    // MARK: Sending (from the engine)

    public func broadcast(_ bytes: [UInt8], as kind: BroadcastKind) {
        switch kind {
        case .presence:
            state.withLock { $0.presence = bytes }
            publish(bytes, to: presenceTopic, retain: true)
        case .farewell:
            // Said to whoever listens now; then the retained announcement is withdrawn.
            state.withLock { $0.presence = nil }
            publish(bytes, to: presenceTopic, retain: false)
            publish([], to: presenceTopic, retain: true)
        case .question:
            // Newcomers get every retained announcement when they subscribe: nobody need ask.
            break
        case .other:
            publish(bytes, to: presenceTopic, retain: false)
        }
    }

    public func send(_ bytes: [UInt8], to route: Route) {
        guard route.transport == name, route.address.count == 32, route.address.allSatisfy(\.isHexDigit) else { return }
        publish(bytes, to: configuration.prefix + "inbox/" + route.address, retain: false)
    }

    private func publish(_ bytes: [UInt8], to topic: String, retain: Bool) {
        // libmosquitto queues what is published while the connection is down and sends it on
        // reconnecting; seance's own acknowledgements make delivery end to end regardless.
        guard let client = state.withLock({ $0.stopping ? nil : $0.client })?.pointer else { return }
        bytes.withUnsafeBytes { buffer in
            _ = mosquitto_publish(client, nil, topic, Int32(buffer.count), buffer.baseAddress, 1, retain)
        }
    }

    /// Disconnects (cleanly: the will is not sent; a farewell has withdrawn our presence) and
    /// releases the client and its thread. Safe to call twice.
    public func stop() {
        let (handle, connected) = state.withLock { state -> (ClientHandle?, Bool) in
            defer { state.client = nil; state.stopping = true; state.deliver = nil; state.report = nil }
            return (state.client, state.connected)
        }
        guard let client = handle?.pointer else { return }
        queue.sync {
            mosquitto_disconnect(client)
            // Connected: the thread ends once what was queued (the farewell) and the disconnect
            // have gone. Not connected: it may be waiting to reconnect; it is stopped at once.
            mosquitto_loop_stop(client, !connected)
            mosquitto_destroy(client)
        }
    }

    /// The client, to hand to the private queue (libmosquitto's calls are thread-safe).
    private struct ClientHandle: @unchecked Sendable { let pointer: OpaquePointer }

    static func describe(_ code: Int32) -> String {
        if code == MOSQ_ERR_ERRNO.rawValue { return String(cString: strerror(errno)) }
        return String(cString: mosquitto_strerror(code))
    }
}
