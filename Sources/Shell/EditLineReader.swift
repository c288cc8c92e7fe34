import CEditLine
import Glibc
import Terminal

/// Line editing at a terminal with libedit: emacs bindings, `~/.editrc`, persistent history,
/// Ctrl-R search, Tab completion with descriptions, and asynchronous lines printed above the
/// prompt without disturbing what is being typed.
///
/// libedit calls back into Swift through C function pointers; each callback finds this object
/// through `EL_CLIENTDATA`. Everything runs on the thread that calls `readLine`.
package final class EditLineReader: LineReader {
    let editLine: OpaquePointer
    var buffer: EditLineBuffer { EditLineBuffer(editLine: editLine) }
    /// What Up and Down walk: everything run this session, messages included.
    private let history: OpaquePointer
    private let historyPath: String?
    /// What the history file holds, oldest first, at most `historySize`: commands only (messages
    /// are not kept on disk).
    private var savedEntries: [String] = []
    /// What Ctrl-R searches, oldest first: the same lines as `history`.
    private(set) var recalled: [String] = []
    private let historySize: Int
    let console: Console
    /// Completes the text before the cursor; set by whoever owns the shell.
    package var complete: (String) -> Completion = { _ in Completion(replacedScalarCount: 0, candidates: [], quotes: true) }
    /// The prompt's label as it is now; set by whoever owns the shell. Something that happens
    /// while a line is typed (joining a room heard meanwhile) changes it, and the prompt drawn
    /// again below a notice shows it.
    package var promptLabel: (() -> String)?
    /// The label of the prompt shown (nil while a form asks a question instead).
    private var shownLabel: String?

    var prompt: UnsafeMutablePointer<CChar>?
    var keyCommands: [SpecialKey: String] = [:]
    /// While a form field is asked: its completions, which see the whole field as one word.
    private var fieldCompletions: ((String) -> [Candidate])?
    private var utf8Pending: [UInt8] = []
    var interrupted = false
    var lineFromKey: String?
    /// True inside el_gets: only then is there a prompt to print above.
    private var isEditing = false

    package var isInteractive: Bool { true }
    /// A person types one line at a time: every line is worth acting on at once.
    package var hasPendingInput: Bool { false }

    /// - Parameter historyPath: where history is loaded from and saved to; nil keeps none.
    package init?(console: Console, historyPath: String?, historySize: Int32 = 1000) {
        configureUTF8Locale()
        // Streams of libedit's own: Swift 6 forbids touching the C globals stdin/stdout/stderr.
        guard let input = fdopen(0, "r"), let output = fdopen(1, "w"), let errors = fdopen(2, "w"),
              let editLine = el_init("seance", input, output, errors), let history = history_init() else { return nil }
        self.editLine = editLine
        self.history = history
        self.historyPath = historyPath.flatMap(HistoryFile.usable)
        self.console = console

        // Plain lines, a command each (libedit's own format escapes every space); one an older
        // seance wrote is read once and written back plain.
        let text = self.historyPath.flatMap { try? FileContents.text($0) } ?? ""
        savedEntries = Array(HistoryFile.entries(text).suffix(Int(historySize)))
        self.historySize = Int(historySize)
        if let path = self.historyPath, text.hasPrefix(HistoryFile.libeditHeader) { HistoryFile.save(savedEntries, to: path) }
        seance_history_setsize(history, historySize)
        seance_history_setunique(history, 1)  // Consecutive duplicates are dropped.
        for entry in savedEntries { seance_history_enter(history, entry) }
        recalled = savedEntries

        seance_el_set_clientdata(editLine, Unmanaged.passUnretained(self).toOpaque())
        seance_el_set_editor(editLine, "emacs")
        seance_el_set_history(editLine, history)
        seance_el_set_prompt(editLine, { el in EditLineReader.owner(el)?.prompt }, 1)
        seance_el_set_getc(editLine, { el, character in EditLineReader.owner(el)?.readCharacter(into: character!) ?? 0 })
        seance_el_addfn(editLine, "seance-complete", "complete the word before the cursor") { el, _ in
            EditLineReader.owner(el)?.completeWord() ?? UInt8(CC_ERROR)
        }
        seance_el_bind(editLine, "^I", "seance-complete")
        seance_el_addfn(editLine, "seance-search-history", "search history as you type") { el, _ in
            EditLineReader.owner(el)?.searchHistory() ?? UInt8(CC_ERROR)
        }
        seance_el_bind(editLine, "^R", "seance-search-history")
        for key in SpecialKey.allCases {
            seance_el_addfn(editLine, key.functionName, "run the mode's command for this key", key.callback)
        }
        // The user's ~/.editrc (or $EDITRC) comes last so it can override any of the above.
        el_source(editLine, nil)

        console.columns = TerminalSize.columns(); console.rows = TerminalSize.rows()
        console.printAbovePrompt = { [unowned self] lines in self.printAbovePrompt(lines) }
        console.editArea = { [unowned self] in self.isEditing ? self.editRows() : nil }
        // Lines printed earlier are written over (delivery states) only on a screen that can
        // move the cursor back up to them.
        if isatty(1) != 0, let term = getenv("TERM").map({ String(cString: $0) }), !term.isEmpty, term != "dumb" {
            console.followScreen()
        }
        seance_el_addfn(editLine, "seance-clear-screen", "clear the screen") { el, _ in
            EditLineReader.owner(el)?.clearScreen() ?? UInt8(CC_ERROR)
        }
        seance_el_bind(editLine, "^L", "seance-clear-screen")
        Signals.install(wakeFD: console.inbox.wakeFDs.write)
    }

    deinit {
        console.printAbovePrompt = nil
        console.editArea = nil
        el_end(editLine)
        history_end(history)
        prompt?.deallocate()
    }

    private static func owner(_ el: OpaquePointer?) -> EditLineReader? {
        guard let el, let data = seance_el_get_clientdata(el) else { return nil }
        return Unmanaged<EditLineReader>.fromOpaque(data).takeUnretainedValue()
    }

    // MARK: Reading lines

    package func readLine(prompt label: String) -> LineInput {
        shownLabel = label
        defer { shownLabel = nil }
        return read(prompt: styledPrompt(label))
    }

    private func styledPrompt(_ label: String) -> String {
        console.styler.enabled ? "\u{1}" + Style.bold.escape + "\u{1}" + label + "\u{1}" + Style.reset + "\u{1}> " : label + "> "
    }

    private func read(prompt text: String) -> LineInput {
        setPrompt(text)
        console.flush()
        interrupted = false
        Signals.interrupt.store(false, ordering: .relaxed)
        var count: Int32 = 0
        isEditing = true
        let result = el_gets(editLine, &count)
        isEditing = false
        guard let raw = result else {
            // "^C" goes after the cursor, which may be anywhere in the abandoned text.
            console.forgetMarks()
            if interrupted {
                // Ctrl-C: leave the abandoned text on screen, as shells do, and start afresh.
                console.write("^C\n")
                console.flush()
                el_reset(editLine)
                return .interrupted
            }
            console.write("\n")
            return .end
        }
        var line = String(cString: raw)
        if line.hasSuffix("\n") { line.removeLast() }
        console.lineAccepted(width: promptWidth + line.displayWidth)
        return .line(line)
    }

    package func remember(_ line: String, persistent: Bool) {
        if let fromKey = lineFromKey, fromKey == line {
            lineFromKey = nil
            return  // Keys pressed in a mode are not history.
        }
        lineFromKey = nil
        var entry = Substring(line)
        while entry.last?.isWhitespace == true { entry.removeLast() }
        seance_history_enter(history, String(entry))
        if !entry.isEmpty, recalled.last != String(entry) { recalled.append(String(entry)) }
        if recalled.count > historySize { recalled.removeFirst(recalled.count - historySize) }
        guard persistent else { return }
        // On disk: commands only (messages are not kept there).
        guard let historyPath, !entry.isEmpty, savedEntries.last != String(entry) else { return }
        savedEntries.append(String(entry))
        if savedEntries.count > historySize { savedEntries.removeFirst(savedEntries.count - historySize) }
        HistoryFile.save(savedEntries, to: historyPath)
    }

    package func discardTypeahead() { tcflush(0, TCIFLUSH) }

    package func ask(_ question: String, secret: Bool, completions: ((String) -> [Candidate])?) -> String? {
        if secret { return SecretInput.read(question, console: console) }
        fieldCompletions = completions
        defer { fieldCompletions = nil }
        let keys = keyCommands
        setKeyCommands([:])
        defer { setKeyCommands(keys) }
        // Answers stay out of history: el_gets alone does not record anything.
        guard case .line(let answer) = read(prompt: question + " ") else { return nil }
        return answer
    }

    func setPrompt(_ text: String) {
        prompt?.deallocate()
        let utf8 = Array(text.utf8CString)
        let storage = UnsafeMutablePointer<CChar>.allocate(capacity: utf8.count)
        storage.initialize(from: utf8, count: utf8.count)
        prompt = storage
    }

    /// libedit's character source: waits on stdin and the wake-up pipe together, so signals and
    /// asynchronous lines are handled while the user is typing.
    func readCharacter(into character: UnsafeMutablePointer<wchar_t>) -> Int32 {
        while true {
            if Signals.interrupt.exchange(false, ordering: .relaxed) {
                interrupted = true
                utf8Pending.removeAll()
                errno = EINTR
                return -1
            }
            if Signals.resumed.exchange(false, ordering: .relaxed) {
                // Back from Ctrl-Z: the shell that ran `fg` left the terminal in its own (cooked)
                // mode, which libedit still believes is its editing mode: out of it and back in,
                // it reads the terminal afresh and sets it up again (Tab, Ctrl-L, Ctrl-Z work at
                // once, not after the next Enter). Then the shell drew its own lines: draw ours.
                seance_el_prep_term(editLine, 0)
                seance_el_prep_term(editLine, 1)
                el_resize(editLine)
                console.forgetMarks()
                console.write("\n")
                console.flush()
                seance_el_refresh(editLine)
            }
            if Signals.resize.exchange(false, ordering: .relaxed) {
                el_resize(editLine)
                console.columns = TerminalSize.columns(); console.rows = TerminalSize.rows()
                console.forgetMarks()  // The terminal may have rewrapped what it shows.
                if console.redrawAfterResize?() == true {
                    console.flush()
                    seance_el_refresh(editLine)
                }
            }
            console.printPending()
            var fds = [pollfd(fd: 0, events: Int16(POLLIN), revents: 0),
                       pollfd(fd: console.inbox.wakeFDs.read, events: Int16(POLLIN), revents: 0)]
            if poll(&fds, 2, -1) < 0 {
                if errno == EINTR { continue }
                return -1
            }
            if fds[1].revents != 0 { continue }
            guard fds[0].revents != 0 else { continue }
            var byte: UInt8 = 0
            let n = Glibc.read(0, &byte, 1)
            if n < 0 { if errno == EINTR || errno == EAGAIN { continue } else { return -1 } }
            if n == 0 { return 0 }
            utf8Pending.append(byte)
            switch UTF8Scalar.decode(utf8Pending) {
            case .incomplete:
                continue
            case .scalar(let value):
                utf8Pending.removeAll()
                character.pointee = wchar_t(bitPattern: value)
                return 1
            case .invalid:
                utf8Pending.removeAll()
                character.pointee = 0xFFFD
                return 1
            }
        }
    }

    // MARK: Asynchronous output

    /// Moves to the start of the edit area, clears it, prints `lines`, and lets libedit redraw the
    /// prompt and the half-typed line below them, cursor where it was.
    private func printAbovePrompt(_ lines: [MarkedLine]) {
        guard isEditing else { return console.writeLines(lines) }
        clearEditArea()
        console.writeLines(lines)
        console.flush()
        if let label = promptLabel?(), shownLabel != nil, label != shownLabel {
            shownLabel = label
            setPrompt(styledPrompt(label))
        }
        seance_el_refresh(editLine)
    }

    /// Moves to the start of the line being edited (prompt included) and clears from there
    /// down. The move is not output: the rows followed end where that line begins.
    func clearEditArea() {
        let rowsAbove = editRows().aboveCursor
        console.writeUnfollowed((rowsAbove > 0 ? "\u{1B}[\(rowsAbove)A" : "") + "\r\u{1B}[J")
    }

    private var promptWidth: Int { (prompt.map { String(cString: $0) } ?? "").strippingPromptMarkers.displayWidth }

    /// The rows of the line being edited (prompt included) above and below the cursor's.
    func editRows() -> (aboveCursor: Int, belowCursor: Int) {
        let columns = max(1, console.columns)
        let above = (promptWidth + buffer.beforeCursor.displayWidth) / columns
        let all = (promptWidth + buffer.text.displayWidth) / columns
        return (above, max(0, all - above))
    }

    /// Ctrl-L: the screen cleared and the line drawn again at the top.
    private func clearScreen() -> UInt8 {
        console.write("\u{1B}[H\u{1B}[2J")
        console.flush()
        return UInt8(CC_REDISPLAY)
    }


    // MARK: Completion

    private func completeWord() -> UInt8 {
        let before = buffer.beforeCursor
        let completion: Completion
        let current: String
        if let fieldCompletions {
            let lowered = before.lowercased()
            completion = Completion(replacedScalarCount: before.unicodeScalars.count,
                                    candidates: fieldCompletions(before).filter { $0.text.lowercased().hasPrefix(lowered) },
                                    quotes: false)
            current = before
        } else {
            completion = complete(before)
            current = Tokenizer.partialCommand(before).current
        }
        if completion.candidates.isEmpty { return UInt8(CC_REFRESH_BEEP) }
        if let insertion = completion.insertion(current: current) {
            el_deletestr(editLine, Int32(completion.replacedScalarCount))
            el_insertstr(editLine, insertion)
            return UInt8(CC_REFRESH)
        }
        // Below the line being edited, which stays above the listing: not followed.
        console.forgetMarks()
        console.write("\n" + completion.listing(columns: console.columns) + "\n")
        console.flush()
        return UInt8(CC_REDISPLAY)
    }
}

extension String {
    /// The prompt as displayed: without the \u{1}-delimited escape sequences libedit skips.
    fileprivate var strippingPromptMarkers: String {
        split(separator: "\u{1}", omittingEmptySubsequences: false).enumerated()
            .filter { $0.offset % 2 == 0 }.map(\.element).joined()
    }
}
