import Foundation
import Runtime
import Terminal

/// The commands of every mode: `help`, `back`, `quit`, `remind`, `sleep`, `echo`.
enum Builtins {
    static func register(in shell: Shell) {
        shell.register(Command("help", aliases: ["?"], scope: .global,
                         arguments: [.positional("command", .command, optional: true, help: "a command or mode name")],
                         summary: "list the commands of this mode, or explain one") { invocation in
            let shell = invocation.shell
            if let name = invocation.arguments["command"] {
                shell.console.print(try shell.registry.helpText(for: name, inMode: invocation.mode, styler: shell.styler,
                                                                      columns: shell.console.columns))
            } else {
                // At a terminal it fits the window; a script gets the whole of it.
                shell.console.print(shell.registry.helpText(inMode: invocation.mode, styler: shell.styler, columns: shell.console.columns,
                                                            rows: shell.isInteractive ? shell.console.rows : nil))
            }
        })
        shell.register(Command("back", scope: .global, summary: "leave the current mode") { invocation in
            invocation.shell.leaveMode()
        })
        shell.register(Command("quit", aliases: ["exit"], scope: .global, summary: "leave seance") { invocation in
            invocation.shell.quitRequested = true
        })
        shell.register(Command("remind", scope: .global,
                         arguments: [.positional("seconds", help: "how long to wait (decimals allowed)"),
                                     .positional("message", rest: true, help: "what to print")],
                         summary: "print a message above the prompt after some seconds",
                         details: "The reminder is printed while you type, without disturbing the line being edited.\n"
                            + "Reminders still pending when seance exits are dropped.") { invocation in
            let text = invocation.arguments["seconds"]!
            guard let seconds = Double(text), seconds >= 0, seconds <= 86_400 else {
                throw ShellError.badArgument("seconds must be a number from 0 to 86400, not '\(text)'")
            }
            let line = invocation.shell.styler.bold("reminder:") + " " + invocation.arguments["message"]!
            let inbox = invocation.console.inbox
            invocation.shell.session.scheduler.after(seconds, on: Shell.reminders) { inbox.post(line) }
        })
        shell.register(Command("sleep", scope: .global,
                         arguments: [.positional("seconds", help: "how long (decimals allowed, at most 3600)")],
                         summary: "wait, printing whatever arrives meanwhile (for scripts)") { invocation in
            let text = invocation.arguments["seconds"]!
            guard let seconds = Double(text), seconds >= 0, seconds <= 3_600 else {
                throw ShellError.badArgument("seconds must be a number from 0 to 3600, not '\(text)'")
            }
            try invocation.shell.pause(seconds)
        })
        shell.register(Command("echo", scope: .global,
                         arguments: [.positional("text", optional: true, rest: true)],
                         summary: "print the arguments, separated by spaces") { invocation in
            invocation.console.print(invocation.arguments["text"] ?? "")
        })
    }
}
