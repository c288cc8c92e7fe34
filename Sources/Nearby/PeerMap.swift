import Foundation

/// A dictionary keyed by peers' signing keys, which hashes and compares a 32-byte key as four
/// words. As `Data` keys, their hashing and comparing (with Foundation's exclusivity checks on
/// its storage) were a twelfth of a lone message's instructions: the engine looks a peer up in
/// its tables some twenty times a message.
package struct PeerMap<Value>: Sequence {
    private var storage: [PeerKey: Value] = [:]

    package init() {}

    package subscript(key: Data) -> Value? {
        get { storage[PeerKey(key)] }
        _modify { yield &storage[PeerKey(key)] }
    }

    package subscript(key: Data, default value: @autoclosure () -> Value) -> Value {
        get { storage[PeerKey(key), default: value()] }
        _modify { yield &storage[PeerKey(key), default: value()] }
    }

    @discardableResult
    package mutating func removeValue(forKey key: Data) -> Value? { storage.removeValue(forKey: PeerKey(key)) }

    @discardableResult
    package mutating func updateValue(_ value: Value, forKey key: Data) -> Value? { storage.updateValue(value, forKey: PeerKey(key)) }

    /// Whether `key` has a value (without copying it out, as `self[key] != nil` would).
    package func contains(_ key: Data) -> Bool { storage.index(forKey: PeerKey(key)) != nil }

    package var count: Int { storage.count }
    package var isEmpty: Bool { storage.isEmpty }
    package var keys: [Data] { storage.keys.map(\.data) }
    package var values: Dictionary<PeerKey, Value>.Values { storage.values }

    package func makeIterator() -> some IteratorProtocol<(key: Data, value: Value)> {
        storage.lazy.map { (key: $0.key.data, value: $0.value) }.makeIterator()
    }
}

extension PeerMap: Sendable where Value: Sendable {}

/// A signing key as `PeerMap` keys it: its four words when it is 32 bytes long, as keys are;
/// otherwise its bytes as they are.
package struct PeerKey: Hashable, Sendable {
    private let a, b, c, d: UInt64
    private let other: Data?

    init(_ data: Data) {
        guard data.count == 32 else {
            (a, b, c, d, other) = (0, 0, 0, 0, data)
            return
        }
        (a, b, c, d) = data.withUnsafeBytes { bytes in
            (bytes.loadUnaligned(fromByteOffset: 0, as: UInt64.self), bytes.loadUnaligned(fromByteOffset: 8, as: UInt64.self),
             bytes.loadUnaligned(fromByteOffset: 16, as: UInt64.self), bytes.loadUnaligned(fromByteOffset: 24, as: UInt64.self))
        }
        other = nil
    }

    /// A key is random (an Ed25519 public key): its first word alone spreads the table, and
    /// hashing it alone costs a fifth of hashing all four (tables are looked up some twenty
    /// times a message). Equal keys still hash alike; `==` compares every word.
    package func hash(into hasher: inout Hasher) {
        hasher.combine(a)
        if let other { hasher.combine(other) }
    }

    var data: Data {
        if let other { return other }
        var data = Data(count: 32)
        data.withUnsafeMutableBytes { bytes in
            for (index, word) in [a, b, c, d].enumerated() { bytes.storeBytes(of: word, toByteOffset: 8 * index, as: UInt64.self) }
        }
        return data
    }
}
