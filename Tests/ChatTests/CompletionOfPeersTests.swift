import Foundation
import Nearby
import Wire
import Shell
import Storage
import Testing
@testable import Chat

/// `open` completes the names of spectres and peers, spaces and all, from their first letters.
@Suite struct CompletionOfPeersTests {
    func shell() -> Shell {
        let shell = Shell(console: Console.capturing(),
                          session: Session(dataDirectory: DataDirectory(path: "/nonexistent/seance-test"), schema: Schema([.settings]),
                                           random: SeededRandom(seed: 1)))
        let girl = LocalPeer(name: "the Girl in the Well", kind: "spectre", glyph: "👻") { _ in nil }
        let grey = LocalPeer(name: "the Grey Lady", kind: "spectre", glyph: "👻") { _ in nil }
        let peers = ArgumentKind.dynamic { ChatText.peerCandidates(locals: [girl, grey], present: [], past: []) }
        shell.register(Command("open", scope: .global, arguments: [.positional("peer", peers)], summary: "open") { _ in })
        return shell
    }

    @Test func aNameWithSpacesCompletesFromItsStart() {
        let shell = shell()
        for typed in ["open the", "open 'the", "open \"the"] {
            #expect(shell.completion(for: typed).candidates.map(\.text) == ["the Girl in the Well", "the Grey Lady"], "\(typed)")
        }
        let one = shell.completion(for: "open 'the Gi")
        #expect(one.candidates.map(\.text) == ["the Girl in the Well"])
        #expect(one.insertion(current: "the Gi") == "'the Girl in the Well' ")
        // From the first word the common part goes in, its quote left open for the rest.
        #expect(shell.completion(for: "open the").insertion(current: "the") == "'the G")
    }

    /// Issue 52: the fingerprint only where a name is not enough (two keys call themselves ben).
    @Test func aNameCompletesAloneUnlessTwoKeysShareIt() {
        func peer(_ name: String, _ byte: UInt8) -> Peer {
            Peer(signingKey: Data(repeating: byte, count: 32),
                 announcement: Announcement(name: name, agreementKey: Data(repeating: byte, count: 32), plane: 0, avatar: .none,
                                            unicastPort: 1, intervalMilliseconds: 5000),
                 route: Route(transport: "memory", address: "h"), lastSeen: 0)
        }
        let one = ChatText.peerCandidates(locals: [], present: [peer("ben", 1), peer("cat", 2)], past: []).map(\.text)
        #expect(one == ["ben", "cat"])
        let two = ChatText.peerCandidates(locals: [], present: [peer("ben", 1), peer("ben", 3), peer("cat", 2)], past: []).map(\.text)
        #expect(two.count == 3 && two.filter { $0.hasPrefix("ben#") }.count == 2 && two.contains("cat"), "\(two)")
    }
}
