import Foundation
import GRDB
import Nearby
import TestWorld
import Testing
import Wire
@testable import Transfers

/// Pictures by mail (`TransferMail`), on a network that holds what comes to a mailbox while its
/// reader is away, as a broker does, on the manual clock.
extension TransfersTests {
    /// ann and ben on a broker; ben wrote to ann (so his seance takes her pictures without
    /// asking); then ben away.
    func brokerWorld(benWrites: Bool = true) throws -> (ChatWorld, ann: ChatWorld.Node, ben: ChatWorld.Node) {
        let world = try ChatWorld([("ann", .human), ("ben", .human)], transports: ["broker"], keeping: ["broker"])
        let (ann, ben) = (world.nodes[0], world.nodes[1])
        world.step(3)
        if benWrites {
            try write("send me the map", from: ben, to: ann, world: world)
        } else {
            _ = try ann.delivery.conversation(with: try #require(ann.service.peer(ben.identity.signingPublicKey)))
        }
        ben.goOffline()
        world.step(1)
        #expect(ann.service.peer(ben.identity.signingPublicKey) == nil, "ben left")
        return (world, ann, ben)
    }

    /// A picture for ben, away, is left with the broker and ann quits; ben connects later and
    /// has it whole, and his "whole" waits for ann in turn: back, her picture is delivered.
    @Test func aPictureForSomeoneAwayArrivesWhenTheyConnectAndItsSenderHearsSo() throws {
        let (world, ann, ben) = try brokerWorld()
        let picture = Self.bitmap(width: 160, height: 120)
        try send(file("map.bmp", picture), from: ann, to: ben, world: world)
        world.step(1)
        let sent = try #require(try transfers(of: ann).first)
        #expect(sent.mailedAt != nil && sent.state == .offered)
        let view = TransferView(capabilities: .plain, columns: 100)
        #expect(view.listLine(sent, stored: 0).hasSuffix("offered (with the broker)"))
        #expect(view.progressRow(sent, stored: 0, rate: nil).hasSuffix("with the broker"))
        #expect(ann.notices().contains { $0.contains("map.bmp) is left with the broker: ben#") })
        // Its offer and its chunks, in runs: far fewer mails than chunks.
        #expect(world.network.held(for: ben.identity.signingPublicKey) <= sent.chunkCount / 8)
        ann.goOffline()
        world.step(60)
        try ben.goOnline(world)
        #expect(try run(world, upTo: 10) { try transfers(of: ben).first?.state == .complete })
        let received = try #require(try transfers(of: ben).first)
        #expect(try TransferStore(database: ben.database).contents(of: received.number) == picture)
        #expect(ben.notices().contains { $0.contains("sent picture \(received.number)") })
        ben.goOffline()
        try ann.goOnline(world)
        #expect(try run(world, upTo: 10) { try transfers(of: ann).first?.state == .complete })
        #expect(ann.notices().contains { $0.contains("delivered to ben#") })
    }

    /// Only what the reader's seance takes without asking is mailed (a picture to someone who
    /// wrote to us), at most four at a time for one reader; the rest waits to be offered when
    /// both are online, and goes then.
    @Test func onlyPicturesTakenWithoutAskingAreMailedAndAtMostFour() throws {
        let (world, ann, ben) = try brokerWorld()
        let picture = Self.bitmap(width: 20, height: 10)
        for index in 1...5 { try send(file("p\(index).bmp", picture), from: ann, to: ben, world: world) }
        try send(file("notes.txt", Array("not a picture".utf8)), from: ann, to: ben, world: world)
        world.step(1)
        let mailed = try transfers(of: ann).map { $0.mailedAt != nil }
        #expect(mailed == [true, true, true, true, false, false])
        ann.goOffline()
        try ben.goOnline(world)
        #expect(try run(world, upTo: 10) { try transfers(of: ben).filter { $0.state == .complete }.count == 4 })
        // Both online: the fifth is offered and taken, the file asked about.
        try ann.goOnline(world)
        #expect(try run(world, upTo: 20) { try transfers(of: ben).filter { $0.state == .complete }.count == 5 })
        #expect(try run(world, upTo: 10) { try transfers(of: ben).contains { $0.name == "notes.txt" && $0.state == .asking } })
        #expect(try run(world, upTo: 10) { try transfers(of: ann).filter { $0.state == .complete }.count == 5 })

        // To someone who never wrote to us (whose seance would ask its user), nothing is mailed.
        let (quiet, cat, dan) = try brokerWorld(benWrites: false)
        try send(file("map.bmp", picture), from: cat, to: dan, world: quiet)
        quiet.step(1)
        #expect(try transfers(of: cat).first?.mailedAt == nil)
        #expect(quiet.network.held(for: dan.identity.signingPublicKey) == 0)
    }

    /// Chunks by mail of nothing offered, and a mailed answer other than "whole", change nothing.
    @Test func mailedChunksOfNothingOfferedAndMailedRefusalsAreDropped() throws {
        let (world, ann, ben) = try brokerWorld()
        let benKey = ben.identity.signingPublicKey
        let id = Data(repeating: 7, count: 16)
        let delivery = ann.context.delivery
        let posted = ann.engine.sync {
            [delivery.mail(FileChunks(id: id, first: 0, data: [1, 2, 3]), to: benKey),
             delivery.mail(FileAnswer(id: id, decision: .cancel), to: benKey)]
        }
        #expect(posted == [true, true])
        ann.goOffline()
        try ben.goOnline(world)
        world.step(1)
        #expect(try transfers(of: ben).isEmpty)
        let dropped = ben.service.statistics.dropped
        #expect(dropped["file chunk of nothing accepted"] == 1 && dropped["file answer by mail"] == 1, "\(dropped)")
    }
}
