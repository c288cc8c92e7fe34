"""An independent Noise peer for NoiseTests: the `noiseprotocol` package (installed by
`make test` into .build/test-venv) plays one side of Noise_XX_25519_ChaChaPoly_SHA256 against
seance's own implementation, over this process's stdin and stdout, one hex line a message.

    noise_peer.py initiator|responder STATIC_PRIVATE_HEX PROLOGUE_HEX

After the handshake it prints `rs HEX` (the static key it learnt) and `hash HEX` (the
handshake hash), sends one transport message of its own, then answers each one it reads with
`echo: ` and the text, until stdin ends."""
import sys

from noise.connection import Keypair, NoiseConnection


def main():
    role, static, prologue = sys.argv[1], bytes.fromhex(sys.argv[2]), bytes.fromhex(sys.argv[3])
    noise = NoiseConnection.from_name(b"Noise_XX_25519_ChaChaPoly_SHA256")
    noise.set_as_initiator() if role == "initiator" else noise.set_as_responder()
    noise.set_keypair_from_private_bytes(Keypair.STATIC, static)
    noise.set_prologue(prologue)
    noise.start_handshake()
    # The connection lets go of its handshake state when done; this keeps what it learnt.
    handshake = noise.noise_protocol.handshake_state

    def say(line):
        print(line, flush=True)

    my_turn = role == "initiator"
    while not noise.handshake_finished:
        if my_turn:
            say(noise.write_message(b"").hex())
        else:
            noise.read_message(bytes.fromhex(sys.stdin.readline().strip()))
        my_turn = not my_turn
    say("rs " + handshake.rs.public_bytes.hex())
    say("hash " + noise.get_handshake_hash().hex())
    say(noise.encrypt(b"from python").hex())
    for line in sys.stdin:
        text = noise.decrypt(bytes.fromhex(line.strip()))
        say(noise.encrypt(b"echo: " + bytes(text)).hex())


if __name__ == "__main__":
    main()
