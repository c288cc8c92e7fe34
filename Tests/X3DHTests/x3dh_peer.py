"""An independent X3DH for X3DHTests: PyPI's `x3dh` (installed by `make test` into
.build/test-venv), with X25519 identity keys, SHA-256 and no one-time prekey, playing one side
of an agreement whose other side is seance's. Keys are hex on the command line; it prints
`sk HEX`, `ad HEX` and, as Alice, `ek HEX` (her ephemeral public key).

    x3dh_peer.py bob INFO IK_B_PRIVATE SPK_B_PRIVATE IK_A_PUBLIC EK_A_PUBLIC
    x3dh_peer.py alice INFO IK_A_PRIVATE IK_B_PRIVATE SPK_B_PRIVATE

As Alice it needs Bob's private identity key only to sign his prekey with XEdDSA, as this
library checks bundles (seance signs prekeys with a separate Ed25519 key instead)."""
import asyncio
import sys

import x3dh
import xeddsa


class State(x3dh.BaseState):
    @staticmethod
    def _encode_public_key(key_format, pub):
        return pub


def state(info, identity, prekey):
    spk_pub = xeddsa.priv_to_curve25519_pub(prekey)
    signer = xeddsa.priv_force_sign(identity, False)
    model = x3dh.BaseStateModel(
        identity_key=x3dh.IdentityKeyPairModel(secret=identity, secret_type="PRIV"),
        signed_pre_key=x3dh.SignedPreKeyPairModel(priv=prekey, sig=xeddsa.ed25519_priv_sign(signer, spk_pub), timestamp=0),
        old_signed_pre_key=None,
        pre_keys=frozenset())
    return State.from_model(model, x3dh.IdentityKeyFormat.CURVE_25519, x3dh.HashFunction.SHA_256, info)


async def main():
    role, info, *keys = sys.argv[1:]
    info = info.encode()
    keys = [bytes.fromhex(key) for key in keys]
    if role == "bob":
        identity, prekey, alice, ephemeral = keys
        bob = state(info, identity, prekey)
        header = x3dh.Header(identity_key=alice, ephemeral_key=ephemeral, pre_key=None,
                             signed_pre_key=xeddsa.priv_to_curve25519_pub(prekey))
        secret, associated, _ = await bob.get_shared_secret_passive(header, require_pre_key=False)
    else:
        identity, bob_identity, bob_prekey = keys
        alice = state(info, identity, bob_prekey)  # her own prekey plays no part
        bundle = state(info, bob_identity, bob_prekey).bundle
        secret, associated, header = await alice.get_shared_secret_active(bundle, require_pre_key=False)
        print("ek " + header.ephemeral_key.hex())
    print("sk " + secret.hex())
    print("ad " + associated.hex())


asyncio.run(main())
