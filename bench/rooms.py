"""Rooms: a line said by the host of a room of 8 (the host and seven guests, eight shells on the
benchmark's own loopback) reaching every guest, beside the raw UDP round trip measured in the
same run; then the rate at which a burst said by the host is shown by all seven. Nothing here
leaves the benchmark's namespace."""
import os
import select
import subprocess
import threading
import time

from common import burst_rate, latency, latency_ratio, make_profile, next_line, one_way, rates, section, wait_for_line

GUESTS = 7
SETS, ROUNDS = 5, 400


def wait_for_all(procs, needle, timeout):
    """The perf_counter() time by which every one of `procs` printed a line containing `needle`
    (each read as it comes, so no pipe fills while another is waited for); None after
    `timeout` seconds."""
    deadline = time.perf_counter() + timeout
    waiting, last = list(procs), None
    while waiting:
        for proc in list(waiting):
            # What it printed so far, without waiting for more.
            while (line := next_line(proc, 0.0001)) is not None:
                if needle in line:
                    waiting.remove(proc)
                    last = time.perf_counter()
                    break
        left = deadline - time.perf_counter()
        if not waiting or left <= 0:
            break
        select.select([proc.stdout.fileno() for proc in waiting if b"\n" not in proc.__dict__.get("pending", b"")],
                      [], [], min(left, 0.05))
    return None if waiting else last


def rooms(binary, work, env, count, reference):
    """`reference(rounds)`: the round trips the latencies are divided by (the raw UDP one)."""
    section("rooms: a line to a room of 8, from its host to all seven guests")
    password = os.path.join(work, "password")
    names = ["host"] + [f"guest{index}" for index in range(1, GUESTS + 1)]
    shells = {}
    try:
        for name in names:
            data = os.path.join(work, f"room-{name}")
            make_profile(binary, data, name, password, env)
            shells[name] = subprocess.Popen([binary, "--data-dir", data], stdin=subprocess.PIPE, stdout=subprocess.PIPE,
                                            stderr=subprocess.DEVNULL, env=env, text=True, bufsize=1)
        host, guests = shells["host"], [shells[name] for name in names[1:]]
        host.stdin.write(f"login host --password-file {password}\nroom host 5 6\n")
        host.stdin.flush()
        if wait_for_line(host, "you host room 5.6", 30) is None:
            print("the host did not open its room")
            return
        # The host's own bubbles are read away, or its pipe fills and the host waits on it.
        threading.Thread(target=lambda: [None for _ in iter(lambda: next_line(host, 3600), None)], daemon=True).start()
        for guest, name in zip(guests, names[1:]):
            guest.stdin.write(f"login {name} --password-file {password}\nroom listen --wait 30\n")
            guest.stdin.flush()
        if wait_for_all(guests, "you joined room 5.6", 40) is None:
            print("not every guest joined the room")
            return
        host.stdin.write("warm up\n")
        host.stdin.flush()
        if wait_for_all(guests, "warm up", 20) is None:
            print("a guest never heard the host")
            return
        sets, references = [], []
        for index in range(SETS):
            time.sleep(0.5)
            references.append(reference(ROUNDS))
            sets.append(one_way(host, guests, [f"ping {index}.{ping}" for ping in range(ROUNDS)], wait=wait_for_all))
        latency("room_latency", sets, "one-way, the host to the last of 7 guests")
        latency("room_udp_round_trip", references, "raw UDP round trip")
        latency_ratio("room_latency_ratio", sets, references, "the LAN's target for one peer: within 10x")
        measured = []
        for burst in range(3):
            rate = burst_rate(host, guests, count, f"burst{burst}", wait=wait_for_all)
            if rate is not None:
                measured.append(rate)
        rates("room_rate", measured, "lines a second, shown by all 7 guests", "each line 7 copies")
    finally:
        for proc in shells.values():
            proc.kill()
            proc.wait()
