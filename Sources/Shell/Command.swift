/// A suggestion for Tab: the text to insert and a one-line description.
package struct Candidate: Equatable, Sendable {
    package var text: String
    package var description: String

    package init(_ text: String, _ description: String = "") {
        self.text = text
        self.description = description
    }
}

/// What an argument holds, which decides how Tab completes it.
package enum ArgumentKind {
    case text
    case integer
    /// One of a fixed set of words, each with a description.
    case choice([Candidate])
    /// A file system path.
    case path
    /// The name of a command in the current mode (for `help`).
    case command
    /// Names that change at run time: peers, rescuers, …
    case dynamic(() -> [Candidate])
}

/// One argument of a command: positional, or an option written `--name VALUE`.
package struct ArgumentSpec {
    package var name: String
    package var kind: ArgumentKind
    package var isOptional: Bool
    /// Takes every remaining word (joined with spaces).
    package var isRest: Bool
    /// Non-nil for an option: its flag, such as `--image`.
    package var flag: String?
    /// False for a switch: an option that is given or not, with no value.
    package var takesValue = true
    package var help: String

    package static func positional(_ name: String, _ kind: ArgumentKind = .text, optional: Bool = false,
                                  rest: Bool = false, help: String = "") -> ArgumentSpec {
        ArgumentSpec(name: name, kind: kind, isOptional: optional, isRest: rest, flag: nil, help: help)
    }

    package static func option(_ flag: String, _ name: String, _ kind: ArgumentKind = .text,
                              optional: Bool = true, help: String = "") -> ArgumentSpec {
        ArgumentSpec(name: name, kind: kind, isOptional: optional, isRest: false, flag: flag, help: help)
    }

    /// An option given or not (`--new-rescuer`); `Arguments.isSet(name)` says which.
    package static func `switch`(_ flag: String, help: String = "") -> ArgumentSpec {
        var spec = ArgumentSpec(name: flag, kind: .text, isOptional: true, isRest: false, flag: flag, help: help)
        spec.takesValue = false
        return spec
    }

    /// What the argument is, for an error that says it is missing: its help, else the words
    /// it takes (`: candle or medallion`); nothing when neither says more than its name.
    var explained: String {
        if !help.isEmpty { return ": " + help }
        guard case .choice(let candidates) = kind, !candidates.isEmpty else { return "" }
        return ": " + Wording.list(candidates.map(\.text), "or")
    }

    var usage: String {
        let shown = flag.map { takesValue ? "\($0) \(name)" : $0 } ?? (isRest ? "\(name)..." : name)
        return isOptional ? "[\(shown)]" : shown
    }
}

/// The arguments of one invocation, checked against the command's specs.
package struct Arguments {
    package let words: [String]
    /// The words that were not options, in order, each as the shell split it (a quoted one
    /// with its spaces): what a rest argument joins.
    package let positionals: [String]
    private var values: [String: String]

    init(words: [String], positionals: [String] = [], values: [String: String]) {
        self.words = words
        self.positionals = positionals
        self.values = values
    }

    /// The value of the argument or option named `name`, if given.
    package subscript(_ name: String) -> String? { values[name] }

    /// Whether the switch `flag` was given.
    package func isSet(_ flag: String) -> Bool { values[flag] != nil }

    /// The value of `name` as an integer; an error names the argument when it is not one.
    package func integer(_ name: String) throws(ShellError) -> Int? {
        guard let text = values[name] else { return nil }
        guard let value = Int(text) else { throw .badArgument("\(name) must be a whole number, not '\(text)'") }
        return value
    }

    /// `--wait SECONDS` (the option's value named `seconds`): 0 to 3600, for scripts that wait on
    /// the network.
    package func waitSeconds() throws(ShellError) -> Double? {
        guard let text = values["seconds"] else { return nil }
        guard let seconds = Double(text), (0...3_600).contains(seconds) else {
            throw .badArgument("--wait takes seconds from 0 to 3600, not '\(text)'")
        }
        return seconds
    }

    /// Checks `words` against `specs`: options anywhere before `--`, positionals in order.
    static func parse(_ words: [String], specs: [ArgumentSpec], usage: String) throws(ShellError) -> Arguments {
        var values: [String: String] = [:]
        var positionals: [String] = []
        var index = 0
        while index < words.count {
            let word = words[index]
            // `--` ends the options, as in Unix tools: what follows is text, dashes and all.
            if word == "--" {
                positionals += words[(index + 1)...]
                break
            }
            if word.hasPrefix("--"), word.count > 2 {
                guard let spec = specs.first(where: { $0.flag == word }) else {
                    throw .badArgument("unknown option '\(word)'\n\(usage)")
                }
                guard spec.takesValue else {
                    values[spec.name] = word
                    index += 1
                    continue
                }
                guard index + 1 < words.count else { throw .badArgument("\(word) needs a value\n\(usage)") }
                values[spec.name] = words[index + 1]
                index += 2
                continue
            }
            positionals.append(word)
            index += 1
        }
        var remaining = positionals[...]
        for spec in specs where spec.flag == nil {
            if spec.isRest {
                if !remaining.isEmpty { values[spec.name] = remaining.joined(separator: " ") }
                remaining = []
            } else if let value = remaining.popFirst() {
                values[spec.name] = value
            }
        }
        if let extra = remaining.first { throw .badArgument("unexpected argument '\(extra)'\n\(usage)") }
        for spec in specs where !spec.isOptional && values[spec.name] == nil {
            throw .badArgument("missing \(spec.flag ?? spec.name)" + spec.explained + "\n\(usage)")
        }
        // An option of a few words takes one of them (`--format json` is not quietly text).
        for spec in specs {
            guard let flag = spec.flag, case .choice(let candidates) = spec.kind, let value = values[spec.name],
                  !candidates.contains(where: { $0.text == value }) else { continue }
            throw .badArgument("\(flag) takes " + Wording.list(candidates.map { "'\($0.text)'" }, "or") + ", not '\(value)'\n\(usage)")
        }
        return Arguments(words: words, positionals: positionals, values: values)
    }
}

/// Where a command can be run.
package enum CommandScope: Hashable, Sendable {
    /// Everywhere.
    case global
    /// In one mode (or from anywhere with the mode's name as a prefix).
    case mode(String)

    /// The mode's name, for a mode's command.
    var mode: String? {
        if case .mode(let name) = self { return name }
        return nil
    }
}

/// A command of the shell: everything `help`, completion and dispatch need to know.
package struct Command {
    package var name: String
    package var aliases: [String]
    package var scope: CommandScope
    package var arguments: [ArgumentSpec]
    package var summary: String
    /// Longer help shown by `help NAME`, after the usage line.
    package var details: String
    package var run: (Invocation) throws -> Void

    package init(_ name: String, aliases: [String] = [], scope: CommandScope, arguments: [ArgumentSpec] = [],
                summary: String, details: String = "", run: @escaping (Invocation) throws -> Void) {
        self.name = name
        self.aliases = aliases
        self.scope = scope
        self.arguments = arguments
        self.summary = summary
        self.details = details
        self.run = run
    }

    package var usage: String {
        "usage: " + synopsis
    }

    /// The command and its arguments, as `usage` shows them.
    var synopsis: String { ([name] + arguments.map(\.usage)).joined(separator: " ") }

    /// `usage` as advice, spelled for where it is printed (`usage: /tap number` in a
    /// conversation): what errors and `help NAME` show.
    package var advisedUsage: String {
        "usage: " + Advice.command(synopsis, mode: scope.mode)
    }

    /// `usage` with the mode's name first: for a command run from another mode's place, whose
    /// usage would not otherwise say whose it is (`new` in visions is `zombies new`).
    var usageNamingMode: String {
        "usage: " + Advice.command((scope.mode.map { $0 + " " } ?? "") + synopsis)
    }

    /// The details as paragraphs: lines are joined (they were broken only to keep the source
    /// narrow), an empty line ends a paragraph, and a line that starts with a space or a dash
    /// starts one (an example, an item of a list).
    package var detailParagraphs: [String] {
        var paragraphs: [String] = []
        var current: String?
        for line in details.split(separator: "\n", omittingEmptySubsequences: false) {
            if line.allSatisfy(\.isWhitespace) {
                if let done = current { paragraphs.append(done) }
                current = nil
            } else if let joined = current, !line.hasPrefix(" "), !line.hasPrefix("-") {
                current = joined + " " + line
            } else {
                if let done = current { paragraphs.append(done) }
                current = String(line)
            }
        }
        if let done = current { paragraphs.append(done) }
        return paragraphs
    }
}

/// One run of a command: its checked arguments and the shell it runs in.
package struct Invocation {
    package let shell: Shell
    package let arguments: Arguments
    /// The name the user typed (possibly an alias).
    package let name: String
    /// The mode the command runs in: the current one, or the one named as a prefix.
    package let mode: String?

    package var console: Console { shell.console }
}
