import Foundation
import GRDB
import Nearby
import Rooms
@testable import Search
import Terminal
import App
import Storage
import Testing
import TestWorld

/// A profile's conversations and a room, with lines to find.
struct Fixture {
    let directory = temporaryDirectory("search")
    let database: SeanceDatabase
    let ann = Data(repeating: 1, count: 32), ben = Data(repeating: 2, count: 32), cat = Data(repeating: 3, count: 32)
    var store: SearchStore { SearchStore(database: database, me: ann, myName: "ann") }
    let ben1: Int64, cat1: Int64, room: Int64
    /// Sunday 22 Nov 2026, 14:05 UTC.
    static let now = 1_795_356_300.0

    init() throws {
        database = try testDatabase(directory + "/seance.db")
        let messages = MessageStore(database: database)
        ben1 = try messages.conversation(myKey: ann, peerKey: ben, peerName: "ben", peerAgreementKey: ben, now: Self.now).id
        cat1 = try messages.conversation(myKey: ann, peerKey: cat, peerName: "cat", peerAgreementKey: cat, now: Self.now).id
        let lines: [(Int64, String, Double)] = [
            (ben1, "we saw a quokka by the lake", Self.now - 86_400 * 3),
            (ben1, "Café at noon?", Self.now - 86_400),
            (cat1, "two words in order", Self.now - 3_600),
            (cat1, "words two, the other way", Self.now - 60),
            (cat1, "send an e-mail near the door", Self.now),
        ]
        var numbers: [Int64: Int64] = [:]
        _ = try messages.storeOutgoing(lines.map { conversation, text, at in
            numbers[conversation, default: 0] += 1
            let number = numbers[conversation]!
            return (conversation, MessageRow(number: number, text: text, firstSequence: UInt32(number), lastSequence: UInt32(number), sentAt: at))
        }, now: Self.now)
        _ = try messages.storeIncoming([MessageRow(number: 3, text: "QUOKKAS everywhere", firstSequence: 1, lastSequence: 1, sentAt: Self.now - 10)],
                                       deliveredUpTo: 1, in: ben1, now: Self.now)
        let rooms = RoomStore(database: database)
        room = try rooms.room(RoomID(major: 7, minor: 42), host: cat, hostName: "cat", myKey: ann, now: Self.now).id
        _ = try rooms.received(in: room, id: Data([1]), sender: cat, senderName: "cat", text: "a quokka in the room", sentAt: Self.now - 5,
                               now: Self.now)
    }

    /// `texts` stored as ours in one transaction, numbered (and sequenced) from `number`, in
    /// ben's conversation unless another is given: their rows.
    func store(_ texts: [String], from number: Int64, in conversation: Int64? = nil) throws -> [Int64] {
        try MessageStore(database: database).storeOutgoing(texts.enumerated().map { index, text in
            let n = number + Int64(index)
            return (conversation ?? ben1, MessageRow(number: n, text: text, firstSequence: UInt32(n), lastSequence: UInt32(n), sentAt: Self.now))
        }, now: Self.now)
    }

    func texts(_ words: [String], _ filter: SearchFilter = SearchFilter()) throws -> [String] {
        try store.hits(SearchQuery(words), filter, limit: 50).map(\.text)
    }
}

@Suite struct SearchTests {
    @Test func wordsAreFoundByPrefixWhateverTheirCaseAndAccents() throws {
        let world = try Fixture()
        defer { removeDirectory(world.directory) }
        // Newest first.
        #expect(try world.texts(["QUOK"]) == ["a quokka in the room", "QUOKKAS everywhere", "we saw a quokka by the lake"])
        #expect(try world.texts(["cafe"]) == ["Café at noon?"])
        #expect(try world.texts(["café", "NOON"]) == ["Café at noon?"])
        #expect(try world.store.count(SearchQuery(["quokka"]), SearchFilter()) == 3)
    }

    @Test func aQuotedArgumentIsAPhrase() throws {
        let world = try Fixture()
        defer { removeDirectory(world.directory) }
        #expect(try world.texts(["two words"]) == ["two words in order"])
        #expect(try world.texts(["two", "words"]).count == 2)
        // A word the index splits is a phrase too.
        #expect(try world.texts(["e-mail"]) == ["send an e-mail near the door"])
    }

    /// Nothing typed is query syntax: each finds what it says, or nothing; none raises.
    @Test(arguments: [
        (["NEAR("], ["send an e-mail near the door"]), (["OR"], ["two words in order"]),
        (["*"], []), (["\""], []), (["-"], []), (["quokka", "OR", "cafe"], []), (["NOT"], []), (["AND"], []),
        (["\"quokka"], ["a quokka in the room", "QUOKKAS everywhere", "we saw a quokka by the lake"]), (["quo*"], ["a quokka in the room", "QUOKKAS everywhere", "we saw a quokka by the lake"]),
        (["{text}:", "x"], []), (["^two"], ["words two, the other way", "two words in order"]), (["(", ")"], []),
        (["text:quokka"], []), (["''"], []), (["\u{0}"], []), ([String(repeating: "a", count: 5_000)], []),
    ] as [([String], [String])])
    func hostileQueriesAreText(_ words: [String], _ expected: [String]) throws {
        let world = try Fixture()
        defer { removeDirectory(world.directory) }
        #expect(try world.texts(words) == expected)
        #expect(try world.store.count(SearchQuery(words), SearchFilter()) == expected.count)
    }

    @Test func tooManyWordsIsAClearError() {
        #expect(throws: SearchError.tooManyWords(32)) { try SearchQuery(Array(repeating: "w", count: 33)) }
    }

    @Test func filtersNarrowTheSearch() throws {
        let world = try Fixture()
        defer { removeDirectory(world.directory) }
        var fromBen = SearchFilter()
        fromBen.author = .named("BEN")
        #expect(try world.texts(["quokka"], fromBen) == ["QUOKKAS everywhere"])
        var mine = SearchFilter()
        mine.author = .me
        #expect(try world.texts(["quokka"], mine) == ["we saw a quokka by the lake"])
        let places = try world.store.places(named: "room 7.42")
        var inRoom = SearchFilter()
        (inRoom.conversations, inRoom.rooms) = (places.conversations, places.rooms)
        #expect(try world.texts(["quokka"], inRoom) == ["a quokka in the room"])
        #expect(try world.store.places(named: "Cat").conversations == [world.cat1])
        var recent = SearchFilter()
        recent.since = Fixture.now - 7_200
        #expect(try world.texts(["words"], recent) == ["words two, the other way", "two words in order"])
        recent.before = Fixture.now - 120
        #expect(try world.texts(["words"], recent) == ["two words in order"])
        // Another profile's lines are not this one's.
        let other = SearchStore(database: world.database, me: world.cat, myName: "cat")
        #expect(try other.hits(SearchQuery(["quokka"]), SearchFilter(), limit: 10).isEmpty)
    }

    @Test func datesAsTyped() throws {
        var utc = Calendar(identifier: .gregorian)
        utc.timeZone = TimeZone(identifier: "UTC")!
        #expect(try Search.date("2026-11-22", now: Fixture.now, calendar: utc) == Fixture.now - 14 * 3_600 - 5 * 60)
        #expect(try Search.date("2026-11-22 14:05", now: Fixture.now, calendar: utc) == Fixture.now)
        #expect(try Search.date("today", now: Fixture.now, calendar: utc) == Fixture.now - 14 * 3_600 - 5 * 60)
        #expect(try Search.date("3d", now: Fixture.now, calendar: utc) == Fixture.now - 3 * 86_400)
        for bad in ["tomorrow", "2026-13-01", "2026-11-22 25:00", "-3d", "", "3x"] {
            #expect(throws: SearchError.self) { try Search.date(bad, now: Fixture.now, calendar: utc) }
        }
    }

    /// Issue 51: a lone line is not indexed alone (FTS5 writes a segment a transaction, the
    /// larger part of receiving a message); 64 waiting are indexed with the transaction that
    /// stores the last; a search indexes what waits first; a line deleted or changed before it
    /// was indexed leaves the index whole.
    @Test func linesWaitForCompanyAndASearchFindsThemAll() throws {
        let world = try Fixture()
        defer { removeDirectory(world.directory) }
        func inIndex(_ word: String) throws -> Int {
            try world.database.read { db in
                try Int.fetchOne(db, sql: "SELECT count(*) FROM message_search WHERE message_search MATCH ?", arguments: [word]) ?? 0
            }
        }
        let lone = try world.store(["a lone wombat", "another wombat", "a wombat to forget", "a wombat to change"], from: 10)
        #expect(try inIndex("wombat") == 0, "waiting for company")
        try world.database.write { db in
            try db.execute(sql: "DELETE FROM message WHERE id = ?", arguments: [lone[2]])
            try db.execute(sql: "UPDATE message SET text = 'a changed numbat' WHERE id = ?", arguments: [lone[3]])
        }
        #expect(try world.texts(["wombat"]) == ["another wombat", "a lone wombat"], "a search indexes them first")
        #expect(try world.texts(["numbat"]) == ["a changed numbat"])
        let burst = Int(SearchSchema.deferLimit)
        _ = try world.store((0..<burst).map { "echidna \($0)" }, from: 20)
        #expect(try inIndex("echidna") == burst, "a burst is indexed with its transaction")
        try world.database.write { db in
            try db.execute(sql: "INSERT INTO message_search(message_search) VALUES ('integrity-check')")
        }
    }

    /// Lines stored one a transaction are indexed with the one that makes `deferLimit` wait,
    /// not later, though the bounds are not read at every commit.
    @Test func linesStoredAloneAreIndexedWithTheOneThatFillsTheBatch() throws {
        let world = try Fixture()
        defer { removeDirectory(world.directory) }
        func inIndex() throws -> Int {
            try world.database.read { db in
                try Int.fetchOne(db, sql: "SELECT count(*) FROM message_search WHERE message_search MATCH 'numbat'") ?? 0
            }
        }
        let waiting = try world.database.read { db in
            try Int64.fetchOne(db, sql: "SELECT max(id) - (SELECT upTo FROM search_indexed WHERE tableName = 'message') FROM message") ?? 0
        }
        for n in 1...(SearchSchema.deferLimit - waiting) {
            #expect(try inIndex() == 0)
            _ = try world.store(["numbat \(n)"], from: 10 + n, in: world.cat1)
        }
        #expect(try inIndex() == Int(SearchSchema.deferLimit - waiting))
    }

    /// A deleted line leaves the index (a profile's conversations go with it): the index stays
    /// whole by FTS5's own check, and nothing found points at nothing.
    @Test func deletedLinesLeaveTheIndex() throws {
        let world = try Fixture()
        defer { removeDirectory(world.directory) }
        try world.database.write { db in try db.execute(sql: "DELETE FROM conversation WHERE id = ?", arguments: [world.ben1]) }
        #expect(try world.texts(["quokka"]) == ["a quokka in the room"])
        try world.database.write { db in
            try db.execute(sql: "INSERT INTO message_search(message_search) VALUES ('integrity-check')")
            try db.execute(sql: "INSERT INTO roomMessage_search(roomMessage_search) VALUES ('integrity-check')")
        }
    }

    /// Ids are not `AUTOINCREMENT`: the newest line deleted, the next one stored gets its id.
    /// That line is indexed all the same, and the deleted one's terms left the index.
    @Test func aLineGivenTheIdOfADeletedOneIsFound() throws {
        let world = try Fixture()
        defer { removeDirectory(world.directory) }
        let burst = try world.store((0..<64).map { "echidna \($0)" }, from: 10)
        try world.database.write { db in try db.execute(sql: "DELETE FROM message WHERE id = ?", arguments: [burst.last!]) }
        let next = try world.store(["a platypus"], from: 80)
        #expect(next == [burst.last!], "the id is given again")
        #expect(try world.texts(["platypus"]) == ["a platypus"])
        try world.database.write { db in
            #expect(try Int.fetchOne(db, sql: "SELECT count(*) FROM message_search WHERE message_search MATCH 'echidna'") == 63)
            try db.execute(sql: "INSERT INTO message_search(message_search) VALUES ('integrity-check')")
        }
    }

    /// Results with the words highlighted, or marked without colour; tab-separated for tools.
    @Test func resultsShowWhoWhereWhenAndTheWordsFound() throws {
        let world = try Fixture()
        defer { removeDirectory(world.directory) }
        let query = try SearchQuery(["quokka"])
        let hits = try world.store.hits(query, SearchFilter(), limit: 10)
        var utc = Calendar(identifier: .gregorian)
        utc.timeZone = TimeZone(identifier: "UTC")!
        utc.locale = Locale(identifier: "en_US_POSIX")
        let plain = SearchView(capabilities: .plain, columns: 80, calendar: utc).lines(hits, firstNumber: 1, query: query, now: Fixture.now)
        #expect(plain == [
            "1  Today 14:04     room 7.42  cat: a *quokka* in the room",
            "2  Today 14:04     ben        ben: *QUOKKAS* everywhere",
            "3  Thursday 14:05  ben        ann: we saw a *quokka* by the lake",
        ])
        let coloured = SearchView(capabilities: Capabilities(color: .ansi256, ascii: false, interactive: true), columns: 80, calendar: utc)
        let colours = Capabilities(color: .ansi256, ascii: false, interactive: true)
        #expect(coloured.lines(hits, firstNumber: 1, query: query, now: Fixture.now)[0].contains(Styler(colours).apply(.bold + .yellow, "quokka")))
        let tsv = SearchView.tsv(SearchHit(place: .conversation(id: 1, peerName: "ben", peerKey: Data()), rowID: 1, number: 4,
                                           outgoing: false, sender: "ben", text: "a\tb\nc\\d\u{1B}[2J", sentAt: Fixture.now), calendar: utc)
        #expect(tsv == "2026-11-22T14:05:00Z\tben\tben\t#4\ta\\tb\\nc\\\\d" + SafeText.visible("\u{1B}[2J"))
    }

    /// The words found are marked whatever their script, an accent written apart included.
    @Test func highlightsFollowWordsWhateverTheirScript() throws {
        let query = try SearchQuery(["cafe", "мир", "42"])
        let text = "un cafe\u{301} — мирный день, CAFÉS at 42nd"
        #expect(query.matches(in: text).map { String(text[$0]) } == ["cafe\u{301}", "мирный", "CAFÉS", "42nd"])
        // A phrase's words are marked each, whole words only.
        let phrase = "two, words, twofold"
        #expect(try SearchQuery(["two words"]).matches(in: phrase).map { String(phrase[$0]) } == ["two", "words"])
    }

    /// A line on one row: newlines are spaces, and a word found that the cut goes through is
    /// marked as far as it shows.
    @Test func anExcerptIsOneRowAndMarksWhatShows() throws {
        let view = SearchView(capabilities: .plain, columns: 80)
        let query = try SearchQuery(["quokkas"])
        #expect(view.excerpt("two\nlines of quokkas", query: query, width: 40) == "two lines of *quokkas*")
        #expect(view.excerpt("quokkas are here and there", query: query, width: 5) == "*quok*…")
        #expect(view.excerpt("quokkas 見た見た", query: query, width: 10) == "*quokkas* …")
        // Far along: from the word, with the line's start left out.
        #expect(view.excerpt("and then the quokkas", query: query, width: 9) == "…*quokkas*")
    }

    /// A long line is shown around the first word found.
    @Test func aLongLineIsCutAroundTheMatch() throws {
        let view = SearchView(capabilities: .plain, columns: 80)
        let text = String(repeating: "filler ", count: 30) + "the quokka at last"
        let shown = view.excerpt(text, query: try SearchQuery(["quokka"]), width: 40)
        #expect(shown.hasPrefix("…") && shown.contains("*quokka*") && shown.displayWidth <= 42)
    }
}

/// A database made before search existed is indexed when it is first opened, a step at a
/// time, with its progress told; then everything in it is found.
@Suite struct SearchUpgradeTests {
    @Test func anOlderDatabaseIsIndexedOnUpgrade() throws {
        let directory = temporaryDirectory("search-upgrade")
        defer { removeDirectory(directory) }
        let path = directory + "/seance.db"
        let before = Schema(Array(Schema.seance.migrations.prefix { $0.name != SearchSchema.search.name }))
        do {
            let old = try testDatabase(path, schema: before)
            let messages = MessageStore(database: old)
            let me = Data(repeating: 1, count: 32)
            let conversation = try messages.conversation(myKey: me, peerKey: Data(repeating: 2, count: 32), peerName: "ben",
                                                         peerAgreementKey: Data(repeating: 2, count: 32), now: 0).id
            var rows: [(conversation: Int64, row: MessageRow)] = []
            for number in 1...45_000 {
                let text = number % 1_000 == 0 ? "needle \(number)" : "hay \(number)"
                rows.append((conversation, MessageRow(number: Int64(number), text: text, firstSequence: UInt32(number),
                                                      lastSequence: UInt32(number), sentAt: Double(number))))
            }
            _ = try messages.storeOutgoing(rows, now: 0)
        }
        let upgraded = try testDatabase(path)
        var steps: [Double] = []
        try upgraded.runBackfills { name, done in
            #expect(name == "indexing messages for search")
            steps.append(done)
        }
        // 45,000 rows, 20,000 a step: three steps, then done.
        let expected: [Double] = [0, 20_000 / 45_000, 40_000 / 45_000, 1]
        #expect(steps == expected)
        let store = SearchStore(database: upgraded, me: Data(repeating: 1, count: 32), myName: "ann")
        #expect(try store.count(SearchQuery(["needle"]), SearchFilter()) == 45)
        #expect(try store.count(SearchQuery(["hay"]), SearchFilter()) == 44_955)
        // Nothing is left to do, and a new line is indexed as it is stored.
        var again = 0
        try upgraded.runBackfills { _, _ in again += 1 }
        #expect(again == 0)
        try upgraded.write { db in try db.execute(sql: "INSERT INTO message_search(message_search) VALUES ('integrity-check')") }
    }

    /// The indexes made anew without column sizes (v36): every line, indexed before or waiting
    /// for company, is found afterwards, once; the sizes' table is gone; the index is sound.
    @Test func theIndexMadeAgainWithoutColumnSizesFindsEverything() throws {
        let directory = temporaryDirectory("search-column-sizes")
        defer { removeDirectory(directory) }
        let path = directory + "/seance.db"
        let me = Data(repeating: 1, count: 32)
        let before = Schema(Array(Schema.seance.migrations.prefix { $0.name != SearchSchema.noColumnSizes.name }))
        do {
            let old = try testDatabase(path, schema: before)
            let messages = MessageStore(database: old)
            let conversation = try messages.conversation(myKey: me, peerKey: me, peerName: "ben", peerAgreementKey: me, now: 0).id
            // 300 indexed, then 10 that wait for company.
            for (first, count) in [(1, 300), (301, 10)] {
                _ = try messages.storeOutgoing((first..<first + count).map { n in
                    (conversation, MessageRow(number: Int64(n), text: "quokka \(n)", firstSequence: UInt32(n), lastSequence: UInt32(n), sentAt: 0))
                }, now: 0)
            }
            // Indexed as the commit step does (a schema of migrations only has none).
            try old.write { db in
                try db.execute(sql: "INSERT INTO message_search(rowid, text) SELECT id, text FROM message WHERE id <= 300")
                try db.execute(sql: "UPDATE search_indexed SET upTo = 300 WHERE tableName = 'message'")
            }
            #expect(try old.read { try Int.fetchOne($0, sql: "SELECT count(*) FROM message_search_docsize") } == 300)
        }
        let upgraded = try testDatabase(path)
        try upgraded.runBackfills { _, _ in }
        let store = SearchStore(database: upgraded, me: me, myName: "ann")
        #expect(try store.count(SearchQuery(["quokka"]), SearchFilter()) == 310)
        #expect(try store.count(SearchQuery(["\"quokka 305\""]), SearchFilter()) == 1)
        #expect(try upgraded.read { try $0.tableExists("message_search_docsize") || $0.tableExists("roomMessage_search_docsize") } == false)
        try upgraded.write { db in
            try db.execute(sql: "INSERT INTO message_search(message_search) VALUES ('integrity-check')")
            try db.execute(sql: "INSERT INTO roomMessage_search(roomMessage_search) VALUES ('integrity-check')")
        }
    }

    /// A line stored is found at once: its transaction indexed it before committing. One
    /// written around seance (by `sqlite3`) is indexed when the database is next opened.
    @Test func linesWrittenAreIndexedWithTheirTransactionOrOnTheNextOpen() throws {
        let directory = temporaryDirectory("search-keeping-up")
        defer { removeDirectory(directory) }
        let path = directory + "/seance.db"
        let me = Data(repeating: 1, count: 32)
        do {
            let database = try testDatabase(path)
            let messages = MessageStore(database: database)
            let conversation = try messages.conversation(myKey: me, peerKey: me, peerName: "ben", peerAgreementKey: me, now: 0).id
            _ = try messages.storeOutgoing([(conversation, MessageRow(number: 1, text: "first quokka", firstSequence: 1, lastSequence: 1,
                                                                      sentAt: 0))], now: 0)
            let store = SearchStore(database: database, me: me, myName: "ann")
            #expect(try store.count(SearchQuery(["quokka"]), SearchFilter()) == 1)
            // 45,000 more around `write` (as sqlite3 would): no commit step runs.
            try database.writer.write { db in
                try db.execute(sql: """
                    WITH RECURSIVE n(i) AS (SELECT 2 UNION ALL SELECT i + 1 FROM n WHERE i < 45001)
                    INSERT INTO message (conversationId, number, outgoing, text, firstSequence, lastSequence, sentAt, state)
                    SELECT ?, i, 1, 'another quokka ' || i, i, i, i, 'sending' FROM n
                    """, arguments: [conversation])
            }
            #expect(try store.count(SearchQuery(["quokka"]), SearchFilter()) == 1)
        }
        // The next open indexes them a step at a time, each step short (the commit step that
        // keeps the index up does not take the whole of it into the first).
        let reopened = try testDatabase(path)
        var told: [Double] = []
        try reopened.runBackfills { _, done in told.append(done) }
        let expected: [Double] = [0, 20_000 / 45_000, 40_000 / 45_000, 1]
        #expect(told == expected)
        let store = SearchStore(database: reopened, me: me, myName: "ann")
        #expect(try store.count(SearchQuery(["quokka"]), SearchFilter()) == 45_001)
        try reopened.write { db in try db.execute(sql: "INSERT INTO message_search(message_search) VALUES ('integrity-check')") }
    }
}
