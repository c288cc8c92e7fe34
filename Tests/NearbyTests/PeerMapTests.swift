import Foundation
@testable import Nearby
import Testing

/// Peers' keys as `PeerMap` keys them: a 32-byte key by its words, any other as it is; each
/// comes back out as the bytes it went in as.
@Suite struct PeerMapTests {
    @Test func keysOfEveryLengthAreTheirOwn() {
        let long = Data((0..<32).map { UInt8($0) }), other = Data((0..<32).map { UInt8(255 - $0) })
        let short = Data([1, 2, 3]), empty = Data()
        var map = PeerMap<Int>()
        map[long] = 1
        map[other] = 2
        map[short] = 3
        map[empty, default: 0] += 4
        #expect(map[long] == 1 && map[other] == 2 && map[short] == 3 && map[empty] == 4)
        #expect(map[Data(long.dropLast()) + Data([31])] == 1, "the same bytes from another buffer")
        #expect(map[long.dropLast()] == nil, "31 bytes are another key")
        #expect(Set(map.keys) == [long, other, short, empty])
        #expect(Dictionary(uniqueKeysWithValues: map.map { ($0.key, $0.value) }) == [long: 1, other: 2, short: 3, empty: 4])
        map[long]! += 10
        #expect(map.removeValue(forKey: long) == 11)
        #expect(map.updateValue(5, forKey: short) == 3)
        #expect(map.count == 3 && map[long] == nil && map[short] == 5)
    }
}
