import Glibc
import Terminal

/// `--password-file FILE`: the password is the file's first line (a trailing CR dropped). FILE
/// may be `-` (standard input, when it does not carry the commands), or a stream read once: a
/// pipe (`/dev/stdin` under `|`), `<(pass show x)`, a FIFO.
package enum PasswordFile {
    package enum Failure: Error, Equatable, CustomStringConvertible {
        case standardInputCarriesCommands

        package var description: String {
            "standard input carries the commands here: give the password file another way, or the commands with -c or a script"
        }
    }

    /// The password in `path`; `standardInputIsCommands` when the shell reads its commands
    /// from standard input (then `-` cannot be the password too).
    package static func read(_ path: String, standardInputIsCommands: Bool) throws -> String {
        let bytes: [UInt8]
        if path == "-" {
            guard !standardInputIsCommands else { throw Failure.standardInputCarriesCommands }
            bytes = try FileContents.readStream("standard input", fd: 0)
        } else if FileContents.isStream(path) {
            bytes = try FileContents.readStream(path)
        } else {
            bytes = try FileContents.read(path, limit: 1 << 20)
        }
        let text = String(decoding: bytes, as: UTF8.self)
        let line = text.split(separator: "\n", maxSplits: 1, omittingEmptySubsequences: false).first.map(String.init) ?? ""
        return line.hasSuffix("\r") ? String(line.dropLast()) : line
    }
}
