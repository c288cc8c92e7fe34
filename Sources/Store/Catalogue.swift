import Crypto
import Foundation
import GRDB
import Shell

/// What the store sells (seed 000): prices in cents, what each does.
package enum Item: String, CaseIterable, Sendable {
    case candle, medallion

    package var name: String { self == .candle ? "Holy candle" : "Saint's medallion" }
    package var plural: String { self == .candle ? "Holy candles" : "Saint's medallions" }
    package var priceCents: Int { self == .candle ? 99 : 299 }
    package var summary: String {
        self == .candle ? "lifts the curse on you that ends last" : "curses bounce off for an hour, then it breaks"
    }

    /// The item's glyph (an emoji, or one ASCII letter).
    package func glyph(ascii: Bool) -> String {
        switch self {
        case .candle: return ascii ? "i" : "🕯️"
        case .medallion: return ascii ? "o" : "🏅"
        }
    }

    package func label(_ count: Int) -> String { "\(count) " + (count == 1 ? name : plural) }
}

/// A purchase before it is made: the quantity is checked and the total computed here.
package struct Order: Equatable, Sendable {
    package static let quantities = 1...99

    package let item: Item
    package let quantity: Int

    package init(_ item: Item, quantity: Int) throws(StoreError) {
        guard Self.quantities.contains(quantity) else { throw .badQuantity(quantity) }
        self.item = item
        self.quantity = quantity
    }

    package var totalCents: Int { item.priceCents * quantity }
}

/// Cents as dollars: `$2.99`.
package func dollars(_ cents: Int) -> String {
    // By hand: the first `String(format:)` of a run sets up Foundation's formatting, a good
    // part of start-up (the store's commands name their prices when they are registered).
    let sign = cents < 0 ? "-" : ""
    let cents = abs(cents)
    return "\(sign)$\(cents / 100)." + (cents % 100 < 10 ? "0" : "") + "\(cents % 100)"
}

/// A purchase as recorded: signed by the buyer's profile key over `canonicalText`, so a change
/// to any stored field shows when the receipt is verified.
package struct Receipt: Equatable, Sendable {
    package var id: String
    package var profileKey: Data
    package var item: String
    package var quantity: Int
    package var unitCents: Int
    package var totalCents: Int
    /// Milliseconds since 1970 (an integer, so the signed text is exact).
    package var timeMilliseconds: Int64
    package var signature: Data

    /// The bytes the signature covers, one `field: value` a line, in this order (README):
    ///
    ///     seance receipt v1
    ///     id: 0b9d5c1e-8f3a-4c21-9e4b-2d7a1f6c3b80
    ///     profile: <the profile's Ed25519 public key, 64 lower-case hex digits>
    ///     item: candle
    ///     quantity: 3
    ///     unit-cents: 99
    ///     total-cents: 297
    ///     time-ms: 1795401000000
    package var canonicalText: String {
        ["seance receipt v1", "id: \(id)", "profile: \(profileKey.map { String(format: "%02x", $0) }.joined())",
         "item: \(item)", "quantity: \(quantity)", "unit-cents: \(unitCents)", "total-cents: \(totalCents)",
         "time-ms: \(timeMilliseconds)"].joined(separator: "\n") + "\n"
    }

    /// A new receipt for `order`, signed with `signer`.
    package static func signed(_ order: Order, id: String, signer: Curve25519.Signing.PrivateKey, time: Double) throws -> Receipt {
        var receipt = Receipt(id: id, profileKey: signer.publicKey.rawRepresentation, item: order.item.rawValue,
                              quantity: order.quantity, unitCents: order.item.priceCents, totalCents: order.totalCents,
                              timeMilliseconds: Int64((time * 1000).rounded()), signature: Data())
        receipt.signature = try signer.signature(for: Data(receipt.canonicalText.utf8))
        return receipt
    }

    /// Why this receipt is not what its owner signed, or nil when it is. `ownerKey` is the key
    /// of the profile it is filed under (a receipt re-signed with another key is not theirs).
    package func problem(ownerKey: Data) -> String? {
        guard profileKey == ownerKey else { return "it names another profile's key" }
        guard let key = try? Curve25519.Signing.PublicKey(rawRepresentation: ownerKey),
              key.isValidSignature(signature, for: Data(canonicalText.utf8)) else {
            return "the signature does not match its contents"
        }
        guard let item = Item(rawValue: item), unitCents == item.priceCents, totalCents == unitCents * quantity else {
            return "its prices do not add up"
        }
        return nil
    }

    /// A random (version 4) UUID, from `rng` so that `--seed` makes it reproducible.
    package static func newID(using rng: inout some RandomNumberGenerator) -> String {
        var bytes = (0..<16).map { _ in UInt8.random(in: 0...255, using: &rng) }
        bytes[6] = bytes[6] & 0x0F | 0x40
        bytes[8] = bytes[8] & 0x3F | 0x80
        let hex = bytes.map { String(format: "%02x", $0) }.joined()
        let parts = [hex.prefix(8), hex.dropFirst(8).prefix(4), hex.dropFirst(12).prefix(4), hex.dropFirst(16).prefix(4), hex.dropFirst(20)]
        return parts.joined(separator: "-")
    }
}

/// A worn Saint's medallion: curses bounce off for an hour from `wornAt`; then it breaks.
package struct Medallion: Equatable, Sendable {
    package static let lifetime = 3_600.0

    package var wornAt: Double
    package var breaksAt: Double { wornAt + Self.lifetime }

    package init(wornAt: Double) { self.wornAt = wornAt }

    package func protects(at now: Double) -> Bool { now >= wornAt && now < breaksAt }
    package func secondsLeft(at now: Double) -> Double { max(0, breaksAt - now) }
}

package enum StoreError: Error, Equatable, CustomStringConvertible {
    case badQuantity(Int)
    case unknownItem(String)
    case noneLeft(Item)
    case medallionWorn(minutesLeft: Int)
    case noSuchReceipt(String)
    case ambiguousReceipt(String, count: Int)

    package var description: String {
        switch self {
        case .badQuantity(let n): return "you can buy 1 to 99 at a time, not \(n)"
        case .unknownItem(let name): return "the store sells candle and medallion, not '\(name)'"
        case .noneLeft(let item): return "you have no \(item.plural): " + Advice.command("buy \(item.rawValue)", mode: "store")
        case .medallionWorn(let minutes): return "you already wear a Saint's medallion (it breaks in \(minutes) min); one at a time"
        case .noSuchReceipt(let id): return "there is no receipt \(id)"
        case .ambiguousReceipt(let id, let count): return "\(count) receipts start with \(id): give more of the id"
        }
    }
}

/// What a Holy candle works on. The curses feature plugs in here; until it does, there is
/// never a curse to lift, and a candle is never used up for nothing.
package protocol CurseBook: AnyObject {
    /// Lifts the active curse on `profile` that ends last, inside the store's transaction;
    /// returns what was lifted, or nil when no curse is active.
    func liftLatest(on profile: Int64, in db: Database, now: Double) throws -> LiftedCurse?
    /// The store's transaction committed: the curse stops applying (on the engine, if online).
    func lifted(_ curse: LiftedCurse)
}

/// A curse a candle lifted: its row, and how to name it.
package struct LiftedCurse: Equatable, Sendable {
    package let id: Int64
    package let description: String

    package init(id: Int64, description: String) {
        self.id = id
        self.description = description
    }
}
