import Crypto
import Foundation
import GRDB
import Nearby
import Shell
import Synchronization
import Testing
import TestWorld
import Wire
@testable import Rooms

/// The packet kind of a feature's frame, and the frame's sender (to lose some in a test).
@Suite struct RoomPacketTests {
    @Test func everyKindReadsBackWhatWasWritten() throws {
        let key = Data(repeating: 7, count: 32), id = Data(repeating: 9, count: 16), room = RoomID(major: 65535, minor: 0)
        func roundTrip<Kind: PacketKind & Equatable>(_ packet: Kind) throws {
            #expect(try Kind.read(try packet.encoded()) == packet)
        }
        try roundTrip(Beacon(room: room, counter: 42, intervalMilliseconds: 1000, closing: true))
        try roundTrip(RoomProbe(room: room, nonce: .max, proximity: .far))
        try roundTrip(RoomRoster(room: room, echo: 5, members: [.init(key: key, proximity: .near)]))
        try roundTrip(RoomMembership(room: room, action: .close))
        try roundTrip(RoomLine(room: room, host: key, id: id, recipient: key, sealed: Data(repeating: 1, count: 40)))
        try roundTrip(RoomLineAck(room: room, host: key, id: id))
    }

    @Test func malformedPacketsAreRefused() {
        func refused<Kind: PacketKind>(_ kind: Kind.Type, _ bytes: [UInt8]) -> Bool { (try? Kind.read(bytes)) == nil }
        // A roster longer than a room holds, a flag out of range, a byte that is no extension
        // field, an unknown proximity, a line too short to be sealed.
        #expect(refused(RoomRoster.self, [0, 1, 0, 2] + [UInt8](repeating: 0, count: 8) + [UInt8(RoomRoster.capacity + 1)]
                        + [UInt8](repeating: 0, count: 33 * (RoomRoster.capacity + 1))))
        #expect(refused(Beacon.self, [0, 1, 0, 2, 0, 0, 0, 1, 3, 232, 2]))
        #expect(refused(Beacon.self, [0, 1, 0, 2, 0, 0, 0, 1, 3, 232, 0, 0]))
        #expect(refused(RoomProbe.self, [0, 1, 0, 2] + [UInt8](repeating: 0, count: 8) + [3]))
        #expect(refused(RoomLine.self, [0, 1, 0, 2] + [UInt8](repeating: 0, count: 80 + MessageCrypto.overhead)))
    }

    /// A later seance may add a field to a room's kinds: today's reader skips it.
    @Test func extensionFieldsAreSkipped() throws {
        let room = RoomID(major: 1, minor: 2)
        let beacon = Beacon(room: room, counter: 42, intervalMilliseconds: 1000)
        #expect(try Beacon.read(try beacon.encoded() + [0x40, 0, 2, 7, 7]) == beacon)
        let probe = RoomProbe(room: room, nonce: 9, proximity: .near)
        #expect(try RoomProbe.read(try probe.encoded() + [0x40, 0, 0]) == probe)
        let ack = RoomLineAck(room: room, host: Data(repeating: 1, count: 32), id: Data(repeating: 2, count: 16))
        #expect(try RoomLineAck.read(try ack.encoded() + [0x41, 0, 1, 0]) == ack)
    }

    /// The most members a roster can name still fit one datagram, with every header.
    @Test func aFullRosterFitsADatagram() throws {
        var body: [UInt8] = []
        RoomRoster(room: RoomID(major: 1, minor: 2), echo: 1,
                   members: (0..<RoomRoster.capacity).map { .init(key: Data(repeating: UInt8($0), count: 32), proximity: .far) })
            .write(to: &body)
        let frame = try Packet.encode(kind: KindTable.roomRoster, body: body, signer: .init(), timestamp: 0, sequence: 1)
        #expect(frame.count <= Wire.maximumDatagram)
    }
}

@Suite struct ProximityEstimatorTests {
    /// Ten seconds of beacons, `lost` of each ten missing, evaluated every second.
    func run(lost: Set<Int>, roundTrip: Double? = nil, seconds: Int = 30) -> [Proximity] {
        var estimator = ProximityEstimator(joinedAt: 0, interval: 1)
        var classes: [Proximity] = []
        for second in 1...seconds {
            if !lost.contains(second % 10) { estimator.beacon(counter: UInt32(second), at: Double(second)) }
            if let roundTrip { estimator.roundTrip(roundTrip) }
            _ = estimator.evaluate(now: Double(second) + 0.5)
            classes.append(estimator.current)
        }
        return classes
    }

    @Test func everyBeaconAndAQuickAnswerIsImmediate() {
        #expect(run(lost: []).allSatisfy { $0 == .immediate })
        #expect(run(lost: [3], roundTrip: 0.002).last == .immediate)  // 90 %
    }

    @Test func theShareOfBeaconsSetsTheClass() {
        #expect(run(lost: [1, 5]).last == .near)  // 80 %
        #expect(run(lost: [1, 3, 5, 7]).last == .near)  // 60 %
        #expect(run(lost: [1, 3, 5, 7, 9]).last == .far)  // 50 %
    }

    @Test func theRoundTripSetsTheClassToo() {
        #expect(run(lost: [], roundTrip: 0.050).last == .near)
        #expect(run(lost: [], roundTrip: 0.250).last == .far)
        // The median of the last three: one slow answer changes nothing.
        var estimator = ProximityEstimator(joinedAt: 0, interval: 1)
        estimator.beacon(counter: 1, at: 0.2)
        estimator.roundTrip(0.001); estimator.roundTrip(0.5); estimator.roundTrip(0.002)
        #expect(estimator.estimate(now: 0.5) == .immediate)
    }

    /// A class is taken after three seconds of it in a row, not on one unlucky second.
    @Test func aChangeSettlesBeforeItIsTaken() {
        var estimator = ProximityEstimator(joinedAt: 0, interval: 1)
        for second in 1...10 { estimator.beacon(counter: UInt32(second), at: Double(second)) }
        estimator.roundTrip(0.3)
        #expect(estimator.evaluate(now: 10.5) == nil)
        #expect(estimator.evaluate(now: 10.6) == nil)
        #expect(estimator.evaluate(now: 10.7) == .far)
        #expect(estimator.current == .far)
    }

    /// The same beacon by the LAN and by a broker counts once.
    @Test func aBeaconHeardTwiceCountsOnce() {
        var estimator = ProximityEstimator(joinedAt: 0, interval: 1)
        for second in 1...10 where second % 2 == 0 {
            estimator.beacon(counter: UInt32(second), at: Double(second))
            estimator.beacon(counter: UInt32(second), at: Double(second) + 0.01)
        }
        #expect(estimator.share(now: 10.5) == 0.5)
    }
}

@Suite struct RoomTests {
    let room = RoomID(major: 1, minor: 2)

    /// ann hosts room 1.2; the others listen; everyone present first.
    func world(_ specs: [(String, Plane)] = [("ann", .human), ("ben", .human), ("cat", .human)]) throws -> ChatWorld {
        let world = try ChatWorld(specs)
        world.step(1.5)
        try world.nodes[0].rooms.host(room)
        for node in world.nodes.dropFirst() { try node.rooms.listen() }
        world.step(2)
        return world
    }

    /// ann hosts room 1.2 and ben listens, one of them having blocked the other first
    /// (`hostBlocks`: ann blocked ben; else ben blocked ann).
    func blockedWorld(hostBlocks: Bool) throws -> (ChatWorld, ann: ChatWorld.Node, ben: ChatWorld.Node) {
        let world = try ChatWorld([("ann", .human), ("ben", .human)])
        let (ann, ben) = (world.nodes[0], world.nodes[1])
        world.step(1.5)
        let (blocker, blocked) = hostBlocks ? (ann, ben) : (ben, ann)
        try PeerChoiceStore(database: blocker.database).add(blocked.identity.signingPublicKey, name: blocked.name, to: .blocked,
                                                            now: world.scheduler.now)
        blocker.online.choicesChanged()
        try ann.rooms.host(room)
        try ben.rooms.listen()
        return (world, ann, ben)
    }

    /// Issue 52: a host who blocked a guest never answers it; the guest is told only that no
    /// answer came, and is not in the room (the host's roster never had it).
    @Test func aBlockedGuestIsNotAdmittedAndHearsNoAnswer() throws {
        let (world, ann, ben) = try blockedWorld(hostBlocks: true)
        world.step(2)
        #expect(!ben.notices().contains { $0.contains("you joined room") }, "not joined before the host answers")
        world.step(RoomsOnline.answerLimit)
        #expect(ben.notices().contains { $0.contains("no answer from the host of room 1.2: not joined") })
        #expect(ben.rooms.currentRoom == nil)
        #expect(try ann.rooms.members()?.count == 1, "the host alone")
    }

    /// Issue 52: listening where the only room heard is a blocked host's says so, once.
    @Test func listeningWhereOnlyABlockedHostBeaconsSaysSo() throws {
        let (world, _, ben) = try blockedWorld(hostBlocks: false)
        world.step(5)
        let told = ben.notices().filter { $0.contains("beacons heard only from people you blocked") }
        #expect(told.count == 1 && ben.rooms.currentRoom == nil, "\(told)")
    }

    @Test func guestsJoinByThemselvesAndEveryoneSeesTheRoster() throws {
        let world = try world()
        let (ann, ben, cat) = (world.nodes[0], world.nodes[1], world.nodes[2])
        for guest in [ben, cat] {
            #expect(guest.rooms.currentRoom?.room == room)
            #expect(guest.rooms.currentRoom?.host == ann.identity.signingPublicKey)
            #expect(guest.notices().contains { $0.contains("you joined room 1.2, hosted by ann#") })
        }
        let members = try #require(try ann.rooms.members())
        #expect(members.map(\.what) == ["host", "immediate", "immediate"])
        #expect(members[0].name.hasPrefix("ann#") && members[0].name.hasSuffix("(you)"))
        #expect(Set(members.dropFirst().map { String($0.name.prefix(3)) }) == ["ben", "cat"])
        world.step(2)
        let seenByCat = try #require(try cat.rooms.members())
        #expect(seenByCat.count == 3 && seenByCat[0].what == "host" && seenByCat.contains { $0.name.hasSuffix("(you)") })
        #expect(ann.notices().filter { $0.contains("joined room 1.2 (immediate)") }.count == 2)
    }

    /// A host of a later seance, whose beacons end with a field this one does not know, is
    /// heard and joined all the same.
    @Test func aBeaconWithAnUnknownExtensionFieldIsHeard() throws {
        /// A beacon as a later version writes it: today's fields, then one more.
        struct LaterBeacon: PacketKind {
            static let code = Beacon.code
            var beacon: Beacon
            init(_ beacon: Beacon) { self.beacon = beacon }
            init(reading reader: inout ByteReader) throws(DecodeError) { beacon = try Beacon(reading: &reader) }
            func write(to bytes: inout [UInt8]) {
                beacon.write(to: &bytes)
                bytes += [0x50, 0, 4] + Array("next".utf8)
            }
        }
        let world = try ChatWorld([("ann", .human), ("ben", .human)])
        let (ann, ben) = (world.nodes[0], world.nodes[1])
        world.step(1.5)
        try ben.rooms.listen()
        ann.service.broadcast(LaterBeacon(Beacon(room: room, counter: 1, intervalMilliseconds: 1000)), as: .topic("rooms/1.2"))
        world.step(0)
        #expect(ben.rooms.currentRoom?.room == room)
        #expect(ben.rooms.currentRoom?.host == ann.identity.signingPublicKey)
        #expect(ben.service.statistics.dropped["malformed", default: 0] == 0)
    }

    /// Of several rooms heard, `listen` joins the one found last; a room heard just now is joined at once.
    @Test func listeningJoinsTheRoomFoundLast() throws {
        let world = try ChatWorld([("ann", .human), ("dan", .human), ("ben", .human)])
        world.step(1.5)
        try world.nodes[0].rooms.host(RoomID(major: 1, minor: 1))
        world.step(1)
        try world.nodes[1].rooms.host(RoomID(major: 2, minor: 2))
        world.step(1)
        try world.nodes[2].rooms.listen()
        #expect(world.nodes[2].rooms.currentRoom?.room == RoomID(major: 2, minor: 2))
    }

    @Test func aGuestLeavesWhenTheBeaconIsSilentForTenSeconds() throws {
        let world = try world()
        let ann = world.nodes[0].identity.signingPublicKey
        let ben = world.nodes[1]
        let packets = world.packets
        world.network.setLoss { bytes in packets(bytes).map { $0.code == KindTable.beacon && $0.sender == ann } ?? false }
        world.step(9)
        #expect(ben.rooms.currentRoom != nil)
        world.step(1.5)
        #expect(ben.rooms.currentRoom == nil)
        #expect(ben.notices().contains { $0.contains("no beacon from the host of room 1.2 for 10 s: out of range; you left it") })
        // It told the host, who tells the rest.
        world.step(1)
        #expect(world.nodes[0].notices().contains { $0.contains("ben#") && $0.contains("left room 1.2") })
    }

    /// Half the beacons lost: the guest becomes far, and the host's roster says so; immediate again
    /// once they all come.
    @Test func proximityFollowsLossAndComesBack() throws {
        let world = try world()
        let (ann, ben) = (world.nodes[0], world.nodes[1])
        let host = ann.identity.signingPublicKey
        let packets = world.packets
        world.network.setLoss { bytes in
            guard let (code, body, sender) = packets(bytes), code == KindTable.beacon, sender == host else { return false }
            var reader = ByteReader(body[...])
            return (try? Beacon(reading: &reader)).map { $0.counter % 2 == 0 } ?? false
        }
        world.step(14)
        #expect(try ann.rooms.members()?.first { $0.name.hasPrefix("ben") }?.what == "far")
        #expect(ben.notices().contains { $0.contains("you are now far to the host of room 1.2") })
        world.network.setLoss(nil)
        // The lost beacons leave the ten-second window; each class settles for three seconds.
        world.step(18)
        #expect(try ann.rooms.members()?.first { $0.name.hasPrefix("ben") }?.what == "immediate")
        #expect(ann.notices().contains { $0.contains("ben#") && $0.contains("is now immediate in room 1.2") })
    }

    @Test func aForgedBeaconIsFlaggedAndNotFollowed() throws {
        let world = try ChatWorld([("ann", .human), ("ben", .human), ("dan", .human), ("eve", .human)])
        world.step(1.5)
        let (ann, ben, dan, eve) = (world.nodes[0], world.nodes[1], world.nodes[2], world.nodes[3])
        try ann.rooms.host(room)
        try ben.rooms.listen()
        world.step(1)
        // dan cannot host a room heard from another key…
        #expect(throws: (any Error).self) { try dan.rooms.host(room) }
        try eve.rooms.listen()  // eve joins ann's room at once, before any forgery
        try eve.rooms.leave()
        // …so it forges ann's beacon with its own key.
        for counter in 1...3 {
            dan.service.broadcast(Beacon(room: room, counter: UInt32(counter), intervalMilliseconds: 1000), as: .topic("rooms/1.2"))
            world.step(1)
        }
        #expect(ben.notices().contains { $0.contains("dan#") && $0.contains("also beacons room 1.2") && $0.contains("forged") })
        #expect(ann.notices().contains { $0.contains("dan#") && $0.contains("which you host") })
        #expect(ben.rooms.currentRoom?.host == ann.identity.signingPublicKey)
        // A newcomer joins the room's first key, not the forger heard last.
        try eve.rooms.listen()
        #expect(eve.rooms.currentRoom?.host == ann.identity.signingPublicKey)
    }

    /// A forger sends beacons of 300 other rooms from 300 keys it never announced, then ann's
    /// room with its own key: ann stays the owner (the forger is the one flagged) and ben, who
    /// listens, joins ann; twenty more forgers within half a minute make one notice for ann,
    /// not twenty. ann silent for 5 s still owns her room; silent for 11 s, the number is free.
    @Test func aFloodOfOtherRoomsCannotMakeAForgerTheOwner() throws {
        let world = try ChatWorld([("ann", .human), ("ben", .human)])
        world.step(1.5)
        let (ann, ben) = (world.nodes[0], world.nodes[1])
        try ann.rooms.host(room)
        world.step(1)
        _ = ann.notices()
        func forge(_ room: RoomID, from source: String, key: Curve25519.Signing.PrivateKey = .init()) throws {
            let beacon = try Packet.encode(Beacon(room: room, counter: 1, intervalMilliseconds: 1_000), signer: key,
                                           timestamp: UInt64(world.scheduler.now * 1000), sequence: 1)
            world.network.inject(beacon, from: source, by: "memory")
        }
        for n in 0..<300 { try forge(RoomID(major: 9, minor: UInt16(n)), from: "flood\(n)") }
        let forger = Curve25519.Signing.PrivateKey()
        try forge(room, from: "forger", key: forger)
        world.step(0.5)
        let heard = ben.rooms.beaconsHeard.filter { $0.room == room }
        #expect(heard.first { !$0.forged }?.host == ann.identity.signingPublicKey)
        #expect(heard.contains { $0.forged && $0.host == forger.publicKey.rawRepresentation })
        #expect(ben.rooms.beaconsHeard.count <= RoomsOnline.heardLimit)
        try ben.rooms.listen()
        world.step(1)
        #expect(ben.rooms.currentRoom?.host == ann.identity.signingPublicKey)
        for n in 0..<20 {
            try forge(room, from: "more\(n)")
            world.step(1)
        }
        #expect(ann.notices().filter { $0.contains("also beacons room 1.2") }.count == 1)

        // ann falls silent (no closing beacon); the forger beacons on.
        try ben.rooms.leave()
        world.network.setDown("ann", true)
        world.step(5)
        try forge(room, from: "forger", key: forger)
        world.step(0.1)
        #expect(ben.rooms.beaconsHeard.first { $0.host == forger.publicKey.rawRepresentation }?.forged == true)
        world.step(6)
        try forge(room, from: "forger", key: forger)
        world.step(0.1)
        #expect(ben.rooms.beaconsHeard.first { $0.host == forger.publicKey.rawRepresentation }?.forged == false)
    }

    /// Human ann hosts; Human ben, Dying cat and Ghost dan are guests. A line reaches exactly
    /// those the planes let the pair talk.
    @Test func aLineReachesExactlyTheMembersThePlanesAllow() throws {
        let world = try world([("ann", .human), ("ben", .human), ("cat", .dying), ("dan", .ghost)])
        world.step(2)
        let (ann, ben, cat, dan) = (world.nodes[0], world.nodes[1], world.nodes[2], world.nodes[3])
        func lines(_ node: ChatWorld.Node) throws -> [String] {
            try RoomStore(database: node.database).database.read { db in
                try String.fetchAll(db, sql: "SELECT text FROM roomMessage WHERE NOT outgoing ORDER BY id")
            }
        }
        let said = try ben.rooms.say("hello, living")
        #expect(said.outgoing && said.state == .sent)
        let ghostly = try dan.rooms.say("boo")
        #expect(ghostly.outgoing)
        #expect(throws: (any Error).self) { try cat.rooms.say("only the dying hear me") }
        // A NUL is refused, as in a conversation: stored, the line would read back cut short.
        let nul = #expect(throws: UserError.self) { try ben.rooms.say("before\u{0}after") }
        #expect(nul?.description.contains("NUL") == true)
        world.step(0.5)
        #expect(try lines(ann) == ["hello, living", "boo"])
        #expect(try lines(ben) == ["boo"])
        #expect(try lines(cat) == ["boo"])
        #expect(try lines(dan) == [])
        #expect(ben.notices().contains { $0.contains("room 1.2 · dan#") && $0.contains("boo") })
        // Every copy acknowledged: ben's line went to ann alone, dan's to all three.
        let copies = try ben.database.read { db in try Row.fetchOne(db, sql: "SELECT copies, acknowledged FROM roomMessage WHERE outgoing") }
        #expect(copies?["copies"] == 1 && copies?["acknowledged"] == 1)
        let ghostCopies = try dan.database.read { db in try Int.fetchOne(db, sql: "SELECT acknowledged FROM roomMessage WHERE outgoing") }
        #expect(ghostCopies == 3)
    }

    /// A burst of lines is stored as messages are (issue 51): what a guest receives in one turn
    /// of its engine in one transaction, and the host's acknowledgements the same; each line
    /// once, in order, each copy acknowledged.
    @Test func aBurstOfLinesIsStoredInOneTransactionAtEachEnd() throws {
        let world = try world([("ann", .human), ("ben", .human), ("cat", .human)])
        world.step(2)
        let (ann, ben, cat) = (world.nodes[0], world.nodes[1], world.nodes[2])
        func transactions(_ node: ChatWorld.Node) -> Int { node.engine.sync { node.context.commits.transactions } }
        let before = [ann, ben, cat].map(transactions)
        // Said as a pipe says them: each but the last with more to follow.
        let said = try (0..<20).map { index in try ann.rooms.say("line \(index)", more: index < 19) }
        #expect(said.map(\.number) == Array(1...20))
        #expect(transactions(ann) - before[0] == 1, "the host's own lines, written together")
        world.step(0.5)
        for guest in [ben, cat] {
            let lines = try guest.database.read { db in try String.fetchAll(db, sql: "SELECT text FROM roomMessage WHERE NOT outgoing ORDER BY number") }
            #expect(lines == (0..<20).map { "line \($0)" })
        }
        #expect(transactions(ben) - before[1] == 1 && transactions(cat) - before[2] == 1)
        // Then forty acknowledgements, as they come from the two guests' turns.
        #expect(transactions(ann) - before[0] <= 3)
        let numbered = try ann.database.read { db in try Row.fetchAll(db, sql: "SELECT number, text FROM roomMessage ORDER BY id") }
        #expect(numbered.map { $0["number"] as Int64 } == Array(1...20) && numbered.map { $0["text"] as String } == said.map(\.text))
        let acknowledged = try ann.database.read { db in try Int.fetchAll(db, sql: "SELECT acknowledged FROM roomMessage WHERE outgoing") }
        #expect(acknowledged == Array(repeating: 2, count: 20))
    }

    /// What a feature does to a line before it goes (a curse: mirrored, silenced) it does to a
    /// room line as to a conversation's: a curse is not escaped by saying it in a room.
    @Test func aRoomLineGoesThroughTheOutgoingRules() throws {
        let world = try world([("ann", .human), ("ben", .human)])
        world.step(2)
        let (ann, ben) = (world.nodes[0], world.nodes[1])
        ben.engine.sync { ben.context.rules.addOutgoing { String($0.reversed()) } }
        let said = try ben.rooms.say("mirror test")
        #expect(said.text == "tset rorrim")
        world.step(0.5)
        let heard = try ann.database.read { db in try String.fetchAll(db, sql: "SELECT text FROM roomMessage WHERE NOT outgoing") }
        #expect(heard == ["tset rorrim"])
        struct Silenced: Error, Equatable {}
        ben.engine.sync { ben.context.rules.addOutgoing { _ in throw Silenced() } }
        #expect(throws: Silenced()) { try ben.rooms.say("anything") }
    }

    /// cat blocks ben in ann's room: told once, without his name, that someone she blocked is
    /// there; his line reaches ann and not cat, hers reaches ann and not him. cat mutes the
    /// room: its lines are stored, untold. ann, the host, blocks ben: he is out of the roster
    /// and writes to nobody. ben hosting his own room: cat cannot join it, and is told why.
    @Test func aBlockedMemberIsNeitherHeardNorWrittenTo() throws {
        let world = try world()
        let (ann, ben, cat) = (world.nodes[0], world.nodes[1], world.nodes[2])
        func lines(_ node: ChatWorld.Node) throws -> [String] {
            try node.database.read { db in try String.fetchAll(db, sql: "SELECT text FROM roomMessage WHERE NOT outgoing ORDER BY id") }
        }
        func choose(_ node: ChatWorld.Node, _ list: PeerChoiceStore.List, _ other: ChatWorld.Node) throws {
            try PeerChoiceStore(database: node.database).add(other.identity.signingPublicKey, name: other.name, to: list, now: world.scheduler.now)
            node.online.choicesChanged()
        }
        _ = cat.notices()
        try choose(cat, .blocked, ben)
        #expect(cat.service.peer(ben.identity.signingPublicKey) == nil)
        _ = try ben.rooms.say("from ben")
        _ = try cat.rooms.say("from cat")
        world.step(1)
        #expect(try lines(ann) == ["from ben", "from cat"])
        #expect(try lines(cat) == [])
        #expect(try lines(ben) == [])
        #expect(cat.service.statistics.dropped["blocked", default: 0] > 0)
        // Muted, a room keeps its lines and tells nothing of them.
        try PeerChoiceStore(database: cat.database).setMuted(place: "room 1.2", true, now: world.scheduler.now)
        cat.online.choicesChanged()
        _ = cat.notices()
        _ = try ann.rooms.say("quietly")
        world.step(1)
        #expect(try lines(cat) == ["quietly"])
        #expect(!cat.notices().contains { $0.contains("quietly") })
        // The host blocks him: out of the roster, he reaches nobody.
        try choose(ann, .blocked, ben)
        world.step(2)
        #expect(try ann.rooms.members()?.contains { $0.name.hasPrefix("ben#") } == false)
        _ = try? ben.rooms.say("anyone?")
        world.step(1)
        #expect(try lines(ann) == ["from ben", "from cat"])
        #expect(try lines(cat) == ["quietly"])
        // A room ben hosts cannot be joined by cat.
        _ = try ben.rooms.leave()
        _ = try cat.rooms.leave()
        _ = try ann.rooms.close()
        world.step(1)
        try ben.rooms.host(RoomID(major: 3, minor: 4))
        try cat.rooms.listen()
        world.step(3)
        #expect(cat.rooms.currentRoom == nil)
        #expect(cat.service.blockedBeacons > 0)
    }

    @Test func aLostCopyIsSentAgainAndStoredOnce() throws {
        let world = try world()
        let (ann, ben) = (world.nodes[0], world.nodes[1])
        let dropped = Mutex(0)
        let packets = world.packets
        world.network.setLoss { bytes in
            guard packets(bytes)?.code == KindTable.roomLine else { return false }
            return dropped.withLock { count in
                count += 1
                return count <= 2  // both first copies
            }
        }
        _ = try ben.rooms.say("once")
        world.step(0.1)
        #expect(try ann.database.read { db in try Int.fetchOne(db, sql: "SELECT count(*) FROM roomMessage") } == 0)
        world.step(1)
        world.step(1)
        #expect(try ann.database.read { db in try String.fetchAll(db, sql: "SELECT text FROM roomMessage") } == ["once"])
        #expect(try ben.database.read { db in try Int.fetchOne(db, sql: "SELECT acknowledged FROM roomMessage WHERE outgoing") } == 2)
    }

    /// Lines are numbered as they are said or received and stored in that order: a line that
    /// comes while the host's own wait for company is numbered and stored after them, and a copy
    /// sent again because its acknowledgement was lost takes no number of its own.
    @Test func linesAreNumberedAndStoredInTheOrderTheyCame() throws {
        let world = try world([("ann", .human), ("ben", .human)])
        world.step(2)
        let (ann, ben) = (world.nodes[0], world.nodes[1])
        let packets = world.packets
        let dropped = Mutex(0)
        world.network.setLoss { bytes in
            guard packets(bytes)?.code == KindTable.roomLineAck else { return false }
            return dropped.withLock { count in
                count += 1
                return count == 1  // ann's first acknowledgement
            }
        }
        _ = try ben.rooms.say("from ben")
        world.step(2)  // Sent again, acknowledged again.
        #expect(dropped.withLock { $0 } >= 2)
        #expect(try ben.database.read { db in try Int.fetchOne(db, sql: "SELECT acknowledged FROM roomMessage WHERE outgoing") } == 1)
        // ann holds two lines for company; ben's line comes meanwhile.
        let held = try [ann.rooms.say("held 1", more: true), ann.rooms.say("held 2", more: true)]
        _ = try ben.rooms.say("meanwhile")
        world.step(0.001)
        let last = try ann.rooms.say("last")
        world.step(1)
        #expect(held.map(\.number) == [2, 3] && last.number == 5)
        let rows = try ann.database.read { db in try Row.fetchAll(db, sql: "SELECT number, text FROM roomMessage ORDER BY id") }
        #expect(rows.map { $0["number"] as Int64 } == [1, 2, 3, 4, 5])
        #expect(rows.map { $0["text"] as String } == ["from ben", "held 1", "held 2", "meanwhile", "last"])
    }

    @Test func closeEndsTheRoomForEveryone() throws {
        let world = try world()
        let (ann, ben, cat) = (world.nodes[0], world.nodes[1], world.nodes[2])
        #expect(throws: (any Error).self) { try ben.rooms.close() }
        // Lines said just before (held for company) are said before the room closes.
        _ = try ann.rooms.say("last words", more: true)
        try ann.rooms.close()
        world.step(0.1)
        for guest in [ben, cat] {
            #expect(try guest.database.read { db in try String.fetchAll(db, sql: "SELECT text FROM roomMessage") } == ["last words"])
            #expect(guest.rooms.currentRoom == nil)
            #expect(guest.notices().contains { $0.contains("the host closed room 1.2; you left it") })
        }
        #expect(ann.rooms.currentRoom == nil)
        #expect(throws: (any Error).self) { try ann.rooms.say("anyone?") }
    }

    @Test func aGuestThatLeavesIsDroppedFromTheRoster() throws {
        let world = try world()
        let (ann, ben, cat) = (world.nodes[0], world.nodes[1], world.nodes[2])
        world.step(1)
        _ = cat.notices()
        try ben.rooms.leave()
        world.step(0.1)
        #expect(try ann.rooms.members()?.count == 2)
        #expect(cat.notices().contains { $0.contains("ben#") && $0.contains("left room 1.2") })
        #expect(throws: (any Error).self) { try ann.rooms.leave() }  // a host closes instead
        // A guest that vanishes without a word is forgotten after 15 s.
        cat.service.stop()
        world.step(16)
        #expect(try ann.rooms.members()?.count == 1)
    }

    /// Lines are stored once per sender and id, numbered per room, and paged like a conversation.
    @Test func linesArePagedAndStoredOnce() throws {
        let world = try ChatWorld([("ann", .human)], network: false)
        let ann = world.nodes[0]
        let store = RoomStore(database: ann.database)
        let me = ann.identity.signingPublicKey, other = Data(repeating: 3, count: 32)
        let stored = try store.room(room, host: other, hostName: "bob", myKey: me, now: 0)
        for i in 1...30 {
            let id = Data(repeating: UInt8(i), count: 16)
            #expect(try store.received(in: stored.id, id: id, sender: other, senderName: "bob", text: "line \(i)", sentAt: Double(i), now: Double(i)) != nil)
            #expect(try store.received(in: stored.id, id: id, sender: other, senderName: "bob", text: "again", sentAt: Double(i), now: Double(i)) == nil)
        }
        let newest = try store.page(stored.id)
        #expect(newest.map(\.text) == (11...30).map { "line \($0)" })
        #expect(newest.last?.number == 30 && newest.last?.sender?.hasPrefix("bob#") == true)
        #expect(try store.page(stored.id, before: newest.first!.id).map(\.number) == Array(1...10))
        // Another host with the same numbers is another room.
        #expect(try store.room(room, host: me, hostName: "ann", myKey: me, now: 0).id != stored.id)
    }
}
