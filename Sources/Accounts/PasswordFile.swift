import Terminal

/// `--password-file FILE`: the password is the file's first line (a trailing CR dropped).
package enum PasswordFile {
    package static func read(_ path: String) throws -> String {
        let text = try FileContents.text(path)
        let line = text.split(separator: "\n", maxSplits: 1, omittingEmptySubsequences: false).first.map(String.init) ?? ""
        return line.hasSuffix("\r") ? String(line.dropLast()) : line
    }
}
