import Crypto
import Foundation
import Testing
@testable import Nearby

/// What a hostile peer can send, and what it gets.
@Suite struct HostilePeerTests {
    static func announce(_ key: Curve25519.Signing.PrivateKey, name: String = "mallory", at timestamp: UInt64, sequence: UInt32 = 0,
                         interval: UInt32 = 5000, avatar: AvatarReference = .none) -> Heard {
        Heard.announce(key, name: name, at: timestamp, sequence: sequence, interval: interval, avatar: avatar)
    }

    /// An announcement as another seance (which checks nothing) would write it, read here.
    func decodeAnnounce(name: String, avatar: AvatarReference = .none) -> Result<Announcement, DecodeError> {
        let key = Curve25519.Signing.PrivateKey()
        var body = Array(Data(repeating: 1, count: 32)) + [0, UInt8(name.utf8.count)] + Array(name.utf8)
        switch avatar {
        case .none: body += [0, 0]
        case .emoji(let emoji): body += [1, UInt8(emoji.utf8.count)] + Array(emoji.utf8)
        case .image(let hash): body += [2, 32] + hash
        }
        body += [0, 1, 0, 0, 0x13, 0x88]
        let bytes = try! Packet.encode(kind: KindTable.announce, body: body, signer: key, timestamp: 1, sequence: 1)
        return Result { () throws(DecodeError) in try Packet.decode(bytes).read(Announcement.self) }
    }

    @Test func receivedNamesAndAvatarsFollowTheLocalRules() {
        for bad in ["bob#1234", "bob ", " bob", String(repeating: "b", count: 33), String(repeating: "é", count: 60),
                    "bob\u{202E}kcab", "b\u{200B}ob", "\u{1B}[2Jbob", "bob\u{FEFF}", "tab\tname", "a\u{2028}b", "x\u{E000}"] {
            #expect(throws: DecodeError.malformedPayload("name"), "\(bad.debugDescription)") { try decodeAnnounce(name: bad).get() }
        }
        for good in ["bob", "Ünïcode 👻", "alice smith", "🚶‍♂️ walker", "日本語の名前"] {
            #expect(throws: Never.self) { try decodeAnnounce(name: good).get() }
        }
    }

    /// What held in the first round and what did not (issue 39): 17 emoji joined by ZWJ into no
    /// recommended sequence; a letter under 60 combining accents; `bob🏴` followed by invisible
    /// tag characters spelling text. The longest recommended sequences, Vietnamese and Tibetan
    /// marks, and the flags of England, Scotland and Wales stay valid.
    @Test func namesThatPoseAreRefused() {
        let seventeen = Array(repeating: "👻", count: 17).joined(separator: "\u{200D}")
        let tower = "a" + String(repeating: "\u{0301}", count: 60)
        let tagged = "bob🏴" + String(String.UnicodeScalarView("evil".unicodeScalars.map { Unicode.Scalar($0.value + 0xE0000)! }))
        let fakeFlag = "🏴" + String(String.UnicodeScalarView("usxx".unicodeScalars.map { Unicode.Scalar($0.value + 0xE0000)! }))
            + "\u{E007F}"
        #expect(NameRules.violation(seventeen) == .joinedEmoji)
        #expect(NameRules.violation(tower) == .stackedMarks)
        #expect(NameRules.violation(tagged) == .invisible)
        #expect(NameRules.violation(fakeFlag) == .invisible)
        for bad in [seventeen, tower, tagged, fakeFlag] {
            #expect(throws: DecodeError.malformedPayload("name"), "\(bad.debugDescription)") { try decodeAnnounce(name: bad).get() }
        }
        let scotland = "🏴" + String(String.UnicodeScalarView("gbsct".unicodeScalars.map { Unicode.Scalar($0.value + 0xE0000)! })) + "\u{E007F}"
        for good in ["👨‍👩‍👧‍👦 family", "👩‍❤️‍💋‍👨", "Nguyễn", "ཀྵྨཱ", "bob " + scotland, "e\u{0301}\u{0323}"] {
            #expect(NameRules.violation(good) == nil, "\(good.debugDescription)")
        }
    }

    /// Letters and symbols that draw as nothing (issue 49): Hangul fillers, the blank Braille
    /// pattern. Found in Unicode's data, they are spaces in a name: never at its ends, never two
    /// together, and set aside when names are compared, so `bob` and a filler looks like `bob`.
    @Test func blankLettersAreSpaces() {
        let blanks: [Unicode.Scalar] = ["\u{115F}", "\u{1160}", "\u{3164}", "\u{FFA0}", "\u{2800}"]
        for blank in blanks {
            #expect(NameRules.isBlank(blank), "\(blank.debugDescription)")
            let character = String(blank)
            #expect(NameRules.violation("bob" + character) == .surroundingSpace)
            #expect(NameRules.violation(character + "bob") == .surroundingSpace)
            #expect(NameRules.violation("bob " + character + "x") == .doubleSpace)
            #expect(NameRules.violation("bob" + character + "x") == nil, "one between letters is a space")
            #expect(NameRules.skeleton("bo" + character + "b") == NameRules.skeleton("bob"))
            #expect(throws: DecodeError.malformedPayload("name")) { try decodeAnnounce(name: "bob" + character).get() }
        }
        #expect(NameRules.violation("alice  smith") == .doubleSpace)
        // Letters that draw are no blanks: Hangul syllables and jamo, Braille dots, a space.
        for letter: Unicode.Scalar in ["\u{AC00}", "\u{1100}", "\u{3131}", "\u{2801}", "a", " "] {
            #expect(!NameRules.isBlank(letter), "\(letter.debugDescription)")
        }
        #expect(NameRules.violation("한국어 이름") == nil)
    }

    /// Names that look like another once case, accents, invisible characters and look-alike
    /// letters are set aside look the same.
    @Test func lookAlikeNamesShareASkeleton() {
        for lookAlike in ["BOB", "bób", "b\u{043E}b", "b0b", "ｂｏｂ", "b\u{03BF}b", "Bob\u{FE0F}"] {
            #expect(NameRules.skeleton(lookAlike) == NameRules.skeleton("bob"), "\(lookAlike.debugDescription)")
        }
        #expect(NameRules.skeleton("bill") == NameRules.skeleton("biII"))
        #expect(NameRules.skeleton("rob") != NameRules.skeleton("bob"))
        #expect(NameRules.skeleton("日本") == "日本")
        for bad in ["ABC", "a", "👻👻", "\u{1B}]0;x\u{7}", "\u{202E}👻"] {
            #expect(throws: DecodeError.malformedPayload("emoji"), "\(bad.debugDescription)") {
                try decodeAnnounce(name: "bob", avatar: .emoji(bad)).get()
            }
        }
        #expect(throws: Never.self) { try decodeAnnounce(name: "bob", avatar: .emoji("❤️")).get() }
    }

    /// A flood of keys cannot grow the table past its capacity; the peers that refreshed (the
    /// real ones) stay, the one-shot keys churn among themselves.
    @Test func theTableIsBoundedAndKeepsEstablishedPeers() {
        var table = PresenceTable(timing: PresenceTiming(interval: 5), capacity: 16)
        let real = Curve25519.Signing.PrivateKey()
        _ = table.receive(Self.announce(real, name: "real", at: 1), from: Route(transport: "lan", address: "h"), now: 0)
        _ = table.receive(Self.announce(real, name: "real", at: 2), from: Route(transport: "lan", address: "h"), now: 1)
        var evicted = 0
        for i in 0..<500 {
            let events = table.receive(Self.announce(.init(), at: 1, interval: UInt32.max), from: Route(transport: "lan", address: "h"), now: 2 + Double(i) / 1000)
            evicted += events.filter { if case .left(_, .evicted) = $0 { return true } else { return false } }.count
        }
        #expect(table.peers.count == 16)
        #expect(evicted == 500 - 15)
        #expect(table.peer(real.publicKey.rawRepresentation) != nil)
    }

    /// An interval of 2^32-1 ms is taken as at most an hour, and ticks with nothing due cost no
    /// scan of the table.
    @Test func intervalsAreClampedAndIdleTicksScanNothing() {
        var table = PresenceTable(timing: PresenceTiming(interval: 5))
        for _ in 0..<200 { _ = table.receive(Self.announce(.init(), at: 1, interval: UInt32.max), from: Route(transport: "lan", address: "h"), now: 0) }
        for tick in 1...10_000 { #expect(table.expire(now: Double(tick) * 0.05).isEmpty) }
        #expect(table.expiryScans == 0)
        #expect(table.expire(now: 3_600 * 3.5 + 1).count == 200)
        #expect(table.expiryScans == 1)
    }

    @Test func anOldAnnouncementReplayedAfterGoodbyeDoesNotResurrect() {
        var table = PresenceTable(timing: PresenceTiming(interval: 5))
        let bob = Curve25519.Signing.PrivateKey()
        let captured = Self.announce(bob, name: "bob", at: 10, sequence: 1)
        _ = table.receive(captured, from: Route(transport: "lan", address: "198.18.0.2"), now: 0)
        let goodbye = Heard.goodbye(bob, at: 20, sequence: 2)
        #expect(table.receive(goodbye, from: Route(transport: "lan", address: "198.18.0.2"), now: 1).count == 1)
        #expect(table.receive(captured, from: Route(transport: "lan", address: "198.18.0.66"), now: 2).isEmpty)
        #expect(table.peers.isEmpty)
        // Expired and evicted keys are remembered too; a genuinely newer announcement returns.
        #expect(table.receive(Self.announce(bob, name: "bob", at: 30, sequence: 3), from: Route(transport: "lan", address: "198.18.0.2"), now: 3).count == 1)
    }

    /// The same announcement by a second transport adds that route; replayed by someone else on
    /// a transport that already has one, it neither moves the route nor keeps a silent peer alive.
    @Test func aReplayCannotRedirectOrProlongAPeer() {
        var table = PresenceTable(timing: PresenceTiming(interval: 1))
        let bob = Curve25519.Signing.PrivateKey()
        let latest = Self.announce(bob, name: "bob", at: 10, sequence: 1, interval: 1000)
        let lan = Route(transport: "lan", address: "198.18.0.2:47777")
        #expect(table.receive(latest, from: lan, now: 0).count == 1)
        #expect(table.receive(latest, from: Route(transport: "broker", address: "bob"), now: 0.01).isEmpty)
        #expect(table.peers.count == 1)
        #expect(table.peer(bob.publicKey.rawRepresentation)?.routes.map(\.transport) == ["lan", "broker"])
        // Mallory replays it on the LAN from her own address, and again from bob's.
        _ = table.receive(latest, from: Route(transport: "lan", address: "198.18.0.66:47777"), now: 3)
        _ = table.receive(latest, from: lan, now: 3)
        #expect(table.peer(bob.publicKey.rawRepresentation)?.routes.first?.source == lan)
        #expect(table.peer(bob.publicKey.rawRepresentation)?.lastSeen == 0.01)
        #expect(table.expire(now: 4).count == 1, "bob went quiet: the replays did not keep him")
    }

    @Test func replayMemoryIsBoundedToo() {
        var table = PresenceTable(timing: PresenceTiming(interval: 5), capacity: 8)
        for i in 0..<(PresenceTable.retiredCapacity * 3) {
            _ = table.receive(Self.announce(.init(), at: 1), from: Route(transport: "lan", address: "h"), now: Double(i))
        }
        #expect(table.peers.count == 8)
        #expect(table.retiredCount <= PresenceTable.retiredCapacity)
    }

    @Test func assemblerBuffersNoMoreThanTheSendersWindow() {
        var assembler = IncomingAssembler(delivered: 0)
        let piece = Data(repeating: 0x61, count: 900)
        for sequence in 2...UInt32(IncomingAssembler.bufferLimit) {
            #expect(assembler.receive(Fragment(sequence: sequence, isLast: false, sentAt: 1, text: piece)) == .buffered)
        }
        #expect(assembler.receive(Fragment(sequence: UInt32(IncomingAssembler.bufferLimit) + 1, isLast: false, sentAt: 1, text: piece))
                    == .outOfWindow)
        #expect(assembler.bufferedCount < IncomingAssembler.bufferLimit)
        // A message that never ends is cut at the fragment limit and handed out as not whole.
        guard case .messages(let messages) = assembler.receive(Fragment(sequence: 1, isLast: false, sentAt: 1, text: piece)) else {
            Issue.record("nothing handed out"); return
        }
        #expect(messages.allSatisfy { !$0.isWhole && $0.lastSequence - $0.firstSequence + 1 <= UInt32(IncomingAssembler.maximumFragments) })
    }
}

/// One reading of `name#fp` for everything that looks a peer up (open, trust, curse, spell).
@Suite struct HandleTests {
    @Test func aHandleNamesAPeerWhateverTheCaseOfItsFingerprint() {
        let key = Curve25519.Signing.PrivateKey().publicKey.rawRepresentation
        let peer = Peer(signingKey: key, announcement: Announcement(name: "Ghost", agreementKey: Data(repeating: 1, count: 32), plane: 4,
                                                                   avatar: .none, unicastPort: 1, intervalMilliseconds: 5000),
                        route: Route(transport: "lan", address: "198.18.0.2:1"), lastSeen: 0)
        #expect(peer.answers(to: "ghost") && peer.answers(to: "GHOST#" + peer.fingerprint.uppercased()))
        #expect(!peer.answers(to: "ghost#0000") || peer.fingerprint == "0000")
        #expect(PeerIdentity.split("a#b#C1") == ("a#b", "c1"))
    }
}
