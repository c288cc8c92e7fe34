import Glibc

/// One Unicode scalar read a byte at a time from a terminal.
enum UTF8Scalar {
    enum Decoded: Equatable { case incomplete, scalar(UInt32), invalid }


    /// Decodes one UTF-8 scalar from the bytes read so far.
    static func decode(_ bytes: [UInt8]) -> Decoded {
        guard let lead = bytes.first else { return .incomplete }
        let length: Int
        switch lead {
        case 0x00...0x7F: return .scalar(UInt32(lead))
        case 0xC2...0xDF: length = 2
        case 0xE0...0xEF: length = 3
        case 0xF0...0xF4: length = 4
        default: return .invalid
        }
        for byte in bytes.dropFirst() where byte & 0xC0 != 0x80 { return .invalid }
        guard bytes.count == length else { return bytes.count < length ? .incomplete : .invalid }
        var decoder = UTF8()
        var iterator = bytes.makeIterator()
        if case .scalarValue(let scalar) = decoder.decode(&iterator) { return .scalar(scalar.value) }
        return .invalid
    }
}

/// Where the line reader keeps history.
enum HistoryFile {
    /// `path` when history can be kept there: a regular file, or none yet (then created
    /// private to the user, since it holds what was typed). Anything else (a FIFO would hang
    /// both loading and saving) means no history.
    static func usable(_ path: String) -> String? {
        var info = stat()
        if stat(path, &info) != 0 {
            let fd = open(path, O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC, 0o600)
            if fd >= 0 { close(fd) }
            return path
        }
        return (info.st_mode & S_IFMT) == S_IFREG ? path : nil
    }

    /// libedit's own format starts with this line, and escapes every space (`open\040ben`).
    static let libeditHeader = "_HiStOrY_V2_"

    /// The entries of a history file, oldest first: a command a line, as typed; one written by
    /// an older seance (libedit's format) is read the same, its escapes undone.
    static func entries(_ text: String) -> [String] {
        var lines = text.split(separator: "\n", omittingEmptySubsequences: true).map(String.init)
        guard lines.first == libeditHeader else { return lines }
        lines.removeFirst()
        return lines.map(unescaped)
    }

    /// strvis(3)'s escapes undone: `\ooo` octal bytes, and `\\`.
    static func unescaped(_ line: String) -> String {
        var bytes: [UInt8] = []
        let source = Array(line.utf8)
        var index = 0
        while index < source.count {
            if source[index] == UInt8(ascii: "\\"), index + 3 < source.count,
               source[(index + 1)...(index + 3)].allSatisfy({ (UInt8(ascii: "0")...UInt8(ascii: "7")).contains($0) }) {
                let value = source[(index + 1)...(index + 3)].reduce(0) { $0 * 8 + Int($1 - UInt8(ascii: "0")) }
                bytes.append(UInt8(truncatingIfNeeded: value))
                index += 4
            } else if source[index] == UInt8(ascii: "\\"), index + 1 < source.count, source[index + 1] == UInt8(ascii: "\\") {
                bytes.append(UInt8(ascii: "\\"))
                index += 2
            } else {
                bytes.append(source[index])
                index += 1
            }
        }
        return String(decoding: bytes, as: UTF8.self)
    }

    /// Writes `entries` as plain lines (a temporary file renamed over the old: a kill leaves
    /// one or the other), private to the user.
    static func save(_ entries: [String], to path: String) {
        let temporary = path + ".new"
        let fd = open(temporary, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0o600)
        guard fd >= 0 else { return }
        let bytes = Array(entries.map { $0 + "\n" }.joined().utf8)
        let written = bytes.withUnsafeBytes { write(fd, $0.baseAddress, $0.count) }
        close(fd)
        if written == bytes.count { rename(temporary, path) } else { unlink(temporary) }
    }
}
