import CQREncode
import Glibc

/// A QR code (libqrencode's), drawn at the terminal: two modules a row in half blocks, with the
/// quiet zone a reader needs around it.
package struct QRCode: Equatable, Sendable {
    /// Modules a side.
    package let size: Int
    /// Row by row from the top: true where a module is dark.
    package let modules: [Bool]

    /// Modules of light left round the code (the standard asks for four; two read well on a
    /// screen and keep it small).
    static let quietZone = 2

    /// `text` encoded at error correction level M; nil when it does not fit in a QR code.
    package init?(_ text: String) {
        guard let code = QRcode_encodeString(text, 0, QR_ECLEVEL_M, QR_MODE_8, 1) else { return nil }
        defer { QRcode_free(code) }
        let size = Int(code.pointee.width)
        // Bit 0 of each byte is the module's colour.
        modules = (0..<size * size).map { code.pointee.data[$0] & 1 == 1 }
        self.size = size
    }

    package init(size: Int, modules: [Bool]) {
        precondition(modules.count == size * size)
        self.size = size
        self.modules = modules
    }

    package func isDark(_ x: Int, _ y: Int) -> Bool {
        (0..<size).contains(x) && (0..<size).contains(y) && modules[y * size + x]
    }

    /// The code as lines: light modules drawn (a terminal's background is dark more often than
    /// not; with colour, dark on light whatever the background), two rows of modules a line; in
    /// ASCII, a module is two `#` or spaces, a row a line.
    package func lines(_ capabilities: Capabilities) -> [String] {
        let range = -Self.quietZone..<(size + Self.quietZone)
        if capabilities.ascii {
            return range.map { y in range.map { x in isDark(x, y) ? "  " : "##" }.joined() }
        }
        let rows = stride(from: range.lowerBound, to: range.upperBound, by: 2).map { y in
            range.map { x -> String in
                switch (!isDark(x, y), y + 1 < range.upperBound && !isDark(x, y + 1)) {
                case (true, true): return "█"
                case (true, false): return "▀"
                case (false, true): return "▄"
                case (false, false): return " "
                }
            }.joined()
        }
        guard capabilities.color != .none else { return rows }
        // White on black: the drawn light modules stay light on a light background too.
        return rows.map { "\u{1B}[97;40m" + $0 + "\u{1B}[0m" }
    }
}
