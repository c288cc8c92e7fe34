"""A hostile peer for the soak (`bench/soak.py`), speaking seance's wire from docs/PROTOCOL.md
alone, from the host (network namespace) it runs in, for as long as it is told:

- `forged`: frames in a listed peer's name that prove nothing — handshake first messages with
  random ephemeral keys and refresh proofs with random links — sent to the victim (issue 49's
  silencing attack);
- `half-open`: a crowd of announced keys each starting handshakes with the victim, and never
  finishing one;
- `offers`: a crowd of announced keys, each with a session made with the victim (Noise XX, by
  the `noiseprotocol` package), offering files without end;
- `chunks`: the same crowd, sending chunks of files never offered.

    ip netns exec HOST python3 bench/hostile_peer.py --address 198.18.0.3 --kind offers --keys 1000 --seconds 600

The victim and the peer it lists are found by their announcements on the presence group. It
prints `ready` once its keys are announced (and their sessions made), then `sent N` at the end."""
import argparse
import os
import select
import socket
import struct
import sys
import time

from cryptography.hazmat.primitives.asymmetric.x25519 import X25519PrivateKey
from cryptography.hazmat.primitives.serialization import Encoding, PrivateFormat, PublicFormat, NoEncryption
from noise.connection import Keypair, NoiseConnection

from frames import Identity, MAGIC

GROUP, PORT = "239.255.77.77", 47777
HANDSHAKE, SEALED, PROOF = 19, 20, 25
OFFER, CHUNK = 21, 23
PROLOGUE = b"seance session v3"


def announcement_payload(agreement, name, port, interval_ms=5000):
    encoded = name.encode()
    return agreement + bytes([0, len(encoded)]) + encoded + bytes([0, 0]) + struct.pack(">HI", port, interval_ms) + bytes([1, 0, 1, 3])


def parse_announcement(data):
    """(sender key, agreement key, name, unicast port) of a signed announcement, or None."""
    if len(data) < 54 + 40 or data[:4] != MAGIC or data[4] != 2 or data[5] != 1:
        return None
    sender = data[8:40]
    payload = data[54:54 + struct.unpack(">H", data[52:54])[0]]
    agreement, length = payload[:32], payload[33]
    name = payload[34:34 + length].decode(errors="replace")
    rest = payload[34 + length:]
    avatar_length = rest[1]
    port = struct.unpack(">H", rest[2 + avatar_length:4 + avatar_length])[0]
    return sender, agreement, name, port


class Victim:
    """What the presence group says of the victim and of the peer it lists."""

    def __init__(self, address, victim, listed):
        self.sock = socket.socket(socket.AF_INET, socket.SOCK_DGRAM)
        self.sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
        self.sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEPORT, 1)
        self.sock.bind(("", PORT))
        self.sock.setsockopt(socket.IPPROTO_IP, socket.IP_ADD_MEMBERSHIP, socket.inet_aton(GROUP) + socket.inet_aton(address))
        self.found = {}
        deadline = time.time() + 60
        while time.time() < deadline and not all(name in self.found for name in (victim, listed) if name):
            ready, _, _ = select.select([self.sock], [], [], 1)
            if ready:
                data, source = self.sock.recvfrom(2048)
                parsed = parse_announcement(data)
                if parsed:
                    self.found[parsed[2]] = (parsed[0], parsed[1], source[0], parsed[3])
        missing = [name for name in (victim, listed) if name and name not in self.found]
        if missing:
            sys.exit(f"never heard {', '.join(missing)}")


class Attacker:
    def __init__(self, args):
        self.args = args
        heard = Victim(args.address, args.victim, args.listed if args.kind == "forged" else None)
        self.victim_key, _, self.victim_ip, self.victim_port = heard.found[args.victim]
        self.listed_key = heard.found[args.listed][0] if args.kind == "forged" else None
        heard.sock.close()
        self.sock = socket.socket(socket.AF_INET, socket.SOCK_DGRAM)
        self.sock.bind((args.address, args.port))
        self.sock.setsockopt(socket.SOL_SOCKET, socket.SO_SNDBUF, 4 << 20)
        self.group = socket.socket(socket.AF_INET, socket.SOCK_DGRAM)
        self.group.setsockopt(socket.IPPROTO_IP, socket.IP_MULTICAST_TTL, 1)
        self.group.setsockopt(socket.IPPROTO_IP, socket.IP_MULTICAST_IF, socket.inet_aton(args.address))
        self.sent = 0

    def send(self, frame):
        try:
            self.sock.sendto(frame, (self.victim_ip, self.victim_port))
            self.sent += 1
        except (BlockingIOError, OSError):
            pass

    def paced(self, frames, rate, seconds):
        """Sends what `frames()` yields at `rate` a second for `seconds`."""
        began, n = time.perf_counter(), 0
        source = frames()
        while time.perf_counter() - began < seconds:
            due = int((time.perf_counter() - began) * rate) + 1
            while n < due:
                self.send(next(source))
                n += 1
            self.drain()
            time.sleep(0.002)

    def drain(self):
        """Reads (and drops) what the victim sends back."""
        while select.select([self.sock], [], [], 0)[0]:
            self.sock.recvfrom(2048)

    # Frames

    def step1(self, sender, index, ephemeral):
        return MAGIC + bytes([3, HANDSHAKE, 0, 0]) + sender + self.victim_key + struct.pack(">II", index, 0) + bytes([1]) + ephemeral

    def forged(self):
        while True:
            yield self.step1(self.listed_key, struct.unpack(">I", os.urandom(4))[0] | 1, os.urandom(32))
            yield (MAGIC + bytes([3, PROOF, 0, 0]) + self.listed_key + struct.pack(">HI", self.args.port, 1 + os.urandom(1)[0])
                   + os.urandom(32))

    def crowd(self):
        """`--keys` identities, announced to the group within the victim's allowance for one
        host (some 18 a second)."""
        self.peers = []
        for n in range(self.args.keys):
            identity = Identity()
            static = X25519PrivateKey.generate()
            agreement = static.public_key().public_bytes(Encoding.Raw, PublicFormat.Raw)
            self.group.sendto(identity.frame(1, announcement_payload(agreement, f"h{n}", self.args.port, 600_000)), (GROUP, PORT))
            self.peers.append((identity, static))
            self.drain()
            time.sleep(1 / 18)

    def handshake(self, identity, static):
        """A session with the victim, initiated; (connection, the victim's index for us)."""
        noise = NoiseConnection.from_name(b"Noise_XX_25519_ChaChaPoly_SHA256")
        noise.set_as_initiator()
        noise.set_keypair_from_private_bytes(Keypair.STATIC, static.private_bytes(Encoding.Raw, PrivateFormat.Raw, NoEncryption()))
        noise.set_prologue(PROLOGUE + identity.public + self.victim_key)
        noise.start_handshake()
        index = struct.unpack(">I", os.urandom(4))[0] | 1
        self.send(self.step1(identity.public, index, noise.write_message(b"")))
        deadline = time.time() + 2
        while time.time() < deadline:
            if not select.select([self.sock], [], [], 0.2)[0]:
                continue
            data, _ = self.sock.recvfrom(2048)
            if len(data) < 81 or data[5] != HANDSHAKE or data[80] != 2 or struct.unpack(">I", data[76:80])[0] != index:
                continue
            theirs = struct.unpack(">I", data[72:76])[0]
            noise.read_message(data[81:])
            step3 = noise.write_message(b"")
            self.send(MAGIC + bytes([3, HANDSHAKE, 0, 0]) + identity.public + self.victim_key + struct.pack(">II", index, theirs) + bytes([3])
                      + step3)
            return noise, theirs
        return None

    def sessions(self):
        self.crowd()
        self.made = []
        for identity, static in self.peers:
            made = self.handshake(identity, static)
            if made:
                self.made.append([made[0], made[1], 0])
            time.sleep(1 / 18)

    def sealed(self, session, inner):
        noise, index, counter = session
        header = MAGIC + bytes([3, SEALED, 0, 0]) + struct.pack(">IQ", index, counter)
        session[2] += 1
        return header + noise.noise_protocol.cipher_state_encrypt.encrypt_with_ad(header, inner)

    def offers(self):
        while True:
            for session in self.made:
                name = b"gift.bin"
                offer = (os.urandom(16) + bytes([0]) + struct.pack(">QH", 1 << 20, 1100) + os.urandom(32)
                         + struct.pack(">Q", int(time.time() * 1000)) + bytes([len(name)]) + name)
                yield self.sealed(session, bytes([OFFER]) + offer)

    def chunks(self):
        while True:
            for session in self.made:
                data = os.urandom(1100)
                yield self.sealed(session, bytes([CHUNK]) + os.urandom(16) + struct.pack(">IH", 0, len(data)) + data)

    def half_open(self):
        while True:
            for identity, _ in self.peers:
                yield self.step1(identity.public, struct.unpack(">I", os.urandom(4))[0] | 1, os.urandom(32))


def main():
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--address", required=True, help="this host's address")
    parser.add_argument("--kind", required=True, choices=["forged", "half-open", "offers", "chunks"])
    parser.add_argument("--victim", default="ann")
    parser.add_argument("--listed", default="ben", help="the peer whose name forged frames claim")
    parser.add_argument("--keys", type=int, default=1000)
    parser.add_argument("--rate", type=int, default=2000, help="frames a second once ready")
    parser.add_argument("--seconds", type=float, default=600)
    parser.add_argument("--port", type=int, default=40000, help="the unicast port its keys announce")
    args = parser.parse_args()
    attacker = Attacker(args)
    frames = {"forged": attacker.forged, "half-open": attacker.half_open, "offers": attacker.offers, "chunks": attacker.chunks}[args.kind]
    if args.kind == "half-open":
        attacker.crowd()
    elif args.kind in ("offers", "chunks"):
        attacker.sessions()
        print(f"sessions {len(attacker.made)}", flush=True)
    print("ready", flush=True)
    attacker.paced(frames, args.rate, args.seconds)
    print(f"sent {attacker.sent}", flush=True)


if __name__ == "__main__":
    main()
