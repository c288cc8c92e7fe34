import Accounts
import Chat
import Foundation
import Nearby
import Shell
import Store
import Synchronization
import Terminal
import TestWorld
import Testing
import Wire
@testable import Curses

@Suite struct GibberishTests {
    @Test func possessionKeepsWordsAndPunctuation() {
        var random = SeededRandom(seed: 7)
        let line = "Hello, Will! Where are you? 3 lights… 👻"
        let possessed = Gibberish.possess(line, using: &random)
        #expect(possessed != line)
        func words(_ text: String) -> [Int] { text.split(whereSeparator: { !$0.isLetter }).map(\.count) }
        #expect(words(possessed) == words(line), "same number of words, each as long: \(possessed)")
        #expect(possessed.filter { !$0.isLetter } == line.filter { !$0.isLetter }, "punctuation, digits, emoji kept in place")
        #expect(possessed.first?.isUppercase == true)
        // Pronounceable: no word is all consonants (longer than two letters).
        for word in possessed.split(whereSeparator: { !$0.isLetter }) where word.count > 2 {
            #expect(word.contains { "aeiouAEIOU".contains($0) }, "\(word)")
        }
    }

    @Test func possessionIsReproducibleWithASeed() {
        var a = SeededRandom(seed: 42), b = SeededRandom(seed: 42), c = SeededRandom(seed: 43)
        let line = "the lights are flickering again"
        let first = Gibberish.possess(line, using: &a)
        #expect(first == Gibberish.possess(line, using: &b))
        #expect(first != Gibberish.possess(line, using: &c))
    }

    @Test func theMirrorReversesCharactersNotBytes() {
        #expect(Gibberish.mirror("help me") == "em pleh")
        #expect(Gibberish.mirror("a👻b") == "b👻a")
    }
}

@Suite struct CursePacketTests {
    @Test func roundTripsAndRefusesTheMalformed() throws {
        let cast = CurseCast(target: Data(repeating: 7, count: 32), kind: .mirror, minutes: 12, id: Data(repeating: 9, count: 16))
        var bytes: [UInt8] = []
        cast.write(to: &bytes)
        var reader = ByteReader(bytes[...])
        #expect(try CurseCast(reading: &reader) == cast)
        for bad in [Array(bytes.prefix(40)), bytes.enumerated().map { $0.offset == 32 ? 9 : $0.element },  // unknown kind
                    bytes.enumerated().map { $0.offset == 33 ? 61 : $0.element }] {                       // 61 minutes
            var reader = ByteReader(bad[...])
            #expect(throws: DecodeError.self) { try CurseCast(reading: &reader) }
        }
        let answer = CurseAnswer(caster: Data(repeating: 1, count: 32), id: Data(repeating: 2, count: 16), outcome: .bounced)
        var answerBytes: [UInt8] = []
        answer.write(to: &answerBytes)
        var answerReader = ByteReader(answerBytes[...])
        #expect(try CurseAnswer(reading: &answerReader) == answer)
    }
}

@Suite struct CurseProtocolTests {
    /// `curse` as the command runs it, without a shell around: the caster's checks, then the packet.
    func cast(_ world: ChatWorld, from caster: ChatWorld.Node, on target: ChatWorld.Node, _ kind: CurseKind, minutes: Int = 5) throws {
        let peer = try #require(caster.service.peer(target.identity.signingPublicKey))
        try caster.curses.send(kind, minutes: minutes, to: peer)
        world.step(0)
    }

    @Test func eachCurseTakesHoldAndDoesWhatItSays() throws {
        let world = try ChatWorld([("ghost", .ghost), ("will", .human)])
        let (ghost, will) = (world.nodes[0], world.nodes[1])
        let ghostPeer = try #require(will.service.peer(ghost.identity.signingPublicKey))

        try cast(world, from: ghost, on: will, .blind)
        #expect(ghost.notices().contains { $0.contains("your curse took hold") && $0.contains("blind") })
        #expect(will.notices().contains { $0.contains("cursed you with blind for 5 min") })
        #expect(!will.rules.allowsSight(of: ghostPeer))

        try cast(world, from: ghost, on: will, .amnesia)
        #expect(will.rules.shownName(of: ghost.identity.signingPublicKey) == "a stranger")

        try cast(world, from: ghost, on: will, .mirror)
        #expect(try will.rules.outgoing("help me") == "em pleh")

        try cast(world, from: ghost, on: will, .possession)
        let possessed = try will.rules.outgoing("help me please")
        #expect(possessed != "help me please" && possessed.split(separator: " ").count == 3)

        try cast(world, from: ghost, on: will, .silence)
        #expect(throws: UserError.self) { try will.rules.outgoing("anyone?") }
        #expect(try CurseStore(database: will.database).active(on: will.identity.signingPublicKey, now: world.scheduler.now).count == 5)
        // The caster is not touched by any of it.
        #expect(try ghost.rules.outgoing("boo") == "boo")
    }

    /// Under amnesia every peer is a stranger in the notices too: the caster of a later curse,
    /// its bounce and its end are not named.
    @Test func amnesiaNamesNoCasterInLaterNotices() throws {
        let world = try ChatWorld([("ghost", .ghost), ("will", .human)])
        let (ghost, will) = (world.nodes[0], world.nodes[1])
        try cast(world, from: ghost, on: will, .amnesia, minutes: 10)
        try cast(world, from: ghost, on: will, .mirror, minutes: 1)
        world.step(61)
        let notices = will.notices()
        #expect(notices.contains { $0.contains("a stranger cursed you with mirror") }, "\(notices)")
        #expect(notices.contains { $0.contains("the curse of mirror from a stranger has ended") }, "\(notices)")
        #expect(!notices.dropFirst().contains { $0.contains("ghost#") }, "\(notices)")
    }

    @Test func curseEndsOnTimeAndSaysSo() throws {
        let world = try ChatWorld([("ghost", .ghost), ("will", .human)])
        let (ghost, will) = (world.nodes[0], world.nodes[1])
        try cast(world, from: ghost, on: will, .silence, minutes: 2)
        _ = will.notices()
        world.step(119)
        #expect(throws: UserError.self) { try will.rules.outgoing("still?") }
        world.step(2)
        #expect(try will.rules.outgoing("free") == "free")
        #expect(will.notices().contains { $0.contains("the curse of silence from ghost#") && $0.contains("has ended") })
        #expect(try CurseStore(database: will.database).active(on: will.identity.signingPublicKey, now: world.scheduler.now).isEmpty)
    }

    @Test func aCurseOutlivesGoingOfflineAndBack() throws {
        let world = try ChatWorld([("ghost", .ghost), ("will", .human)])
        let (ghost, will) = (world.nodes[0], world.nodes[1])
        try cast(world, from: ghost, on: will, .mirror, minutes: 10)
        will.goOffline()
        try will.goOnline(world)
        world.step(0)
        #expect(try will.rules.outgoing("abc") == "cba")
        #expect(will.notices().contains { $0.contains("you are still cursed: mirror from ghost#") })
        world.step(600)
        #expect(try will.rules.outgoing("abc") == "abc")
    }

    /// Only a Ghost casts, only on a Human: the caster's command refuses, and a packet sent
    /// around the command is refused by the target, which judges by the caster's own signed
    /// announcement.
    @Test func theCastersChecksHoldOnBothSides() throws {
        let world = try ChatWorld([("ghost", .ghost), ("will", .human), ("nancy", .dying), ("mike", .human)])
        let (ghost, will, nancy, mike) = (world.nodes[0], world.nodes[1], world.nodes[2], world.nodes[3])
        // A Human cannot cast; a Ghost cannot curse a Dying.
        let willPeer = try #require(mike.service.peer(will.identity.signingPublicKey))
        #expect(throws: UserError.self) { try mike.curses.send(.silence, minutes: 5, to: willPeer) }
        let nancyPeer = try #require(ghost.service.peer(nancy.identity.signingPublicKey))
        #expect(throws: UserError.self) { try ghost.curses.send(.silence, minutes: 5, to: nancyPeer) }
        // Around the command: a Human's packet is refused by its target.
        try world.forgeCast(from: mike, on: will, kind: .silence)
        #expect(try will.rules.outgoing("fine") == "fine")
        #expect(mike.notices().isEmpty)  // No casting pending: the answer is not for a curse it sent.
        // A Ghost's packet to a Dying: refused by the Dying.
        try world.forgeCast(from: ghost, on: nancy, kind: .silence)
        #expect(try nancy.rules.outgoing("fine") == "fine")
        #expect(try CurseStore(database: nancy.database).active(on: nancy.identity.signingPublicKey, now: world.scheduler.now).isEmpty)
    }

    /// A casting sent again (the same id) takes no second hold; a curse for someone else, an
    /// answer to nothing cast and a spell nobody taught are dropped too: each counted in
    /// `nearby stats` under its reason.
    @Test func replayedAndStrayCursesAndSpellsAreCounted() throws {
        let world = try ChatWorld([("ghost", .ghost), ("will", .human)])
        let (ghost, will) = (world.nodes[0], world.nodes[1])
        let id = Data(repeating: 7, count: 16)
        try world.forgeCast(from: ghost, on: will, kind: .silence, id: id)
        try world.forgeCast(from: ghost, on: will, kind: .silence, id: id)
        #expect(try CurseStore(database: will.database).active(on: will.identity.signingPublicKey, now: world.scheduler.now).count == 1)
        let ghostPeer = try #require(will.service.peer(ghost.identity.signingPublicKey))
        let willPeer = try #require(ghost.service.peer(will.identity.signingPublicKey))
        ghost.service.send(CurseCast(target: ghost.identity.signingPublicKey, kind: .blind, minutes: 5, id: Data(repeating: 8, count: 16)),
                           to: willPeer)
        will.service.send(CurseAnswer(caster: ghost.identity.signingPublicKey, id: Data(repeating: 9, count: 16), outcome: .tookHold),
                          to: ghostPeer)
        will.service.send(SpellCast(target: ghost.identity.signingPublicKey, phrase: "open sesame"), to: ghostPeer)
        world.step(0)
        let dropped = will.service.statistics.dropped.merging(ghost.service.statistics.dropped, uniquingKeysWith: +)
        #expect(dropped["curse replayed"] == 1 && dropped["curse for another"] == 1)
        // Two answers to nothing asked: will's own answer to the forged casting, and this one.
        #expect(dropped["curse answer to nothing asked"] == 2 && dropped["spell unknown"] == 1, "\(dropped)")
    }

    /// Of the five planes only a Ghost casts: a Dying, Hollow or Undead caster is refused by its
    /// own shell and, packet sent anyway, by the Human's, which reads the caster's plane from its
    /// signed announcement (a curse packet carries no plane to forge).
    @Test func everyPlaneButTheGhostIsRefused() throws {
        let world = try ChatWorld([("will", .human), ("d", .dying), ("h", .hollow), ("u", .undead)])
        let will = world.nodes[0]
        for caster in world.nodes.dropFirst() {
            let peer = try #require(caster.service.peer(will.identity.signingPublicKey))
            #expect(throws: UserError.self) { try caster.curses.send(.blind, minutes: 5, to: peer) }
            try world.forgeCast(from: caster, on: will, kind: .blind)
        }
        #expect(try CurseStore(database: will.database).active(on: will.identity.signingPublicKey, now: world.scheduler.now).isEmpty)
        #expect(will.rules.allowsSight(of: nil))
    }

    /// A Saint's medallion makes a curse bounce, and the caster hears it; a Holy candle lifts
    /// the curse that ends last.
    @Test func theMedallionAndTheCandle() throws {
        let world = try ChatWorld([("ghost", .ghost), ("will", .human)])
        let (ghost, will) = (world.nodes[0], world.nodes[1])
        let ledger = Ledger(database: will.database)
        for item in [Item.medallion, .candle] {
            let receipt = try Receipt.signed(try Order(item, quantity: 1), id: "test-\(item.rawValue)", signer: will.identity.signing,
                                             time: world.scheduler.now)
            try ledger.record(receipt, profile: will.profile.id)
        }
        _ = try ledger.wearMedallion(profile: will.profile.id, now: world.scheduler.now)
        try cast(world, from: ghost, on: will, .silence)
        #expect(ghost.notices().contains { $0.contains("bounced off will#") })
        #expect(will.notices().contains { $0.contains("bounced off your Saint's medallion") })
        #expect(try will.rules.outgoing("safe") == "safe")

        world.step(3_601)  // The medallion breaks after an hour.
        try cast(world, from: ghost, on: will, .silence, minutes: 30)
        try cast(world, from: ghost, on: will, .mirror, minutes: 10)
        #expect(throws: UserError.self) { try will.rules.outgoing("x") }
        let lifted = try ledger.useCandle(profile: will.profile.id, curses: will.curses, now: world.scheduler.now)
        #expect(lifted?.contains("silence") == true, "the curse that ends last")
        #expect(try will.rules.outgoing("ab") == "ba", "the mirror is still on")
        #expect(throws: StoreError.noneLeft(.candle)) {
            try ledger.useCandle(profile: will.profile.id, curses: will.curses, now: world.scheduler.now)
        }
    }

    /// A spectre's spell, spoken at the ghost that cursed you: its curses end at once, and for
    /// half an hour it cannot curse you: its own shell refuses, and yours would too.
    @Test func aSpellRepelsTheGhostForHalfAnHour() throws {
        let world = try ChatWorld([("ghost", .ghost), ("will", .human)])
        let (ghost, will) = (world.nodes[0], world.nodes[1])
        try cast(world, from: ghost, on: will, .silence, minutes: 30)
        #expect(throws: UserError.self) { try will.rules.outgoing("x") }
        let ghostPeer = try #require(will.service.peer(ghost.identity.signingPublicKey))
        #expect(throws: UserError.self) { try will.curses.speak(to: ghostPeer) }  // No spell learnt yet.
        try will.curses.learn(spell: Spells.phrases[0], key: will.identity.signingPublicKey, database: will.database)
        try will.curses.speak(to: ghostPeer)
        world.step(0)
        #expect(try will.rules.outgoing("free") == "free", "the ghost's curses ended")
        #expect(ghost.notices().contains { $0.contains("repelled you with a spell") })
        let willPeer = try #require(ghost.service.peer(will.identity.signingPublicKey))
        #expect(throws: UserError.self) { try ghost.curses.send(.mirror, minutes: 5, to: willPeer) }
        // Around the ghost's own check, will's shell refuses too, and says so.
        try world.forgeCast(from: ghost, on: will, kind: .mirror)
        #expect(try will.rules.outgoing("abc") == "abc")
        world.step(30 * 60 + 1)
        try cast(world, from: ghost, on: will, .mirror)
        #expect(try will.rules.outgoing("abc") == "cba", "after half an hour the ghost may curse again")
    }

    /// A spell is only for a ghost that cursed you.
    @Test func aSpellNeedsACurseToAnswer() throws {
        let world = try ChatWorld([("ghost", .ghost), ("will", .human)])
        let (ghost, will) = (world.nodes[0], world.nodes[1])
        try will.curses.learn(spell: Spells.phrases[1], key: will.identity.signingPublicKey, database: will.database)
        let ghostPeer = try #require(will.service.peer(ghost.identity.signingPublicKey))
        #expect(throws: UserError.self) { try will.curses.speak(to: ghostPeer) }
    }
}
