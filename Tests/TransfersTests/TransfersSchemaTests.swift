import App
import Crypto
import Foundation
import GRDB
import Nearby
import TestSupport
import Testing
@testable import Transfers

/// The upgrade of a database made before files were files (issue 50): its chunks go out to
/// files, the table goes, and the file gives its pages back.
@Suite struct TransfersSchemaTests {
    @Test func chunksInAnOlderDatabaseAreMovedOutToFilesAndTheSpaceGiven() throws {
        let directory = temporaryDirectory("transfers-upgrade")
        defer { removeDirectory(directory) }
        let path = directory + "/seance.sqlite"
        var random = SeededRandom(seed: 50)
        // Two files as an older seance kept them: 3 MiB received whole, and 1 MiB of ours.
        let received = (0..<(3 << 20)).map { _ in UInt8.random(in: 0...255, using: &random) }
        let sent = Array(received.prefix(1 << 20))
        let before = Schema(Array(Schema.seance.migrations.prefix { $0.name != TransfersSchema.files.name }), backfills: [])
        do {
            let old = try testDatabase(path, schema: before)
            let me = Data(repeating: 1, count: 32)
            let conversation = try MessageStore(database: old).conversation(myKey: me, peerKey: Data(repeating: 2, count: 32), peerName: "ben",
                                                                            peerAgreementKey: Data(repeating: 2, count: 32), now: 0).id
            try old.writer.writeWithoutTransaction { db in
                // As an older seance made it: without auto_vacuum.
                try db.execute(sql: "PRAGMA auto_vacuum = NONE")
                try db.execute(sql: "VACUUM")
            }
            try old.write { db in
                for (outgoing, bytes) in [(false, received), (true, sent)] {
                    try db.execute(sql: """
                        INSERT INTO transfer (transferId, conversationId, outgoing, name, picture, size, chunkSize, sha256, state, stored, sentAt)
                        VALUES (?, ?, ?, 'f.bin', 0, ?, 1100, ?, 'complete', ?, 0)
                        """, arguments: [Data(repeating: outgoing ? 4 : 3, count: 16), conversation, outgoing, bytes.count,
                                         Data(SHA256.hash(data: bytes)), (bytes.count + 1_099) / 1_100])
                    let number = db.lastInsertedRowID
                    for index in 0..<((bytes.count + 1_099) / 1_100) {
                        let chunk = Data(bytes[(index * 1_100)..<min(bytes.count, (index + 1) * 1_100)])
                        try db.execute(sql: "INSERT INTO transferChunk (transfer, idx, data) VALUES (?, ?, ?)", arguments: [number, index, chunk])
                    }
                }
            }
        }
        let oldSize = try #require(try FileManager.default.attributesOfItem(atPath: path)[.size] as? Int)
        #expect(oldSize > 4 << 20, "overflow pages: \(oldSize)")

        let upgraded = try testDatabase(path, schema: Schema.seance)
        var told: [Double] = []
        try upgraded.runBackfills { name, done in
            #expect(name == "moving files out of the database")
            told.append(done)
        }
        #expect(told.first == 0 && told.contains(0.5) && told.last == 1, "a transfer a step, with progress: \(told)")
        let (chunksLeft, autoVacuum) = try upgraded.read { db in (try db.tableExists("transferChunk"), try Int.fetchOne(db, sql: "PRAGMA auto_vacuum")) }
        #expect(!chunksLeft && autoVacuum == 2)
        let store = TransferStore(database: upgraded)
        #expect(try store.contents(of: 1) == received && store.contents(of: 2) == sent)
        let transfer = try #require(try store.transfers(myKey: Data(repeating: 1, count: 32)).first { !$0.outgoing })
        #expect(try store.hash(of: transfer) == transfer.sha256)
        // The database holds no file any more: it is the files' size smaller, or more.
        let newSize = try #require(try FileManager.default.attributesOfItem(atPath: path)[.size] as? Int)
        #expect(newSize < oldSize - (4 << 20), "\(oldSize) → \(newSize)")
        // Once: nothing is left to do on the next start.
        var again = 0
        try upgraded.runBackfills { _, _ in again += 1 }
        #expect(again == 0)
    }
}
