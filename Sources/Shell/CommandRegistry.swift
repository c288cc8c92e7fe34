import Terminal

/// Every command and mode of the shell, looked up by name and alias.
package struct CommandRegistry {
    package private(set) var commands: [Command] = []
    package private(set) var modes: [Mode] = []
    private var indexByScope: [CommandScope: [String: Int]] = [:]

    package init() {}

    package mutating func add(_ command: Command) {
        var names = indexByScope[command.scope] ?? [:]
        for name in [command.name] + command.aliases {
            precondition(names[name] == nil, "command '\(name)' registered twice")
            names[name] = commands.count
        }
        indexByScope[command.scope] = names
        commands.append(command)
    }

    package mutating func add(_ mode: Mode) {
        precondition(self.mode(named: mode.name) == nil, "mode '\(mode.name)' registered twice")
        modes.append(mode)
    }

    package func mode(named name: String) -> Mode? { modes.first { $0.name == name } }

    /// The command `name` as seen from `mode` (nil: the top level): the mode's own first, then global.
    package func command(named name: String, inMode mode: String?) -> Command? {
        if let mode, let i = indexByScope[.mode(mode)]?[name] { return commands[i] }
        if let i = indexByScope[.global]?[name] { return commands[i] }
        return nil
    }

    /// The commands that apply in `mode`: its own, then the global ones.
    package func commands(inMode mode: String?) -> [Command] {
        let own = mode.map { m in commands.filter { $0.scope == .mode(m) } } ?? []
        return own + commands.filter { $0.scope == .global }
    }

    /// The modes whose command `name` is, for a hint when it is typed elsewhere.
    package func modesOwning(_ name: String) -> [String] {
        modes.compactMap { mode in indexByScope[.mode(mode.name)]?[name] != nil ? mode.name : nil }
    }

    /// Every word that can start a command in `mode`: command names, aliases and mode names.
    package func words(inMode mode: String?) -> [String] {
        commands(inMode: mode).flatMap { [$0.name] + $0.aliases } + modes.map(\.name)
    }

    /// The nearest known word to a mistyped `name`.
    package func suggestion(for name: String, inMode mode: String?) -> String? {
        EditDistance.nearest(to: name, in: words(inMode: mode))
    }

    /// `help` for a mode: its commands, the commands that work everywhere, and the modes. Taller
    /// than `rows` (a terminal's), every list is names only, the place's own first, so that the
    /// whole of it stays on the screen ('help COMMAND' explains one).
    package func helpText(inMode mode: String?, styler: Styler, columns: Int = 80, rows: Int? = nil) -> String {
        let full = helpText(inMode: mode, styler: styler, columns: columns, compact: false)
        guard let rows, full.split(separator: "\n", omittingEmptySubsequences: false).count > rows - 2 else { return full }
        return helpText(inMode: mode, styler: styler, columns: columns, compact: true)
    }

    private func helpText(inMode mode: String?, styler: Styler, columns: Int, compact: Bool) -> String {
        func rows(_ list: [(String, String)]) -> [String] {
            let width = min(28, (list.map { $0.0.displayWidth }.max() ?? 0) + 2)
            return list.flatMap { DisplayWidth.described($0.0, $0.1, labelWidth: width, totalWidth: columns) }
        }
        func label(_ command: Command) -> String {
            command.aliases.isEmpty ? command.name : command.name + " (" + command.aliases.joined(separator: " ") + ")"
        }
        var lines: [String] = []
        // Names after a bold title, wrapped to the window.
        func named(_ title: String, _ names: [String]) -> [String] {
            var wrapped = DisplayWidth.wrap(title + " " + names.joined(separator: ", "), width: max(20, columns))
            if !wrapped.isEmpty { wrapped[0] = styler.bold(title) + wrapped[0].dropFirst(title.count) }
            return wrapped
        }
        if compact {
            if let mode { lines += named("Commands in \(mode) mode:", commands.filter { $0.scope == .mode(mode) }.map(label)) }
            lines += named(mode == nil ? "Commands:" : "Everywhere:", commands.filter { $0.scope == .global }.map(label))
            lines += named("Modes:", modes.map(\.name))
        } else if let mode {
            let own = commands.filter { $0.scope == .mode(mode) }
            if own.isEmpty {
                lines.append(self.mode(named: mode)?.isAvailable == false ? "\(mode) mode is not available yet." : "\(mode) mode has no commands of its own.")
            } else {
                lines.append(styler.bold("Commands in \(mode) mode:"))
                lines += rows(own.map { (label($0), $0.summary) })
            }
            lines.append("")
            // In a mode its own commands are what matters: the others are named, not explained,
            // so the list keeps to the window ('help COMMAND' explains one).
            lines += named("Everywhere:", commands.filter { $0.scope == .global }.map(label))
            lines += named("Modes:", modes.map(\.name))
            lines.append("")
        } else {
            lines.append(styler.bold("Commands:"))
            lines += rows(commands.filter { $0.scope == .global }.map { (label($0), $0.summary) })
            lines.append("")
            lines.append(styler.bold("Modes:"))
            lines += rows(modes.map { ($0.name, $0.summary + ($0.isAvailable ? "" : " (not available yet)")) })
            lines.append("")
        }
        // Compact, the model in a line: a small window keeps the place's own commands in sight.
        guard !compact else {
            return (lines + DisplayWidth.wrap("Any command works anywhere (in a conversation or a room, start it with /); '"
                                              + Advice.command("help COMMAND") + "' explains one.", width: max(20, columns)))
                .joined(separator: "\n")
        }
        lines += DisplayWidth.wrap("Any command works anywhere: a mode's own without its name first where the place you are in has "
                                   + "none of that name ('up' is 'zombies up'), with it where two modes share one ('chat open'); "
                                   + "in a conversation or a room, start it with /. Type a mode's name to enter it, '"
                                   + Advice.command("back") + "' to leave. '" + Advice.command("help COMMAND")
                                   + "' shows one command in detail.", width: max(20, columns))
        return lines.joined(separator: "\n")
    }

    /// `help NAME`: usage, summary, arguments and details of one command, or a mode's overview.
    package func helpText(for name: String, inMode mode: String?, styler: Styler, columns: Int = 80) throws(ShellError) -> String {
        if let target = self.mode(named: name) {
            return "\(target.name): \(target.summary)\n\n" + helpText(inMode: target.name, styler: styler, columns: columns)
        }
        guard let command = command(named: name, inMode: mode) else {
            let owners = modesOwning(name)
            guard !owners.isEmpty else { throw .unknownCommand(name, suggestion: suggestion(for: name, inMode: mode)) }
            // At the top level `help open` explains every mode's `open`, each with its prefix.
            return try owners.map { owner throws(ShellError) in
                "In \(owner) mode ('\(owner) \(name)' from elsewhere):\n" + (try helpText(for: name, inMode: owner, styler: styler, columns: columns))
            }.joined(separator: "\n\n")
        }
        var lines = [styler.bold(command.advisedUsage), "  " + command.summary]
        if !command.aliases.isEmpty { lines.append("  aliases: " + command.aliases.joined(separator: ", ")) }
        // An argument without words of its own that is one of a few: those, each with its description.
        func choices(_ argument: ArgumentSpec) -> [Candidate]? {
            guard argument.help.isEmpty, case .choice(let candidates) = argument.kind, !candidates.isEmpty else { return nil }
            return candidates
        }
        let described = command.arguments.filter { !$0.help.isEmpty || choices($0) != nil }
        if !described.isEmpty {
            lines.append("")
            let width = (described.map { ($0.flag ?? $0.name).count }.max() ?? 0) + 2
            for argument in described {
                guard let candidates = choices(argument) else {
                    lines += DisplayWidth.described(argument.flag ?? argument.name, argument.help, labelWidth: width, totalWidth: columns)
                    continue
                }
                lines += DisplayWidth.described(argument.flag ?? argument.name, "one of:", labelWidth: width, totalWidth: columns)
                let choiceWidth = (candidates.map(\.text.displayWidth).max() ?? 0) + 2
                lines += candidates.flatMap {
                    DisplayWidth.described($0.text, $0.description, labelWidth: choiceWidth, totalWidth: columns, indent: width + 4)
                }
            }
        }
        if !command.details.isEmpty {
            lines.append("")
            for (index, paragraph) in command.detailParagraphs.enumerated() {
                if index > 0 && !paragraph.hasPrefix(" ") && !paragraph.hasPrefix("-") { lines.append("") }
                lines += DisplayWidth.wrap(paragraph, width: max(20, columns - 2))
            }
        }
        return lines.joined(separator: "\n")
    }
}
