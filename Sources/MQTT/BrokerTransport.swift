import Foundation
import Wire

/// A broker as seance uses it: two clients of one server (`MQTTTransport`), one for presence
/// and broadcasts, one for the mailbox, which sends direct frames and mail and whose persistent
/// session has the broker hold our inbox while we are away: what a client publishes and reads
/// for mail never shares a connection or a client ID with its presence. The engine sees one
/// transport; only presence's client says when the broker carries or not.
package final class BrokerTransport: Transport, Sendable {
    let presence: MQTTTransport
    let mailbox: MQTTTransport

    package init(configuration: MQTTTransport.Configuration, identity: Identity) {
        let key = identity.signingPublicKey
        presence = MQTTTransport(configuration: configuration, signingKey: key, role: .presence, readsInbox: false)
        mailbox = MQTTTransport(configuration: configuration, signingKey: key, role: .mailbox,
                                mailboxID: BrokerTopics.mailboxClientID(of: identity))
    }

    package var name: String { presence.name }
    package var description: String { presence.description }
    package var directPort: UInt16 { 0 }
    package var keepsPresence: Bool { true }

    package func start(deliver: @escaping @Sendable ([UInt8], Route) -> Void, report: @escaping @Sendable (TransportState) -> Void) throws {
        try presence.start(deliver: deliver, report: report)
        do {
            // Its failures are presence's too (the same server): said once, by presence.
            try mailbox.start(deliver: deliver, report: { _ in })
        } catch {
            presence.stop()
            throw error
        }
    }

    package func broadcast(_ bytes: [UInt8], as kind: BroadcastKind) { presence.broadcast(bytes, as: kind) }
    @discardableResult
    package func send(_ bytes: [UInt8], to route: Route) -> Bool { mailbox.send(bytes, to: route) }
    package func setInbox(topics: Set<String>, forgetting: Set<String>) { mailbox.setInbox(topics: topics, forgetting: forgetting) }
    package var inboxStatus: InboxStatus? { mailbox.inboxStatus }
    package func directRoute(from source: Route, port: UInt16, signingKey: Data) -> Route {
        presence.directRoute(from: source, port: port, signingKey: signingKey)
    }
    package func subscribe(topic: String) { presence.subscribe(topic: topic) }
    package func unsubscribe(topic: String) { presence.unsubscribe(topic: topic) }

    package func stop() {
        presence.stop()
        mailbox.stop()
    }
}
