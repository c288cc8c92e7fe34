import Accounts
import Foundation
import Glibc
import Nearby
import Shell
import Storage
import TestSupport
import Testing
@testable import Chat

/// Trust on first use: the first key seen for a name stays trusted; another key with the name
/// is flagged every time it appears, never the trusted one; `trust` switches.
@Suite struct TrustTests {
    func peer(_ key: UInt8, _ name: String = "bob") -> Peer {
        Peer(signingKey: Data(repeating: key, count: 32),
             announcement: Announcement(name: name, agreementKey: Data(repeating: 1, count: 32), plane: 0, avatar: .none,
                                        unicastPort: 1, intervalMilliseconds: 5000),
             route: Route(transport: "memory", address: "h"), lastSeen: Double(key))
    }

    @Test func theFirstKeyStaysTrustedAndTheOtherIsFlaggedEveryTime() throws {
        let directory = temporaryDirectory("trust")
        defer { removeDirectory(directory) }
        let database = try testDatabase(directory + "/db.sqlite")
        let real = peer(1), impostor = peer(2), realHandle = peer(1).handle
        #expect(ChatMode.remember(real, in: database) == nil)
        for _ in 0..<3 {
            #expect(ChatMode.remember(impostor, in: database) == realHandle)
            #expect(ChatMode.remember(real, in: database) == nil)  // Never the trusted one.
        }
        #expect(try ChatMode.trust(impostor.handle, in: database) == impostor.handle)
        #expect(ChatMode.remember(impostor, in: database) == nil)
        #expect(ChatMode.remember(real, in: database) == impostor.handle)
        #expect(throws: UserError.self) { try ChatMode.trust("bob#ffff", in: database) }
        #expect(throws: UserError.self) { try ChatMode.trust("bob", in: database) }
    }
}
