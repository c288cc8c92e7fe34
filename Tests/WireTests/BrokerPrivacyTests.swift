import Crypto
import Foundation
import Testing
@testable import Wire

/// What a broker carries, naming nobody: envelopes only their recipient opens, topics only the
/// pair derives (changing with the hour, or the prekey), and a few sizes.
@Suite struct BrokerPrivacyTests {
    let handshake: [UInt8] = SessionWire.start(KindTable.handshake) + [UInt8](repeating: 9, count: 105)

    @Test func anEnvelopeOpensOnlyForItsRecipientAndUnaltered() throws {
        let ben = Curve25519.KeyAgreement.PrivateKey(), eve = Curve25519.KeyAgreement.PrivateKey()
        let sealed = try Envelope.seal(handshake, to: ben.publicKey.rawRepresentation, as: .agreementKey)
        #expect(sealed.count == handshake.count + Envelope.overhead)
        #expect(Envelope.recipient(of: sealed) == .agreementKey)
        #expect(Envelope.open(sealed, with: [eve, ben]) == handshake, "the key that opens it, among others")
        #expect(Envelope.open(sealed, with: [eve]) == nil)
        // Nothing of the inner frame shows, neither keys nor its header.
        #expect(sealed.firstRange(of: handshake[8..<40]) == nil && sealed[5] == KindTable.envelope)
        for index in [5, 8, 20, 60, sealed.count - 1] {
            var altered = sealed
            altered[index] ^= 1
            #expect(Envelope.open(altered, with: [ben]) == nil, "byte \(index) altered")
        }
        #expect(Envelope.open(Array(sealed.dropLast()), with: [ben]) == nil)
        // Two envelopes of the same frame share no byte pattern (a fresh ephemeral key each).
        let again = try Envelope.seal(handshake, to: ben.publicKey.rawRepresentation, as: .agreementKey)
        #expect(again[9...] != sealed[9...])
    }

    @Test func topicsAreThePairsAloneAndMove() throws {
        let (ann, ben, eve) = (Identity(), Identity(), Identity())
        let annPair = try BrokerTopics.pairKey(mine: ann.agreement, theirs: ben.agreementPublicKey,
                                               mySigningKey: ann.signingPublicKey, theirSigningKey: ben.signingPublicKey)
        let benPair = try BrokerTopics.pairKey(mine: ben.agreement, theirs: ann.agreementPublicKey,
                                               mySigningKey: ben.signingPublicKey, theirSigningKey: ann.signingPublicKey)
        let evePair = try BrokerTopics.pairKey(mine: eve.agreement, theirs: ben.agreementPublicKey,
                                               mySigningKey: eve.signingPublicKey, theirSigningKey: ben.signingPublicKey)
        let hour = BrokerTopics.hour(1_800_000_000)
        let toBen = BrokerTopics.live(annPair, to: ben.signingPublicKey, hour: hour)
        #expect(toBen == BrokerTopics.live(benPair, to: ben.signingPublicKey, hour: hour), "both ends derive it")
        #expect(BrokerTopics.isTopic(toBen) && toBen.count == 34)
        #expect(toBen != BrokerTopics.live(annPair, to: ann.signingPublicKey, hour: hour), "each way its own")
        #expect(toBen != BrokerTopics.live(annPair, to: ben.signingPublicKey, hour: hour + 1), "each hour its own")
        #expect(toBen != BrokerTopics.live(evePair, to: ben.signingPublicKey, hour: hour), "each pair its own")
        let prekey = Curve25519.KeyAgreement.PrivateKey().publicKey.rawRepresentation
        let mail = BrokerTopics.mail(annPair, to: ben.signingPublicKey, prekey: prekey)
        #expect(mail != BrokerTopics.mail(annPair, to: ben.signingPublicKey, prekey: Curve25519.KeyAgreement.PrivateKey().publicKey.rawRepresentation))
        #expect(mail != BrokerTopics.mail(evePair, to: ben.signingPublicKey, prekey: prekey))
        // No topic shows a key or its fingerprint.
        for key in [ann.signingPublicKey, ben.signingPublicKey] {
            let id = PeerIdentity.longFingerprint(of: key)
            for topic in [toBen, mail, BrokerTopics.rendezvous(prekey: prekey)] { #expect(!topic.contains(id.prefix(8))) }
        }
        let client = BrokerTopics.mailboxClientID(of: ben)
        #expect(client.count == 23 && client == BrokerTopics.mailboxClientID(of: ben) && client != BrokerTopics.mailboxClientID(of: ann))
        #expect(!PeerIdentity.longFingerprint(of: ben.signingPublicKey).contains(client.dropFirst(9).prefix(8)))
    }

    @Test func framesArePaddedToAFewSizes() {
        for length in [0, 1, 120, 254, 255, 1_000, Wire.maximumDatagram + Envelope.overhead, Wire.maximumMail + Envelope.overhead] {
            let frame = (0..<length).map { UInt8(truncatingIfNeeded: $0 &+ 1) }
            let padded = BrokerPadding.pad(frame)
            #expect(padded.map { BrokerPadding.sizes.contains($0.count) } == true, "\(length)")
            #expect(padded.flatMap(BrokerPadding.unpad) == frame, "\(length)")
        }
        #expect(BrokerPadding.pad([UInt8](repeating: 0, count: BrokerPadding.sizes.last!)) == nil)
        #expect(BrokerPadding.unpad([UInt8](repeating: 0, count: 300)) == nil, "not one of the sizes")
        var lying = [UInt8](repeating: 0, count: 256)
        lying[254] = 1
        #expect(BrokerPadding.unpad(lying) == nil, "says a frame longer than it holds")
    }
}
