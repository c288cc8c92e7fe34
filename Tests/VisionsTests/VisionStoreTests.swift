import Zombies
import GRDB
import Glibc
import Storage
import Terminal
import TestSupport
import Testing
@testable import Visions

/// A committed portrait: a real PNG file, 16x16.
let portraitPath: String = {
    var parts = #filePath.split(separator: "/", omittingEmptySubsequences: false)
    parts.removeLast(3)
    return parts.joined(separator: "/") + "/assets/portraits/mike.png"
}()

func temporaryDatabase() throws -> (SeanceDatabase, String) {
    let dir = temporaryDirectory("visions")
    return (try testDatabase(dir + "/seance.sqlite", schema: Schema([.settings] + VisionsSchema.migrations)), dir)
}

@Suite struct VisionStoreTests {
    let bytes = try! ImageDecoder.readFile(portraitPath)
    var image: RGBAImage { try! ImageDecoder.decode(bytes) }

    @Test func seededWithTheMainCharacters() throws {
        let (db, dir) = try temporaryDatabase()
        defer { removeDirectory(dir) }
        let rescuers = try VisionStore(database: db).rescuers()
        #expect(rescuers.map(\.name) == ["Dustin", "Eleven", "Hopper", "Jonathan", "Joyce", "Lucas", "Max", "Mike", "Nancy", "Steve"])
        for rescuer in rescuers {
            #expect(rescuer.rescues == 0)
            #expect(rescuer.description.split(separator: ".").count >= 2)
            let portrait = try ImageDecoder.decode(try #require(rescuer.portrait))
            #expect(portrait.width == 16 && portrait.height == 16)
        }
    }

    /// Rename keeps the visions and refuses another's name (a change of case is not one);
    /// delete is refused while a vision names them; a description is one clean paragraph.
    @Test func rescuersAreRenamedDeletedAndDescribed() throws {
        let (db, dir) = try temporaryDatabase()
        defer { removeDirectory(dir) }
        let store = VisionStore(database: db)
        let id = try store.addVision(rescuerName: "Max", imageBytes: bytes, image: image, now: 0)
        #expect(throws: VisionsError.rescuerExists("Lucas")) { try store.renameRescuer("max", to: "lucas") }
        try store.renameRescuer("max", to: "MAX")
        try store.renameRescuer("MAX", to: "Max Mayfield")
        #expect(try store.vision(id).rescuerName == "Max Mayfield")
        #expect(throws: VisionsError.rescuerHasVisions("Max Mayfield", 1)) { try store.deleteRescuer("max mayfield") }
        try store.delete(id)
        try store.deleteRescuer("max mayfield")
        #expect(try store.rescuer(named: "Max Mayfield") == nil)
        #expect(throws: VisionsError.noSuchRescuer("Nobody")) { try store.deleteRescuer("Nobody") }
        try store.describeRescuer("Steve", as: " brave\u{1B}[2J\nand kind ")
        #expect(try store.rescuer(named: "steve")?.description == "brave [2J and kind")
        #expect(throws: VisionsError.descriptionTooLong) { try store.describeRescuer("Steve", as: String(repeating: "x", count: 501)) }
        #expect(try store.similarRescuer(to: "Joyce Byers") == "Joyce" && store.similarRescuer(to: "Vecna") == nil)
        // A name of control characters only is empty, not a rescuer without a name.
        #expect(throws: VisionsError.emptyName) { try store.renameRescuer("Steve", to: "\u{7}\u{1B}") }
    }

    @Test func namesAreUniqueWhateverTheCase() throws {
        let (db, dir) = try temporaryDatabase()
        defer { removeDirectory(dir) }
        let store = VisionStore(database: db)
        try store.addVision(rescuerName: "  mike ", imageBytes: bytes, image: image, now: 1)
        try store.addVision(rescuerName: "Jim Hopper", imageBytes: bytes, image: image, now: 2)
        try store.addVision(rescuerName: "JIM HOPPER", imageBytes: bytes, image: image, now: 3)
        let names = try store.rescuers().map(\.name)
        #expect(names.filter { $0.lowercased() == "mike" } == ["Mike"])
        #expect(names.filter { $0.lowercased() == "jim hopper" } == ["Jim Hopper"])
        #expect(try store.visions(offset: 0, limit: 10).map(\.rescuerName) == ["Mike", "Jim Hopper", "Jim Hopper"])
        #expect(throws: VisionsError.emptyName) { try store.addVision(rescuerName: " \t ", imageBytes: bytes, image: image, now: 4) }
        #expect(try store.visionCount() == 3)
    }

    @Test func savingCountsOnceAndOnlyForTheRightName() throws {
        let (db, dir) = try temporaryDatabase()
        defer { removeDirectory(dir) }
        let store = VisionStore(database: db)
        let id = try store.addVision(rescuerName: "Eleven", imageBytes: bytes, image: image, now: 1)
        #expect(try store.save(id, name: "Mike", now: 2) == .wrongRescuer(expected: "Eleven"))
        #expect(try store.rescuer(named: "Mike")?.rescues == 0)
        #expect(try store.save(id, name: "  eLEVEN ", now: 3) == .rescued(by: "Eleven"))
        #expect(try store.save(id, name: "Eleven", now: 4) == .alreadyRescued(by: "Eleven"))
        #expect(try store.rescuer(named: "eleven")?.rescues == 1)
        let vision = try store.vision(id)
        #expect(vision.rescued && vision.rescuedAt == 3 && vision.image == bytes)
        #expect(throws: VisionsError.noSuchVision(99)) { try store.save(99, name: "Eleven", now: 5) }
    }

    @Test func deletingKeepsTheCountsConsistent() throws {
        let (db, dir) = try temporaryDatabase()
        defer { removeDirectory(dir) }
        let store = VisionStore(database: db)
        let a = try store.addVision(rescuerName: "Max", imageBytes: bytes, image: image, now: 1)
        let b = try store.addVision(rescuerName: "Max", imageBytes: bytes, image: image, now: 1)
        _ = try store.save(a, name: "Max", now: 2)
        _ = try store.save(b, name: "Max", now: 2)
        try store.delete(a)
        #expect(try store.rescuer(named: "Max")?.rescues == 1)
        let c = try store.addVision(rescuerName: "Max", imageBytes: bytes, image: image, now: 3)
        try store.delete(c)  // Not rescued: the count stays.
        #expect(try store.rescuer(named: "Max")?.rescues == 1)
        #expect(throws: VisionsError.noSuchVision(a)) { try store.delete(a) }
        #expect(try store.visionCount() == 1)
    }

    @Test func aFailedSaveChangesNothing() throws {
        let (db, dir) = try temporaryDatabase()
        defer { removeDirectory(dir) }
        let store = VisionStore(database: db)
        let id = try store.addVision(rescuerName: "Nancy", imageBytes: bytes, image: image, now: 1)
        // A trigger makes the second statement of the transaction fail after the first ran.
        try db.write { try $0.execute(sql: "CREATE TRIGGER fail BEFORE UPDATE OF rescues ON rescuer BEGIN SELECT RAISE(ABORT, 'boom'); END") }
        #expect(throws: (any Error).self) { try store.save(id, name: "Nancy", now: 2) }
        #expect(try store.vision(id).rescued == false)
    }

    @Test func imagesLiveInTheDatabase() throws {
        let (db, dir) = try temporaryDatabase()
        defer { removeDirectory(dir) }
        let id = try VisionStore(database: db).addVision(rescuerName: "Joyce", imageBytes: bytes, image: image, now: 1)
        let reopened = try testDatabase(db.path, schema: Schema([.settings] + VisionsSchema.migrations))
        #expect(try VisionStore(database: reopened).vision(id).image == bytes)
    }

    @Test func pagesReadOnlyTheirRows() throws {
        let (db, dir) = try temporaryDatabase()
        defer { removeDirectory(dir) }
        let store = VisionStore(database: db)
        for i in 0..<25 { try store.addVision(rescuerName: i % 2 == 0 ? "Lucas" : "Steve", imageBytes: bytes, image: image, now: Double(i)) }
        #expect(try store.visions(offset: 20, limit: 10).map(\.id) == [21, 22, 23, 24, 25])
        let first = try store.visions(offset: 0, limit: 10)
        #expect(first.count == 10 && first[0].thumbnail.width == VisionStore.thumbnailWidth)
    }
}

@Suite struct MigrationTests {
    @Test func anOlderDatabaseIsUpgradedKeepingItsData() throws {
        let dir = temporaryDirectory("migrate")
        defer { removeDirectory(dir) }
        let path = dir + "/seance.sqlite"
        // A database as the first release left it: settings and zombies only.
        let old = try DatabaseQueue(path: path)
        try old.write { db in
            try db.execute(sql: """
                PRAGMA application_id = \(0x5345_414E);
                CREATE TABLE grdb_migrations (identifier TEXT NOT NULL PRIMARY KEY);
                INSERT INTO grdb_migrations VALUES ('v1-settings'), ('v2-zombies');
                CREATE TABLE setting (key TEXT PRIMARY KEY, value TEXT NOT NULL);
                INSERT INTO setting VALUES ('zombies.variant', 'blocker');
                CREATE TABLE zombiesScore (id INTEGER PRIMARY KEY CHECK (id = 1), wins INTEGER NOT NULL DEFAULT 0, losses INTEGER NOT NULL DEFAULT 0);
                INSERT INTO zombiesScore VALUES (1, 5, 2);
                """)
        }
        try old.close()
        let db = try testDatabase(path, schema: Schema([.settings] + ZombiesSchema.migrations + VisionsSchema.migrations))
        #expect(try db.setting("zombies.variant") == "blocker")
        #expect(try db.zombiesScore() == (5, 2))
        #expect(try VisionStore(database: db).rescuers().count == 10)
    }
}
