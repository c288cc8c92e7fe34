"""A hostile neighbour: fresh, validly signed announcements from a set of throwaway keys,
multicast to the presence group at a steady rate, from the host (network namespace) it runs
in. Frames are signed before the flood starts (their timestamps spread over it, so each is
fresh when it goes), so the rate is the wire's, not Python's signing.

    ip netns exec HOST python3 bench/flood.py --address 198.18.0.3 --rate 2000 --keys 300 --seconds 8

Their names are x0, x1, … (`block x7 --yes` blocks one, once it has been heard).
"""
import argparse
import hashlib
import socket
import time

from frames import Identity

GROUP, PORT = "239.255.77.77", 47777


def main():
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--address", required=True, help="this host's address: the multicast leaves by its interface")
    parser.add_argument("--rate", type=int, default=2000, help="announcements a second")
    parser.add_argument("--keys", type=int, default=300)
    parser.add_argument("--seconds", type=float, default=8)
    parser.add_argument("--start-in", type=float, default=6, help="seconds from now to the flood (signing comes first)")
    parser.add_argument("--seed", help="make the keys from this text (the same keys in every run), else fresh ones")
    args = parser.parse_args()
    identities = [Identity(hashlib.sha256(f"{args.seed}/{n}".encode()).digest() if args.seed else None) for n in range(args.keys)]
    count = int(args.rate * args.seconds)
    start_ms = int((time.time() + args.start_in) * 1000)
    frames = [identities[n % args.keys].announcement(f"x{n % args.keys}", interval_ms=5000, timestamp_ms=start_ms + n * 1000 // args.rate)
              for n in range(count)]
    sock = socket.socket(socket.AF_INET, socket.SOCK_DGRAM)
    sock.setsockopt(socket.IPPROTO_IP, socket.IP_MULTICAST_TTL, 1)
    sock.setsockopt(socket.IPPROTO_IP, socket.IP_MULTICAST_IF, socket.inet_aton(args.address))
    print("ready", flush=True)
    while time.time() * 1000 < start_ms:
        time.sleep(0.005)
    print("flooding", flush=True)
    began = time.perf_counter()
    sent = 0
    while sent < count:
        due = min(count, int((time.perf_counter() - began) * args.rate) + 1)
        while sent < due:
            try:
                sock.sendto(frames[sent], (GROUP, PORT))
            except BlockingIOError:
                pass
            sent += 1
        time.sleep(0.002)
    print(f"sent {sent} in {time.perf_counter() - began:.2f} s", flush=True)


if __name__ == "__main__":
    main()
