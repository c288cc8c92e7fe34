"""Signed seance frames built from docs/PROTOCOL.md alone, for load scripts: announcements
(type 1) as a crowd, a broker site or a hostile neighbour would send them."""
import hashlib
import os
import struct
import time

from cryptography.hazmat.primitives.asymmetric.ed25519 import Ed25519PrivateKey
from cryptography.hazmat.primitives.serialization import Encoding, PublicFormat

MAGIC = b"SEAN"
ANNOUNCE = 1


class Identity:
    """An Ed25519 signing key (what a profile is known by) and its frames' sequence numbers."""

    def __init__(self, seed=None):
        """`seed`: 32 bytes the key is made from (the same key in another process), else a fresh one."""
        self.key = Ed25519PrivateKey.from_private_bytes(seed) if seed else Ed25519PrivateKey.generate()
        self.public = self.key.public_key().public_bytes(Encoding.Raw, PublicFormat.Raw)
        self.sequence = 0

    @property
    def topic_id(self):
        """The key's ID on a broker: the hex of the first 16 bytes of its SHA-256."""
        return hashlib.sha256(self.public).hexdigest()[:32]

    def frame(self, kind, payload, timestamp_ms=None, flags=0):
        """A version 2 signed frame of `kind` carrying `payload`."""
        self.sequence += 1
        timestamp_ms = int(time.time() * 1000) if timestamp_ms is None else timestamp_ms
        header = MAGIC + bytes([2, kind]) + struct.pack(">H", flags) + self.public
        header += struct.pack(">QIH", timestamp_ms, self.sequence, len(payload))
        signed = header + payload
        return signed + self.key.sign(signed)

    def announcement(self, name, interval_ms, port=1, plane=0, timestamp_ms=None):
        """An announcement of a Human (by default) called `name`, with no avatar, that speaks
        sessions (extension field 1)."""
        encoded = name.encode()
        payload = os.urandom(32) + bytes([plane, len(encoded)]) + encoded + bytes([0, 0])
        payload += struct.pack(">HI", port, interval_ms) + bytes([1, 0, 1, 3])
        return self.frame(ANNOUNCE, payload, timestamp_ms)
