import Testing
import Wire
@testable import MQTT

/// Broker URLs as `--broker` and `seance.conf` take them; a password never shown.
@Suite struct BrokerAddressTests {
    @Test func readsEveryPart() throws {
        let plain = try BrokerAddress(parsing: "mqtt://198.18.0.1")
        #expect(!plain.tls && plain.user == nil && plain.password == nil && plain.host == "198.18.0.1" && plain.port == 1883)
        let full = try BrokerAddress(parsing: "mqtts://ann:s%40cret:x@broker.test:8884/")
        #expect(full.tls && full.user == "ann" && full.password == "s@cret:x" && full.host == "broker.test" && full.port == 8884)
        let v6 = try BrokerAddress(parsing: "mqtt://[2001:db8::1]:1999")
        #expect(v6.host == "2001:db8::1" && v6.port == 1999)
        #expect(try BrokerAddress(parsing: "MQTTS://h").port == 8883)
    }

    @Test func thePasswordIsNeverShown() throws {
        let address = try BrokerAddress(parsing: "mqtt://ann:hunter22@198.18.0.1:1883")
        #expect(address.description == "mqtt://ann:***@198.18.0.1:1883")
        #expect(!"\(address)".contains("hunter22"))
        // Not even in the error about a URL that does not parse.
        do {
            _ = try BrokerAddress(parsing: "http://ann:hunter22@198.18.0.1")
            Issue.record("an http URL was taken")
        } catch {
            #expect(!error.description.contains("hunter22"))
        }
        do {
            _ = try BrokerAddress(parsing: "mqtt://ann:hunter22@198.18.0.1/path")
            Issue.record("a path was taken")
        } catch {
            #expect(!error.description.contains("hunter22"), "\(error)")
        }
    }

    /// A user name is shown %-escaped where it needs to be, so that it reads back (and shows no
    /// control character); found by the fuzzer.
    @Test func aUserNameIsShownSoItReadsBack() throws {
        let address = try BrokerAddress(parsing: "mqtts://a%23b%3Bc%0A@broker.test")
        #expect(address.user == "a#b;c\n")
        #expect(address.description == "mqtts://a%23b%3Bc%0A@broker.test:8883")
        #expect(try BrokerAddress(parsing: address.description) == address)
    }

    @Test func refusesWhatIsNotABroker() {
        for bad in ["198.18.0.1", "mqtt://", "mqtt://h:0", "mqtt://h:70000", "mqtt://h:port", "ws://h", "mqtt://[::1", "mqtt://@h",
                    "mqtt://h h", "mqtt://h?x=1", "mqtt://a:b@h:%zz"] {
            #expect(throws: BrokerAddress.Invalid.self, "\(bad)") { try BrokerAddress(parsing: bad) }
        }
    }

    /// Presence is named by the key's long fingerprint; nothing else is: a direct frame goes only
    /// to a topic the router derived (a route is whatever the network said), and neither
    /// client ID names the key (issue 53: what a broker learns).
    @Test func onlyPresenceNamesTheKey() {
        let address = try! BrokerAddress(parsing: "mqtt://h")
        let identity = Identity()
        let transport = MQTTTransport(configuration: .init(address: address), signingKey: identity.signingPublicKey)
        #expect(transport.presenceTopic == "seance/presence/" + transport.ownID)
        #expect(transport.ownID.count == 32)
        let route = transport.directRoute(from: .init(transport: "broker", address: "anything/+/#"), port: 9, signingKey: .init(repeating: 2, count: 32))
        #expect(!transport.send([1, 2, 3], to: route), "no topic derived: nothing published")
        #expect(!transport.send([1, 2, 3], to: Route(transport: "broker", address: "t/../#")))
        let mailbox = MQTTTransport(configuration: .init(address: address), signingKey: identity.signingPublicKey, role: .mailbox,
                                    mailboxID: BrokerTopics.mailboxClientID(of: identity))
        for id in [transport.clientID, mailbox.clientID] {
            #expect(id.count <= 23 && !transport.ownID.contains(id.dropFirst(id.hasPrefix("seance-m-") ? 9 : 7).prefix(8)), "\(id)")
        }
        #expect(transport.clientID != transport.clientID, "presence's is new at each connection")
        #expect(mailbox.clientID == MQTTTransport(configuration: .init(address: address), signingKey: identity.signingPublicKey, role: .mailbox,
                                                  mailboxID: BrokerTopics.mailboxClientID(of: identity)).clientID)
    }
}
