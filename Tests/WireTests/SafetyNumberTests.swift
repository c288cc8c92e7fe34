import Foundation
import Testing
import Wire

/// The safety number `verify` shows, checked against libsignal's published vector for its
/// numeric fingerprints (NumericFingerprintGeneratorTest: two identity keys, two phone numbers,
/// 5,200 iterations), and the two ends agreeing whichever side computes it.
@Suite struct SafetyNumberTests {
    static func bytes(_ hex: String) -> [UInt8] {
        var result: [UInt8] = []
        var index = hex.startIndex
        while index < hex.endIndex {
            let next = hex.index(index, offsetBy: 2)
            result.append(UInt8(hex[index..<next], radix: 16)!)
            index = next
        }
        return result
    }

    @Test func signalsPublishedVector() {
        let alice = (key: Self.bytes("0506863bc66d02b40d27b8d49ca7c09e9239236f9d7d25d6fcca5ce13c7064d868"), identifier: Array("+14152222222".utf8))
        let bob = (key: Self.bytes("05f781b6fb32fed9ba1cf2de978d4d5da28dc34046ae814402b5c0dbd96fda907b"), identifier: Array("+14153333333".utf8))
        let expected = "300354477692869396892869876765458257569162576843440918079131"
        #expect(SafetyNumber.between(alice, bob) == expected)
        #expect(SafetyNumber.between(bob, alice) == expected)
        #expect(SafetyNumber.lines(expected) == ["30035 44776 92869 39689", "28698 76765 45825 75691", "62576 84344 09180 79131"])
    }

    @Test func bothEndsAgreeAndAnotherKeyChangesIt() {
        let ann = Identity(), ben = Identity(), eve = Identity()
        func number(_ one: Identity, _ other: Identity) -> String {
            SafetyNumber.between(signing: one.signingPublicKey, agreement: one.agreementPublicKey,
                                 and: other.signingPublicKey, agreement: other.agreementPublicKey)
        }
        #expect(number(ann, ben) == number(ben, ann))
        #expect(number(ann, ben).count == 60 && number(ann, ben).allSatisfy(\.isNumber))
        #expect(number(ann, eve) != number(ann, ben))
        // The agreement key counts too: the same signing key announcing another is another number.
        #expect(SafetyNumber.between(signing: ben.signingPublicKey, agreement: eve.agreementPublicKey,
                                     and: ann.signingPublicKey, agreement: ann.agreementPublicKey) != number(ann, ben))
    }
}
