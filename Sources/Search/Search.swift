import Accounts
import ChatViews
import Foundation
import Nearby
import Shell
import Terminal

/// `search TEXT` from anywhere, `more` for the next page, and the last search's results for
/// `open N` and `goto N` to open where they were said: a place extension (`Views`), so chat
/// knows nothing of it, nor it of chat.
package final class Search: PlaceExtension {
    /// Where the user is (the open conversation or room), searched first.
    package enum Here: Equatable, Sendable {
        case conversation(Int64)
        case room(Int64)
    }

    /// The last search: what to page on and what `open N` means.
    struct Last {
        /// The profile's lines it searched (a login elsewhere forgets the search).
        var store: SearchStore
        var query: SearchQuery
        /// Searched first (where the user was), then `rest`.
        var first: SearchFilter?
        var rest: SearchFilter
        var firstCount: Int
        var count: Int
        /// Results shown so far.
        var shown = 0
    }

    private let login: LoginSession
    private var last: Last?
    /// The places shown, where this search's results open (set when registered).
    private var views: Views?

    /// The conversation or room the user is in now, if any.
    var here: Here? {
        switch views?.shown {
        case .conversation(let conversation)?: return .conversation(conversation.id)
        case .room(let room)?: return room.row.map(Here.room)
        case nil: return nil
        }
    }

    /// Results a page holds in a script (at a terminal, as many as the window does).
    static let scriptPage = 20

    package init(login: LoginSession) {
        self.login = login
        // Another profile's results are not this one's to page or open.
        login.onChange.append { [unowned self] in last = nil }
    }

    package func register(in shell: Shell, views: Views) {
        self.views = views
        views.add(self)
        shell.register(mode: "chat", "goto", arguments: [.positional("number", .integer, help: "a result's number in the last search")],
                       summary: "open search result N where it was said, with the lines around it") { shell, arguments in
            try self.open(try arguments.integer("number")!, shell)
        }
        shell.register(Command("search", scope: .global, arguments: [
            .positional("text", rest: true, help: "words, each found by its beginning; a quoted argument is a phrase"),
            .option("--from", "from", help: "written by this person (your own name: by you)"),
            .option("--in", "in", help: "in this conversation (a name) or room (7.42)"),
            .option("--since", "since", help: "on or after: 2026-11-20, '2026-11-20 14:05', today, yesterday, 3d, 12h, 30m"),
            .option("--before", "before", help: "before that date"),
            .option("--format", "format", .choice([Candidate("text", "a line a match, paged"), Candidate("tsv", "tab-separated, every match")]),
                    help: "text (the default), or tsv: every match, for other tools"),
        ], summary: "find what was said in every conversation and room, newest first",
           details: "Words are found by their beginning, whatever their case or accents (cafe finds café); a quoted argument "
                  + "is a phrase. Nothing you type is query syntax. `more` shows the next page; `goto N` (in chat, `open N` "
                  + "too) opens result N where it was said.") { invocation in
            try self.search(invocation.arguments, invocation.shell)
        })
        shell.register(Command("more", scope: .global, summary: "the next page of the last search") { invocation in
            try self.more(invocation.shell)
        })
    }

    /// Whether a search was made (for this profile): `open N` then means its result N.
    package var hasResults: Bool { last != nil }

    /// `open N` after a search: result N, where it was said.
    package func open(_ number: Int64, in place: Place?, _ shell: Shell) throws -> Bool {
        guard hasResults else { return false }
        try open(Int(number), shell)
        return true
    }

    /// Result `number` of the last search, shown where it was said: its conversation opened
    /// at that line (by whoever shows conversations), or the room's lines around it.
    private func open(_ number: Int, _ shell: Shell) throws {
        let hit = try result(number)
        switch hit.place {
        case .conversation(let id, _, _):
            guard let views else { throw SearchError.noSearch }
            try views.conversationOwner().open(conversation: id, around: hit.number, shell)
        case .room(_, let major, let minor, let host):
            let view = ConversationView(capabilities: shell.capabilities, columns: shell.console.columns)
            shell.console.print(shell.styler.bold("room \(major).\(minor)") + " (hosted by \(SafeText.visible(host))), around #\(hit.number)")
            for line in view.render(try roomContext(hit, count: 5), now: shell.session.clock()) { shell.console.print(line) }
        }
    }

    /// Result `number` of the last search.
    package func result(_ number: Int) throws -> SearchHit {
        guard let last else { throw SearchError.noSearch }
        guard number >= 1, number <= last.count else { throw SearchError.noResult(number, count: last.count) }
        return try hits(last, from: number - 1, count: 1).first ?? { throw SearchError.noResult(number, count: last.count) }()
    }

    /// The room lines around a result said in a room (`count` before and after), oldest first.
    package func roomContext(_ hit: SearchHit, count: Int) throws -> [ChatMessage] {
        guard case .room(let room, _, _, _) = hit.place else { return [] }
        guard let last else { throw SearchError.noSearch }
        return try last.store.roomLines(around: hit.rowID, in: room, around: count)
    }

    // MARK: Commands

    private func store(_ shell: Shell) throws -> SearchStore {
        guard let login = login.current else { throw ProfileError.notLoggedIn }
        return SearchStore(database: try shell.session.openDatabase(), me: login.identity.signingPublicKey, myName: login.profile.name)
    }

    private func search(_ arguments: Arguments, _ shell: Shell) throws {
        let store = try store(shell)
        let words = arguments.positionals
        let query = try SearchQuery(words)
        // Nothing to look for (`search ""`, a quote of spaces) is a mistake, not zero matches.
        guard !query.isEmpty else { throw UserError("search needs a word to look for: search TEXT") }
        var filter = SearchFilter()
        if let name = arguments["from"] {
            filter.author = name.caseInsensitiveCompare(store.myName) == .orderedSame ? .me : .named(name)
        }
        let now = shell.session.clock()
        if let date = arguments["since"] { filter.since = try Self.date(date, now: now) }
        if let date = arguments["before"] { filter.before = try Self.date(date, now: now) }
        var first: SearchFilter?
        let here = arguments["in"] == nil ? self.here : nil
        if let name = arguments["in"] {
            let places = try store.places(named: name)
            guard !places.conversations.isEmpty || !places.rooms.isEmpty else { throw SearchError.nowhere(SafeText.visible(name)) }
            (filter.conversations, filter.rooms) = (places.conversations, places.rooms)
        } else if let here {
            // Where the user is comes first, then everywhere else.
            var inside = filter
            switch here {
            case .conversation(let id): (inside.conversations, inside.rooms, filter.notConversation) = ([id], [], id)
            case .room(let id): (inside.conversations, inside.rooms, filter.notRoom) = ([], [id], id)
            }
            first = inside
        }
        let firstCount = try first.map { try store.count(query, $0) } ?? 0
        var last = Last(store: store, query: query, first: first, rest: filter, firstCount: firstCount,
                        count: firstCount + (try store.count(query, filter)))
        self.last = last
        if arguments["format"] == "tsv" {
            // Every match, nothing else: finding none is not an error, as in sqlite3.
            for hit in try hits(last, from: 0, count: last.count) { shell.console.print(SearchView.tsv(hit)) }
            return
        }
        let what = words.map { $0.contains(where: \.isWhitespace) ? "\"\($0)\"" : $0 }.joined(separator: " ")
        let inHere = here.map { " (\(firstCount) \(Self.hereName($0)))" } ?? ""
        shell.console.print(shell.styler.bold("\(last.count) \(last.count == 1 ? "match" : "matches")") + " for " + SafeText.visible(what) + inHere)
        try printPage(&last, shell)
        self.last = last
    }

    private func more(_ shell: Shell) throws {
        guard var last else { throw SearchError.noSearch }
        guard last.shown < last.count else { return shell.console.print("no more: all \(last.count) shown") }
        try printPage(&last, shell)
        self.last = last
    }

    private func printPage(_ last: inout Last, _ shell: Shell) throws {
        let size = shell.capabilities.interactive ? max(3, shell.console.rows - 3) : Self.scriptPage
        let page = try hits(last, from: last.shown, count: size)
        let view = SearchView(capabilities: shell.capabilities, columns: shell.console.columns)
        for line in view.lines(page, firstNumber: last.shown + 1, query: last.query, now: shell.session.clock()) { shell.console.print(line) }
        last.shown += page.count
        guard !page.isEmpty else { return }
        let left = last.count - last.shown
        shell.console.printProse(shell.styler.dim(
            "\(last.shown - page.count + 1)–\(last.shown) of \(last.count)"
            + (left > 0 ? "; \(Advice.command("more")): the next \(min(left, size))" : "")
            + "; \(Advice.command("goto N", mode: "chat")) shows one where it was said"))
    }

    /// Results `start`… (`count` of them) of `last`: where the user is first, then the rest.
    private func hits(_ last: Last, from start: Int, count: Int) throws -> [SearchHit] {
        guard count > 0 else { return [] }
        var hits: [SearchHit] = []
        if let first = last.first, start < last.firstCount {
            hits = Array(try last.store.hits(last.query, first, limit: start + count).dropFirst(start))
        }
        let restStart = max(0, start - last.firstCount)
        let wanted = count - hits.count
        if wanted > 0 { hits += try last.store.hits(last.query, last.rest, limit: restStart + wanted).dropFirst(restStart) }
        return hits
    }

    static func hereName(_ here: Here) -> String {
        switch here {
        case .room: return "in this room"
        case .conversation: return "in this conversation"
        }
    }

    /// A date as typed (`TypedDate`).
    static func date(_ text: String, now: Double, calendar: Calendar = .current) throws(SearchError) -> Double {
        do { return try TypedDate.parse(text, now: now, calendar: calendar) } catch { throw .badDate(error.text) }
    }
}
