import App
import ArgumentParser
import Foundation
import Glibc
import Terminal

/// The executable: flags in, exit status out. Everything else lives in the libraries.
@main
struct Seance: ParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "seance",
        abstract: "A line-mode shell to chat with people nearby (and the dead), play Zombies and keep Will's visions.",
        discussion: """
            With no script and no -c, seance reads commands from standard input: interactively at \
            a terminal, or as a batch from a pipe. In a batch, errors go to stderr as 'line N: message' \
            and the exit status is 1 if any command failed.
            """,
        version: App.version)

    @Option(name: .customLong("data-dir"), help: ArgumentHelp("Where the database and history live.", valueName: "dir"),
            completion: .directory)
    var dataDirectory: String?

    @Option(help: ArgumentHelp("Make every random choice reproducible.", valueName: "n"))
    var seed: UInt64?

    @Option(help: ArgumentHelp("Colour output: auto, always or never.", valueName: "when"))
    var color: ColorMode = .auto

    @Flag(help: "Plain ASCII drawing: no emoji, no box drawing.")
    var ascii = false

    @Option(name: .customShort("c"), help: ArgumentHelp("Run these commands (separated by ';'), then exit (repeatable: one line each).", valueName: "commands"))
    var commands: [String] = []

    @Flag(help: "Stop at the first command that fails.")
    var bail = false

    @Flag(help: "Print each command before running it.")
    var echo = false

    @Flag(name: .customLong("no-anim"), help: "No animations (a sent message does not slide into place).")
    var noAnimation = false

    // Numbers may be negative (`--battery -5`): taken as the value, and refused for what it is.
    @Option(parsing: .unconditional, help: ArgumentHelp("Pretend the battery is at this level (0-100).", valueName: "pct"))
    var battery: Int?

    // The chat settings: their help, defaults and checks are declared once, in App's
    // `Settings.all` (which `seance.conf` reads too); here they are only collected.
    @Option(help: help("group"))
    var group: String?

    @Option(parsing: .unconditional, help: help("port"))
    var port: String?

    @Option(name: .customLong("interface"), help: help("interface"))
    var interfaces: [String] = []

    @Option(name: .customLong("announce-interval"), parsing: .unconditional, help: help("announce-interval"))
    var announceInterval: String?

    @Option(help: help("broker"))
    var broker: String?

    @Option(name: .customLong("broker-ca"), help: help("broker-ca"), completion: .file(extensions: ["pem", "crt"]))
    var brokerCA: String?

    @Option(name: .customLong("broker-prefix"), help: help("broker-prefix"))
    var brokerPrefix: String?

    @Option(parsing: .unconditional, help: help("linger"))
    var linger: String?

    @Option(help: help("conversation"), completion: .list(["bubbles", "compact"]))
    var conversation: String?

    @Option(help: help("notify"), completion: .list(["bell", "desktop", "off"]))
    var notify: String?

    @Option(name: .customLong("notify-text"), help: help("notify-text"), completion: .list(["yes", "no"]))
    var notifyText: String?

    @Flag(name: .customLong("no-lan"), help: ArgumentHelp(Settings.named("no-lan")!.help))
    var noLAN = false

    @Argument(help: ArgumentHelp("A file of commands to run.", valueName: "script"), completion: .file())
    var script: String?

    /// The common flags are read without the full parser's reflection (most of start-up);
    /// anything else — help, a mistake — goes to it.
    static func main() {
        // The manual page, for `make install`: written from the flags as this parser knows
        // them and the shell's own registry.
        if Array(CommandLine.arguments.dropFirst()) == ["--manual-page"] {
            print(App.manualPage(abstract: configuration.abstract, discussion: configuration.discussion, options: manualOptions()),
                  terminator: "")
            return
        }
        // A picture to decode for the shell that started this one, and nothing else.
        if Array(CommandLine.arguments.dropFirst()) == [PictureProcess.flag] { Glibc.exit(PictureProcess.serve()) }
        PictureProcess.use(program: "/proc/self/exe")
        if let options = LaunchOptions(commonFlags: Array(CommandLine.arguments.dropFirst())) {
            Glibc.exit(App.run(options).exitStatus)
        }
        main(nil)
    }

    /// What the full parser makes of a command line (tests compare it with the common flags').
    static func options(parsing arguments: [String]) throws -> LaunchOptions {
        try parse(arguments).launchOptions
    }

    func validate() throws {
        if let battery, !(0...100).contains(battery) {
            throw ValidationError("--battery takes a percentage from 0 to 100, not \(battery)")
        }
        if let script, !commands.isEmpty {
            throw ValidationError("give commands with -c or a script, not both (\(script))")
        }
    }

    func run() throws {
        throw ExitCode(App.run(launchOptions).exitStatus)
    }

    var launchOptions: LaunchOptions {
        var options = LaunchOptions()
        options.dataDirectory = dataDirectory
        options.seed = seed
        options.color = color
        options.ascii = ascii
        options.commands = commands.isEmpty ? nil : commands.joined(separator: "\n")
        options.bail = bail
        options.echo = echo
        options.scriptPath = script
        options.battery = battery
        options.noAnimation = noAnimation
        var settings = SettingValues()
        settings["group"] = group.map { [$0] }
        settings["port"] = port.map { [$0] }
        settings["interface"] = interfaces.isEmpty ? nil : interfaces
        settings["announce-interval"] = announceInterval.map { [$0] }
        settings["broker"] = broker.map { [$0] }
        settings["broker-ca"] = brokerCA.map { [$0] }
        settings["broker-prefix"] = brokerPrefix.map { [$0] }
        settings["linger"] = linger.map { [$0] }
        settings["conversation"] = conversation.map { [$0] }
        settings["notify"] = notify.map { [$0] }
        settings["notify-text"] = notifyText.map { [$0] }
        settings["no-lan"] = noLAN ? ["yes"] : nil
        options.settings = settings
        return options
    }
}

extension ColorMode: ExpressibleByArgument {}

/// The flags and the argument as the parser describes them (its own dump: what `--help` prints).
private func manualOptions() -> [ManualOption] {
    struct Dump: Decodable {
        struct Command: Decodable { var arguments: [Argument] }
        struct Argument: Decodable {
            struct Name: Decodable { var kind: String; var name: String }
            var kind: String
            var names: [Name]?
            var valueName: String?
            var abstract: String?
            var shouldDisplay: Bool
        }
        var command: Command
    }
    guard let dump = try? JSONDecoder().decode(Dump.self, from: Data(Seance._dumpHelp().utf8)) else { return [] }
    return dump.command.arguments.filter(\.shouldDisplay).map { argument in
        let names = (argument.names ?? []).map { ($0.kind == "short" ? "-" : "--") + $0.name }
        return ManualOption(names: argument.kind == "positional" ? [] : names,
                                 value: argument.kind == "flag" ? nil : argument.valueName, help: argument.abstract ?? "")
    }
}

/// A chat setting's help, from its one declaration.
private func help(_ key: String) -> ArgumentHelp {
    let setting = Settings.named(key)!
    return ArgumentHelp(setting.help, valueName: setting.valueName)
}
