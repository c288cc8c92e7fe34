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
}
