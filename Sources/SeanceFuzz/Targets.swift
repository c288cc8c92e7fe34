import Crypto
import Foundation
import MQTT
import Nearby
import Wire
import Shell
import Terminal

/// What the fuzzer feeds: everything seance reads from outside that is parsed by hand.
/// Each target also checks what must hold of whatever it accepted.
enum FuzzTarget: String, CaseIterable {
    case packet, tokenizer, image, broker, engine, reassembly

    /// One input. Crashes, traps and sanitizer reports are the findings; a broken invariant
    /// traps too.
    func run(_ bytes: [UInt8]) {
        switch self {
        case .packet: Self.packet(bytes)
        case .tokenizer: Self.tokenizer(bytes)
        case .image: Self.image(bytes)
        case .broker: Self.broker(bytes)
        case .engine: Self.harness.run(bytes)
        case .reassembly: Self.reassembly(bytes)
        }
    }

    /// Every kind through a shell online with every feature (`EngineHarness`), made on first use.
    /// libFuzzer and the replay call targets from one thread only.
    nonisolated(unsafe) static let harness: EngineHarness = {
        do {
            return try EngineHarness()
        } catch {
            fatalError("the engine harness did not start: \(error)")
        }
    }()

    /// A conversation's fragments in any order, repeated, missing or out of the window: whole
    /// messages come out once each, in order, of at most `maximumFragments` fragments, and no
    /// more than the window is ever held. Each fragment: two bytes of sequence (from 1), a
    /// flags byte (bit 0: the last of its message), a length byte and that much text.
    static func reassembly(_ bytes: [UInt8]) {
        var assembler = IncomingAssembler(delivered: 0)
        var reader = bytes[...]
        var handedOut: UInt32 = 0
        while reader.count >= 4 {
            let sequence = UInt32(reader[reader.startIndex]) << 8 | UInt32(reader[reader.startIndex + 1])
            let flags = reader[reader.startIndex + 2], length = Int(reader[reader.startIndex + 3])
            reader = reader.dropFirst(4)
            let text = Data(reader.prefix(length))
            reader = reader.dropFirst(length)
            let outcome = assembler.receive(Fragment(sequence: sequence, isLast: flags & 1 == 1, sentAt: 1, text: text))
            precondition(assembler.bufferedCount <= IncomingAssembler.bufferLimit, "more held than the window")
            guard case .messages(let messages) = outcome else { continue }
            for message in messages {
                precondition(message.firstSequence == handedOut + 1, "a message out of order or twice")
                precondition(message.lastSequence - message.firstSequence < UInt32(IncomingAssembler.maximumFragments))
                handedOut = message.lastSequence
            }
            precondition(assembler.delivered == handedOut)
        }
    }

    /// A fixed key, so fuzzed payloads can be given a valid signature and reach the payload
    /// decoder (random bytes alone never get past the signature check).
    static let signer = try! Curve25519.Signing.PrivateKey(rawRepresentation: Data(repeating: 0x5E, count: 32))

    static let agreement = try! Curve25519.KeyAgreement.PrivateKey(rawRepresentation: Data(repeating: 0x5A, count: 32))

    /// The session side of one profile, for session frames: made at each use, not kept. An
    /// `Identity` holds its public keys as `Data`, which refers to its bytes through an enum's
    /// spare bits; kept in a global, LeakSanitizer would take them for leaked at the end.
    static var identity: Identity { Identity(signing: signer, agreement: agreement) }

    /// A version 3 frame through a fresh session table, as from an announced peer: a handshake
    /// message read (and a first one answered) or a sealed frame refused, never a trap; a
    /// refresh proof read back as it was and checked against a chain, never a trap either.
    static func session(_ frame: [UInt8]) {
        if let proof = try? RefreshProof(decoding: frame) {
            precondition(proof.encoded()[8...] == frame[8...], "a refresh proof reads back differently")
            let heard = ChainLink(index: proof.link.index &- 1, value: Array(frame.suffix(ChainLink.size).reversed()))
            _ = heard.isFollowed(by: proof.link)
        }
        var table = SessionTable(identity: identity)
        if let handshake = try? HandshakeFrame(decoding: frame) {
            // Flags are ignored on reading (and written 0): the rest reads back as it was.
            precondition(handshake.encoded()[8...] == frame[8...], "a handshake frame reads back differently")
            let peer = SessionPeer(signingKey: handshake.sender, agreementKey: Data(repeating: 9, count: 32))
            _ = try? table.receive(handshake, from: peer, now: 0)
        }
        precondition((try? table.open(frame, now: 0)) == nil, "a sealed frame opened without a session")
        if frame[5] == KindTable.envelope { envelope(frame) }
    }

    /// An envelope read and opened (the seed's opens, the fuzzer's altered ones do not), and what
    /// it would hold sealed and opened again, and padded for a broker and read back: each
    /// exactly as it was.
    static func envelope(_ frame: [UInt8]) {
        _ = Envelope.recipient(of: frame)
        _ = Envelope.open(frame, with: [agreement])
        let inner = Array(frame.dropFirst(8))
        let sealed = try! Envelope.seal(inner, to: agreement.publicKey.rawRepresentation, as: .agreementKey)
        precondition(Envelope.open(sealed, with: [agreement]) == inner, "an envelope opens to something else")
        _ = BrokerPadding.unpad(frame)
        if let padded = BrokerPadding.pad(frame) { precondition(BrokerPadding.unpad(padded) == frame, "padding reads back differently") }
    }

    static func packet(_ bytes: [UInt8]) {
        guard let first = bytes.first else { return }
        var frame = bytes
        if first & 1 == 1, bytes.count >= 2 {
            // Framing, key and signature made valid around a fuzzed type and payload.
            let body = Array(bytes.dropFirst(2).prefix(Wire.maximumDatagram - Wire.headerSize - Wire.signatureSize))
            frame = Wire.magic + [Wire.version, bytes[1] % 9, 0, 0] + signer.publicKey.rawRepresentation
            frame += [0, 0, 0, 0, 0, 0, 0, 1, 0, 0, 0, 1, UInt8(body.count >> 8), UInt8(body.count & 0xFF)] + body
            frame += try! signer.signature(for: frame)
        }
        if first & 3 == 2, bytes.count >= 2 {
            // A version 3 frame: a fuzzed sealed frame, handshake message, refresh proof or
            // envelope behind a valid start.
            let type = [KindTable.sealed, KindTable.handshake, KindTable.refreshProof, KindTable.envelope][Int(bytes[1] % 4)]
            frame = Wire.magic + [SessionWire.version, type] + bytes.dropFirst(2)
        }
        if frame.count > 5, frame[4] == SessionWire.version {
            return session(frame)
        }
        // The header read before any check (what is dropped unchecked) never traps, on any input
        // (`decode` reads its fields through it only after its own checks).
        _ = UncheckedHeader(frame)
        guard let packet = try? Packet.decode(frame) else { return }
        // Every core kind's reader, on whatever payload came with its number.
        switch packet.kind {
        case Goodbye.code: _ = try? packet.read(Goodbye.self)
        case Query.code: _ = try? packet.read(Query.self)
        case AvatarRequest.code: _ = try? packet.read(AvatarRequest.self)
        case AvatarImage.code: _ = try? packet.read(AvatarImage.self)
        case MessageFragment.code: _ = try? packet.read(MessageFragment.self)
        case MessageBundle.code: _ = try? packet.read(MessageBundle.self)
        case SessionFragments.code:
            if let carried = try? packet.read(SessionFragments.self) {
                precondition(carried.fragments.allSatisfy { $0.text.count <= MessageCrypto.fragmentText }, "a fragment read past its bound")
            }
        case Acknowledgement.code: _ = try? packet.read(Acknowledgement.self)
        case ReadReceipt.code: _ = try? packet.read(ReadReceipt.self)
        default: break
        }
        if let announcement = try? packet.read(Announcement.self) {
            precondition(NameRules.violation(announcement.name) == nil, "a decoded name breaks the rules")
            precondition(!SafeText.containsUnsafe(announcement.name), "a decoded name is unsafe to print")
            if case .emoji(let emoji) = announcement.avatar { precondition(NameRules.isEmoji(emoji)) }
        }
    }

    static func tokenizer(_ bytes: [UInt8]) {
        let line = String(decoding: bytes, as: UTF8.self)
        if let commands = try? Tokenizer.commands(in: line) {
            precondition(commands.allSatisfy { !$0.isEmpty })
            // What the tokenizer reads, quoted back, reads the same.
            for words in commands {
                let quoted = words.map(Tokenizer.quote).joined(separator: " ")
                precondition((try? Tokenizer.commands(in: quoted)) == [words], "quote does not round-trip \(words)")
            }
        }
        _ = Tokenizer.partialCommand(line)
        let shown = SafeText.visible(line, keepNewlines: true)
        precondition(!shown.unicodeScalars.contains { $0.value < 0x20 && $0 != "\n" || (0x7F...0x9F).contains($0.value) })
        _ = DisplayWidth.wrap(shown, width: 1 + Int(bytes.first ?? 0) % 80)
    }

    static func image(_ bytes: [UInt8]) {
        if let header = ImageHeader.parse(bytes) { precondition(header.width >= 0 && header.height >= 0) }
        // The whole decoder behind the header checks: only small images get this far.
        if let image = try? ImageDecoder.decode(bytes) {
            precondition(image.width <= ImageError.maximumSide && image.height <= ImageError.maximumSide)
            _ = ImageRenderer(.plain).render(image, columns: 20, rows: 10)
        }
    }

    /// `--broker URL`: whatever is accepted has a host and a port in range, and is shown
    /// without its password.
    static func broker(_ bytes: [UInt8]) {
        guard let address = try? BrokerAddress(parsing: String(decoding: bytes, as: UTF8.self)) else { return }
        precondition(!address.host.isEmpty && (1...65_535).contains(address.port))
        if let password = address.password, !password.isEmpty {
            precondition(!address.description.contains(":" + password + "@"), "a password is shown")
        }
        if address.password == nil {
            // What is shown reads back as the same broker.
            precondition((try? BrokerAddress(parsing: address.description)) == address, "\(address) does not read back")
        }
    }
}
