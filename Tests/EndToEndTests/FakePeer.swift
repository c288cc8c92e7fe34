import Crypto
import Foundation
import Glibc
import Nearby
import Noise

/// A peer made by the test, not by seance: it signs whatever packets it is told to, as an
/// attacker on the same network could. It lives on loopback inside the suite's private network
/// namespace (never on a real interface): it multicasts on `lo` and receives on its own port.
final class FakePeer {
    let signing: Curve25519.Signing.PrivateKey
    let agreement = Curve25519.KeyAgreement.PrivateKey()
    let group: String
    let port: UInt16
    private let socketFD: Int32
    private(set) var unicastPort: UInt16 = 0
    private var sequence: UInt32 = 0
    /// Sessions made with real seances, by their signing key (as PROTOCOL.md says, not with
    /// seance's own session table).
    private var sessions: [Data: FakeSession] = [:]

    var signingKey: Data { signing.publicKey.rawRepresentation }

    /// `host`: the address it sends from, and multicasts by (loopback, or a test host's).
    init(group: String = "239.255.77.77", port: UInt16, signing: Curve25519.Signing.PrivateKey = .init(), host: String = "127.0.0.1") {
        self.group = group
        self.port = port
        self.signing = signing
        socketFD = socket(AF_INET, Int32(SOCK_DGRAM.rawValue), 0)
        var address = sockaddr_in()
        address.sin_family = sa_family_t(AF_INET)
        address.sin_addr.s_addr = inet_addr(host)
        _ = withUnsafePointer(to: &address) { $0.withMemoryRebound(to: sockaddr.self, capacity: 1) {
            bind(socketFD, $0, socklen_t(MemoryLayout<sockaddr_in>.size)) } }
        var length = socklen_t(MemoryLayout<sockaddr_in>.size)
        _ = withUnsafeMutablePointer(to: &address) { $0.withMemoryRebound(to: sockaddr.self, capacity: 1) {
            getsockname(socketFD, $0, &length) } }
        unicastPort = UInt16(bigEndian: address.sin_port)
        var interface = in_addr(s_addr: inet_addr(host))
        _ = setsockopt(socketFD, Int32(IPPROTO_IP), IP_MULTICAST_IF, &interface, socklen_t(MemoryLayout<in_addr>.size))
        var ttl: UInt8 = 1
        _ = setsockopt(socketFD, Int32(IPPROTO_IP), IP_MULTICAST_TTL, &ttl, 1)
        var buffer: Int32 = 4 << 20
        _ = setsockopt(socketFD, SOL_SOCKET, SO_RCVBUF, &buffer, socklen_t(MemoryLayout<Int32>.size))
    }

    deinit { close(socketFD) }

    /// A signed datagram of this peer (`timestamp` defaults to now).
    func packet<Kind: PacketKind>(_ payload: Kind, timestamp: UInt64? = nil) throws -> [UInt8] {
        sequence &+= 1
        return try Packet.encode(payload, signer: signing, timestamp: timestamp ?? UInt64(Date().timeIntervalSince1970 * 1000),
                                 sequence: sequence)
    }

    func announcement(name: String, plane: UInt8 = 0, avatar: AvatarReference = .none, intervalMilliseconds: UInt32 = 5_000) -> Announcement {
        Announcement(name: name, agreementKey: agreement.publicKey.rawRepresentation, plane: plane, avatar: avatar,
                     unicastPort: unicastPort, intervalMilliseconds: intervalMilliseconds)
    }

    /// Raw bytes to the group (as an announcement goes).
    func multicast(_ bytes: [UInt8]) { send(bytes, to: group, port: port) }

    /// Raw bytes to one port on loopback (as a direct packet goes).
    func send(_ bytes: [UInt8], to host: String = "127.0.0.1", port: UInt16) {
        var address = sockaddr_in()
        address.sin_family = sa_family_t(AF_INET)
        address.sin_port = port.bigEndian
        address.sin_addr.s_addr = inet_addr(host)
        _ = bytes.withUnsafeBytes { raw in withUnsafePointer(to: &address) { $0.withMemoryRebound(to: sockaddr.self, capacity: 1) {
            sendto(socketFD, raw.baseAddress, raw.count, 0, $0, socklen_t(MemoryLayout<sockaddr_in>.size)) } } }
    }

    /// Datagrams that reached this peer's own port within `timeout` seconds, raw.
    private func receiveRaw(timeout: Double, until enough: ([UInt8]) -> Bool) -> [UInt8]? {
        let deadline = Date().addingTimeInterval(timeout)
        var buffer = [UInt8](repeating: 0, count: 2048)
        while Date() < deadline {
            var poller = pollfd(fd: socketFD, events: Int16(POLLIN), revents: 0)
            guard poll(&poller, 1, Int32(max(1, deadline.timeIntervalSinceNow * 1000))) > 0 else { continue }
            let count = recv(socketFD, &buffer, buffer.count, 0)
            if count > 0, enough(Array(buffer[0..<count])) { return Array(buffer[0..<count]) }
        }
        return nil
    }

    /// Packets that reached this peer's own port within `timeout` seconds: signed ones, and
    /// those sealed in a session this peer made.
    func receive(timeout: Double, until enough: ([Packet]) -> Bool = { _ in false }) -> [Packet] {
        var packets: [Packet] = []
        _ = receiveRaw(timeout: timeout) { bytes in
            if let packet = try? Packet.decode(bytes) {
                packets.append(packet)
            } else if let packet = sessions.values.lazy.compactMap({ $0.open(bytes) }).first, packet.kind != 0 {
                packets.append(packet)
            }
            return enough(packets)
        }
        return packets
    }

    /// The session with the seance of `key` listening on `port`, made by a handshake (this peer
    /// starts it) the first time: step 1, its answer, step 3, and the empty frame confirming it.
    func session(with key: Data, agreementKey: Data, port: UInt16) throws -> FakeSession {
        if let session = sessions[key] { return session }
        let prologue = Array("seance session v3".utf8) + signingKey + key
        var handshake = HandshakeState(initiator: true, prologue: prologue, s: agreement)
        let myIndex = UInt32.random(in: 1...UInt32.max)
        send(HandshakeFrame(sender: signingKey, recipient: key, senderIndex: myIndex, recipientIndex: 0, step: 1,
                            message: try handshake.writeMessage().message).encoded(), port: port)
        guard let answer = receiveRaw(timeout: 10, until: { (try? HandshakeFrame(decoding: $0)).map { $0.step == 2 && $0.recipientIndex == myIndex } == true }),
              let second = try? HandshakeFrame(decoding: answer) else { throw FakePeerError.noAnswer }
        _ = try handshake.readMessage(second.message)
        guard handshake.rs == Array(agreementKey) else { throw FakePeerError.wrongKey }
        let (last, split) = try handshake.writeMessage()
        send(HandshakeFrame(sender: signingKey, recipient: key, senderIndex: myIndex, recipientIndex: second.senderIndex, step: 3,
                            message: last).encoded(), port: port)
        let session = FakeSession(peer: key, remoteIndex: second.senderIndex, sending: split!.0, receiving: split!.1)
        guard receiveRaw(timeout: 10, until: { session.open($0) != nil }) != nil else { throw FakePeerError.noAnswer }
        sessions[key] = session
        return session
    }

    /// A direct packet of `payload`'s kind to the seance announced as `peer`, sealed in the
    /// session with it (made first if need be).
    func sealed<Kind: PacketKind>(_ payload: Kind, to peer: Announcement, key peerKey: Data) throws -> [UInt8] {
        try session(with: peerKey, agreementKey: peer.agreementKey, port: peer.unicastPort).seal([Kind.code] + payload.encoded())
    }

    /// A direct message to `peer`, sealed for it, in fragments starting at `sequence`.
    func message(_ text: String, to peer: Announcement, key peerKey: Data, sequence first: UInt32,
                 sentAt: UInt64 = UInt64(Date().timeIntervalSince1970 * 1000)) throws -> [[UInt8]] {
        let key = try MessageCrypto.key(mine: agreement, theirs: peer.agreementKey, mySigningKey: signingKey, theirSigningKey: peerKey)
        return try MessageCrypto.fragments(of: text, firstSequence: first, sentAt: sentAt).map { fragment in
            let sealed = try MessageCrypto.seal(fragment, key: key, sender: signingKey, recipient: peerKey)
            return try self.sealed(MessageFragment(recipient: peerKey, sealed: sealed), to: peer, key: peerKey)
        }
    }
}

enum FakePeerError: Error { case noAnswer, wrongKey }

/// One session of a fake peer: frames as PROTOCOL.md lays them out, counters from 0.
final class FakeSession {
    let peer: Data
    let remoteIndex: UInt32
    private var sending: CipherState
    private let receiving: CipherState
    private var counter: UInt64 = 0

    init(peer: Data, remoteIndex: UInt32, sending: CipherState, receiving: CipherState) {
        self.peer = peer
        self.remoteIndex = remoteIndex
        self.sending = sending
        self.receiving = receiving
    }

    /// A sealed frame of `inner` (kind, payload); `counter` replays an earlier one's.
    func seal(_ inner: [UInt8], counter given: UInt64? = nil) throws -> [UInt8] {
        let n = given ?? counter
        if given == nil { counter += 1 }
        let header = SealedFrame.header(recipientIndex: remoteIndex, counter: n)
        return header + (try sending.encrypt(nonce: n, ad: header, plaintext: inner))
    }

    /// A frame of this session opened (kind 0 for the empty confirmation), or nil.
    func open(_ bytes: [UInt8]) -> Packet? {
        guard let (_, counter) = try? SealedFrame.fields(of: bytes),
              let inner = try? receiving.decrypt(nonce: counter, ad: bytes[0..<SealedFrame.headerSize],
                                                 ciphertext: bytes[SealedFrame.headerSize...]), !inner.isEmpty else { return nil }
        return Packet(sealedKind: inner[0], sender: peer, body: Array(inner[1...]))
    }
}

/// Listens on the group on `lo` for announcements (to learn a real seance's keys and port).
final class GroupListener {
    private let socketFD: Int32

    init(group: String = "239.255.77.77", port: UInt16, host: String = "127.0.0.1") {
        socketFD = socket(AF_INET, Int32(SOCK_DGRAM.rawValue), 0)
        var one: Int32 = 1
        _ = setsockopt(socketFD, SOL_SOCKET, SO_REUSEADDR, &one, socklen_t(MemoryLayout<Int32>.size))
        _ = setsockopt(socketFD, SOL_SOCKET, SO_REUSEPORT, &one, socklen_t(MemoryLayout<Int32>.size))
        var address = sockaddr_in()
        address.sin_family = sa_family_t(AF_INET)
        address.sin_port = port.bigEndian
        address.sin_addr.s_addr = INADDR_ANY
        _ = withUnsafePointer(to: &address) { $0.withMemoryRebound(to: sockaddr.self, capacity: 1) {
            bind(socketFD, $0, socklen_t(MemoryLayout<sockaddr_in>.size)) } }
        var request = ip_mreq(imr_multiaddr: in_addr(s_addr: inet_addr(group)), imr_interface: in_addr(s_addr: inet_addr(host)))
        _ = setsockopt(socketFD, Int32(IPPROTO_IP), IP_ADD_MEMBERSHIP, &request, socklen_t(MemoryLayout<ip_mreq>.size))
    }

    deinit { close(socketFD) }

    /// The first announcement named `name` heard within `timeout` seconds, with its sender's key.
    func announcement(of name: String, timeout: Double) -> (key: Data, announcement: Announcement)? {
        let deadline = Date().addingTimeInterval(timeout)
        var buffer = [UInt8](repeating: 0, count: 2048)
        while Date() < deadline {
            var poller = pollfd(fd: socketFD, events: Int16(POLLIN), revents: 0)
            guard poll(&poller, 1, 100) > 0 else { continue }
            let count = recv(socketFD, &buffer, buffer.count, 0)
            guard count > 0, let packet = try? Packet.decode(Array(buffer[0..<count])),
                  let announcement = try? packet.read(Announcement.self), announcement.name == name else { continue }
            return (packet.sender, announcement)
        }
        return nil
    }
}

/// CPU time a process has used, in seconds (utime + stime from /proc).
func cpuSeconds(of pid: Int32) -> Double? {
    guard let text = try? String(contentsOfFile: "/proc/\(pid)/stat", encoding: .utf8),
          let close = text.lastIndex(of: ")") else { return nil }
    let fields = text[text.index(after: close)...].split(separator: " ")
    guard fields.count > 13, let user = Double(fields[11]), let system = Double(fields[12]) else { return nil }
    return (user + system) / Double(sysconf(Int32(_SC_CLK_TCK)))
}
