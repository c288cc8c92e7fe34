/// A manual page in roff (man(7)), made from the registry `help` reads and the flags `--help`
/// prints, so that it cannot disagree with either: `seance --manual-page` writes it and `make
/// install` installs what it writes.
package struct ManualPage {
    /// A command-line flag or argument, as the flag parser describes it.
    package struct Option: Equatable {
        /// `-c`, `--data-dir`; none for a positional argument.
        package var names: [String]
        /// What its value is called (`dir`); nil for a switch.
        package var value: String?
        package var help: String

        package init(names: [String], value: String?, help: String) {
            self.names = names
            self.value = value
            self.help = help
        }
    }

    package var name: String
    package var version: String
    package var abstract: String
    /// Paragraphs.
    package var description: [String]
    package var options: [Option]
    /// (what, why) pairs of FILES and ENVIRONMENT, the EXIT STATUS paragraphs, EXAMPLES as
    /// (command lines, what they do), SEE ALSO's pages.
    package var files: [(String, String)]
    package var environment: [(String, String)]
    package var exitStatus: [String]
    package var examples: [(String, String)]
    package var seeAlso: [String]

    package init(name: String, version: String, abstract: String, description: [String], options: [Option], files: [(String, String)],
                 environment: [(String, String)], exitStatus: [String], examples: [(String, String)], seeAlso: [String]) {
        self.name = name
        self.version = version
        self.abstract = abstract
        self.description = description
        self.options = options
        self.files = files
        self.environment = environment
        self.exitStatus = exitStatus
        self.examples = examples
        self.seeAlso = seeAlso
    }

    package func render(_ registry: CommandRegistry) -> String {
        var out = [".TH \(name.uppercased()) 1 \"\" \"\(name) \(version)\" \"User Commands\"",
                   ".SH NAME", "\(name) \\- " + Self.text(abstract),
                   ".SH SYNOPSIS", ".B \(name)", "[\\fIoptions\\fR] [\\fIscript\\fR]",
                   ".SH DESCRIPTION"]
        out += paragraphs(description)
        out.append(".SH OPTIONS")
        for option in options {
            let names = option.names.map { "\\fB" + Self.literal($0) + "\\fR" }.joined(separator: ", ")
            let label = option.names.isEmpty ? "\\fI" + Self.text(option.value ?? "") + "\\fR"
                : names + (option.value.map { " \\fI" + Self.text($0) + "\\fR" } ?? "")
            out += [".TP", label, Self.text(option.help)]
        }
        out.append(".SH COMMANDS")
        out += paragraphs(["Commands that work everywhere, then each mode's. Type a mode's name to enter it and "
                           + "back to leave, or put it before one of its commands (zombies up). In a conversation "
                           + "every line is a message and commands start with a slash (/back); /command works "
                           + "everywhere. help lists what applies where you are; help COMMAND explains one."])
        out.append(".SS Everywhere")
        out += registry.commands.filter { $0.scope == .global }.flatMap(entry)
        for mode in registry.modes {
            out.append(".SS " + Self.text(mode.name))
            out += paragraphs([mode.summary])
            out += registry.commands.filter { $0.scope == .mode(mode.name) }.flatMap(entry)
        }
        out.append(".SH FILES")
        for (path, what) in files { out += [".TP", "\\fI" + Self.literal(path) + "\\fR", Self.text(what)] }
        out.append(".SH ENVIRONMENT")
        for (variable, what) in environment { out += [".TP", "\\fB" + Self.literal(variable) + "\\fR", Self.text(what)] }
        out.append(".SH EXIT STATUS")
        out += paragraphs(exitStatus)
        out.append(".SH EXAMPLES")
        for (command, what) in examples {
            out += [".PP", Self.text(what) + ":", ".PP", ".RS 4", ".nf"]
            out += command.split(separator: "\n").map { Self.literal(String($0)) }
            out += [".fi", ".RE"]
        }
        out.append(".SH SEE ALSO")
        out.append(seeAlso.map { page -> String in
            guard let open = page.firstIndex(of: "(") else { return "\\fB\(Self.text(page))\\fR" }
            return "\\fB\(Self.text(String(page[..<open])))\\fR\(page[open...])"
        }.joined(separator: ", "))
        return out.joined(separator: "\n") + "\n"
    }

    /// One command: its usage, what it does, its aliases, its arguments and details.
    private func entry(_ command: Command) -> [String] {
        let usage = command.usage.hasPrefix("usage: ") ? String(command.usage.dropFirst(7)) : command.usage
        var lines = [".TP", "\\fB" + Self.literal(usage) + "\\fR", Self.text(command.summary)]
        if !command.aliases.isEmpty { lines += [".br", "Also: " + Self.literal(command.aliases.joined(separator: ", ")) + "."] }
        let described = command.arguments.filter { !$0.help.isEmpty || Self.choices($0) != nil }
        if !described.isEmpty {
            lines.append(".RS")
            for argument in described {
                var help = argument.help
                if let choices = Self.choices(argument) {
                    help = (help.isEmpty ? "one of" : help + "; one of") + ": "
                        + choices.map { $0.description.isEmpty ? $0.text : "\($0.text) (\($0.description))" }.joined(separator: ", ")
                }
                lines += [".TP", "\\fI" + Self.literal(argument.flag ?? argument.name) + "\\fR", Self.text(help)]
            }
            lines.append(".RE")
        }
        if !command.details.isEmpty {
            lines += command.detailParagraphs.flatMap { [".IP", Self.text($0.trimmingCharacters(in: .whitespaces))] }
        }
        return lines
    }

    private static func choices(_ argument: ArgumentSpec) -> [Candidate]? {
        guard case .choice(let candidates) = argument.kind, !candidates.isEmpty else { return nil }
        return candidates
    }

    private func paragraphs(_ texts: [String]) -> [String] { texts.flatMap { [".PP", Self.text($0)] } }

    /// Prose for roff: a backslash doubled as `\e`, a line that would start with a request
    /// guarded, and every character outside ASCII as its code point (`\[u2026]`), which
    /// groff reads whatever the locale.
    static func text(_ string: String) -> String {
        var out = ""
        for scalar in string.unicodeScalars {
            switch scalar {
            case "\\": out += "\\e"
            case "\n": out += " "
            case _ where scalar.isASCII: out.unicodeScalars.append(scalar)
            default:
                let hex = String(scalar.value, radix: 16, uppercase: true)
                out += "\\[u" + String(repeating: "0", count: max(0, 4 - hex.count)) + hex + "]"
            }
        }
        if out.hasPrefix(".") || out.hasPrefix("'") { out = "\\&" + out }
        return bold(inBackticks: out)
    }

    /// `code` in prose (as the help writes it) in bold, as manual pages show commands; a lone
    /// backtick stays.
    static func bold(inBackticks text: String) -> String {
        let parts = text.split(separator: "`", omittingEmptySubsequences: false)
        guard parts.count >= 3 else { return text }
        var out = ""
        for (index, part) in parts.enumerated() {
            if index == 0 { out += part; continue }
            let opening = index % 2 == 1
            // An odd backtick left at the end has no partner: it stays as it was.
            if opening && index == parts.count - 1 { out += "`" + part; continue }
            out += (opening ? "\\fB" : "\\fR") + part
        }
        return out
    }

    /// What is typed as shown: prose, with every hyphen a minus sign (so it can be copied).
    static func literal(_ string: String) -> String { text(string).replacingOccurrences(of: "-", with: "\\-") }
}
