import Terminal

/// Every command and mode of the shell, looked up by name and alias.
public struct CommandRegistry {
    public private(set) var commands: [Command] = []
    public private(set) var modes: [Mode] = []
    private var indexByScope: [CommandScope: [String: Int]] = [:]

    public init() {}

    public mutating func add(_ command: Command) {
        var names = indexByScope[command.scope] ?? [:]
        for name in [command.name] + command.aliases {
            precondition(names[name] == nil, "command '\(name)' registered twice")
            names[name] = commands.count
        }
        indexByScope[command.scope] = names
        commands.append(command)
    }

    public mutating func add(_ mode: Mode) {
        precondition(self.mode(named: mode.name) == nil, "mode '\(mode.name)' registered twice")
        modes.append(mode)
    }

    public func mode(named name: String) -> Mode? { modes.first { $0.name == name } }

    /// The command `name` as seen from `mode` (nil: the top level): the mode's own first, then global.
    public func command(named name: String, inMode mode: String?) -> Command? {
        if let mode, let i = indexByScope[.mode(mode)]?[name] { return commands[i] }
        if let i = indexByScope[.global]?[name] { return commands[i] }
        return nil
    }

    /// The commands that apply in `mode`: its own, then the global ones.
    public func commands(inMode mode: String?) -> [Command] {
        let own = mode.map { m in commands.filter { $0.scope == .mode(m) } } ?? []
        return own + commands.filter { $0.scope == .global }
    }

    /// The modes whose command `name` is, for a hint when it is typed elsewhere.
    public func modesOwning(_ name: String) -> [String] {
        modes.compactMap { mode in indexByScope[.mode(mode.name)]?[name] != nil ? mode.name : nil }
    }

    /// Every word that can start a command in `mode`: command names, aliases and mode names.
    public func words(inMode mode: String?) -> [String] {
        commands(inMode: mode).flatMap { [$0.name] + $0.aliases } + modes.map(\.name)
    }

    /// The nearest known word to a mistyped `name`.
    public func suggestion(for name: String, inMode mode: String?) -> String? {
        EditDistance.nearest(to: name, in: words(inMode: mode))
    }

    /// `help` for a mode: its commands, the commands that work everywhere, and the modes.
    public func helpText(inMode mode: String?, styler: Styler) -> String {
        func rows(_ list: [(String, String)]) -> [String] {
            let width = min(28, (list.map { $0.0.displayWidth }.max() ?? 0) + 2)
            return list.map { "  " + DisplayWidth.pad($0.0, to: width) + $0.1 }
        }
        func label(_ command: Command) -> String {
            command.aliases.isEmpty ? command.name : command.name + " (" + command.aliases.joined(separator: " ") + ")"
        }
        var lines: [String] = []
        if let mode {
            let own = commands.filter { $0.scope == .mode(mode) }
            lines.append(styler.bold("Commands in \(mode) mode:"))
            lines += rows(own.map { (label($0), $0.summary) })
            lines.append("")
        }
        lines.append(styler.bold(mode == nil ? "Commands:" : "Everywhere:"))
        lines += rows(commands.filter { $0.scope == .global }.map { (label($0), $0.summary) })
        lines.append("")
        lines.append(styler.bold("Modes") + " (type a name to enter, 'back' to leave, or prefix a command: 'zombies up'):")
        lines += rows(modes.map { ($0.name, $0.summary + ($0.isAvailable ? "" : " (not available yet)")) })
        lines.append("")
        lines.append("'help COMMAND' shows one command in detail.")
        return lines.joined(separator: "\n")
    }

    /// `help NAME`: usage, summary, arguments and details of one command, or a mode's overview.
    public func helpText(for name: String, inMode mode: String?, styler: Styler) throws(ShellError) -> String {
        if let target = self.mode(named: name) {
            return "\(target.name): \(target.summary)\n\n" + helpText(inMode: target.name, styler: styler)
        }
        guard let command = command(named: name, inMode: mode) else {
            if let owner = modesOwning(name).first { throw .wrongMode(command: name, mode: owner) }
            throw .unknownCommand(name, suggestion: suggestion(for: name, inMode: mode))
        }
        var lines = [styler.bold(command.usage), "  " + command.summary]
        if !command.aliases.isEmpty { lines.append("  aliases: " + command.aliases.joined(separator: ", ")) }
        let described = command.arguments.filter { !$0.help.isEmpty }
        if !described.isEmpty {
            lines.append("")
            let width = (described.map { ($0.flag ?? $0.name).count }.max() ?? 0) + 2
            lines += described.map { "  " + DisplayWidth.pad($0.flag ?? $0.name, to: width) + $0.help }
        }
        if !command.details.isEmpty { lines += ["", command.details] }
        return lines.joined(separator: "\n")
    }
}
