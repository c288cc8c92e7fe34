/// A key that can trigger a command at once, without Enter.
package enum SpecialKey: CaseIterable, Hashable, Sendable {
    case up, down, left, right
}

/// A mode of the shell: its prompt and how it reacts to entering, leaving and bare Enter.
package struct Mode {
    package var name: String
    package var summary: String
    package var isAvailable: Bool
    /// The prompt label, such as `zombies` or `visions/rescuers`.
    package var prompt: () -> String
    package var enter: (Shell) throws -> Void
    package var leave: (Shell) -> Void
    /// What an empty line does (for example, dismiss a message); nothing when nil.
    package var emptyLine: ((Shell) throws -> Void)?
    /// Keys that run a command immediately while the mode is active.
    package var keyCommands: [SpecialKey: String]
    /// Free text (an open conversation): while it is active every line is a message; commands
    /// start with `/`, and `//` sends a line that starts with `/`.
    package var messages: MessageInput?

    package init(name: String, summary: String, isAvailable: Bool = true, prompt: (() -> String)? = nil,
                enter: @escaping (Shell) throws -> Void = { _ in }, leave: @escaping (Shell) -> Void = { _ in },
                emptyLine: ((Shell) throws -> Void)? = nil, keyCommands: [SpecialKey: String] = [:],
                messages: MessageInput? = nil) {
        self.name = name
        self.summary = summary
        self.isAvailable = isAvailable
        self.prompt = prompt ?? { name }
        self.enter = enter
        self.leave = leave
        self.emptyLine = emptyLine
        self.keyCommands = keyCommands
        self.messages = messages
    }

    /// A mode that is announced but not built yet: entering it says so, and nothing else happens.
    package static func unavailable(_ name: String, summary: String) -> Mode {
        Mode(name: name, summary: summary, isAvailable: false)
    }
}

/// How a mode takes lines that are messages rather than commands.
package struct MessageInput {
    /// True while lines are messages (a conversation is open).
    package var isActive: () -> Bool
    /// Sends one message (the line as typed, or without the first `/` of a `//` line).
    package var send: (Shell, String) throws -> Void

    package init(isActive: @escaping () -> Bool, send: @escaping (Shell, String) throws -> Void) {
        self.isActive = isActive
        self.send = send
    }
}
