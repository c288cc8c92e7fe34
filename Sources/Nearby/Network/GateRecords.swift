import Foundation

/// The sources the flood limits dropped most from, for `nearby stats`: at most `capacity`
/// (past it, a new source replaces the one with the fewest drops).
struct Flooders: Sendable {
    private var counts: [String: Int] = [:]
    private var told = false
    static let capacity = 16

    /// Counts a drop from `source`; the source's name the first time anything is dropped.
    mutating func count(_ source: String) -> String? {
        if counts[source] == nil, counts.count >= Self.capacity, let fewest = counts.min(by: { $0.value < $1.value })?.key {
            counts[fewest] = nil
        }
        counts[source, default: 0] += 1
        guard !told else { return nil }
        told = true
        return source
    }

    /// The three sources dropped from most, most first.
    var worst: [(source: String, dropped: Int)] {
        counts.sorted { ($0.value, $1.key) > ($1.value, $0.key) }.prefix(3).map { ($0.key, $0.value) }
    }
}

/// The sequence and timestamp of each broadcast made while online: to know our own packets when
/// they come back. One per refresh (every 5 s), answer, and room beacon (every second while
/// hosting), some 20 bytes each; past `capacity` (2.6 MB) the older half goes, and a replay of
/// one of those could then be taken for another seance's — after a day and a half hosting a
/// room, or a week online otherwise, and only with someone replaying it.
struct OwnBroadcasts: Sendable {
    private var sent = Set<UInt64>()
    private var order: [UInt64] = []
    let capacity: Int

    init(capacity: Int = 131_072) { self.capacity = capacity }

    /// Sequence numbers are 32 bits and the low 32 of a millisecond timestamp recur every 49
    /// days: together they name one packet of ours.
    private static func key(_ sequence: UInt32, _ timestamp: UInt64) -> UInt64 { UInt64(sequence) << 32 | (timestamp & 0xFFFF_FFFF) }

    mutating func insert(sequence: UInt32, timestamp: UInt64) {
        let key = Self.key(sequence, timestamp)
        guard sent.insert(key).inserted else { return }
        order.append(key)
        if order.count > capacity {
            let old = order.prefix(capacity / 2)
            sent.subtract(old)
            order.removeFirst(old.count)
        }
    }

    func contains(sequence: UInt32, timestamp: UInt64) -> Bool { sent.contains(Self.key(sequence, timestamp)) }

    var count: Int { sent.count }
}
