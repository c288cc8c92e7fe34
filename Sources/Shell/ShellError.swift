/// What can go wrong while reading and dispatching a command.
package enum ShellError: Error, Equatable, CustomStringConvertible {
    case syntax(String)
    case unknownCommand(String, suggestion: String?)
    /// A command of several modes typed where none of them is: which one is meant (the advice
    /// spelled where it is printed, as all advice is: with a `/` where lines are messages).
    case ambiguous(command: String, modes: [String])
    case badArgument(String)
    case modeUnavailable(String)
    /// An interactive form was asked for a field in batch mode.
    case missingField(String)
    case interrupted

    package var description: String {
        switch self {
        case .syntax(let message):
            return message
        case .unknownCommand(let name, let suggestion):
            let hint = suggestion.map { " (did you mean '\(Advice.command($0))'?)" } ?? " (type '\(Advice.command("help"))' for the list)"
            return "unknown command '\(name)'\(hint)"
        case .ambiguous(let command, let modes):
            return "'\(command)' is a command of " + Wording.list(modes, "and") + ": type "
                + modes.map { "'\(Advice.command($0 + " " + command))'" }.joined(separator: " or ")
        case .badArgument(let message):
            return message
        case .modeUnavailable(let mode):
            return "\(mode) mode is not available yet"
        case .missingField(let field):
            return "missing \(field) (batch input cannot be asked for; give it as an argument)"
        case .interrupted:
            return "interrupted"
        }
    }
}

/// Errors whose message is meant for the user as it stands.
package struct UserError: Error, CustomStringConvertible, Equatable {
    package let description: String
    package init(_ message: String) { description = message }
}
