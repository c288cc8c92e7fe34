"""A site of profiles on a broker, as its clients would leave it: each profile's signed
announcement retained on its presence topic (PROTOCOL.md, "Through an MQTT broker"), published
at QoS 1 by one client that waits until the broker has taken every one. Runs in the tests'
virtual environment (paho-mqtt, cryptography); the broker is on loopback, in the namespace."""
import argparse
import threading
import time

import paho.mqtt.client as mqtt

from frames import Identity


def main():
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--port", type=int, required=True)
    parser.add_argument("--count", type=int, default=1000)
    parser.add_argument("--prefix", default="seance/")
    args = parser.parse_args()
    lock, acknowledged = threading.Lock(), set()

    def published(client, userdata, mid, *rest):
        with lock:
            acknowledged.add(mid)

    client = mqtt.Client(mqtt.CallbackAPIVersion.VERSION2, client_id="seance-site-load")
    client.on_publish = published
    client.connect("127.0.0.1", args.port)
    client.loop_start()
    sent = set()
    for n in range(args.count):
        identity = Identity()
        frame = identity.announcement(f"p{n}", interval_ms=3_600_000)
        sent.add(client.publish(f"{args.prefix}presence/{identity.topic_id}", frame, qos=1, retain=True).mid)
    deadline = time.monotonic() + 120
    while time.monotonic() < deadline:
        with lock:
            if sent <= acknowledged:
                break
        time.sleep(0.05)
    else:
        raise SystemExit(f"the broker took {len(sent & acknowledged)} of {args.count}")
    client.loop_stop()
    client.disconnect()


if __name__ == "__main__":
    main()
