import Terminal

extension LaunchOptions {
    /// The options of a command line that uses only the common flags, each in its one plain
    /// form (`--data-dir DIR`, `-c COMMANDS`, `--battery 40`, a chat setting, a script), read
    /// by hand; nil for anything else — help, a typo, `--flag=value`, a flag given twice, a
    /// value that looks like a flag, a value out of range — which the executable's full parser
    /// then reads, with its messages.
    ///
    /// Why: swift-argument-parser finds its options by reflection over the command's type, and
    /// that was over half of everything `seance -c quit` executed (26 million instructions of
    /// which 15 million were the parser). The result must be what the full parser makes of the
    /// same line: `CommonFlagsTests` checks the two agree.
    package init?(commonFlags arguments: [String]) {
        self.init()
        var seen: Set<String> = []
        var commands: [String] = []
        var index = arguments.startIndex
        /// The value after a flag, or nil when there is none or it looks like a flag.
        func value() -> String? {
            index += 1
            guard index < arguments.endIndex, !arguments[index].hasPrefix("-") else { return nil }
            return arguments[index]
        }
        while index < arguments.endIndex {
            let argument = arguments[index]
            // Only -c may be given twice (one line each); a chat setting may if it is repeatable.
            if argument != "-c", Settings.named(String(argument.dropFirst(2)))?.repeatable != true {
                guard seen.insert(argument).inserted else { return nil }
            }
            switch argument {
            case "--data-dir":
                guard let directory = value() else { return nil }
                dataDirectory = directory
            case "-c":
                guard let line = value() else { return nil }
                commands.append(line)
            case "--seed":
                guard let seed = value().flatMap({ UInt64($0) }) else { return nil }
                self.seed = seed
            case "--color":
                guard let color = value().flatMap(ColorMode.init(rawValue:)) else { return nil }
                self.color = color
            case "--battery":
                guard let battery = value().flatMap({ Int($0) }), (0...100).contains(battery) else { return nil }
                self.battery = battery
            case "--ascii": ascii = true
            case "--bail": bail = true
            case "--echo": echo = true
            case "--no-anim": noAnimation = true
            case "--no-lan": settings["no-lan"] = ["yes"]
            default:
                if argument.hasPrefix("--"), let setting = Settings.named(String(argument.dropFirst(2))), setting.key != "no-lan" {
                    guard let given = value() else { return nil }
                    settings[setting.key] = (settings[setting.key] ?? []) + [given]
                } else if !argument.hasPrefix("-"), scriptPath == nil {
                    scriptPath = argument
                } else {
                    return nil
                }
            }
            index += 1
        }
        // Commands and a script together are a mistake the full parser explains.
        guard commands.isEmpty || scriptPath == nil else { return nil }
        self.commands = commands.isEmpty ? nil : commands.joined(separator: "\n")
    }
}
