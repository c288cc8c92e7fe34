import Dispatch
import Glibc
import Terminal

/// The REPL engine: reads lines, splits them into commands, dispatches them through the
/// registry in the current mode, and reports errors the way batch users expect.
package final class Shell {
    /// Where reminders wait for their time (they only post a line to the inbox).
    static let reminders = DispatchQueue(label: "seance.reminders")
    package let console: Console
    package let session: Session
    package private(set) var registry: CommandRegistry
    /// The mode the user is in; nil at the top level.
    package private(set) var currentMode: String? {
        didSet { currentMessages = currentMode.flatMap { registry.mode(named: $0)?.messages } }
    }
    /// How the current mode takes plain lines, if it does: found once, as the mode is entered
    /// (every line typed and every notice's advice asks).
    private var currentMessages: MessageInput?
    /// The reader of the running loop: forms use it to ask for fields.
    package private(set) var reader: LineReader?
    /// True when the next line is there already (see `LineReader.hasPendingInput`).
    package var hasPendingInput: Bool { reader?.hasPendingInput ?? false }
    package var isInteractive: Bool { reader?.isInteractive ?? false }

    var quitRequested = false
    /// Marks after the mode in the prompt (`●` while online); each returns "" when it has none.
    package var promptMarks: [() -> String] = []
    /// Who is logged in, named before the mode as a Unix prompt names its user (`alice@chat●>`).
    package var promptUser: () -> String? = { nil }
    /// Run when the session ends, after the mode is left (going offline, and the like).
    package var onExit: [() -> Void] = []
    /// The commands come from standard input (a pipe, or a terminal): it is not a password too.
    package var standardInputIsCommands = true
    /// Run first when the input ends, in the mode the last line left (a script's end waits here
    /// for what it sent), before any mode is left and `onExit` runs.
    package var onEndOfInput: [() -> Void] = []

    package init(console: Console, session: Session) {
        self.console = console
        self.session = session
        self.registry = CommandRegistry()
        Builtins.register(in: self)
        session.backfillProgress = console.progressLine()
        // The last spelling kept: every message's notice names the same command (`open ben`).
        var last: (words: String, mode: String?, place: String?, slash: Bool, spelled: String)?
        console.placeAdvice = { [unowned self] words, mode in
            let slash = takesMessages
            if let last, last.words == words, last.mode == mode, last.place == currentMode, last.slash == slash { return last.spelled }
            let spelled = Advice.spelled(words, mode: mode, in: currentMode, registry: registry, takesMessages: slash)
            last = (words, mode, currentMode, slash, spelled)
            return spelled
        }
    }


    package var styler: Styler { console.styler }
    package var capabilities: Capabilities { console.capabilities }

    package func register(_ command: Command) { registry.add(command) }

    /// Registers a command of `mode` whose handler needs only the shell and its arguments.
    package func register(mode: String, _ name: String, aliases: [String] = [], arguments: [ArgumentSpec] = [],
                         summary: String, details: String = "", run: @escaping (Shell, Arguments) throws -> Void) {
        register(Command(name, aliases: aliases, scope: .mode(mode), arguments: arguments, summary: summary,
                         details: details) { invocation in
            try run(invocation.shell, invocation.arguments)
        })
    }
    package func register(_ mode: Mode) { registry.add(mode) }

    // MARK: Running

    /// Options of a run that change how lines are handled.
    package struct RunOptions: Sendable {
        /// Stop at the first failing command.
        package var bail = false
        /// Print each line before running it.
        package var echo = false
        package init(bail: Bool = false, echo: Bool = false) {
            self.bail = bail
            self.echo = echo
        }
    }

    /// Runs lines from `reader` until it ends or `quit`. Returns true when every command succeeded.
    @discardableResult
    package func run(_ reader: LineReader, options: RunOptions = RunOptions()) -> Bool {
        self.reader = reader
        defer {
            onEndOfInput.forEach { $0() }
            leaveMode()  // A mode may have goodbyes to say.
            onExit.forEach { $0() }
            self.reader = nil
            console.printPending()
            console.flush()
        }
        reader.setKeyCommands(currentMode.flatMap { registry.mode(named: $0)?.keyCommands } ?? [:])
        var allSucceeded = true
        var lineNumber = 0
        quitRequested = false
        while !quitRequested {
            // Only when something was posted: a script's every line read the wake pipe for
            // nothing. (A byte there from elsewhere, a signal, is the reader's: it waits on it.)
            if console.inbox.hasWaiting { console.printPending() }
            if reader.isInteractive { console.flush() }
            // A batch shows no prompt: its label (a lookup or two per line) is made only for a person.
            let input = reader.readLine(prompt: reader.isInteractive ? promptLabel : "")
            switch input {
            case .end:
                return allSucceeded
            case .interrupted:
                continue
            case .line(let line):
                lineNumber += 1
                let result = run(line: line, options: options)
                if !line.allSatisfy(\.isWhitespace) {
                    // Messages stay in this session's history (to fix a typo) but not in the file.
                    reader.remember(line, persistent: !result.wasMessage)
                }
                for failure in result.failures {
                    allSucceeded = false
                    report(failure, lineNumber: lineNumber)
                }
                if options.bail && !result.failures.isEmpty { return false }
            }
        }
        return allSucceeded
    }

    /// The prompt without its `> `: who is logged in, then the mode and its page, or `seance`.
    package var promptLabel: String {
        let marks = promptMarks.map { $0() }.joined()
        let user = promptUser().map { $0 + "@" } ?? ""
        guard let currentMode, let mode = registry.mode(named: currentMode) else { return user + "seance" + marks }
        return user + mode.prompt() + marks
    }

    /// What running one line did.
    package struct LineResult {
        /// Every command that failed, in order (without `bail`, one failure skips nothing).
        package var failures: [Error] = []
        /// The line was a message (sent in a conversation), not commands.
        package var wasMessage = false
    }

    /// Runs one line; returns the error of the first failing command, if any.
    package func execute(_ line: String) -> Error? { run(line: line).failures.first }

    /// Runs one line: a message when the mode takes free text, else its commands, each in turn.
    /// `;` and new lines only separate commands: a failure stops the rest only with `bail`.
    package func run(line: String, options: RunOptions = RunOptions()) -> LineResult {
        var result = LineResult()
        if line.allSatisfy(\.isWhitespace) {
            guard let currentMode, let emptyLine = registry.mode(named: currentMode)?.emptyLine else { return result }
            do { try emptyLine(self) } catch { result.failures.append(error) }
            return result
        }
        var commandText = line
        // `/command` works everywhere (no command starts with a slash), as in chat clients.
        if line.hasPrefix("/") && !line.hasPrefix("//") {
            commandText = String(line.dropFirst())
        } else if let messages = activeMessages {
            do {
                if options.echo { console.print(promptLabel + "> " + line) }
                result.wasMessage = true
                try messages.send(self, line.hasPrefix("//") ? String(line.dropFirst()) : line)
            } catch {
                result.failures.append(error)
            }
            return result
        }
        let commands: [[String]]
        do { commands = try Tokenizer.commands(in: commandText) } catch {
            result.failures.append(ShellError.syntax(error.description))
            return result
        }
        for var words in commands {
            // `/cmd` is a command wherever it stands, after a `;` too.
            if let first = words.first, first.hasPrefix("/"), !first.hasPrefix("//"), first.count > 1 { words[0].removeFirst() }
            if options.echo { console.print(promptLabel + "> " + words.map(Tokenizer.quote).joined(separator: " ")) }
            do { try dispatch(words, mode: currentMode) } catch {
                result.failures.append(error)
                if options.bail { break }
            }
            if quitRequested { break }
        }
        return result
    }

    /// Prints an error: `line N: message` in batch, `error: message` at a terminal.
    package func report(_ error: Error, lineNumber: Int) {
        let message = String(describing: error)
        if isInteractive, error as? ShellError == .interrupted {
            return console.print(styler.dim("cancelled"))
        }
        if isInteractive {
            console.error(styler.error("error:") + " " + message)
        } else {
            console.error("line \(lineNumber): " + message)
        }
    }

    /// Runs one command. Leading mode names are prefixes (`zombies up`, even `zombies visions
    /// list`): they are walked over in one pass, the last one deciding the mode, so a line of
    /// any number of them costs time in proportion to its length and no copies.
    private func dispatch(_ words: [String], mode: String?) throws {
        var mode = mode
        var start = words.startIndex
        while start < words.endIndex, let target = registry.mode(named: words[start]) {
            guard target.isAvailable else { throw ShellError.modeUnavailable(target.name) }
            if start == words.endIndex - 1 { return try enter(target) }
            mode = target.name
            start += 1
        }
        guard start < words.endIndex else { return }
        let name = words[start]
        // The place's own command, or one that works everywhere; else the one mode's that has
        // it, as if its name came first (`up` anywhere is `zombies up`).
        guard let command = registry.command(named: name, inMode: mode) else {
            let owners = registry.modesOwning(name)
            if owners.count == 1, let command = registry.command(named: name, inMode: owners[0]) {
                let arguments = try Arguments.parse(Array(words[(start + 1)...]), specs: command.arguments, usage: command.usageNamingMode)
                return try command.run(Invocation(shell: self, arguments: arguments, name: name, mode: owners[0]))
            }
            if !owners.isEmpty { throw ShellError.ambiguous(command: name, modes: owners) }
            throw ShellError.unknownCommand(name, suggestion: registry.suggestion(for: name, inMode: mode))
        }
        let arguments = try Arguments.parse(Array(words[(start + 1)...]), specs: command.arguments, usage: command.advisedUsage)
        try command.run(Invocation(shell: self, arguments: arguments, name: name, mode: mode))
    }

    /// Where a plain line is a message (an open conversation, a room), how it is sent; nil
    /// elsewhere.
    var activeMessages: MessageInput? {
        guard let messages = currentMessages, messages.isActive() else { return nil }
        return messages
    }

    /// True where a plain line is a message: commands there start with `/`, and so does any
    /// advice given there.
    package var takesMessages: Bool { activeMessages != nil }

    /// The prompt moves to `mode` without its entrance (the command that moves it draws the
    /// place itself: `chat open ben` from anywhere is in ben's conversation after).
    package func move(into name: String) {
        guard currentMode != name, let mode = registry.mode(named: name) else { return }
        if currentMode != nil { leaveMode() }
        currentMode = name
        reader?.setKeyCommands(mode.keyCommands)
    }

    /// Leaves the current mode (if another) and enters `mode`, showing its view.
    package func enter(_ mode: Mode) throws {
        let previous = currentMode
        if let currentMode, currentMode != mode.name { leaveMode() }
        currentMode = mode.name
        reader?.setKeyCommands(mode.keyCommands)
        do {
            try mode.enter(self)
        } catch {
            // A mode that could not start is not entered: the shell stays at the top level
            // (or where it was, when that was this same mode).
            currentMode = previous == mode.name ? previous : nil
            reader?.setKeyCommands(currentMode.flatMap { registry.mode(named: $0)?.keyCommands } ?? [:])
            throw error
        }
    }

    /// Back to the top level.
    package func leaveMode() {
        guard let currentMode, let mode = registry.mode(named: currentMode) else { return }
        mode.leave(self)
        self.currentMode = nil
        reader?.setKeyCommands([:])
    }

    /// Asks one field of a form at the terminal. In batch there is nobody to ask: the field is
    /// missing, which is an error, never a wait.
    /// The field of a `[y/N]` question.
    package static let confirmation = "confirmation"

    package func ask(_ question: String, field: String, secret: Bool = false,
                    completions: ((String) -> [Candidate])? = nil) throws -> String {
        guard let reader, reader.isInteractive else { throw ShellError.missingField(field) }
        // A yes or no is what is typed once it is asked: a line typed ahead answers nothing.
        if field == Self.confirmation { reader.discardTypeahead() }
        guard let answer = reader.ask(question, secret: secret, completions: completions) else {
            throw ShellError.interrupted
        }
        return answer
    }

    /// Waits `seconds`, printing asynchronous lines as they come (unless `showNotices` is
    /// false: an animation is drawing). Ctrl-C ends the wait with `ShellError.interrupted`, and
    /// keys typed meanwhile are dropped rather than run afterwards.
    package func pause(_ seconds: Double, showNotices: Bool = true) throws {
        _ = try wait(upTo: seconds, showNotices: showNotices) { false }
    }

    /// Waits until `condition` holds or `seconds` have passed, printing what arrives meanwhile;
    /// true when it held. The condition is checked whenever the shell is woken (the engine wakes
    /// it for every change it makes known: a notice, a peer arriving), never on a timer.
    package func wait(upTo seconds: Double, showNotices: Bool = true, until condition: () -> Bool) throws -> Bool {
        let deadline = SystemTime.monotonic() + seconds
        while true {
            if Signals.interrupt.exchange(false, ordering: .relaxed) {
                if isInteractive {
                    tcflush(0, TCIFLUSH)
                    // The terminal echoed ^C where the cursor was, at the start of a line of its
                    // own (whatever printed meanwhile ended its lines): 'cancelled' goes there.
                    console.write("\r\u{1B}[K")
                }
                throw ShellError.interrupted
            }
            if condition() { return true }
            let left = deadline - SystemTime.monotonic()
            if left <= 0 { return false }
            var fds = [pollfd(fd: console.inbox.wakeFDs.read, events: Int16(POLLIN), revents: 0)]
            _ = poll(&fds, 1, Int32(min(left * 1000, 1000).rounded(.up)))
            if showNotices {
                console.printPending()
            } else if fds[0].revents != 0 {
                // Leave the lines queued (the animation owns the screen); the prompt prints them.
                console.inbox.clearWake()
            }
            console.flush()
        }
    }
}
