import Glibc
import Terminal

/// What Tab can do with the text before the cursor.
package struct Completion: Equatable {
    /// How many Unicode scalars before the cursor the inserted text replaces.
    package var replacedScalarCount: Int
    /// Matching candidates, in display order.
    package var candidates: [Candidate]
    /// True when the inserted text must be quoted for the tokenizer (false for form fields).
    package var quotes: Bool

    /// The text to put in place of the replaced part when the candidates agree on it: the single
    /// candidate followed by a space (a directory by nothing), or the candidates' common prefix.
    /// Nil when there is nothing more to insert.
    package func insertion(current: String) -> String? {
        guard let first = candidates.first else { return nil }
        if candidates.count == 1 {
            let text = first.text
            let quoted = quotes ? Tokenizer.quote(text) : text
            if text.hasSuffix("/") { return quotes ? Self.openQuoted(text) : text }
            return quoted + (quotes ? " " : "")
        }
        var prefix = first.text
        for candidate in candidates.dropFirst() {
            prefix = String(zip(prefix, candidate.text).prefix { $0 == $1 }.map(\.0))
        }
        guard prefix.count > current.count, prefix.lowercased().hasPrefix(current.lowercased()) else { return nil }
        return quotes ? Self.openQuoted(prefix) : prefix
    }

    /// Quotes a prefix that is still being typed: an opening quote but no closing one.
    static func openQuoted(_ text: String) -> String {
        let quoted = Tokenizer.quote(text)
        return quoted == text ? text : String(quoted.dropLast())
    }

    /// Candidates laid out one a line with their descriptions in a column.
    package func listing(columns: Int) -> String {
        let width = min(32, (candidates.map { $0.text.displayWidth }.max() ?? 0) + 2)
        return candidates.flatMap { candidate in
            guard !candidate.description.isEmpty else { return ["  " + candidate.text] }
            return DisplayWidth.described(candidate.text, candidate.description, labelWidth: max(width, candidate.text.displayWidth + 1),
                                          totalWidth: columns)
        }.joined(separator: "\n")
    }
}

extension Shell {
    /// Completions for the command being typed, in the current mode.
    package func completion(for textBeforeCursor: String) -> Completion {
        var text = textBeforeCursor
        if activeMessages != nil {
            // In a conversation a line is a message; only `/command` lines complete.
            guard text.hasPrefix("/"), !text.hasPrefix("//") else { return Completion(replacedScalarCount: 0, candidates: [], quotes: false) }
            text.removeFirst()
        }
        let partial = Tokenizer.partialCommand(text)
        let candidates = candidates(words: partial.words, current: partial.current, mode: currentMode)
        return Completion(replacedScalarCount: partial.currentRawScalarCount, candidates: candidates, quotes: true)
    }

    private func candidates(words: [String], current: String, mode: String?) -> [Candidate] {
        guard let first = words.first else {
            return filter(commandCandidates(mode: mode, includeModes: true), by: current)
        }
        if let target = registry.mode(named: first), target.isAvailable {
            // Prefix form: `zombies <Tab>` completes that mode's commands.
            if words.count == 1 { return filter(commandCandidates(mode: first, includeModes: false), by: current) }
            return candidates(words: Array(words.dropFirst()), current: current, mode: first)
        }
        guard let command = registry.command(named: first, inMode: mode) else { return [] }
        let arguments = Array(words.dropFirst())
        if let flag = arguments.last, flag.hasPrefix("--"), let option = command.arguments.first(where: { $0.flag == flag }),
           option.takesValue {
            return values(of: option.kind, current: current, mode: mode)
        }
        if current.hasPrefix("--") {
            let options = command.arguments.filter { $0.flag != nil && !arguments.contains($0.flag!) }
            return filter(options.map { Candidate($0.flag!, $0.help) }, by: current)
        }
        var positionalCount = 0
        var index = 0
        while index < arguments.count {
            if arguments[index].hasPrefix("--") {
                let takesValue = command.arguments.first { $0.flag == arguments[index] }?.takesValue ?? true
                index += takesValue ? 2 : 1
                continue
            }
            positionalCount += 1
            index += 1
        }
        let positionals = command.arguments.filter { $0.flag == nil }
        let spec = positionalCount < positionals.count ? positionals[positionalCount] : positionals.last.flatMap { $0.isRest ? $0 : nil }
        guard let spec else { return [] }
        return values(of: spec.kind, current: current, mode: mode)
    }

    private func values(of kind: ArgumentKind, current: String, mode: String?) -> [Candidate] {
        switch kind {
        case .text, .integer: return []
        case .choice(let choices): return filter(choices, by: current)
        case .command: return filter(commandCandidates(mode: mode, includeModes: true), by: current)
        case .dynamic(let source): return filter(source(), by: current)
        case .path: return PathCompletion.candidates(for: current)
        }
    }

    private func commandCandidates(mode: String?, includeModes: Bool) -> [Candidate] {
        var list = registry.commands(inMode: mode).map { Candidate($0.name, $0.summary) }
        if includeModes {
            list += registry.modes.map { Candidate($0.name, $0.summary + ($0.isAvailable ? "" : " (not available yet)")) }
        }
        return list.sorted { $0.text < $1.text }
    }

    private func filter(_ candidates: [Candidate], by prefix: String) -> [Candidate] {
        let lowered = prefix.lowercased()
        return candidates.filter { $0.text.lowercased().hasPrefix(lowered) }
    }
}

/// File names for arguments that are paths: `~/` is expanded for listing but kept as typed.
package enum PathCompletion {
    package static func candidates(for typed: String, home: String? = nil) -> [Candidate] {
        let slash = typed.lastIndex(of: "/")
        let directoryPart = slash.map { String(typed[...$0]) } ?? ""
        let base = slash.map { String(typed[typed.index(after: $0)...]) } ?? typed
        var directory = directoryPart.isEmpty ? "." : directoryPart
        if directory.hasPrefix("~/") || directory == "~/" {
            let home = home ?? getenv("HOME").map { String(cString: $0) } ?? "/"
            directory = home + directory.dropFirst()
        }
        guard let dir = opendir(directory) else { return [] }
        defer { closedir(dir) }
        var results: [Candidate] = []
        while let entry = readdir(dir) {
            let name = withUnsafeBytes(of: entry.pointee.d_name) { raw in
                String(cString: raw.bindMemory(to: CChar.self).baseAddress!)
            }
            if name == "." || name == ".." { continue }
            if name.hasPrefix(".") && !base.hasPrefix(".") { continue }
            guard name.hasPrefix(base) else { continue }
            var info = stat()
            let isDirectory = stat(directory + "/" + name, &info) == 0 && (info.st_mode & S_IFMT) == S_IFDIR
            results.append(Candidate(directoryPart + name + (isDirectory ? "/" : ""), isDirectory ? "directory" : ""))
        }
        return results.sorted { $0.text < $1.text }
    }
}
