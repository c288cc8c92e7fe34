import CMosquitto
import Foundation
import Wire

/// A broker as the settings give it: where, the CA file of a TLS broker, the topic prefix, the
/// keep-alive (`MQTTTransport.Configuration`).
package struct BrokerConfiguration: Sendable, Equatable {
    package var address: BrokerAddress
    /// The CA certificates to check an `mqtts` broker with (PEM); nil: the system's.
    package var caFile: String?
    package var prefix: String
    /// Seconds between keep-alive pings; a dead connection is noticed within 1.5 times this.
    package var keepalive: Int32

    package static let defaultPrefix = "seance/"
    package static let caFileSystem = "/etc/ssl/certs/ca-certificates.crt"

    package init(address: BrokerAddress, caFile: String? = nil, prefix: String = defaultPrefix, keepalive: Int32 = 10) {
        self.address = address
        self.caFile = caFile
        self.prefix = prefix
        self.keepalive = keepalive
    }
}

extension BrokerConfiguration {
    /// What a message on `topic` is to the engine: the frame (unpadded, from a pair's topic or a
    /// rendezvous, where who sent it is known only inside it) and the route it came by; nil for
    /// what is none of ours. On a presence topic the route names the key's ID (our own too: our
    /// frames come back, and so would those of this profile online elsewhere), and an empty
    /// message is that presence withdrawn (a goodbye, or a will). A room's beacon's route names
    /// nobody: its signature says whose.
    func arrival(_ bytes: [UInt8], on topic: String, transport: String) -> ([UInt8], Route)? {
        let presence = prefix + "presence/"
        if topic.hasPrefix(presence) {
            let id = String(topic.dropFirst(presence.count))
            guard !bytes.isEmpty || (id.count == 32 && id.allSatisfy(\.isHexDigit)) else { return nil }
            return (bytes, Route(transport: transport, address: id))
        }
        guard !bytes.isEmpty, topic.hasPrefix(prefix) else { return nil }
        guard topic.hasPrefix(prefix + BrokerTopics.prefix) else { return (bytes, Route(transport: transport, address: "")) }
        return BrokerPadding.unpad(bytes).map { ($0, Route(transport: transport, address: "")) }
    }
}

/// Why an MQTT client could not be made (`MQTTTransport.Failure`).
package enum BrokerClientFailure: Error, Equatable, CustomStringConvertible {
    case client(String)
    case tls(broker: String, reason: String)

    package var description: String {
        switch self {
        case .client(let why): return "cannot make an MQTT client: \(why)"
        case .tls(let broker, let reason): return "cannot use TLS with the broker \(broker): \(reason)"
        }
    }
}

/// libmosquitto's result codes, said for the user.
enum MosquittoCodes {
    /// Why the broker cannot be used, for the user.
    static func failure(_ code: Int32, broker: String) -> String {
        switch code {
        case MOSQ_ERR_TLS.rawValue, MOSQ_ERR_TLS_HANDSHAKE.rawValue:
            return "cannot use TLS with the broker \(broker): \(describe(code)); trying again"
        case MOSQ_ERR_CONN_REFUSED.rawValue, MOSQ_ERR_AUTH.rawValue:
            return "the broker \(broker) refused the connection; trying again"
        default:
            return "cannot reach the broker \(broker): \(describe(code)); trying again"
        }
    }

    static func describe(_ code: Int32) -> String {
        let text = code == MOSQ_ERR_ERRNO.rawValue ? String(cString: strerror(errno)) : String(cString: seance_mosquitto_strerror(code))
        return text.hasSuffix(".") ? String(text.dropLast()) : text
    }
}
