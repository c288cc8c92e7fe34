import Foundation
import TestSupport
import Testing

/// seance at a real (pseudo) terminal, driven through tmux.
@Suite(.serialized) struct InteractiveTests {
    let scratch = Scratch()

    /// ann (in the scratch's data directory) and ben (in `ben/`), with `password`'s password.
    private func annAndBen(_ password: String) throws {
        for (name, dir) in [("ann", scratch.dataDir), ("ben", scratch.path + "/ben")] {
            _ = try runSeance(["--data-dir", dir, "-c", "profile new \(name) --password-file \(password)"], scratch: scratch)
        }
    }

    /// The row under the last bubble on `screen`, and whether any other row says a state of #1.
    private func stateRow(_ screen: String) -> (under: String?, repeated: Bool) {
        let rows = screen.split(separator: "\n", omittingEmptySubsequences: false).map(String.init)
        let bottom = rows.lastIndex { $0.hasSuffix("╯") }
        let under = bottom.flatMap { $0 + 1 < rows.count ? rows[$0 + 1].trimmingCharacters(in: .whitespaces) : nil }
        let repeated = rows.indices.contains { index in
            index != bottom.map { $0 + 1 } && rows[index].trimmingCharacters(in: .whitespaces).hasPrefix("#1 ")
        }
        return (under, repeated)
    }

    /// ann at a terminal, asked her password (`correct horse`) by `login ann`.
    private func annAskedHerPassword() throws -> TerminalSession {
        let password = scratch.write("password", "correct horse\n")
        _ = try runSeance(["--data-dir", scratch.dataDir, "-c", "profile new ann --password-file \(password)"], scratch: scratch)
        let term = try TerminalSession(scratch: scratch)
        try term.type("login ann")
        try term.press("Enter")
        try term.waitFor { $0.hasSuffix("Password for ann:") }
        return term
    }

    /// How ann and ben go online: on `lo` of a network of the test's own, where the anns and
    /// bens of other tests are not in sight, announcing often.
    private static let online = ["--announce-interval", "0.2", "--interface", "lo"]

    /// ann logged in at a terminal, ben's profile made, and the network both go online on.
    private func annLoggedInAtATerminal(_ arguments: [String] = []) throws -> (term: TerminalSession, password: String, network: PrivateNetwork) {
        let password = scratch.write("password", "correct horse\n")
        try annAndBen(password)
        let network = try PrivateNetwork()
        let term = try TerminalSession(arguments: Self.online + ["--no-anim"] + arguments, scratch: scratch, network: network)
        try term.type("login ann --password-file \(password)")
        try term.press("Enter")
        return (term, password, network)
    }

    /// ann at a terminal in a conversation with ben, who is in chat (the caller ends him).
    private func annTalkingToBen(_ arguments: [String] = []) throws -> (term: TerminalSession, ben: TestNetwork.Run) {
        let (term, password, network) = try annLoggedInAtATerminal(arguments)
        try term.type("chat")
        try term.press("Enter")
        try term.waitFor { $0.contains("announcing ann#") }
        let ben = try ben(["login ben --password-file \(password)", "chat"], network)
        do {
            try term.waitFor { $0.contains("+ 👤 ben#") }
            try term.type("open ben")
            try term.press("Enter")
            // The prompt names who you are, then the mode and whom you talk to (issue 31, item 13).
            try term.waitFor { $0.hasSuffix("\nann@chat:ben●>") }
        } catch {
            end(ben)
            throw error
        }
        return (term, ben)
    }

    /// Ends a process the test started, at once. (SIGTERM would not do: processes started from
    /// the test runner inherit its mask, which blocks it, and ben would linger until his script ends.)
    private func end(_ run: TestNetwork.Run) {
        run.kill()
        _ = run.wait()
    }

    /// ben online on `network`, `lines` typed first (more as the test says), out of sight of the
    /// test's output; the caller ends him.
    private func ben(_ lines: [String], _ network: PrivateNetwork, data: String? = nil, output: String = "ben-output") throws -> TestNetwork.Run {
        try TestNetwork.Run.launch(network.launcher[0], Array(network.launcher.dropFirst())
                                        + [seanceBinary, "--data-dir", data ?? scratch.path + "/ben"] + Self.online,
                                   environment: ["HOME": scratch.path, "PATH": "/usr/bin:/bin"],
                                   outputPath: scratch.path + "/" + output, lines: lines)
    }

    @Test func tabCompletesAUniqueCommand() throws {
        let term = try TerminalSession(scratch: scratch)
        try term.type("ec")
        try term.press("Tab")
        try term.waitFor { $0.hasSuffix("seance> echo") }
        try term.type("done")
        try term.press("Enter")
        try term.waitFor { $0.contains("\ndone\nseance>") }
    }

    @Test func tabListsCandidatesWithDescriptions() throws {
        let term = try TerminalSession(scratch: scratch)
        try term.press("Tab")
        let screen = try term.waitFor { $0.contains("remind") }
        // Each name, then its description in a column of its own.
        #expect(screen.range(of: #"echo +print the arguments"#, options: .regularExpression) != nil, "\(screen)")
        #expect(screen.range(of: #"help +list the commands of this mode"#, options: .regularExpression) != nil, "\(screen)")
        try term.waitFor { $0.hasSuffix("seance>") }
    }

    @Test func ctrlCAbandonsTheLine() throws {
        let term = try TerminalSession(scratch: scratch)
        try term.type("echo abandoned")
        try term.waitFor { $0.hasSuffix("echo abandoned") }
        try term.press("C-c")
        try term.waitFor { $0.hasSuffix("echo abandoned^C\nseance>") }
        try term.type("echo fresh")
        try term.press("Enter")
        let screen = try term.waitFor { $0.contains("\nfresh\n") }
        #expect(!screen.contains("abandonedecho"))
    }

    @Test func ctrlDLeavesWithStatusZero() throws {
        let term = try TerminalSession(scratch: scratch)
        try term.press("C-d")
        try term.waitFor { $0.contains("EXIT=0") }
    }

    @Test func historyIsRecalledAndKept() throws {
        do {
            let term = try TerminalSession(scratch: scratch)
            for line in ["echo first", "echo second", "echo second"] {
                try term.type(line)
                try term.press("Enter")
            }
            try term.press("Up")
            try term.waitFor { $0.hasSuffix("seance> echo second") }
            try term.press("Up")
            // The repeated line was stored once, so one more step reaches the first.
            try term.waitFor { $0.hasSuffix("seance> echo first") }
            try term.press("C-u")
            try term.type("quit")
            try term.press("Enter")
            try term.waitFor { $0.contains("EXIT=0") }
        }
        // Plain lines, a command each, as typed (issue 52), not libedit's escapes.
        let history = try String(contentsOfFile: scratch.dataDir + "/history", encoding: .utf8)
        #expect(history == "echo first\necho second\nquit\n", "\(history)")
        let again = try TerminalSession(scratch: scratch)
        try again.press("Up")
        try again.waitFor { $0.hasSuffix("seance> quit") }
        // Ctrl-R shows what it searches for and what it found, as bash does; Enter runs it.
        try again.press("C-u")
        try again.type("echo half")
        try again.press("C-r")
        try again.type("echo")
        try again.waitFor { $0.hasSuffix("(reverse-i-search)'echo': echo second") }
        try again.press("C-r")
        try again.waitFor { $0.hasSuffix("(reverse-i-search)'echo': echo first") }
        try again.press("C-r")
        try again.waitFor { $0.hasSuffix("(failed reverse-i-search)'echo': echo first") }
        // Ctrl-G gives back the line as it was typed.
        try again.press("C-g")
        try again.waitFor { $0.hasSuffix("seance> echo half") }
        try again.press("C-u", "C-r")
        try again.type("fir")
        try again.waitFor { $0.hasSuffix("(reverse-i-search)'fir': echo first") }
        try again.press("Enter")
        try again.waitFor { $0.hasSuffix("seance> echo first\nfirst\nseance>") }
        // Another key keeps the line found for editing, and does what it does.
        try again.press("C-r")
        try again.type("sec")
        try again.press("C-e")
        try again.type(" more")
        try again.press("Enter")
        try again.waitFor { $0.hasSuffix("second more\nseance>") }
        // Ctrl-C abandons the line, as at the prompt.
        try again.press("C-r")
        try again.type("fir")
        try again.press("C-c")
        try again.waitFor { $0.hasSuffix("seance> echo first^C\nseance>") }
        try again.type("echo after")
        try again.press("Enter")
        try again.waitFor { $0.hasSuffix("\nafter\nseance>") }
    }

    @Test func asyncLinesPrintAboveTheLineBeingTyped() throws {
        let term = try TerminalSession(scratch: scratch)
        try term.type("remind 0.3 the bell tolls")
        try term.press("Enter")
        try term.type("echo half")
        let screen = try term.waitFor { $0.contains("reminder: the bell tolls") }
        let lines = screen.split(separator: "\n").map(String.init)
        let reminder = try #require(lines.firstIndex { $0.contains("reminder: the bell tolls") })
        #expect(lines[reminder - 1] == "seance> remind 0.3 the bell tolls")
        try term.waitFor { $0.hasSuffix("reminder: the bell tolls\nseance> echo half") }
        try term.type(" typed")
        try term.press("Enter")
        try term.waitFor { $0.hasSuffix("seance> echo half typed\nhalf typed\nseance>") }
    }

    @Test func asyncLinesKeepAWrappedLineIntact() throws {
        let term = try TerminalSession(scratch: scratch, width: 40)
        try term.type("remind 0.3 ping")
        try term.press("Enter")
        let long = "echo " + String(repeating: "x", count: 45)
        try term.type(long)
        try term.waitFor { $0.contains("reminder: ping") }
        try term.type("y")
        try term.press("Enter")
        let screen = try term.waitFor { $0.contains(String(repeating: "x", count: 45) + "y\nseance>") }
        #expect(screen.components(separatedBy: "reminder: ping").count == 2)
    }

    /// Stopped with Ctrl-Z and brought back with `fg`, the line editor works at once: Tab
    /// completes without an Enter first (the terminal is set up for editing again).
    @Test func lineEditingWorksAtOnceAfterCtrlZAndFg() throws {
        let term = try TerminalSession(scratch: scratch, underJobControl: true)
        try term.press("C-z")
        try term.waitFor { $0.contains("Stopped") && $0.hasSuffix("$") }
        try term.type("fg")
        try term.press("Enter")
        try term.waitFor { $0.hasSuffix("seance>") }
        try term.type("he")
        try term.press("Tab")
        try term.waitFor { $0.hasSuffix("seance> help") }
        try term.press("C-l")
        try term.waitFor { !$0.contains("Stopped") && $0.hasSuffix("seance> help") }
    }

    @Test func arrowKeysMoveAtOnceInZombiesAndEnterDismisses() throws {
        let term = try TerminalSession(arguments: ["--seed", "7", "--ascii"], scratch: scratch)
        try term.type("zombies")
        try term.press("Enter")
        try term.waitFor { $0.contains("# # # . @") }
        try term.press("Up")  // No Enter: the key itself moves.
        try term.waitFor { $0.contains("# # # . @\n# # # # .") }
        // Seed 7: up, up, left, left, up, left, up reaches the SOS.
        for key in ["Up", "Left", "Left", "Up", "Left", "Up"] { try term.press(key) }
        // The message covers the whole game (seed 004); `look` shows the room that ended it.
        try term.waitFor { $0.contains("You won!") && $0.contains("look: see the room") }
        #expect(try !term.screen().contains("S @") && !term.screen().contains("W: 1"))
        try term.type("look")
        try term.press("Enter")
        try term.waitFor { $0.contains("S @") && $0.contains("W: 1  L: 0") && $0.contains("You won!") }
        try term.press("Enter")
        try term.waitFor { $0.contains("W: 1  L: 0") && $0.contains("# # # . @") && !$0.contains("You won!") }
        try term.press("Down")
        try term.waitFor { $0.contains("you cannot go down: there is a wall") }
        // Outside the mode the arrows edit and recall history again.
        try term.type("back")
        try term.press("Enter")
        try term.waitFor { $0.hasSuffix("seance>") }
        try term.press("Up")
        try term.waitFor { $0.hasSuffix("seance> back") }
    }

    @Test func visionsFormAsksWithCompletionAndSaveAsks() throws {
        let term = try TerminalSession(arguments: ["--ascii"], scratch: scratch)
        try term.type("visions")
        try term.press("Enter")
        try term.waitFor { $0.contains("No visions yet") }
        try term.type("add")
        try term.press("Enter")
        try term.waitFor { $0.hasSuffix("Rescuer:") }
        try term.type("Dus")
        try term.press("Tab")
        try term.waitFor { $0.hasSuffix("Rescuer: Dustin") }
        try term.press("Enter")
        try term.waitFor { $0.hasSuffix("Image file:") }
        // A bad path is asked again, the rescuer kept (issue 31, item 9).
        try term.type("/no/such.png")
        try term.press("Enter")
        let again = try term.waitFor { $0.hasSuffix("Image file:") && $0.contains("cannot read /no/such.png") }
        #expect(again.contains("try another") && !again.contains("added vision"))
        try term.type(packageRoot + "/assets/portraits/dus")
        try term.press("Tab")
        try term.waitFor { $0.hasSuffix("/assets/portraits/dustin.png") }
        try term.press("Enter")
        try term.waitFor { $0.contains("added vision #1, assigned to Dustin") }
        // Issue 52: a line typed ahead does not answer a question asked after it: the `y` sent
        // with the command is forgotten, and the `n` typed once asked answers.
        try term.type("rescuer delete Eleven\ny\n")
        try term.waitFor { $0.hasSuffix("Delete rescuer Eleven? [y/N]") }
        try term.type("n")
        try term.press("Enter")
        let kept = try term.waitFor { $0.contains("nothing deleted") }
        #expect(!kept.contains("deleted rescuer Eleven") && !kept.contains("unknown command"), "\(kept)")
        // Issue 52: what refuses a deletion is said before the question, not after the answer.
        try term.type("rescuer delete Dustin")
        try term.press("Enter")
        let refused = try term.waitFor { $0.contains("Dustin is assigned to a vision: delete it first") }
        #expect(!refused.contains("Delete rescuer Dustin?"), "\(refused)")
        try term.type("open 1")
        try term.press("Enter")
        try term.type("save")
        try term.press("Enter")
        try term.waitFor { $0.hasSuffix("Who is rescuing Will?") }
        try term.type("dustin")
        try term.press("Enter")
        let screen = try term.waitFor { $0.contains("Dustin rescued Will! (vision #1)") }
        #expect(screen.contains(" RESCUED "))  // The stamp stays over the image.
        // A new name asks before creating a rescuer; "no" adds nothing.
        try term.type("add Vecna --image " + packageRoot + "/assets/portraits/max.png")
        try term.press("Enter")
        try term.waitFor { $0.hasSuffix("No rescuer is called Vecna yet. Create one? [y/N]") }
        try term.type("n")
        try term.press("Enter")
        // Declining is an answer, not an error.
        let declined = try term.waitFor { $0.contains("nothing added") }
        #expect(!declined.contains("error: nothing added"))
        // The stamp is kept: the vision opened again still shows it.
        try term.type("open 1")
        try term.press("Enter")
        try term.waitFor { screen in
            guard let reopened = screen.range(of: "visions> open 1", options: .backwards) else { return false }
            return screen[reopened.upperBound...].contains(" RESCUED ")
        }
    }

    @Test func profileNewAsksWithoutEchoingThePassword() throws {
        let term = try TerminalSession(scratch: scratch)
        try term.type("profile new")
        try term.press("Enter")
        try term.waitFor { $0.hasSuffix("Username:") }
        try term.type("alice")
        try term.press("Enter")
        try term.waitFor { $0.hasSuffix("New password (8 characters or more):") }
        try term.type("s3cret-words")
        try term.press("Enter")
        try term.waitFor { $0.hasSuffix("Password again:") }
        try term.type("s3cret-words")
        try term.press("Enter")
        try term.waitFor { $0.hasSuffix("Avatar (an emoji or an image file, Enter for none):") }
        try term.type("👻")
        try term.press("Enter")
        let screen = try term.waitFor { $0.contains("created alice#") && $0.contains("and logged in") }
        #expect(!screen.contains("s3cret"))
        // Not in history either.
        try term.press("Up")
        try term.waitFor { $0.hasSuffix("seance> profile new") }
    }

    /// A too-short password is said at once and asked again: the form goes on, so the next
    /// secret is never typed at the command prompt, run, or written to the history file.
    @Test func aShortPasswordIsAskedAgainAndNoAnswerReachesTheHistory() throws {
        let term = try TerminalSession(scratch: scratch)
        try term.type("profile new")
        try term.press("Enter")
        try term.waitFor { $0.hasSuffix("Username:") }
        try term.type("bob")
        try term.press("Enter")
        try term.waitFor { $0.hasSuffix("New password (8 characters or more):") }
        try term.type("short")
        try term.press("Enter")
        try term.waitFor { $0.contains("at least 8 characters; try again") && $0.hasSuffix("New password (8 characters or more):") }
        try term.type("long-enough-1")
        try term.press("Enter")
        try term.waitFor { $0.hasSuffix("Password again:") }
        try term.type("long-enough-1")
        try term.press("Enter")
        try term.waitFor { $0.hasSuffix("Enter for none):") }
        try term.press("Enter")
        try term.waitFor { $0.contains("created bob#") }
        try term.type("quit")
        try term.press("Enter")
        try term.waitFor { $0.contains("EXIT=0") }
        let history = try String(contentsOfFile: scratch.dataDir + "/history", encoding: .utf8)
        #expect(history.contains("profile") && !history.contains("short") && !history.contains("long-enough"), "\(history)")
        let mode = try FileManager.default.attributesOfItem(atPath: scratch.dataDir + "/history")[.posixPermissions] as? Int
        #expect(mode == 0o600)
    }

    /// Ctrl-C cancels a password prompt (nothing is tried, nothing counted) and interrupts a
    /// running command.
    @Test func ctrlCCancelsAPasswordPromptAndInterruptsSleep() throws {
        let term = try annAskedHerPassword()
        try term.type("wrong guess")
        try term.press("C-c")
        let screen = try term.waitFor { $0.contains("cancelled") && $0.hasSuffix("seance>") }
        #expect(!screen.contains("wrong password"))
        #expect(try sh("sqlite3 '\(scratch.dataDir)/seance.sqlite' 'SELECT failedLogins FROM profile'") == "0\n")
        // The reminder shows once the sleep runs (it is printed while a command waits).
        try term.type("remind 0 asleep; sleep 30")
        try term.press("Enter")
        try term.waitFor { $0.contains("reminder: asleep") }
        try term.type("echo typed meanwhile")
        try term.press("C-c")
        try term.waitFor(timeout: 5) { $0.hasSuffix("seance>") && $0.components(separatedBy: "cancelled").count == 3 }
        #expect(!(try term.screen()).contains("^Ccancelled"), "the ^C echoed is written over")
        try term.type("echo after")
        try term.press("Enter")
        let screen2 = try term.waitFor { $0.contains("\nafter\n") }
        #expect(!screen2.contains("\ntyped meanwhile"))  // Keys typed meanwhile are dropped, not run.
    }

    /// What is typed after a password, while it is being checked, is the next command: the
    /// terminal's echo comes back without throwing it away.
    @Test func aCommandTypedAheadOfAPasswordCheckIsKept() throws {
        let term = try annAskedHerPassword()
        // One write: the command is in the terminal's queue before the answer is read.
        try term.type("correct horse\recho typed ahead\r")
        let screen = try term.waitFor { $0.contains("\ntyped ahead") && $0.hasSuffix("seance>") }
        #expect(screen.contains("logged in as ann#"))
        #expect(!screen.contains("correct horse"))
    }

    @Test(.enabled(if: inPrivateNetwork, "opens sockets: only inside scripts/in-netns"))
    func aConversationShowsIncomingBubblesLiveAboveTheLineBeingTyped() throws {
        let password = scratch.write("password", "correct horse\n")
        try annAndBen(password)
        let network = try PrivateNetwork()
        let term = try TerminalSession(arguments: Self.online + ["--no-anim"], scratch: scratch, network: network)
        try term.type("login ann --password-file \(password)")
        try term.press("Enter")
        try term.type("chat")
        try term.press("Enter")
        try term.waitFor { $0.contains("announcing ann#") }
        let ben = try ben(["login ben --password-file \(password)", "chat", "open ann --wait 30", "hello from ben"], network)
        defer { end(ben) }
        try term.waitFor { $0.contains("+ 👤 ben#") }
        try term.type("open ben")
        try term.press("Enter")
        try term.waitFor { $0.hasSuffix("chat:ben●>") || $0.contains("hello from ben") }
        try term.waitFor { $0.contains("│ hello from ben │") }
        try term.type("half-typed reply")
        try term.waitFor { $0.hasSuffix("chat:ben●> half-typed reply") }
        ben.send("second line")
        // The bubble is printed above, then the prompt and the half-typed line are redrawn.
        let screen = try term.waitFor { $0.contains("│ second line │") && $0.hasSuffix("chat:ben●> half-typed reply") }
        let lines = screen.split(separator: "\n")
        #expect(lines.firstIndex { $0.contains("second line") }! < lines.count - 1)
        try term.press("Enter")
        try term.waitFor { $0.contains("│ half-typed reply │") }
        // Lines that begin with a command's name are messages too; commands take a slash.
        try term.type("who knows?")
        try term.press("Enter")
        try term.waitFor { $0.contains("│ who knows? │") }
        try term.type("/who")
        try term.press("Enter")
        try term.waitFor { $0.contains("seen ") }
        try term.type("//etc is a path")
        try term.press("Enter")
        try term.waitFor { $0.contains("│ /etc is a path │") }
        try term.type("/quit")
        try term.press("Enter")
        try term.waitFor { $0.contains("EXIT=0") }
        // Messages are kept out of the history file; the commands are in it.
        let history = try String(contentsOfFile: scratch.dataDir + "/history", encoding: .utf8)
        #expect(history.contains("open") && !history.contains("reply") && !history.contains("knows"), "\(history)")
    }

    /// A resized window shows the open conversation again at its new width, not the bubbles the
    /// terminal cut into pieces (issue 31, item 8).
    @Test(.enabled(if: inPrivateNetwork, "opens sockets: only inside scripts/in-netns"))
    func aResizedWindowDrawsTheConversationAgain() throws {
        let (term, ben) = try annTalkingToBen()
        defer { end(ben) }
        try term.type("these words run on far wider than the forty columns of a narrow window, bubble and all")
        try term.press("Enter")
        try term.waitFor { stateRow($0).under == "#1 delivered" }
        try term.type("half typed")
        let wide = try term.screen(asShown: true)
        #expect(wide.split(separator: "\n").contains { $0.count > 40 && $0.contains("│") }, "\(wide)")
        try term.tmux(["resize-window", "-x", "40"])
        // Every row of the bubble is whole again (both its edges on the row), drawn once, and the
        // half-typed line is still there.
        let narrow = try term.waitFor(asShown: true) { screen in
            let framed = screen.split(separator: "\n").filter { $0.contains("│") }
            return !framed.isEmpty && screen.hasSuffix("ann@chat:ben●> half typed")
                && framed.allSatisfy { $0.trimmingCharacters(in: .whitespaces).hasPrefix("│") && $0.hasSuffix("│") }
        }
        #expect(narrow.components(separatedBy: "╭").count == 2, "\(narrow)")
        try term.type(" on")
        try term.press("Enter")
        try term.waitFor { stateRow($0).under == "#2 delivered" }
    }

    /// ann in chat at a terminal whose raw output is recorded (`raw()`), with ben in sight
    /// (the caller ends him).
    private func annWithBenInSight(_ arguments: [String]) throws -> (term: TerminalSession, ben: TestNetwork.Run, raw: () -> String) {
        let (term, password, network) = try annLoggedInAtATerminal(arguments)
        let rawPath = scratch.path + "/raw-output-" + UUID().uuidString.prefix(8)
        // Every byte seance writes to its terminal, escapes included, before tmux reads them.
        try term.tmux(["pipe-pane", "-o", "cat >> '\(rawPath)'"])
        try term.type("chat")
        try term.press("Enter")
        try term.waitFor { $0.contains("announcing ann#") }
        let ben = try ben(["login ben --password-file \(password)", "chat"], network)
        try term.waitFor { $0.contains("+ 👤 ben#") }
        return (term, ben, { (try? String(contentsOfFile: rawPath, encoding: .utf8)) ?? "" })
    }

    private func bellFlag(_ term: TerminalSession) throws -> String {
        try term.tmux(["display-message", "-p", "#{window_bell_flag}"]).trimmingCharacters(in: .whitespacesAndNewlines)
    }

    /// A message outside its conversation rings the bell once for a burst and counts in the
    /// prompt until it is read; a muted person's neither (issue 37, item 4).
    @Test(.enabled(if: inPrivateNetwork, "opens sockets: only inside scripts/in-netns"))
    func aMessageElsewhereRingsTheBellOnceAndCountsInThePrompt() throws {
        let (term, ben, raw) = try annWithBenInSight([])
        defer { end(ben) }
        try term.type("mute ben")
        try term.press("Enter")
        try term.waitFor { $0.contains("muted ben#") }
        ben.send("open ann --wait 30")
        ben.send("muted words")
        // Stored and counted in `chats`, but no bell, no notice, no count in the prompt.
        for attempt in 0..<100 where !(try term.screen()).contains("muted, 1 unread") {
            try term.type("chats")
            try term.press("Enter")
            try term.waitFor { $0.hasSuffix("ann@chat●>") }
            if attempt > 0 { usleep(100_000) }
        }
        var screen = try term.waitFor { $0.contains("muted, 1 unread") && $0.hasSuffix("ann@chat●>") }
        #expect(!screen.contains("✉"), "\(screen)")
        #expect(try bellFlag(term) == "0" && !raw().contains("\u{7}"))
        try term.type("unmute ben")
        try term.press("Enter")
        // Only once the unmute is in effect: a line arriving before it is kept silently.
        try term.waitFor { $0.contains("unmuted ben#") }
        ben.send("first")
        ben.send("second")
        screen = try term.waitFor { $0.contains(": second   (open ben#") && $0.hasSuffix("ann@chat●3>") }
        #expect(try bellFlag(term) == "1")
        // One bell for the two, and nothing but the bell unless a desktop notification is asked for.
        #expect(raw().filter { $0 == "\u{7}" }.count == 1, "\(raw().debugDescription)")
        #expect(!raw().contains("]777;") && !raw().contains("]9;"))
        // Read, the count is gone.
        try term.type("open ben")
        try term.press("Enter")
        try term.waitFor { $0.contains("│ second │") && $0.hasSuffix("ann@chat:ben●>") }
        try term.type("/back")
        try term.press("Enter")
        try term.waitFor { $0.hasSuffix("\nann@chat●>") }
    }

    /// `--notify desktop` sends a desktop notification through the terminal with who wrote,
    /// not what; `--notify off` neither rings nor notifies.
    @Test(.enabled(if: inPrivateNetwork, "opens sockets: only inside scripts/in-netns"))
    func desktopNotificationsGoOutOnlyWhenAskedFor() throws {
        do {
            let (term, ben, raw) = try annWithBenInSight(["--notify", "desktop"])
            defer { end(ben) }
            ben.send("open ann --wait 30")
            ben.send("secret words")
            try term.waitFor { $0.contains(": secret words   (open ben#") }
            // Shown as it is opened, stored just after: delivered once it is (part two counts it).
            ben.waitFor { $0.contains("#1 delivered") }
            let output = raw()
            #expect(output.contains("]777;notify;seance;ben#") && output.contains("]9;seance: ben#")
                        && output.contains(" wrote to you\u{7}"), "\(output.debugDescription)")
            // Inside tmux the notification is wrapped to pass through it.
            #expect(output.contains("\u{1B}Ptmux;\u{1B}\u{1B}]777;") && !output.contains("secret words\u{7}"))
            #expect(try bellFlag(term) == "1")
        }
        let (term, ben, raw) = try annWithBenInSight(["--notify", "off"])
        defer { end(ben) }
        ben.send("open ann --wait 30")
        ben.send("quiet words")
        // The first part's message is unread still: two.
        try term.waitFor { $0.contains(": quiet words   (open ben#") && $0.hasSuffix("ann@chat●2>") }
        #expect(try bellFlag(term) == "0" && !raw().contains("\u{7}"))
    }

    /// A picture arrives in the conversation as a bubble drawn in half blocks; a file sent shows
    /// a bar under its bubble that is written over in place until it says delivered (issue 36).
    @Test(.enabled(if: inPrivateNetwork, "opens sockets: only inside scripts/in-netns"))
    func aPictureIsDrawnAndAFilesBarIsUpdatedInPlace() throws {
        let (term, ben) = try annTalkingToBen(["--color", "always"])
        defer { end(ben) }
        let rawPath = scratch.path + "/raw-transfer"
        try term.tmux(["pipe-pane", "-o", "cat >> '\(rawPath)'"])
        try term.type("hi")
        try term.press("Enter")
        try term.waitFor { stateRow($0).under == "#1 delivered" }
        ben.send("send ann \(packageRoot)/docs/screenshots/zombies.png")
        // Half blocks, framed, with the name and size under the picture, then its number.
        var screen = try term.waitFor { $0.contains("PNG picture · ") && $0.contains("picture 1 received") && $0.hasSuffix("\npicture 1\nann@chat:ben●>") }
        #expect(screen.contains("▀") && screen.contains("│ zombies.png"), "\(screen)")
        let big = scratch.path + "/big.bin"
        try Data(repeating: 7, count: 3 << 20).write(to: URL(fileURLWithPath: big))
        try term.type("/send \(big)")
        try term.press("Enter")
        try term.waitFor { $0.contains("file 2 waits for them to accept") }
        let benOutput = scratch.path + "/ben-output"
        #expect(eventually(timeout: 30) { ((try? String(contentsOfFile: benOutput, encoding: .utf8)) ?? "").contains("/accept 2") })
        ben.send("accept 2")
        screen = try term.waitFor { $0.contains("file 2 delivered") }
        // One row says how file 2 is, written over as it moved.
        #expect(screen.split(separator: "\n").filter { $0.contains("file 2 ") }.count == 1, "\(screen)")
        let raw = (try? String(contentsOfFile: rawPath, encoding: .utf8)) ?? ""
        #expect(raw.contains("of 3.0 MiB"), "no bar was drawn while it moved")
        #expect(screen.hasSuffix("ann@chat:ben●>"), "\(screen)")
        // `/open 1` draws the picture as large as the window holds.
        try term.type("/open 1")
        try term.press("Enter")
        screen = try term.waitFor { $0.contains("(/save 1 to keep it as a file)") }
        #expect(screen.split(separator: "\n").filter { $0.contains("▀▀▀▀▀▀▀▀▀▀") }.count >= 10, "\(screen)")
        // The conversation opened again shows both among its messages.
        try term.type("/back")
        try term.press("Enter")
        try term.type("open ben")
        try term.press("Enter")
        screen = try term.waitFor { $0.hasSuffix("ann@chat:ben●>") && $0.contains("│ zombies.png") }
        #expect(screen.contains("📄 big.bin") && screen.contains("file 2 delivered") && screen.contains("│ hi │"), "\(screen)")
    }

    /// The state under your bubble moves forward where it is (sending, delivered, read), not as
    /// a line of its own each time, even while another line is being typed.
    @Test(.enabled(if: inPrivateNetwork, "opens sockets: only inside scripts/in-netns"))
    func theStateUnderYourBubbleIsUpdatedInPlace() throws {
        // ben is online at once, and reads what ann wrote only after a while.
        let (term, ben) = try annTalkingToBen()
        defer { end(ben) }
        try term.type("first words")
        try term.press("Enter")
        var screen = try term.waitFor { stateRow($0).under == "#1 delivered" }
        #expect(!stateRow(screen).repeated, "\(screen)")
        try term.type("half typed")
        try term.waitFor { $0.hasSuffix("chat:ben●> half typed") }
        // ben opens the conversation: his receipt arrives while ann is typing.
        ben.send("open ann --wait 30")
        screen = try term.waitFor { stateRow($0).under == "#1 read" }
        #expect(!stateRow(screen).repeated, "\(screen)")
        #expect(screen.hasSuffix("chat:ben●> half typed"), "\(screen)")
        // The cursor was left where it was: typing goes on at the end of the line.
        try term.type(" and more")
        try term.press("Enter")
        screen = try term.waitFor { $0.contains("│ half typed and more │") }
        // The typed line gave way to its bubble, as in a messaging app.
        #expect(!screen.contains("chat:ben●> half typed"), "\(screen)")
    }

    /// What arrives while the conversation is open is laid out as a page drawn again would be
    /// (seed 003): `Today HH:MM` above the first message, a blank line where the sender changes.
    @Test(.enabled(if: inPrivateNetwork, "opens sockets: only inside scripts/in-netns"))
    func aLiveConversationHasTheHeaderAndGapsOfAPage() throws {
        let (term, ben) = try annTalkingToBen()
        defer { end(ben) }
        try term.type("first words")
        try term.press("Enter")
        var screen = try term.waitFor { stateRow($0).under == "#1 delivered" }
        var rows = screen.split(separator: "\n", omittingEmptySubsequences: false).map { $0.trimmingCharacters(in: .whitespaces) }
        let top = try #require(rows.firstIndex { $0.hasPrefix("╭") })
        #expect(rows[top - 1].hasPrefix("Today "), "\(screen)")
        ben.send("open ann --wait 30")
        ben.send("a reply")
        screen = try term.waitFor { $0.contains("│ a reply │") }
        // A spectre may drift into sight meanwhile (unseeded, now and then): its notice is no
        // part of the conversation's layout.
        rows = screen.split(separator: "\n", omittingEmptySubsequences: false).map { $0.trimmingCharacters(in: .whitespaces) }
            .filter { !$0.hasPrefix("👻 ") }
        let theirs = try #require(rows.firstIndex { $0.contains("│ a reply │") })
        // ann's state row, a gap, ben's bubble (its top, then the line).
        #expect(rows[theirs - 1] == "╭─────────╮" && rows[theirs - 2] == "" && rows[theirs - 3].hasPrefix("#1 "), "\(screen)")
    }

    /// `/compact`: a line a message, IRC-like, with the same states written over in place and
    /// the same sections; the typed line gives way to it.
    @Test(.enabled(if: inPrivateNetwork, "opens sockets: only inside scripts/in-netns"))
    func aCompactConversationIsALineAMessage() throws {
        let (term, ben) = try annTalkingToBen()
        defer { end(ben) }
        try term.type("/compact")
        try term.press("Enter")
        try term.waitFor { $0.contains("compact: a line a message") }
        try term.type("hello")
        try term.press("Enter")
        func mine(_ screen: String) -> String? { screen.split(separator: "\n").last { $0.contains("ann │ hello") }.map(String.init) }
        var screen = try term.waitFor { mine($0)?.hasSuffix("#1 delivered") == true }
        var rows = screen.split(separator: "\n", omittingEmptySubsequences: false)
        let line = try #require(rows.firstIndex { $0.contains("ann │ hello") })
        #expect(rows[line - 1].trimmingCharacters(in: .whitespaces).hasPrefix("Today "), "\(screen)")
        #expect(!screen.contains("╭") && !screen.contains("chat:ben●> hello"), "\(screen)")
        ben.send("open ann --wait 30")
        ben.send("hi ann")
        // Read: written over the end of the same line, the text before it intact.
        screen = try term.waitFor { mine($0)?.hasSuffix("#1 read") == true && $0.contains("ben │ hi ann") }
        rows = screen.split(separator: "\n", omittingEmptySubsequences: false)
        #expect(rows.filter { $0.contains("#1 ") }.count == 1, "\(screen)")
        let theirs = try #require(rows.firstIndex { $0.contains("ben │ hi ann") })
        #expect(rows[theirs].hasSuffix("#2") && rows[theirs - 1].contains("ann │ hello"), "\(screen)")
        // And back: the page drawn again as bubbles.
        try term.type("/compact")
        try term.press("Enter")
        try term.waitFor { $0.contains("│ hi ann │") && $0.contains("│ hello │") }
    }

    /// `/search` in a conversation finds what was said there first, the words highlighted,
    /// and `/goto N` opens the conversation at that line.
    @Test(.enabled(if: inPrivateNetwork, "opens sockets: only inside scripts/in-netns"))
    func searchFindsWhatWasSaidAndGotoOpensItThere() throws {
        let (term, ben) = try annTalkingToBen()
        defer { end(ben) }
        for line in ["we saw a Quokka by the lake", "then lunch", "café at noon"] {
            try term.type(line)
            try term.press("Enter")
        }
        try term.waitFor { stateRow($0).under?.hasPrefix("#3 ") == true }
        // Tab-separated for tools (tmux shows the tabs as spaces).
        try term.type("/search cafe --format tsv")
        try term.press("Enter")
        try term.waitFor { $0.range(of: #"\n20\d\d-\d\d-\d\dT\d\d:\d\d:\d\d\S* +ben +ann +#3 +café at noon\n"#, options: .regularExpression) != nil }
        try term.type("/search quok")
        try term.press("Enter")
        var screen = try term.waitFor { $0.contains("1 match for quok (1 in this conversation)") }
        #expect(screen.contains("  ben  ann: we saw a *Quokka* by the lake\n"), "\(screen)")
        try term.type("/goto 1")
        try term.press("Enter")
        screen = try term.waitFor { $0.contains("ben#") && $0.contains(", around #1") }
        #expect(screen.contains("│ we saw a Quokka by the lake │"), "\(screen)")
        try term.type("/goto 7")
        try term.press("Enter")
        try term.waitFor { $0.contains("there is no result 7: the last search found 1") }
    }

    /// Two keys with one name: `open` asks which, at a terminal, and opens the one chosen.
    @Test(.enabled(if: inPrivateNetwork, "opens sockets: only inside scripts/in-netns"))
    func openAsksWhichWhenANameMeansSeveralKeys() throws {
        let (term, password, network) = try annLoggedInAtATerminal()
        let bens = try (1...2).map { index in
            let data = scratch.path + "/ben\(index)"
            _ = try runSeance(["--data-dir", data, "-c", "profile new ben --password-file \(password)"], scratch: scratch)
            return try ben(["login ben --password-file \(password)", "chat"], network, data: data, output: "ben\(index)-output")
        }
        defer { bens.forEach(end) }
        try term.type("chat")
        try term.press("Enter")
        try term.waitFor { $0.components(separatedBy: "ben#").count >= 3 }
        try term.type("open ben")
        try term.press("Enter")
        let asked = try term.waitFor { $0.contains("several peers are called ben:") && $0.hasSuffix("which one? (1–2, or name#fingerprint)") }
        let second = try #require(asked.split(separator: "\n").first { $0.hasPrefix("  2  ben#") })
        try term.type("2")
        try term.press("Enter")
        let fingerprint = String(second.dropFirst("  2  ben#".count).prefix(4))
        try term.waitFor { $0.hasSuffix("chat:ben●>") && $0.contains("ben#\(fingerprint) — no messages yet") }
    }

    /// Joining a room heard while a line is being typed changes the prompt at once (the line
    /// kept), the line said gives way to its bubble, and the state under it changes where it is.
    @Test(.enabled(if: inPrivateNetwork, "opens sockets: only inside scripts/in-netns"))
    func aRoomJoinedWhileTypingShowsInThePrompt() throws {
        let (term, password, network) = try annLoggedInAtATerminal()
        try term.type("room listen")
        try term.press("Enter")
        try term.waitFor { $0.hasSuffix("room●>") }
        try term.type("hello all")
        let ben = try ben(["login ben --password-file \(password)", "room host 3 4"], network)
        defer { end(ben) }
        try term.waitFor { $0.contains("you joined room 3.4") && $0.hasSuffix("room:3.4●> hello all") }
        try term.press("Enter")
        // (Notices of proximity may come after it.)
        let screen = try term.waitFor { $0.contains("│ hello all │") && stateRow($0).under == "#1 delivered" }
        #expect(!stateRow(screen).repeated && !screen.contains("delivered to everyone"), "\(screen)")
        // The typed line gave way to its bubble.
        #expect(!screen.contains("room:3.4●> hello all"), "\(screen)")
    }

    /// A page of the visions list fits the window: its heading is still on the screen.
    @Test func theVisionsListIsAsLongAsTheWindowHolds() throws {
        let image = packageRoot + "/assets/portraits/max.png"
        _ = try runSeance(["--data-dir", scratch.dataDir, "-c", (1...6).map { _ in "visions add Max --image \(image)" }.joined(separator: "; ")],
                          scratch: scratch)
        let term = try TerminalSession(scratch: scratch, width: 80, height: 15)
        try term.type("visions")
        try term.press("Enter")
        let screen = try term.waitFor { $0.hasSuffix("visions>") }
        let rows = screen.split(separator: "\n", omittingEmptySubsequences: false)
        #expect(rows.contains { $0.hasPrefix("Visions — 6 in all, page 1 of ") }, "\(screen)")
        #expect(rows.contains { $0.hasSuffix("'list 2' shows more") }, "\(screen)")
    }

    /// A forged peer's message full of escapes, at a real terminal: the screen is not cleared,
    /// the window title not changed; the sequences show as text.
    @Test(.enabled(if: inPrivateNetwork, "opens sockets: only inside scripts/in-netns"))
    func escapesFromAPeerShowAsTextInTheTerminal() throws {
        let password = scratch.write("password", "correct horse\n")
        _ = try runSeance(["--data-dir", scratch.dataDir, "-c", "profile new ann --password-file \(password)"], scratch: scratch)
        let network = try PrivateNetwork()
        let listener = try network.inside { GroupListener(port: seancePort) }
        let term = try TerminalSession(arguments: Self.online, scratch: scratch, network: network)
        let titleBefore = try term.tmux(["display-message", "-p", "#{pane_title}"])
        try term.type("login ann --password-file \(password)")
        try term.press("Enter")
        try term.type("chat")
        try term.press("Enter")
        try term.waitFor { $0.contains("announcing ann#") }
        let (annKey, ann) = try #require(listener.announcement(of: "ann", timeout: 5))
        let eve = try network.inside { FakePeer(port: seancePort) }
        eve.multicast(try eve.packet(eve.announcement(name: "eve")))
        try term.waitFor { $0.contains("eve#") }
        for bytes in try eve.message("hi \u{1B}]2;pwned\u{7}\u{1B}[2J\u{1B}[31mred", to: ann, key: annKey, sequence: 1) {
            eve.send(bytes, port: ann.unicastPort)
        }
        let screen = try term.waitFor { $0.contains("hi ^[]2;pwned^G^[[2J^[[31mred") }
        #expect(screen.contains("announcing ann#"), "the screen was cleared:\n\(screen)")
        #expect(try term.tmux(["display-message", "-p", "#{pane_title}"]) == titleBefore)
        #expect(!(try term.tmux(["display-message", "-p", "#{pane_title}"])).contains("pwned"))
    }

    /// `buy` asks the password at the terminal without echoing it; Ctrl-C cancels and nothing is
    /// bought; the right password buys.
    @Test func theStoreAsksThePasswordWithoutEchoAndCtrlCBuysNothing() throws {
        let password = scratch.write("password", "correct horse\n")
        _ = try runSeance(["--data-dir", scratch.dataDir, "-c", "profile new ann --password-file \(password)"], scratch: scratch)
        let term = try TerminalSession(scratch: scratch)
        try term.type("login ann --password-file \(password)")
        try term.press("Enter")
        try term.type("store")
        try term.press("Enter")
        try term.waitFor { $0.hasSuffix("store>") }
        try term.type("buy medallion 2")
        try term.press("Enter")
        try term.waitFor { $0.contains("2 Saint's medallions for $5.98") && $0.hasSuffix("Password for ann, to confirm:") }
        try term.type("correct hor")
        try term.press("C-c")
        let cancelled = try term.waitFor { $0.contains("cancelled") && $0.hasSuffix("store>") }
        #expect(!cancelled.contains("correct hor"))
        try term.type("buy candle")
        try term.press("Enter")
        try term.waitFor { $0.hasSuffix("Password for ann, to confirm:") }
        try term.type("correct horse")
        try term.press("Enter")
        let bought = try term.waitFor { $0.contains("bought 1 Holy candle") }
        #expect(!bought.contains("correct horse"))
        try term.type("inventory")
        try term.press("Enter")
        try term.waitFor { $0.contains("Holy candles        1") && $0.contains("Saint's medallions  0") }
    }
}
