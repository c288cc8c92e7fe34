/// A key that can trigger a command at once, without Enter.
public enum SpecialKey: CaseIterable, Hashable, Sendable {
    case up, down, left, right
}

/// A mode of the shell: its prompt and how it reacts to entering, leaving and bare Enter.
public struct Mode {
    public var name: String
    public var summary: String
    public var isAvailable: Bool
    /// The prompt label, such as `zombies` or `visions/rescuers`.
    public var prompt: () -> String
    public var enter: (Shell) throws -> Void
    public var leave: (Shell) -> Void
    /// What an empty line does (for example, dismiss a message); nothing when nil.
    public var emptyLine: ((Shell) throws -> Void)?
    /// Keys that run a command immediately while the mode is active.
    public var keyCommands: [SpecialKey: String]
    /// Takes a line that is not a command of this mode (a chat message); returns false to let
    /// the shell treat it as usual. A line starting with a backslash always comes here, without it.
    public var rawLine: ((Shell, String) throws -> Bool)?

    public init(name: String, summary: String, isAvailable: Bool = true, prompt: (() -> String)? = nil,
                enter: @escaping (Shell) throws -> Void = { _ in }, leave: @escaping (Shell) -> Void = { _ in },
                emptyLine: ((Shell) throws -> Void)? = nil, keyCommands: [SpecialKey: String] = [:],
                rawLine: ((Shell, String) throws -> Bool)? = nil) {
        self.name = name
        self.summary = summary
        self.isAvailable = isAvailable
        self.prompt = prompt ?? { name }
        self.enter = enter
        self.leave = leave
        self.emptyLine = emptyLine
        self.keyCommands = keyCommands
        self.rawLine = rawLine
    }

    /// A mode that is announced but not built yet: entering it says so, and nothing else happens.
    public static func unavailable(_ name: String, summary: String) -> Mode {
        Mode(name: name, summary: summary, isAvailable: false)
    }
}
