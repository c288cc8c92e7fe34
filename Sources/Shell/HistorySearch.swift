/// Ctrl-R's incremental search through history, as bash and fish do it: each letter typed narrows
/// the search to the newest line containing the query, Ctrl-R again steps to an older one, and
/// the line found is what Enter runs.
///
/// A value: the line editor feeds it keys and shows `prompt` and `line`.
package struct HistorySearch: Equatable {
    /// Oldest first, as history is kept.
    private let entries: [String]
    package private(set) var query = ""
    /// The entry found, or nil while none matches (or nothing is typed yet).
    private var found: Int?
    /// Whether the last key found nothing: the prompt says so, and the last line found stays.
    package private(set) var failed = false
    /// The line being edited when the search began; shown until something is found.
    package let original: String

    package init(entries: [String], original: String) {
        self.entries = entries
        self.original = original
    }

    /// What the edit line shows: the entry found, else the line the search began on.
    package var line: String { found.map { entries[$0] } ?? original }

    /// Where in `line` the match begins, in Unicode scalars (the cursor goes there, as in bash).
    package var matchOffset: Int {
        guard let found, !query.isEmpty, let range = entries[found].firstRange(of: query) else { return line.unicodeScalars.count }
        return entries[found][..<range.lowerBound].unicodeScalars.count
    }

    package var prompt: String { (failed ? "(failed reverse-i-search)'" : "(reverse-i-search)'") + query + "': " }

    /// A letter typed: the newest entry, from the one shown back, that contains the longer query.
    package mutating func type(_ text: String) {
        query += text
        search(from: found ?? entries.count - 1)
    }

    /// Backspace: the query a letter shorter, searched again from the newest entry.
    package mutating func erase() {
        guard !query.isEmpty else { return }
        query.removeLast()
        found = nil
        failed = false
        if !query.isEmpty { search(from: entries.count - 1) }
    }

    /// Ctrl-R again: the next older entry with the query (the same line twice in history is
    /// shown once).
    package mutating func older() {
        guard !query.isEmpty else { return }
        guard let found else { return search(from: entries.count - 1) }
        search(from: found - 1, skipping: entries[found])
    }

    private mutating func search(from start: Int, skipping shown: String? = nil) {
        var index = start
        while index >= 0 {
            if entries[index] != shown, entries[index].contains(query) {
                found = index
                failed = false
                return
            }
            index -= 1
        }
        failed = true
    }
}
