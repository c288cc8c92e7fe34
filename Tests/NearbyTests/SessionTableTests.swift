import Crypto
import Foundation
import Testing
import Wire
@testable import Nearby

/// The session table alone, two (or more) of them trading frames by hand on a made-up clock.
@Suite struct SessionTableTests {
    struct Side {
        let identity: Identity
        var table: SessionTable
        var keys: SessionPeer { SessionPeer(signingKey: identity.signingPublicKey, agreementKey: identity.agreementPublicKey) }

        init(identity: Identity, timing: SessionTiming = SessionTiming()) {
            self.identity = identity
            table = SessionTable(identity: identity, timing: timing)
        }
    }

    static func side(_ timing: SessionTiming = SessionTiming()) -> Side { Side(identity: Identity(), timing: timing) }

    /// Hands every frame of `outputs` to `to` (handshakes to its handshake reader, sealed frames
    /// opened) and returns what it sent back and what it opened.
    @discardableResult
    static func deliver(_ outputs: [SessionOutput], from: Side, to: inout Side, now: Double = 0) throws -> (back: [SessionOutput], opened: [[UInt8]]) {
        var back: [SessionOutput] = [], opened: [[UInt8]] = []
        for output in outputs where output.peer == to.identity.signingPublicKey {
            if output.bytes[5] == KindTable.handshake {
                back += try to.table.receive(try HandshakeFrame(decoding: output.bytes), from: from.keys, now: now)
            } else {
                opened.append(try to.table.open(output.bytes, now: now).inner)
            }
        }
        return (back, opened)
    }

    /// Runs a handshake to the end, frames going both ways until none is left; what `b` opened.
    static func settle(_ first: [SessionOutput], _ a: inout Side, _ b: inout Side, now: Double = 0) throws -> [[UInt8]] {
        var toB = first, toA: [SessionOutput] = [], openedByB: [[UInt8]] = []
        while !toB.isEmpty || !toA.isEmpty {
            let (backFromB, opened) = try deliver(toB, from: a, to: &b, now: now)
            openedByB += opened
            toB = []
            toA += backFromB
            toB = try deliver(toA, from: b, to: &a, now: now).back
            toA = []
        }
        return openedByB
    }

    static func outputs(_ result: SessionTable.SealResult, to peer: Data) -> [SessionOutput] {
        switch result {
        case .sealed(let frame, let handshake): handshake + [SessionOutput(bytes: frame, peer: peer, isHandshake: false)]
        case .waiting(let handshake): handshake
        }
    }

    @Test func whatWaitsForAHandshakeGoesInTheSessionItMakes() throws {
        var a = Self.side(), b = Self.side()
        let first = a.table.seal([5, 1, 2, 3], to: b.keys, now: 0)
        guard case .waiting(let handshake) = first, handshake.count == 1 else { Issue.record("\(first)"); return }
        #expect(!a.table.hasSession(with: b.identity.signingPublicKey))
        // More while it is being made waits too, without a second handshake.
        #expect(a.table.seal([5, 4], to: b.keys, now: 0) == .waiting(handshake: []))
        let opened = try Self.settle(handshake, &a, &b)
        #expect(opened == [[5, 1, 2, 3], [5, 4]])
        #expect(a.table.hasSession(with: b.identity.signingPublicKey) && b.table.hasSession(with: a.identity.signingPublicKey))
        // Then straight through, both ways.
        guard case .sealed(let frame, []) = b.table.seal([6, 9], to: a.keys, now: 1) else { Issue.record("no session"); return }
        #expect(try a.table.open(frame, now: 1).inner == [6, 9])
        #expect(a.table.statistics.established == 1 && b.table.statistics.established == 1)
    }

    /// Replayed, altered, truncated and too-old frames are refused; late ones within the window
    /// open once.
    @Test func framesOpenOnceInAnyOrderWithinTheWindow() throws {
        var a = Self.side(), b = Self.side()
        _ = try Self.settle(Self.outputs(a.table.seal([5], to: b.keys, now: 0), to: b.identity.signingPublicKey), &a, &b)
        var frames: [[UInt8]] = []
        for index in 0..<3_000 {
            guard case .sealed(let frame, _) = a.table.seal([5, UInt8(index % 256)], to: b.keys, now: 0) else { return }
            frames.append(frame)
        }
        for index in [2, 0, 1, 4, 3] { #expect(try b.table.open(frames[index], now: 0).inner == [5, UInt8(index)]) }
        #expect(throws: SessionTable.OpenError.replayed) { try b.table.open(frames[2], now: 0) }
        var altered = frames[5]
        altered[altered.count - 1] ^= 1
        #expect(throws: SessionTable.OpenError.forged) { try b.table.open(altered, now: 0) }
        #expect(throws: SessionTable.OpenError.forged) { try b.table.open(Array(frames[5].dropLast(1)), now: 0) }
        #expect(throws: SessionTable.OpenError.malformed) { try b.table.open(Array(frames[5].prefix(20)), now: 0) }
        // The frame the tampering spoilt still opens; then one 2,048 behind the newest does not.
        #expect(try b.table.open(frames[5], now: 0).inner == [5, 5])
        #expect(try b.table.open(frames[2_999], now: 0).inner == [5, UInt8(2_999 % 256)])
        #expect(throws: SessionTable.OpenError.replayed) { try b.table.open(frames[2_999 - 2_048], now: 0) }
        #expect(try b.table.open(frames[2_999 - 2_047], now: 0).inner == [5, UInt8((2_999 - 2_047) % 256)])
        // An index nobody gave out.
        var stray = frames[6]
        stray[8] ^= 0xFF
        #expect(throws: SessionTable.OpenError.unknownSession) { try b.table.open(stray, now: 0) }
    }

    /// Both start at once: the lower signing key's handshake survives on both sides, and they
    /// end with one session whose frames open both ways.
    @Test func twoHandshakesStartedAtOnceMakeOneSession() throws {
        var a = Self.side(), b = Self.side()
        guard case .waiting(let fromA) = a.table.seal([5, 1], to: b.keys, now: 0),
              case .waiting(let fromB) = b.table.seal([5, 2], to: a.keys, now: 0) else { Issue.record("no handshakes"); return }
        let aIsLower = a.identity.signingPublicKey.lexicographicallyPrecedes(b.identity.signingPublicKey)
        // Each reads the other's first message: the higher key answers, the lower refuses.
        var answers: [SessionOutput] = []
        do { answers += try Self.deliver(fromA, from: a, to: &b).back } catch { #expect(!aIsLower, "b refused: \(error)") }
        do { answers += try Self.deliver(fromB, from: b, to: &a).back } catch { #expect(aIsLower, "a refused: \(error)") }
        #expect(answers.count == 1)
        var (lower, higher) = aIsLower ? (a, b) : (b, a)
        let opened = try Self.settle(answers, &higher, &lower)
        // The lower side got the confirmation (kind 0), then what the higher one had waiting.
        #expect(opened == [[0], [5, aIsLower ? 2 : 1]])
        #expect(lower.table.openSessions == 1 && higher.table.openSessions == 1)
        guard case .sealed(let frame, []) = lower.table.seal([7], to: higher.keys, now: 1),
              case .sealed(let back, []) = higher.table.seal([8], to: lower.keys, now: 1) else { Issue.record("no session"); return }
        #expect(try higher.table.open(frame, now: 1).inner == [7])
        #expect(try lower.table.open(back, now: 1).inner == [8])
        #expect(lower.table.statistics.established + higher.table.statistics.established == 2)
    }

    /// After the frame limit the next frame starts a fresh handshake, the old session carrying
    /// on meanwhile; once made, the new keys are used, and late frames of the old still open.
    @Test func keysChangeAfterTheFrameLimitWithoutLosingAFrame() throws {
        var timing = SessionTiming()
        timing.rekeyAfterFrames = 10
        var a = Self.side(timing), b = Self.side(timing)
        _ = try Self.settle(Self.outputs(a.table.seal([5, 0], to: b.keys, now: 0), to: b.identity.signingPublicKey), &a, &b)
        var late: [UInt8] = []
        var handshake: [SessionOutput] = []
        for index in 1..<12 {
            guard case .sealed(let frame, let started) = a.table.seal([5, UInt8(index)], to: b.keys, now: 0) else { return }
            if index == 11 { late = frame } else { #expect(try b.table.open(frame, now: 0).inner == [5, UInt8(index)]) }
            handshake += started
        }
        #expect(handshake.count == 1, "one rekey")
        _ = try Self.settle(handshake, &a, &b, now: 1)
        guard case .sealed(let fresh, []) = a.table.seal([5, 12], to: b.keys, now: 1) else { Issue.record("no session"); return }
        #expect(try SealedFrame.fields(of: fresh).counter < 5, "new keys, counters from 0 again")
        #expect(try b.table.open(fresh, now: 1).inner == [5, 12])
        #expect(try b.table.open(late, now: 1).inner == [5, 11], "a late frame of the old session")
        #expect(a.table.statistics.rekeyed == 1)
    }

    @Test func onlyAnnouncedPeersWithTheirAnnouncedKeyGetAnAnswer() throws {
        var a = Self.side(), b = Self.side()
        guard case .waiting(let first) = a.table.seal([5], to: b.keys, now: 0) else { return }
        let frame = try HandshakeFrame(decoding: first[0].bytes)
        #expect(throws: SessionTable.HandshakeError.unannounced) { try b.table.receive(frame, from: nil, now: 0) }
        // An impostor: the handshake proves another X25519 key than the announced one.
        let impostor = SessionPeer(signingKey: a.identity.signingPublicKey, agreementKey: Identity().agreementPublicKey)
        let answer = try b.table.receive(frame, from: impostor, now: 0)
        var wrong = b.keys
        wrong.agreementKey = Identity().agreementPublicKey
        #expect(throws: SessionTable.HandshakeError.failed) {
            try a.table.receive(try HandshakeFrame(decoding: answer[0].bytes), from: wrong, now: 0)
        }
        #expect(b.table.halfOpen == 1)
    }

    /// A flood of first messages claiming many announced keys holds at most 64 half-open
    /// handshakes, and one key is answered at most every 0.2 s.
    @Test func halfOpenHandshakesAreBounded() throws {
        var b = Self.side()
        for index in 0..<200 {
            var a = Self.side()
            guard case .waiting(let first) = a.table.seal([5], to: b.keys, now: 0) else { return }
            _ = try b.table.receive(try HandshakeFrame(decoding: first[0].bytes), from: a.keys, now: Double(index) * 0.001)
        }
        #expect(b.table.halfOpen == SessionTable.halfOpenLimit)
        var a = Self.side()
        for attempt in 0..<2 {
            a.table.forget(b.identity.signingPublicKey)
            guard case .waiting(let first) = a.table.seal([5], to: b.keys, now: 1) else { return }
            let frame = try HandshakeFrame(decoding: first[0].bytes)
            if attempt == 0 {
                _ = try b.table.receive(frame, from: a.keys, now: 1)
            } else {
                #expect(throws: SessionTable.HandshakeError.busy) { try b.table.receive(frame, from: a.keys, now: 1.1) }
            }
        }
        _ = b.table.tick(now: 20)
        #expect(b.table.halfOpen == 0, "unfinished handshakes are forgotten")
    }

    /// A first message in a's name can be written by anyone (it proves nothing until step 3).
    /// One from another host (issue 49) is answered to be sent back there, is answered once per
    /// gap from that host, and does not cancel b's own handshake to a.
    @Test func aForgedFirstMessageFromAnotherHostHoldsUpNoOne() throws {
        var a = Self.side(), b = Self.side()
        // b's key the higher: b answers a first message of a's even while its own is under way
        // (the lower key's handshake survives a crossing), and a real one would cancel b's.
        if b.identity.signingPublicKey.lexicographicallyPrecedes(a.identity.signingPublicKey) { swap(&a, &b) }
        func forged(now: Double) throws -> HandshakeFrame {
            var forger = Self.side()
            guard case .waiting(let first) = forger.table.seal([5], to: b.keys, now: now) else { throw SessionTable.HandshakeError.failed }
            var frame = try HandshakeFrame(decoding: first[0].bytes)
            frame.sender = a.identity.signingPublicKey
            return frame
        }
        let elsewhere = "lan 198.18.0.66"
        guard case .waiting(let fromB) = b.table.seal([5, 2], to: a.keys, now: 0) else { Issue.record("no handshake"); return }
        let answer = try b.table.receive(try forged(now: 0), from: a.keys, source: elsewhere, fromItsHost: false, now: 0)
        #expect(answer.count == 1 && answer[0].isAnswer, "goes back the way it came")
        #expect(throws: SessionTable.HandshakeError.busy) {
            try b.table.receive(try forged(now: 0.01), from: a.keys, source: elsewhere, fromItsHost: false, now: 0.01)
        }
        // b's handshake to a was not cancelled by the forgery: it completes, and what waited arrives.
        #expect(try Self.settle(fromB, &b, &a, now: 0.02) == [[5, 2]])
        #expect(b.table.hasSession(with: a.identity.signingPublicKey))
    }

    /// Forged first messages from one host hold only that host's half-open handshake: a's
    /// real one, from its own host at the same moment, is answered and completes.
    @Test func aRealFirstMessageIsAnsweredBesideForgedOnes() throws {
        var a = Self.side(), b = Self.side()
        for index in 0..<5 {
            var forger = Self.side()
            guard case .waiting(let first) = forger.table.seal([5], to: b.keys, now: 0) else { return }
            var frame = try HandshakeFrame(decoding: first[0].bytes)
            frame.sender = a.identity.signingPublicKey
            _ = try b.table.receive(frame, from: a.keys, source: "lan 198.18.0.66", fromItsHost: false, now: Double(index) * 0.25)
        }
        #expect(b.table.halfOpen == 1, "one a host")
        guard case .waiting(let fromA) = a.table.seal([5, 1], to: b.keys, now: 1) else { Issue.record("no handshake"); return }
        let step1 = try HandshakeFrame(decoding: fromA[0].bytes)
        let step2 = try b.table.receive(step1, from: a.keys, source: "lan 198.18.0.2", now: 1)
        #expect(b.table.halfOpen == 2)
        let step3 = try a.table.receive(try HandshakeFrame(decoding: step2[0].bytes), from: b.keys, now: 1)
        var opened: [[UInt8]] = []
        for output in step3 {
            if output.isHandshake {
                _ = try b.table.receive(try HandshakeFrame(decoding: output.bytes), from: a.keys, source: "lan 198.18.0.2", now: 1)
            } else {
                opened.append(try b.table.open(output.bytes, now: 1).inner)
            }
        }
        #expect(opened == [[5, 1]])
        #expect(b.table.hasSession(with: a.identity.signingPublicKey))
    }

    @Test func theReplayWindowSlides() {
        var window = ReplayWindow()
        #expect(window.allows(0))
        window.accept(0)
        #expect(!window.allows(0))
        window.accept(5_000)
        #expect(window.allows(4_000) && !window.allows(2_952) && window.allows(2_953))
        window.accept(4_000)
        #expect(!window.allows(4_000) && window.allows(4_001) && !window.allows(5_000))
    }
}
