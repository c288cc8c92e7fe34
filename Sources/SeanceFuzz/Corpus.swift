import Crypto
import Curses
import Foundation
import Nearby
import Rooms
import Wire

/// The seed corpus: real packets of every kind (the first byte 0 makes the packet target read
/// them as they are; 1 and the kind make it re-sign a fuzzed payload), lines people type, and
/// the images in assets/.
enum Corpus {
    static func write(to directory: String) {
        let signer = FuzzTarget.signer
        let other = SeededKeys(seed: 0x42), mine = SeededKeys(seed: 0x5E)
        let pixels = Data((0..<1024).map { UInt8($0 & 0xFF) })
        let hash = Data(SHA256.hash(data: pixels))
        let announce = Announcement(name: "alice 👻", agreementKey: mine.agreement.publicKey.rawRepresentation, plane: 2,
                                    avatar: .emoji("👻"), unicastPort: 47_778, intervalMilliseconds: 5_000)
        var imageAnnounce = announce
        imageAnnounce.avatar = .image(hash)
        let key = try! MessageCrypto.key(mine: mine.agreement, theirs: other.agreement.publicKey.rawRepresentation,
                                         mySigningKey: signer.publicKey.rawRepresentation, theirSigningKey: other.signingKey)
        let sealed = try! MessageCrypto.seal(Fragment(sequence: 1, isLast: true, sentAt: 1_700_000_000_000, text: Data("hello".utf8)),
                                             key: key, sender: signer.publicKey.rawRepresentation, recipient: other.signingKey)
        let payloads: [any PacketKind] = [announce, imageAnnounce, Goodbye(), AvatarRequest(hash: hash),
                                          AvatarImage(hash: hash, pixels: pixels), MessageFragment(recipient: other.signingKey, sealed: sealed),
                                          Acknowledgement(recipient: other.signingKey, sequence: 3),
                                          ReadReceipt(recipient: other.signingKey, sequence: 3), Query(),
                                          SessionFragments(recipient: other.signingKey,
                                                           fragments: [Fragment(sequence: 1, isLast: true, sentAt: 1_700_000_000_000, text: Data("hello".utf8))])]
        var files: [(String, [UInt8])] = []
        for (index, payload) in payloads.enumerated() {
            let frame = try! Packet.encode(kind: type(of: payload).code, body: try! payload.encoded(), signer: signer,
                                           timestamp: 1_700_000_000_000, sequence: UInt32(index))
            files.append(("packet/frame-\(index)", [0] + frame))
            // The same payload, for re-signing: kind byte, then the body after the header.
            files.append(("packet/payload-\(index)", [1, frame[5]] + frame[Wire.headerSize..<(frame.count - Wire.signatureSize)]))
        }
        // Version 3 frames (2, then 1 for a handshake, 0 for a sealed frame or 2 for a refresh
        // proof, then the frame from its flags on): a first handshake message to this profile, a
        // sealed frame, a proof.
        let handshake = HandshakeFrame(sender: other.signingKey, recipient: signer.publicKey.rawRepresentation, senderIndex: 7,
                                       recipientIndex: 0, step: 1, message: Array(other.agreement.publicKey.rawRepresentation))
        files.append(("packet/session-0", [2, 1] + handshake.encoded()[6...]))
        let sealedFrame = SealedFrame.header(recipientIndex: 7, counter: 1) + Array(sealed)
        files.append(("packet/session-1", [2, 0] + sealedFrame[6...]))
        var chain = RefreshChain(length: 2, seed: Array(repeating: 3, count: 32))
        let proof = RefreshProof(sender: other.signingKey, unicastPort: 47_778, link: chain.next()!)
        files.append(("packet/session-2", [2, 2] + proof.encoded()[6...]))
        // 3 for an envelope: that handshake message as it goes through a broker.
        let envelope = try! Envelope.seal(handshake.encoded(), to: FuzzTarget.identity.agreementPublicKey, as: .agreementKey)
        files.append(("packet/session-3", [2, 3] + envelope[6...]))
        let lines = ["zombies up", "open 'vision 3'; save \"Joyce Byers\"", "echo a\\ b # comment", "profile new ann --password-file ~/pw",
                     "open bob#3fa2", "chat", "remind 5 tea is ready", "\"unterminated", "emoji 🚶‍♂️ and 🏴󠁧󠁢󠁳󠁣󠁴󠁿", "zombies zombies stats"]
        for (index, line) in lines.enumerated() { files.append(("tokenizer/line-\(index)", Array(line.utf8))) }
        let brokers = ["mqtt://198.18.0.1", "mqtts://ann:s%40cret@broker.test:8884/", "mqtt://[2001:db8::1]:1883", "mqtt://a:b:c@h:1",
                       "MQTT://h:65535", "mqtt://h:0", "mqtt://[::1"]
        for (index, url) in brokers.enumerated() { files.append(("broker/url-\(index)", Array(url.utf8))) }
        // The engine: a kind's index in the table, the tenths of a second to let pass, and a
        // payload as each kind writes it (what names a recipient names another key than the
        // harness's shell, which has a key of its own: the fuzzer finds the rest).
        let target = other.signingKey, room = RoomID(major: 7, minor: 42), id = Data(repeating: 3, count: 16)
        let engine: [any PacketKind] = payloads + [
            CurseCast(target: target, kind: .silence, minutes: 5, id: id), CurseAnswer(caster: target, id: id, outcome: .tookHold),
            SpellCast(target: target, phrase: "abracadabra"), Beacon(room: room, counter: 1, intervalMilliseconds: 1_000),
            RoomProbe(room: room, nonce: 9, proximity: .near), RoomRoster(room: room, echo: 9, members: [.init(key: target, proximity: .far)]),
            RoomMembership(room: room, action: .leave), RoomLineAck(room: room, host: target, id: id),
        ]
        // Mail, carrying a message and an acknowledgement.
        func sealedMail<Kind: PacketKind>(_ packet: Kind) -> Mail {
            try! Mail.seal(packet, for: target, agreementKey: Curve25519.KeyAgreement.PrivateKey().publicKey.rawRepresentation,
                           prekey: Curve25519.KeyAgreement.PrivateKey().publicKey.rawRepresentation, from: announce,
                           identity: .init(), sender: target)
        }
        let mail: [any PacketKind] = [sealedMail(MessageFragment(recipient: target, sealed: sealed)),
                                      sealedMail(Acknowledgement(recipient: target, sequence: 3))]
        for (index, payload) in (engine + mail).enumerated() {
            let code = type(of: payload).code
            let position = UInt8(EngineHarness.kinds.firstIndex(of: code)!)
            files.append(("engine/kind-\(index)", [position, UInt8(index % 3)] + (try! payload.encoded())))
        }
        // Reassembly: a message of three fragments in order, the same out of order and twice, and
        // one that never ends.
        func fragment(_ sequence: UInt16, last: Bool, _ text: String) -> [UInt8] {
            [UInt8(sequence >> 8), UInt8(sequence & 0xFF), last ? 1 : 0, UInt8(text.utf8.count)] + Array(text.utf8)
        }
        files.append(("reassembly/in-order", fragment(1, last: false, "he") + fragment(2, last: false, "ll") + fragment(3, last: true, "o")))
        files.append(("reassembly/shuffled", fragment(3, last: true, "o") + fragment(1, last: false, "he") + fragment(3, last: true, "o")
                      + fragment(2, last: false, "ll") + fragment(4, last: true, "!")))
        files.append(("reassembly/endless", (1...25).flatMap { fragment(UInt16($0), last: false, "x") }))
        for (name, bytes) in files {
            let path = directory + "/" + name
            try? FileManager.default.createDirectory(atPath: (path as NSString).deletingLastPathComponent, withIntermediateDirectories: true)
            _ = FileManager.default.createFile(atPath: path, contents: Data(bytes))
        }
        print("wrote \(files.count) inputs to \(directory)")
    }
}

/// Keys made from a seed, so the corpus is the same every time it is written.
struct SeededKeys {
    let signing: Curve25519.Signing.PrivateKey
    let agreement: Curve25519.KeyAgreement.PrivateKey
    var signingKey: Data { signing.publicKey.rawRepresentation }

    init(seed: UInt8) {
        signing = try! .init(rawRepresentation: Data(repeating: seed, count: 32))
        agreement = try! .init(rawRepresentation: Data(repeating: seed &+ 1, count: 32))
    }
}
