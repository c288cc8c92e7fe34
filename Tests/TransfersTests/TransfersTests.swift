import Crypto
import Foundation
import GRDB
import Nearby
import Runtime
import Shell
import Storage
import Synchronization
import TestSupport
import TestWorld
import Testing
import Wire
@testable import Transfers

/// Transfers between shells on the manual clock (`ChatWorld`): what arrives, what waits for
/// consent, and what a hostile sender can and cannot make a receiver keep.
@Suite struct TransfersTests {
    let directory = temporaryDirectory("transfers")

    /// A BMP of `width` x `height` (a picture every decoder here reads).
    static func bitmap(width: Int, height: Int) -> [UInt8] {
        TestPictures.bitmap(width: width, height: height) { x, y in (200, UInt8(y * 8 % 256), UInt8(x * 4 % 256)) }
    }

    func file(_ name: String, _ bytes: [UInt8]) -> String {
        let path = directory + "/" + name
        _ = FileManager.default.createFile(atPath: path, contents: Data(bytes))
        return path
    }

    /// `from` sends the file at `path` to `to` (present, or away with a conversation), as `/send` does.
    @discardableResult
    func send(_ path: String, from: ChatWorld.Node, to: ChatWorld.Node, world: ChatWorld) throws -> Transfer {
        let key = to.identity.signingPublicKey
        let known = try MessageStore(database: from.database).existingConversation(myKey: from.identity.signingPublicKey, peerKey: key)
        let conversation = try from.service.peer(key).map { try from.delivery.conversation(with: $0) } ?? #require(known)
        let transfer = try TransferStore(database: from.database).send(path: path, name: (path as NSString).lastPathComponent, in: conversation,
                                                                       id: Data((0..<16).map { _ in UInt8.random(in: 0...255) }),
                                                                       now: world.scheduler.now)
        let live = try #require(from.transfers.live)
        live.context.engine.sync { live.send(transfer) }
        return transfer
    }

    func transfers(of node: ChatWorld.Node) throws -> [Transfer] {
        try TransferStore(database: node.database).transfers(myKey: node.identity.signingPublicKey)
    }

    /// Steps the clock until `condition` holds (at most `seconds`).
    func run(_ world: ChatWorld, upTo seconds: Double, step: Double = 0.02, until condition: () throws -> Bool) rethrows -> Bool {
        var elapsed = 0.0
        while elapsed < seconds {
            if try condition() { return true }
            world.step(step)
            elapsed += step
        }
        return try condition()
    }

    /// Bytes of received files kept in the node's transfers folder.
    func chunkCount(_ node: ChatWorld.Node) throws -> Int {
        let directory = TransferFiles(database: node.database).directory
        let names = (try? FileManager.default.contentsOfDirectory(atPath: directory)) ?? []
        return try names.map { try FileManager.default.attributesOfItem(atPath: directory + "/" + $0)[.size] as? Int ?? 0 }.reduce(0, +)
    }

    /// `from` writes `text` to `to` (a conversation of theirs, and for pictures their consent).
    func write(_ text: String, from: ChatWorld.Node, to: ChatWorld.Node, world: ChatWorld) throws {
        _ = try from.delivery.send(text, in: try from.delivery.conversation(with: try #require(from.service.peer(to.identity.signingPublicKey))))
        world.step(1)
    }

    /// From someone you wrote to, a picture up to 1 MiB is taken at once and arrives whole; it
    /// is drawn where it is told (a line here: the conversation is not shown), from a thumbnail
    /// made once and kept.
    @Test func aPictureFromSomeoneYouWroteToArrivesAtOnce() throws {
        let world = try ChatWorld([("ann", .human), ("ben", .human)])
        let (ann, ben) = (world.nodes[0], world.nodes[1])
        world.step(2)
        try write("send me the map", from: ben, to: ann, world: world)
        let picture = Self.bitmap(width: 40, height: 30)
        try send(file("map.bmp", picture), from: ann, to: ben, world: world)
        #expect(try run(world, upTo: 10) { try transfers(of: ben).first?.state == .complete })
        let received = try #require(try transfers(of: ben).first)
        #expect(received.picture && received.name == "map.bmp" && received.size == picture.count)
        #expect(try TransferStore(database: ben.database).contents(of: received.number) == picture)
        #expect(try transfers(of: ann).first?.state == .complete)
        #expect(ben.notices().contains { $0.contains("sent picture \(received.number)") })
        let store = TransferStore(database: ben.database)
        #expect(try store.thumbnail(of: received.number) == nil, "made where it is first drawn")
        let (shown, drawn) = store.drawn(received)
        let thumbnail = try #require(drawn)
        #expect(shown.picture && thumbnail.width == 16 && thumbnail.height == 12, "40 × 30 within 24 × 12")
        #expect(try store.thumbnail(of: received.number) == thumbnail, "kept: a page drawn again decodes nothing")
    }

    /// A phone's photo (a JPEG whose size comes after 120 kB of EXIF and colour profile, stored
    /// sideways) is a picture, not a file to accept, and is drawn upright (issue 50).
    @Test func aPhonesPhotoIsAPictureDrawnUpright() throws {
        let world = try ChatWorld([("ann", .human), ("ben", .human)])
        let (ann, ben) = (world.nodes[0], world.nodes[1])
        world.step(2)
        try write("send me the photo", from: ben, to: ann, world: world)
        let photo = TestPictures.cameraJPEG(orientation: 6, profile: 120_000)
        let sent = try send(file("IMG_0001.JPG", photo), from: ann, to: ben, world: world)
        #expect(sent.picture, "the sender reads far enough to know")
        #expect(try run(world, upTo: 10) { try transfers(of: ben).first?.state == .complete })
        let received = try #require(try transfers(of: ben).first)
        let (shown, drawn) = TransferStore(database: ben.database).drawn(received)
        let thumbnail = try #require(drawn)
        #expect(shown.picture && thumbnail.height == thumbnail.width * 2, "16 × 8 stored, a quarter turn to stand: \(thumbnail.width) × \(thumbnail.height)")
    }

    /// Their message first is no consent (issue 49): a picture from someone who wrote to you,
    /// whom you never answered, waits for your answer like any file.
    @Test func aPictureFromSomeoneWhoWroteFirstWaitsForConsent() throws {
        let world = try ChatWorld([("eve", .human), ("ben", .human)])
        let (eve, ben) = (world.nodes[0], world.nodes[1])
        world.step(2)
        try write("look at this", from: eve, to: ben, world: world)
        try send(file("look.bmp", Self.bitmap(width: 40, height: 30)), from: eve, to: ben, world: world)
        #expect(try run(world, upTo: 5) { try transfers(of: ben).first?.state == .asking })
        #expect(try chunkCount(ben) == 0)
    }

    /// Issue 49's bomb, a 7,000 × 7,000 16-bit PNG of zeros (2.4 MB, 392 MB decoded), accepted:
    /// it arrives, its header alone says it is over the budget, and it is shown as a file from
    /// then on, never decoded.
    @Test func aPictureOverTheBudgetIsShownAsAFile() throws {
        let world = try ChatWorld([("eve", .human), ("ben", .human)])
        let (eve, ben) = (world.nodes[0], world.nodes[1])
        world.step(2)
        let bomb = TestPictures.zeros(width: 7_000, height: 7_000, sixteenBit: true)
        try send(file("bomb.png", bomb), from: eve, to: ben, world: world)
        #expect(try run(world, upTo: 5) { try transfers(of: ben).first?.state == .asking })
        let offered = try #require(try transfers(of: ben).first)
        #expect(offered.picture, "the sender said so")
        try ben.engine.sync { try ben.transfers.live!.receiver.accepted(offered) }
        #expect(try run(world, upTo: 60) { try transfers(of: ben).first?.state == .complete })
        let store = TransferStore(database: ben.database)
        let (shown, drawn) = store.drawn(try #require(try transfers(of: ben).first))
        #expect(drawn == nil && !shown.picture)
        #expect(try transfers(of: ben).first?.picture == false, "a file from now on")
        let bubble = TransferView(capabilities: .plain, columns: 80).bubble(shown, picture: drawn)
        #expect(bubble.joined().contains("PNG file"))
    }

    /// 1 MiB through 10 % loss both ways, the receiver gone half-way and back: the transfer
    /// goes on from what it had stored, and arrives byte for byte.
    @Test func aFileThroughLossAndARestartOfTheReceiverArrivesWhole() throws {
        let world = try ChatWorld([("ann", .human), ("ben", .human)])
        let (ann, ben) = (world.nodes[0], world.nodes[1])
        world.step(2)
        var random = SeededRandom(seed: 11)
        let lossy = Shared(random)
        world.network.setLoss { _ in lossy.withLock { Double.random(in: 0..<1, using: &$0) < 0.1 } }
        random = SeededRandom(seed: 12)
        let bytes = (0..<1_000_000).map { _ in UInt8.random(in: 0...255, using: &random) }
        try send(file("notes.bin", bytes), from: ann, to: ben, world: world)
        #expect(try run(world, upTo: 20) { try transfers(of: ben).first?.state == .asking })
        let offered = try #require(try transfers(of: ben).first)
        #expect(try chunkCount(ben) == 0, "nothing is kept before it is accepted")
        try ben.engine.sync { try ben.transfers.live!.receiver.accepted(offered) }
        #expect(try run(world, upTo: 30, step: 0.001) { (try transfers(of: ben).first?.stored ?? 0) > offered.chunkCount / 2 })
        let halfway = try #require(try transfers(of: ben).first?.stored)
        #expect(halfway < offered.chunkCount)
        ben.goOffline()
        world.step(5)
        try ben.goOnline(world)
        #expect(try run(world, upTo: 60) { try transfers(of: ben).first?.state == .complete })
        #expect(try TransferStore(database: ben.database).contents(of: offered.number) == bytes)
        #expect(try transfers(of: ann).first?.state == .complete)
    }

    /// What a node's bars said, in order (each drawing of a row marked as a transfer's).
    func bars(of node: ChatWorld.Node) -> [String] {
        node.inbox.drain().flatMap { notice -> [String] in
            switch notice {
            case .update(let overwrites, _): return overwrites.map { $0.render(100).trimmingCharacters(in: .whitespaces) }
            case .markedLines(let render): return render(100).filter { $0.mark != nil }.map { $0.text.trimmingCharacters(in: .whitespaces) }
            default: return []
            }
        }
    }

    /// Bars tell the truth (issue 50): the peer gone, a bar says whom it waits for, with no
    /// rate or time left; back, it moves again; ended, its final state is written over it.
    @Test func aBarSaysWhomItWaitsForAndEndsWithItsState() throws {
        let world = try ChatWorld([("ann", .human), ("ben", .human)])
        let (ann, ben) = (world.nodes[0], world.nodes[1])
        for node in [ann, ben] {
            node.transfers.drawsBars = true
            node.goOffline()
            try node.goOnline(world)
        }
        world.step(2)
        var random = SeededRandom(seed: 31)
        let bytes = (0..<800_000).map { _ in UInt8.random(in: 0...255, using: &random) }
        // No chunk past the 300th gets through until the sender has gone.
        let packets = world.packets
        let stopped = Shared(true)
        world.network.setLoss { bytes in
            guard stopped.withLock({ $0 }), let packet = packets(bytes), packet.code == KindTable.fileChunk,
                  let chunk = try? FileChunk.read(packet.body) else { return false }
            return chunk.index >= 300
        }
        try send(file("long.bin", bytes), from: ann, to: ben, world: world)
        #expect(try run(world, upTo: 10) { try transfers(of: ben).first?.state == .asking })
        let offered = try #require(try transfers(of: ben).first)
        try ben.engine.sync { try ben.transfers.live!.receiver.accepted(offered) }
        #expect(try run(world, upTo: 30) { (try transfers(of: ben).first?.stored ?? 0) == 300 })
        let moving = bars(of: ben)
        #expect(moving.last?.contains(" of 781 KiB") == true, "\(moving)")
        _ = bars(of: ann)
        ann.goOffline()
        var seen: [String] = []
        #expect(run(world, upTo: 20) { seen += bars(of: ben); return seen.last?.contains("waiting") == true }, "\(seen)")
        let waiting = try #require(seen.last)
        #expect(waiting.hasPrefix("file 1 ") && waiting.contains(" of 781 KiB · waiting for ann#"), "\(waiting)")
        #expect(!waiting.contains("/s") && !waiting.contains("left"))
        stopped.withLock { $0 = false }
        try ann.goOnline(world)
        #expect(try run(world, upTo: 60) { try transfers(of: ben).first?.state == .complete && transfers(of: ann).first?.state == .complete })
        world.step(1)
        #expect(bars(of: ben).last == "file 1 received")

        // The sender's bar, its receiver gone; cancelled meanwhile, its state replaces the bar,
        // and the receiver's too when it comes back.
        try send(file("second.bin", Array(bytes.prefix(500_000))), from: ann, to: ben, world: world)
        #expect(try run(world, upTo: 10) { try transfers(of: ben).last?.state == .asking })
        let second = try #require(try transfers(of: ben).last)
        stopped.withLock { $0 = true }
        try ben.engine.sync { try ben.transfers.live!.receiver.accepted(second) }
        #expect(try run(world, upTo: 30) { (try transfers(of: ben).last?.stored ?? 0) == 300 })
        _ = bars(of: ann)
        ben.goOffline()
        seen = []
        #expect(run(world, upTo: 20) { seen += bars(of: ann); return seen.last?.contains("waiting for ben#") == true }, "\(seen)")
        let mine = try #require(try transfers(of: ann).last)
        ann.engine.sync { ann.transfers.live!.stopped(mine, as: .cancelled) }
        #expect(bars(of: ann).last == "file \(mine.number) cancelled: you stopped it")
        try ben.goOnline(world)
        #expect(try run(world, upTo: 20) { try transfers(of: ben).last?.state == .cancelled })
        world.step(0.5)
        #expect(bars(of: ben).last?.hasPrefix("file \(second.number) cancelled") == true)
        // `transfers` lists them in columns (issue 52): names of other lengths, sizes aligned.
        let listed = TransferView(capabilities: .plain, columns: 100).listLines(try transfers(of: ben).map { ($0, $0.stored) })
        let ends = listed.map { line in line.range(of: " KiB")!.upperBound.utf16Offset(in: line) }
        #expect(listed.count == 2 && Set(ends).count == 1, "\(listed)")
    }

    /// The sender gone half-way and back: what it had not been told was stored goes again, from
    /// where the receiver says it stopped; then a cancel from the sender stops the next one at
    /// the receiver too, which keeps nothing of it.
    @Test func aTransferGoesOnAfterTheSenderComesBackAndACancelReachesTheReceiver() throws {
        let world = try ChatWorld([("ann", .human), ("ben", .human)])
        let (ann, ben) = (world.nodes[0], world.nodes[1])
        world.step(2)
        var random = SeededRandom(seed: 21)
        let bytes = (0..<800_000).map { _ in UInt8.random(in: 0...255, using: &random) }
        try send(file("long.bin", bytes), from: ann, to: ben, world: world)
        #expect(try run(world, upTo: 10) { try transfers(of: ben).first?.state == .asking })
        let offered = try #require(try transfers(of: ben).first)
        try ben.engine.sync { try ben.transfers.live!.receiver.accepted(offered) }
        #expect(try run(world, upTo: 30, step: 0.001) { (try transfers(of: ben).first?.stored ?? 0) > offered.chunkCount / 3 })
        ann.goOffline()
        world.step(5)
        try ann.goOnline(world)
        #expect(try run(world, upTo: 60) { try transfers(of: ben).first?.state == .complete })
        #expect(try TransferStore(database: ben.database).contents(of: offered.number) == bytes)
        #expect(try run(world, upTo: 10) { try transfers(of: ann).first?.state == .complete })

        world.step(2)
        try send(file("second.bin", Array(bytes.prefix(500_000))), from: ann, to: ben, world: world)
        #expect(try run(world, upTo: 10) { try transfers(of: ben).last?.state == .asking })
        let second = try #require(try transfers(of: ben).last)
        // No chunk past the hundredth gets through: it cannot finish before the cancel.
        let packets = world.packets
        world.network.setLoss { bytes in
            guard let packet = packets(bytes), packet.code == KindTable.fileChunk, let chunk = try? FileChunk.read(packet.body) else { return false }
            return chunk.index >= 100
        }
        try ben.engine.sync { try ben.transfers.live!.receiver.accepted(second) }
        #expect(try run(world, upTo: 10) { (try transfers(of: ben).last?.stored ?? 0) == 100 })
        let mine = try #require(try transfers(of: ann).last)
        ann.engine.sync { ann.transfers.live!.stopped(mine, as: .cancelled) }
        let cancelled = try run(world, upTo: 5) { try transfers(of: ben).last?.state == .cancelled }
        let seen = try transfers(of: ben).last
        #expect(cancelled, "\(String(describing: seen))")
        #expect(!FileManager.default.fileExists(atPath: TransferFiles(database: ben.database).path(of: second.number)), "deleted at once")
        #expect(ben.notices().contains { $0.contains("second.bin from ann#") && $0.contains("cancelled") })
    }

    /// The receiver's last acknowledgement lost: the chunks the sender sends again are answered
    /// with it once more, and the sender ends too (it went on sending for ever).
    @Test func aLostLastAcknowledgementIsGivenAgain() throws {
        let world = try ChatWorld([("ann", .human), ("ben", .human)])
        let (ann, ben) = (world.nodes[0], world.nodes[1])
        world.step(2)
        try write("hi", from: ben, to: ann, world: world)
        let picture = Self.bitmap(width: 60, height: 40)
        let chunks = (picture.count + 1_099) / 1_100
        let packets = world.packets, lost = Shared(0)
        world.network.setLoss { bytes in
            guard let packet = packets(bytes), packet.code == KindTable.fileChunkAck, let ack = try? FileChunkAck.read(packet.body),
                  Int(ack.stored) == chunks else { return false }
            return lost.withLock { count in
                count += 1
                return count <= 2
            }
        }
        try send(file("late.bmp", picture), from: ann, to: ben, world: world)
        #expect(try run(world, upTo: 10) { try transfers(of: ann).first?.state == .complete })
        #expect(lost.withLock { $0 } > 2, "the last acknowledgement was lost, and given again")
        #expect(try transfers(of: ben).first?.state == .complete)
    }

    /// A stranger's file waits for an answer, and nothing of it is stored until then; declined,
    /// its sender is told and nothing is kept.
    @Test func aStrangersFileWaitsForConsent() throws {
        let world = try ChatWorld([("ann", .human), ("ben", .human)])
        let (ann, ben) = (world.nodes[0], world.nodes[1])
        world.step(2)
        try send(file("small.bmp", Self.bitmap(width: 4, height: 4)), from: ann, to: ben, world: world)
        #expect(try run(world, upTo: 5) { try transfers(of: ann).first?.state == .asking })
        let offered = try #require(try transfers(of: ben).first)
        let stored = try chunkCount(ben)
        #expect(offered.state == .asking && stored == 0)
        #expect(ben.notices().contains { $0.contains("offers small.bmp") && $0.contains("/accept \(offered.number)") })
        ben.engine.sync { ben.transfers.live!.stopped(offered, as: .declined) }
        #expect(try run(world, upTo: 5) { try transfers(of: ann).first?.state == .declined })
        #expect(try transfers(of: ben).first?.state == .declined)
        // Offered again (a sender that did not hear), it is declined again, not asked.
        let live = try #require(ann.transfers.live)
        let peer = try #require(ann.service.peer(ben.identity.signingPublicKey))
        ann.service.send(offered.offer, to: peer)
        world.step(1)
        #expect(try transfers(of: ben).count == 1)
        _ = live
    }

    /// A hostile sender can have at most 16 offers unfinished; what the user accepts must fit
    /// the disk (a 1 TiB offer is refused on `/accept`); chunks of what was not accepted, or of
    /// the wrong size, are dropped.
    @Test func aHostileSenderMeetsTheQuotaAndTheCount() throws {
        let world = try ChatWorld([("eve", .human), ("ben", .human)])
        let (eve, ben) = (world.nodes[0], world.nodes[1])
        world.step(2)
        let peer = try #require(eve.service.peer(ben.identity.signingPublicKey))
        var ids: [Data] = []
        for index in 0..<(TransfersOnline.unfinishedLimit + 3) {
            let id = Data((0..<16).map { _ in UInt8(index) })
            ids.append(id)
            eve.service.send(FileOffer(id: id, name: "huge \(index).bin", picture: false, size: index == 0 ? FileOffer.maximumSize : 16 << 20,
                                       sha256: Data(count: 32), sentAt: 0), to: peer)
        }
        world.step(1)
        let offered = try transfers(of: ben)
        #expect(offered.count == TransfersOnline.unfinishedLimit)
        #expect(ben.transfers.statistics().first?.contains("refused 3") == true)
        // Chunks of an offer not accepted: nothing stored.
        eve.service.send(FileChunk(id: ids[0], index: 0, data: [UInt8](repeating: 1, count: 1_100)), to: peer)
        world.step(1)
        #expect(try chunkCount(ben) == 0)
        // 1 TiB does not fit the disk; four of 16 MiB do.
        let live = try #require(ben.transfers.live)
        #expect(throws: UserError.self) { try ben.engine.sync { try live.receiver.accepted(offered[0]) } }
        for transfer in offered[1...4] { try ben.engine.sync { try live.receiver.accepted(transfer) } }
        #expect(try transfers(of: ben).filter { $0.state == .moving }.count == 4)
        // A chunk of the wrong size for an accepted one is dropped, and counted.
        eve.service.send(FileChunk(id: ids[1], index: 0, data: [1, 2, 3]), to: peer)
        world.step(1)
        #expect(try chunkCount(ben) == 0)
        #expect(ben.transfers.statistics().first?.contains("file chunk of the wrong size or place") == true)
        #expect(ben.transfers.statistics().first?.contains("eve 64.0 MiB of 64 MiB") == true)
    }

    /// Keys cost nothing (issue 49): five strangers offering 16 files each leave at most 64
    /// offers waiting for the user (the rest refused as busy, and counted), and the offers are
    /// told as presence notices are: a burst, then a line counting those held back.
    @Test func offersWaitingForTheUserAreBoundedInTotal() throws {
        let world = try ChatWorld([("ben", .human)] + (1...5).map { ("eve\($0)", Plane.human) })
        let ben = world.nodes[0]
        world.step(2)
        _ = ben.notices()
        for (number, eve) in world.nodes.dropFirst().enumerated() {
            let peer = try #require(eve.service.peer(ben.identity.signingPublicKey))
            for index in 0..<TransfersOnline.unfinishedLimit {
                eve.service.send(FileOffer(id: Data((0..<16).map { _ in UInt8(number * 16 + index) }), name: "f\(index).bin", picture: false,
                                           size: 10, sha256: Data(count: 32), sentAt: 0), to: peer)
            }
        }
        world.step(1)
        let offered = try transfers(of: ben)
        #expect(offered.count == TransfersOnline.waitingLimit)
        #expect(ben.transfers.statistics().first?.contains("busy: 64 offers wait for your answer 16") == true,
                "\(ben.transfers.statistics())")
        let told = ben.notices().filter { $0.contains(" offers ") }
        #expect(told.count == 20, "a burst")
        // One answered, another comes: told after the count of those held back.
        ben.engine.sync { ben.transfers.live!.stopped(offered[0], as: .declined) }
        world.step(10)
        let peer = try #require(world.nodes[1].service.peer(ben.identity.signingPublicKey))
        world.nodes[1].service.send(FileOffer(id: Data(repeating: 200, count: 16), name: "late.bin", picture: false, size: 10,
                                              sha256: Data(count: 32), sentAt: 0), to: peer)
        world.step(1)
        let later = ben.notices()
        #expect(later.contains("… 44 more offers not shown (transfers lists them)"), "\(later)")
        #expect(later.contains { $0.contains("offers late.bin") })
    }

    /// A hash that does not match: nothing is shown or kept, and the sender is told.
    @Test func aDamagedFileIsNotKept() throws {
        let world = try ChatWorld([("eve", .human), ("ben", .human)])
        let (eve, ben) = (world.nodes[0], world.nodes[1])
        world.step(2)
        let peer = try #require(eve.service.peer(ben.identity.signingPublicKey))
        let id = Data(repeating: 3, count: 16)
        eve.service.send(FileOffer(id: id, name: "lie.bin", picture: false, size: 10, sha256: Data(SHA256.hash(data: Data("0123456789".utf8))),
                                   sentAt: 0), to: peer)
        world.step(1)
        let offered = try #require(try transfers(of: ben).first)
        try ben.engine.sync { try ben.transfers.live!.receiver.accepted(offered) }
        eve.service.send(FileChunk(id: id, index: 0, data: Array("9876543210".utf8)), to: peer)
        world.step(1)
        let ended = try #require(try transfers(of: ben).first)
        #expect(ended.state == .failed && ended.reason?.contains("hash") == true)
        #expect(try chunkCount(ben) == 0)
    }

    /// A name from a peer is never a path here: no directory, nothing hidden, no control.
    @Test func namesFromPeersAreMadeSafeFileNames() {
        #expect(Transfers.safeName("../../etc/passwd") == ("_.._etc_passwd", ""))
        #expect(Transfers.safeName(".bashrc") == ("bashrc", ""))
        #expect(Transfers.safeName("-rf.png") == ("rf", ".png"))
        #expect(Transfers.safeName("a\u{1B}[2Jb.txt") == ("a_[2Jb", ".txt"))
        #expect(Transfers.safeName("evil\u{202E}gnp.exe") == ("evil_gnp", ".exe"))
        #expect(Transfers.safeName("...") == ("file", ""))
        #expect(Transfers.safeName(String(repeating: "x", count: 300) + ".png").stem.count == 100)
    }

    /// Saving never writes over a file, whether it moves the file or copies it.
    @Test func savingNeverWritesOverAFile() throws {
        let path = file("taken.txt", Array("mine".utf8)), theirs = file("theirs.txt", Array("theirs".utf8))
        #expect(throws: TransferFiles.Failure.exists(path: path)) { try TransferFiles.move(theirs, to: path) }
        #expect(throws: TransferFiles.Failure.exists(path: path)) { try TransferFiles.copy(theirs, to: path) }
        #expect(try String(contentsOfFile: path, encoding: .utf8) == "mine")
        #expect(try String(contentsOfFile: theirs, encoding: .utf8) == "theirs")
    }
}

/// A value shared with a closure the network calls, behind a lock.
final class Shared<Value: Sendable>: Sendable {
    private let mutex: Mutex<Value>
    init(_ value: Value) { mutex = Mutex(value) }
    func withLock<R>(_ body: (inout Value) -> R) -> R { mutex.withLock { body(&$0) } }
}
