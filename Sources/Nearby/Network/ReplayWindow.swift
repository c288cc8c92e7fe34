/// Which counters of a session have been accepted, as WireGuard keeps them (RFC 6479's sliding
/// window): the highest so far and the 2,048 below it. UDP loses and reorders, so a frame may
/// come late, but never twice; one older than the window is refused (it cannot be told apart
/// from a replay).
package struct ReplayWindow: Sendable {
    package static let size: UInt64 = 2_048
    private var bits = [UInt64](repeating: 0, count: Int(size / 64))
    private var highest: UInt64 = 0
    private var empty = true

    package init() {}

    /// Whether `counter` may be accepted: not seen, and not older than the window. Checked
    /// before decrypting; `accept` only once it opened.
    package func allows(_ counter: UInt64) -> Bool {
        if empty || counter > highest { return true }
        guard highest - counter < Self.size else { return false }
        return bits[Self.word(counter)] & Self.bit(counter) == 0
    }

    package mutating func accept(_ counter: UInt64) {
        if empty || counter > highest {
            // The slots between the old highest and this one are counters not seen yet.
            let gap = empty ? Self.size : counter - highest
            if gap >= Self.size {
                bits = [UInt64](repeating: 0, count: bits.count)
            } else {
                var slot = highest &+ 1
                while slot != counter {
                    bits[Self.word(slot)] &= ~Self.bit(slot)
                    slot &+= 1
                }
            }
            bits[Self.word(counter)] &= ~Self.bit(counter)
            highest = counter
            empty = false
        }
        bits[Self.word(counter)] |= Self.bit(counter)
    }

    private static func word(_ counter: UInt64) -> Int { Int((counter % size) / 64) }
    private static func bit(_ counter: UInt64) -> UInt64 { 1 << (counter % 64) }
}
