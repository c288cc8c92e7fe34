#if canImport(Glibc)
import Glibc
#elseif canImport(Darwin)
import Darwin
#endif

package enum TerminalSize {
    /// Columns of the terminal on `fd`, or `COLUMNS`, or 80.
    package static func columns(fd: Int32 = 1, environment: [String: String] = [:]) -> Int {
        var size = winsize()
        if ioctl(fd, UInt(TIOCGWINSZ), &size) == 0, size.ws_col > 0 { return Int(size.ws_col) }
        if let text = environment["COLUMNS"], let value = Int(text), value > 0 { return value }
        return 80
    }

    /// Rows of the terminal on `fd`, or `LINES`, or 24.
    package static func rows(fd: Int32 = 1, environment: [String: String] = [:]) -> Int {
        var size = winsize()
        if ioctl(fd, UInt(TIOCGWINSZ), &size) == 0, size.ws_row > 0 { return Int(size.ws_row) }
        if let text = environment["LINES"], let value = Int(text), value > 0 { return value }
        return 24
    }

    package static func isTTY(_ fd: Int32) -> Bool { isatty(fd) == 1 }
}
