/// A line of text made from its pieces as bytes, then made a `String` once: appending to a
/// `String` piece by piece cost several hundred instructions a piece, and views draw some rows
/// for every message sent and shown (a bubble's frame, its state row).
package struct LineBuilder {
    private var bytes: [UInt8] = []
    private static let spaces = [UInt8](repeating: UInt8(ascii: " "), count: 256)

    package init(capacity: Int) { bytes.reserveCapacity(capacity) }

    package mutating func append(_ text: String) { bytes.append(contentsOf: text.utf8) }

    /// `count` spaces (none when it is not positive).
    package mutating func appendSpaces(_ count: Int) {
        var left = count
        while left > 0 {
            let taken = min(left, Self.spaces.count)
            bytes.append(contentsOf: Self.spaces[..<taken])
            left -= taken
        }
    }

    package var line: String { String(decoding: bytes, as: UTF8.self) }
}
