import Runtime
import Crypto
import Foundation
import Glibc
import GRDB
import Accounts
import Storage
import TestSupport
import Terminal
import Testing
@testable import Store

@Suite struct StoreModelTests {
    @Test func totalsAndLimits() throws {
        #expect(try Order(.candle, quantity: 3).totalCents == 297)
        #expect(try Order(.medallion, quantity: 99).totalCents == 29_601)
        #expect(throws: StoreError.badQuantity(0)) { try Order(.candle, quantity: 0) }
        #expect(throws: StoreError.badQuantity(100)) { try Order(.candle, quantity: 100) }
        #expect(dollars(29_601) == "$296.01" && dollars(99) == "$0.99")
    }

    /// Exactly one hour, by the clock it is given.
    @Test func aMedallionBreaksAtExactlyOneHour() {
        let worn = Medallion(wornAt: 1_000)
        #expect(worn.protects(at: 1_000) && worn.protects(at: 1_000 + 3_599.999))
        #expect(!worn.protects(at: 1_000 + 3_600))
        #expect(worn.secondsLeft(at: 1_000 + 3_000) == 600)
    }

    @Test func idsAreVersionFourUUIDsReproducibleWithASeed() {
        struct Counter: RandomNumberGenerator { var n: UInt64 = 7; mutating func next() -> UInt64 { n &+= 0x9E37_79B9_7F4A_7C15; return n } }
        var a = Counter(), b = Counter()
        let id = Receipt.newID(using: &a)
        #expect(id == Receipt.newID(using: &b))
        #expect(id.count == 36 && Array(id)[14] == "4" && "89ab".contains(Array(id)[19]))
    }

    /// Any stored field changed, and the receipt is no longer what its owner signed.
    @Test func tamperingWithAnyFieldIsDetected() throws {
        let key = Curve25519.Signing.PrivateKey()
        let receipt = try Receipt.signed(try Order(.candle, quantity: 2), id: "0b9d5c1e-8f3a-4c21-9e4b-2d7a1f6c3b80", signer: key, time: 1_795_401_000)
        let owner = key.publicKey.rawRepresentation
        #expect(receipt.problem(ownerKey: owner) == nil)
        var changes: [(String, (inout Receipt) -> Void)] = [
            ("id", { $0.id = "1" + $0.id.dropFirst() }), ("item", { $0.item = "medallion" }), ("quantity", { $0.quantity = 20 }),
            ("unit", { $0.unitCents = 1 }), ("total", { $0.totalCents = 1 }), ("time", { $0.timeMilliseconds += 1 }),
            ("signature", { $0.signature[0] ^= 1 }),
        ]
        let other = Curve25519.Signing.PrivateKey()
        changes.append(("re-signed by another key", { receipt in
            receipt.profileKey = other.publicKey.rawRepresentation
            receipt.signature = try! other.signature(for: Data(receipt.canonicalText.utf8))
        }))
        for (field, change) in changes {
            var tampered = receipt
            change(&tampered)
            #expect(tampered.problem(ownerKey: owner) != nil, "\(field)")
        }
        #expect(receipt.canonicalText.hasPrefix("seance receipt v1\nid: 0b9d5c1e-8f3a-4c21-9e4b-2d7a1f6c3b80\nprofile: "))
    }
}

@Suite struct LedgerTests {
    let directory: String
    let database: SeanceDatabase
    let profile: Profile
    let identity: Identity

    init() throws {
        directory = temporaryDirectory("store")
        database = try testDatabase(directory + "/seance.sqlite", schema: Schema([.settings] + AccountsSchema.migrations + StoreSchema.migrations))
        (profile, identity) = try ProfileStore(database: database, rounds: 1 << 10)
            .create(name: "ann", password: "password1", avatar: nil, gift: false, now: 0)
    }

    func buy(_ item: Item, _ quantity: Int, at time: Double, id: String? = nil) throws -> Receipt {
        var rng = SeededRandom(seed: UInt64(time * 1_000) &+ UInt64(quantity))
        let receipt = try Receipt.signed(try Order(item, quantity: quantity), id: id ?? Receipt.newID(using: &rng),
                                         signer: identity.signing, time: time)
        try Ledger(database: database).record(receipt, profile: profile.id)
        return receipt
    }

    @Test func purchasesFillTheInventoryAndReceiptsComeNewestFirst() throws {
        defer { removeDirectory(directory) }
        let first = try buy(.candle, 2, at: 10), second = try buy(.medallion, 1, at: 20), third = try buy(.candle, 3, at: 30)
        let ledger = Ledger(database: database)
        #expect(try ledger.inventory(profile: profile.id) == [.candle: 5, .medallion: 1])
        #expect(try ledger.receipts(profile: profile.id).map(\.id) == [third.id, second.id, first.id])
        #expect(try ledger.receipt(String(second.id.prefix(6)), profile: profile.id) == second)
        #expect(throws: StoreError.noSuchReceipt("ffff")) { try ledger.receipt("ffff", profile: profile.id) }
    }

    /// A purchase is one transaction: when the inventory cannot be written (a failure injected
    /// after the receipt went in), the receipt is gone too.
    @Test func aFailedPurchaseChangesNothing() throws {
        defer { removeDirectory(directory) }
        _ = try buy(.candle, 1, at: 10)
        try database.write { db in
            try db.execute(sql: "CREATE TEMP TRIGGER refuse BEFORE UPDATE ON inventory BEGIN SELECT RAISE(ABORT, 'injected'); END")
        }
        #expect(throws: (any Error).self) { _ = try buy(.candle, 5, at: 11) }
        let ledger = Ledger(database: database)
        #expect(try ledger.inventory(profile: profile.id) == [.candle: 1])
        #expect(try ledger.receipts(profile: profile.id).count == 1)
    }

    @Test func candlesWithoutACurseAreKeptAndMedallionsOneAtATime() throws {
        defer { removeDirectory(directory) }
        let ledger = Ledger(database: database)
        #expect(throws: StoreError.noneLeft(.candle)) { try ledger.useCandle(profile: profile.id, curses: nil, now: 0) }
        _ = try buy(.candle, 1, at: 1)
        #expect(try ledger.useCandle(profile: profile.id, curses: nil, now: 2) == nil)
        #expect(try ledger.inventory(profile: profile.id)[.candle] == 1)  // Nothing used up.
        /// Told of the lift only once the candle's transaction has committed.
        final class OneCurse: CurseBook {
            var told: [Int64] = []
            func liftLatest(on profile: Int64, in db: Database, now: Double) throws -> LiftedCurse? {
                #expect(told.isEmpty)
                return LiftedCurse(id: 7, description: "the curse of silence")
            }
            func lifted(_ curse: LiftedCurse) { told.append(curse.id) }
        }
        let book = OneCurse()
        #expect(try ledger.useCandle(profile: profile.id, curses: book, now: 3) == "the curse of silence")
        #expect(book.told == [7])
        #expect(try ledger.inventory(profile: profile.id)[.candle] == 0)
        _ = try buy(.medallion, 2, at: 4)
        #expect(try ledger.wearMedallion(profile: profile.id, now: 100) == Medallion(wornAt: 100))
        #expect(throws: StoreError.medallionWorn(minutesLeft: 60)) { try ledger.wearMedallion(profile: profile.id, now: 101) }
        #expect(try ledger.protectingMedallion(profile: profile.id, now: 100 + 3_599) != nil)
        #expect(try ledger.protectingMedallion(profile: profile.id, now: 100 + 3_600) == nil)  // Broken.
        #expect(try ledger.wearMedallion(profile: profile.id, now: 100 + 3_600).wornAt == 3_700)
        #expect(try ledger.inventory(profile: profile.id)[.medallion] == 0)
    }
}

/// At a terminal `receipts` shows the newest the window holds, and says how many older ones
/// `receipts all` adds; the total is always of them all.
@Suite struct ReceiptListTests {
    let receipts = (0..<10).map { index in
        Receipt(id: "0000000\(index)-0000-4000-8000-000000000000", profileKey: Data(count: 32), item: "candle", quantity: 1,
                unitCents: 99, totalCents: 99, timeMilliseconds: 1_795_401_000_000, signature: Data())
    }

    @Test func theNewestThatFitTheWindowAndTheTotalOfAll() {
        let lines = StoreView(styler: Styler(.plain), ascii: false).receipts(receipts, rows: 10)
        #expect(lines.count == 9)  // The window's 10 rows, less the prompt's.
        #expect(lines[1].hasPrefix("00000000 ") && lines[6].hasPrefix("00000005 "))
        #expect(lines[7] == "… 4 older: receipts all")
        #expect(lines[8] == "total spent: $9.90")
    }

    @Test func aNarrowWindowLeavesTheTimesOut() {
        let lines = StoreView(styler: Styler(.plain), ascii: false, columns: 50).receipts(receipts)
        #expect(lines[0] == "ID        ITEM                 QTY     TOTAL")
        #expect(lines[1] == "00000000  Holy candle            1     $0.99")
        #expect(StoreView(styler: Styler(.plain), ascii: false).receipts(receipts)[0].hasPrefix("ID        TIME "))
    }

    @Test func allOfThemWhenTheyFitOrWithoutAWindow() {
        #expect(StoreView(styler: Styler(.plain), ascii: false).receipts(receipts, rows: 13).count == 12)
        #expect(StoreView(styler: Styler(.plain), ascii: false).receipts(receipts).count == 12)
    }
}

/// The catalogue fits the window: what an item does wraps under itself, the glyph last.
@Suite struct CatalogueLayoutTests {
    @Test func eachLineFitsTheWindow() {
        for columns in [80, 50] {
            let lines = StoreView(styler: Styler(.plain), ascii: true, columns: columns).catalogue()
            #expect(lines.allSatisfy { $0.displayWidth <= columns }, "\(lines)")
        }
        let narrow = StoreView(styler: Styler(.plain), ascii: true, columns: 50).catalogue()
        #expect(narrow[1] == "  Holy candle        $0.99   lifts the curse")
        #expect(narrow[2] == "                             on you that ends")
        #expect(narrow[3] == "                             last  i")
    }
}
