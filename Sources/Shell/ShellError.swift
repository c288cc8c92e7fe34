/// What can go wrong while reading and dispatching a command.
package enum ShellError: Error, Equatable, CustomStringConvertible {
    case syntax(String)
    case unknownCommand(String, suggestion: String?)
    /// A command of another mode (or of several) typed where it does not apply.
    case wrongMode(command: String, modes: [String])
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
            let hint = suggestion.map { " (did you mean '\($0)'?)" } ?? " (type 'help' for the list)"
            return "unknown command '\(name)'\(hint)"
        case .wrongMode(let command, let modes) where modes.count == 1:
            return "'\(command)' is a \(modes[0]) command: type '\(modes[0]) \(command)', or enter '\(modes[0])' first"
        case .wrongMode(let command, let modes):
            return "'\(command)' is a command of " + modes.dropLast().joined(separator: ", ") + " and \(modes.last!): type "
                + modes.map { "'\($0) \(command)'" }.joined(separator: " or ") + ", or enter that mode first"
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
