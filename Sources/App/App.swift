import Accounts
import Chat
import ChatViews
import Curses
import Spectres
import Rooms
import Search
import Glibc
import LAN
import MQTT
import Nearby
import Shell
import Storage
import Store
import Terminal
import Transfers
import Visions
import Zombies

/// What the command line asked for; the executable fills it in from its flags.
package struct LaunchOptions: Sendable, Equatable {
    package var dataDirectory: String?
    package var seed: UInt64?
    package var color: ColorMode = .auto
    package var ascii = false
    /// `-c`: run these commands, then exit.
    package var commands: String?
    package var bail = false
    package var echo = false
    package var scriptPath: String?
    /// `--battery PCT`: pretend the battery is at this level.
    package var battery: Int?
    /// `--no-anim`: no animations at a terminal.
    package var noAnimation = false
    /// Chat settings given as flags (`Settings.all`); `seance.conf` fills in the rest.
    package var settings = SettingValues()

    package init() {}
}

/// How a run ended, decided here and turned into an exit status only by the executable.
package enum Outcome: Equatable, Sendable {
    case success
    /// At least one command failed (batch).
    case commandFailed
    /// seance could not start: bad script path, unusable data directory, …
    case startFailed(String)
    /// A flag's value is wrong (`--port 0`): a usage error, as the parser's own.
    case usage(String)

    package var exitStatus: Int32 {
        switch self {
        case .success: return 0
        case .commandFailed, .startFailed: return 1
        case .usage: return 64  // EX_USAGE (sysexits), as the flag parser exits.
        }
    }
}

extension Schema {
    /// Every feature's migrations in the one order they run in (the order they were released).
    package static let seance = Schema([
        Migration.settings,
        ZombiesSchema.score,
        VisionsSchema.visionsAndRescuers,
        AccountsSchema.profiles,
        TrustSchema.knownPeers,
        NearbySchema.conversations,
        AccountsSchema.loginSlots,
        NearbySchema.messageNumbers,
        TrustSchema.trustedKeys,
        StoreSchema.receiptsAndInventory,
        CursesSchema.curses,
        RoomsSchema.rooms,
        NearbySchema.unreadByPeer,
        NearbySchema.oneConversationIndex,
        NearbySchema.pagesByNumber,
        NearbySchema.deliveredByCounter,
        NearbySchema.readTimes,
        SearchSchema.search,
        SearchSchema.indexByRange,
        TrustSchema.lookAlikes,
        TrustSchema.blocksAndMutes,
        TransfersSchema.transfers,
        TransfersSchema.thumbnails,
        TrustSchema.verifiedKeys,
        TransfersSchema.files,
        SearchSchema.deferredIndex,
        TrustSchema.unblockedPeers,
        NearbySchema.mailed,
        NearbySchema.prekeys,
        NearbySchema.brokerTopics,
        TransfersSchema.mailed,
        NearbySchema.plainIds,
        RoomsSchema.plainIds,
        SearchSchema.reusedIds,
        NearbySchema.readUpTo,
        SearchSchema.noColumnSizes,
        NearbySchema.sentByMark,
    ], backfills: [SearchSchema.indexing, TransfersSchema.movingChunksOut], commitSteps: [SearchSchema.keepingUp])

    /// Each feature's list, for the test that every one is in the order above.
    static let features: [[Migration]] = [[.settings], ZombiesSchema.migrations, VisionsSchema.migrations, AccountsSchema.migrations,
                                         NearbySchema.migrations, TrustSchema.migrations, StoreSchema.migrations, CursesSchema.migrations,
                                         RoomsSchema.migrations, SearchSchema.migrations, TransfersSchema.migrations]
}

/// Builds the shell with every mode and runs it.
package enum App {
    package static let version = "0.1.0"

    /// The environment variables seance reads, and nothing else.
    static func environment() -> [String: String] {
        var result: [String: String] = [:]
        for key in ["TERM", "NO_COLOR", "COLORTERM", "HOME", "XDG_DATA_HOME", "XDG_DOWNLOAD_DIR", "COLUMNS", "TMUX"] {
            if let value = getenv(key) { result[key] = String(cString: value) }
        }
        return result
    }

    /// Runs seance; a start-up failure is reported on stderr as `seance: message`.
    package static func run(_ options: LaunchOptions) -> Outcome {
        SeanceDatabase.configureProcess()
        let outcome = runShell(options)
        if case .startFailed(let message) = outcome {
            let text = Array("seance: \(message)\n".utf8)
            _ = text.withUnsafeBytes { write(2, $0.baseAddress, $0.count) }
        } else if case .usage(let message) = outcome {
            let text = Array("seance: \(message) (seance --help lists the flags)\n".utf8)
            _ = text.withUnsafeBytes { write(2, $0.baseAddress, $0.count) }
        }
        return outcome
    }

    private static func runShell(_ options: LaunchOptions) -> Outcome {
        // Everything seance creates (database, its journal files, history) holds private
        // conversations and password hashes: readable by the user alone, whatever the directory.
        umask(0o077)
        let environment = environment()
        let interactive = options.commands == nil && options.scriptPath == nil && TerminalSize.isTTY(0)

        // Batch output is plain unless colour is forced; interactive output follows the policy.
        let colorOn = options.color.enablesColor(isTTY: interactive && TerminalSize.isTTY(1), environment: environment)
        let capabilities = Capabilities(color: ColorDepth.detect(colorEnabled: colorOn, environment: environment),
                                        ascii: options.ascii, interactive: interactive)
        // A batch has no window: nothing is cut to a height unless LINES asks for one.
        let rows = interactive ? TerminalSize.rows(environment: environment)
            : environment["LINES"].flatMap(Int.init).map { max(4, $0) } ?? 100_000
        let console = Console(capabilities: capabilities, columns: TerminalSize.columns(environment: environment), rows: rows)
        let dataDirectory = DataDirectory(path: options.dataDirectory ?? DataDirectory.defaultPath(environment: environment))
        // The one clock and timers of the run: the shell's, and the engine's while online.
        let session = Session(dataDirectory: dataDirectory, schema: .seance,
                              random: options.seed.map { SeededRandom(seed: $0) } ?? SeededRandom(), scheduler: SystemScheduler())
        let shell = Shell(console: console, session: session)
        shell.standardInputIsCommands = options.commands == nil && options.scriptPath == nil
        let network: NetworkConfiguration
        do {
            // A data directory that is a file is the problem to name, not the config inside it.
            try dataDirectory.checkExisting()
            let configPath = ConfigFile.path(in: dataDirectory)
            var file = SettingValues()
            do {
                file = try ConfigFile.parse(try FileContents.text(configPath), path: configPath)
            } catch let failure as FileContents.Failure where failure.isMissing {
                // No config file: the defaults and the flags.
            }
            network = try Settings.resolve(flags: options.settings, file: file)
        } catch let error as SettingsError where error.fromFlag {
            return .usage(error.description)
        } catch {
            return .startFailed(String(describing: error))
        }
        // Alerts draw a person's attention: never a script's.
        if interactive, network.notify != .off {
            console.attention = Attention(mode: network.notify, showsText: network.notifyText, throughTmux: environment["TMUX"] != nil)
        }
        let battery = Battery(override: options.battery)
        let profiles = Profiles()
        registerModes(in: shell, profiles: profiles, battery: battery, network: network, animate: !options.noAnimation,
                      environment: environment)
        profiles.register(in: shell)

        let reader: LineReader
        if let commands = options.commands {
            reader = BatchLineReader(text: commands)
        } else if let path = options.scriptPath {
            // A script may be a pipe (`seance <(generate)`), but not a directory or a device.
            let fd = open(path, O_RDONLY | O_CLOEXEC)
            guard fd >= 0 else { return .startFailed("cannot read \(path): \(String(cString: strerror(errno)))") }
            var info = stat()
            if fstat(fd, &info) == 0, (info.st_mode & S_IFMT) != S_IFIFO, let kind = FileContents.irregularKind(info.st_mode) {
                close(fd)
                return .startFailed("cannot run \(path): it is \(kind), not a script")
            }
            reader = BatchLineReader(fd: fd)
        } else if interactive {
            var historyPath: String? = dataDirectory.historyPath
            do { try dataDirectory.create() } catch {
                console.error("seance: \(error) (history will not be kept)")
                historyPath = nil
            }
            guard let editLine = EditLineReader(console: console, historyPath: historyPath) else {
                return .startFailed("cannot initialise line editing on this terminal")
            }
            editLine.complete = { [unowned shell] text in shell.completion(for: text) }
            editLine.promptLabel = { [unowned shell] in shell.promptLabel }
            reader = editLine
            console.print(console.styler.bold("seance \(version)") + " — type 'help' for commands, Tab to complete, Ctrl-D to leave.")
        } else {
            reader = BatchLineReader(fd: 0, wake: console.inbox.wakeFDs.read) { console.printPending(); console.flush() }
        }
        if !interactive { restoreDefaultSIGPIPE() }

        let succeeded = shell.run(reader, options: Shell.RunOptions(bail: options.bail, echo: options.echo))
        return succeeded || interactive ? .success : .commandFailed
    }

    static func registerModes(in shell: Shell, profiles: Profiles, battery: Battery, network: NetworkConfiguration, animate: Bool,
                              environment: [String: String] = [:]) {
        ZombiesMode().register(in: shell)
        VisionsMode().register(in: shell)
        let online = Online(battery: battery, timing: network.timing) { identity in
            // The LAN first: where both reach a peer, the LAN is preferred.
            var transports: [Transport] = []
            if network.lanEnabled { transports.append(LANTransport(configuration: network.lan)) }
            if let mqtt = network.mqtt { transports.append(BrokerTransport(configuration: mqtt, identity: identity)) }
            return transports
        }
        // The places lines are shown in: chat owns conversations, rooms show theirs, and
        // transfers and search extend them, each registered once.
        let views = Views()
        let chat = ChatMode(profiles: profiles, online: online, views: views, animate: animate, linger: network.linger,
                            layout: network.conversationLayout)
        chat.register(in: shell)
        let curses = Curses(login: profiles.session, inbox: shell.console.inbox)
        curses.register(in: shell, online: online)
        Spectres(curses: curses).register(in: shell, online: online)
        Rooms(inbox: shell.console.inbox).register(in: shell, online: online, views: views)
        let transfers = Transfers(login: profiles.session, inbox: shell.console.inbox)
        transfers.home = environment["HOME"]
        transfers.downloads = environment["XDG_DOWNLOAD_DIR"] ?? (environment["HOME"] ?? ".") + "/Downloads"
        transfers.register(in: shell, online: online, views: views)
        Search(login: profiles.session).register(in: shell, views: views)
        let store = StoreMode(session: profiles.session)
        store.curses = curses
        store.register(in: shell)
        registerNotify(in: shell, network: network, environment: environment)
    }

    /// `notify [bell|desktop|off]`: how arrivals draw your attention, from now on and (kept in
    /// seance.conf) in later sessions; alone, how they do now.
    static func registerNotify(in shell: Shell, network: NetworkConfiguration, environment: [String: String]) {
        let modes = Attention.Mode.allCases.map { Candidate($0.rawValue, [.bell: "the bell", .desktop: "the bell and a desktop notification",
                                                                          .off: "nothing"][$0]!) }
        shell.register(Command("notify", scope: .global, arguments: [.positional("how", .choice(modes), optional: true)],
                               summary: "how arrivals draw your attention: bell, desktop or off (kept for next time)") { invocation in
            let console = invocation.console
            guard let chosen = invocation.arguments["how"] else {
                return console.print("notify: " + (console.attention?.mode ?? (shell.isInteractive ? .off : network.notify)).rawValue)
            }
            guard let mode = Attention.Mode(rawValue: chosen.lowercased()) else {
                throw UserError("notify takes bell, desktop or off, not '\(SafeText.visible(chosen))'")
            }
            try shell.session.dataDirectory.create()
            try ConfigFile.keep("notify", mode.rawValue, in: shell.session.dataDirectory.path)
            // A script draws no attention: the choice is kept for the sessions at a terminal.
            if shell.isInteractive {
                console.attention = mode == .off ? nil
                    : Attention(mode: mode, showsText: network.notifyText, throughTmux: environment["TMUX"] != nil)
            }
            console.status("notify: \(mode.rawValue) (kept in seance.conf)")
        })
    }
}
