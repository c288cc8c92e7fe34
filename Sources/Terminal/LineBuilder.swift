/// A line of text made from its pieces as bytes, then made a `String` once: appending to a
/// `String` piece by piece cost several hundred instructions a piece, and views draw some rows
/// for every message sent and shown (a bubble's frame, its state row).
package struct LineBuilder {
    private var bytes: [UInt8] = []
    private static let spaces = [UInt8](repeating: UInt8(ascii: " "), count: 256)

    package init(capacity: Int) { bytes.reserveCapacity(capacity) }

    package mutating func append(_ text: String) {
        var text = text
        text.withUTF8 { bytes.append(contentsOf: $0) }
    }

    package mutating func append(bytes piece: UnsafeBufferPointer<UInt8>) { bytes.append(contentsOf: piece) }

    /// `count` spaces (none when it is not positive).
    package mutating func appendSpaces(_ count: Int) {
        var left = count
        while left > 0 {
            let taken = min(left, Self.spaces.count)
            bytes.append(contentsOf: Self.spaces[..<taken])
            left -= taken
        }
    }

    /// `piece` `count` times over (none when it is not positive): a frame's edge.
    package mutating func append(_ piece: String, times count: Int) {
        guard count > 0 else { return }
        var piece = piece
        piece.withUTF8 { unit in
            // Byte by byte: appending the piece's buffer cost a hundred instructions a time.
            for _ in 0..<count { for byte in unit { bytes.append(byte) } }
        }
    }

    /// `pieces` one after another: a line made of several strings, for what is made once a
    /// message (a notice), where interpolating them cost twice as much.
    package static func joined(_ pieces: String...) -> String {
        var line = LineBuilder(capacity: 128)
        for piece in pieces { line.append(piece) }
        return line.line
    }

    package var line: String { String(decoding: bytes, as: UTF8.self) }
}
