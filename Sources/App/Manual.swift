import Chat
import Nearby
import Shell
import Storage
import Terminal

/// A flag or argument as the manual lists it (the executable reads them from its parser).
package typealias ManualOption = ManualPage.Option

extension App {
    /// seance(1): every mode and command from the registry `help` reads (a shell with every
    /// mode registered, as a run makes it), the flags as the flag parser describes them
    /// (`options`, read from it by the executable), and the config file's keys from the
    /// settings table.
    package static func manualPage(abstract: String, discussion: String, options: [ManualPage.Option]) -> String {
        let console = Console(capabilities: .plain, columns: 80, rows: 24)
        let session = Session(dataDirectory: DataDirectory(path: "/nonexistent"), schema: .seance, random: SeededRandom(seed: 0),
                              scheduler: SystemScheduler())
        let shell = Shell(console: console, session: session)
        let profiles = Profiles()
        registerModes(in: shell, profiles: profiles, battery: Battery(override: 100), network: NetworkConfiguration(), animate: false)
        profiles.register(in: shell)
        let keys = Settings.all.map(\.key).joined(separator: ", ")
        let page = ManualPage(
            name: "seance", version: version, abstract: abstract,
            description: [discussion,
                          "seance is a line-mode shell with modes: zombies (a dark-room game), visions (Will's visions and their "
                          + "rescuers), chat (people nearby on the local network or through an MQTT broker: conversations, "
                          + "rooms, curses and spells, end-to-end encrypted), and store (candles and medallions). "
                          + "Everything is kept in one SQLite database per data directory."],
            options: options,
            files: [("$XDG_DATA_HOME/seance/", "The data directory (~/.local/share/seance without XDG_DATA_HOME; --data-dir "
                     + "chooses another), private to its user."),
                    ("seance.sqlite", "In the data directory: every profile, conversation, room, vision, score and receipt."),
                    ("seance.conf", "In the data directory: chat settings as 'key = value' lines ('#' starts a comment); the "
                     + "keys are the chat flags' names: \(keys). A flag given on the command line wins."),
                    ("history", "In the data directory: the lines typed at a terminal."),
                    ("online-ID.lock", "In the data directory: held while a profile is online, so one profile is online in "
                     + "one seance at a time.")],
            environment: [("XDG_DATA_HOME", "Where the data directory is (XDG_DATA_HOME/seance)."),
                          ("HOME", "The data directory without XDG_DATA_HOME, and ~ in paths."),
                          ("NO_COLOR", "Set and not empty: no colour unless --color always."),
                          ("COLORTERM", "truecolor or 24bit: colours in 24 bits."),
                          ("TERM", "dumb: no colour and no line editing; a 256color terminal gets 256 colours."),
                          ("COLUMNS", "The width to draw to when it cannot be asked of the terminal."),
                          ("TMUX", "Set (inside tmux): desktop notifications are wrapped to pass through tmux, which shows them "
                           + "where its allow-passthrough option is on.")],
            exitStatus: ["0: every command succeeded (at a terminal: always, once seance ends).",
                         "1: in a script, -c or a pipe, some command failed (each error is printed on standard error "
                         + "as 'line N: message'); or seance could not start (an unreadable script, data directory "
                         + "or config file).",
                         "64: the command line itself is wrong: an unknown flag, a flag's value out of range, -c and a "
                         + "script together (EX_USAGE, as sysexits(3) has it)."],
            examples: [("seance", "Start the shell at a terminal"),
                       ("seance -c 'login ann --password-file pw; chat; open ben --wait 10; hello'",
                        "Say hello to ben from a script, once he is in sight"),
                       ("seance --broker mqtt://broker.example:1883", "Chat through a broker as well as on the local network"),
                       ("seance -c 'login ann --password-file pw; search --format tsv lighthouse'",
                        "Every message that mentions lighthouse, for other tools")],
            seeAlso: ["sqlite3(1)", "mosquitto(8)"])
        return page.render(shell.registry)
    }
}
