import Crypto
import Foundation
@testable import Nearby

/// What the table of peers takes: an announcement or a goodbye, with the packet that carried
/// it (its sender, time and sequence).
struct Heard {
    var news: PresenceNews
    var packet: Packet

    static func announce(_ key: Curve25519.Signing.PrivateKey, name: String = "mallory", plane: UInt8 = 0, at timestamp: UInt64,
                         sequence: UInt32 = 0, interval: UInt32 = 5000, avatar: AvatarReference = .none, chain: ChainLink? = nil) -> Heard {
        var announcement = Announcement(name: name, agreementKey: Data(repeating: 1, count: 32), plane: plane, avatar: avatar,
                                        unicastPort: 1, intervalMilliseconds: interval)
        announcement.refreshChain = chain
        return Heard(news: .announce(announcement),
                     packet: try! Packet(announcement, sender: key.publicKey.rawRepresentation, timestamp: timestamp, sequence: sequence))
    }

    static func goodbye(_ key: Curve25519.Signing.PrivateKey, at timestamp: UInt64, sequence: UInt32) -> Heard {
        Heard(news: .goodbye, packet: try! Packet(Goodbye(), sender: key.publicKey.rawRepresentation, timestamp: timestamp, sequence: sequence))
    }
}

extension PresenceTable {
    mutating func receive(_ heard: Heard, from route: Route, now: Double) -> [PresenceEvent] {
        receive(heard.news, in: heard.packet, from: route, now: now)
    }
}
