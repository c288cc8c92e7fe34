"""Ten minutes of each hostile peer (issue 49), outside the default benchmark (`make soak`, or
`bench.py --only soak`): the victim ann lists ben, who writes to her once a second, while a
hostile peer on a third host sends, for `minutes` each, frames in ben's name that prove nothing,
half-open handshakes from 1,000 keys, file offers from 1,000 keys with sessions, and chunks of
files never offered from the same. ann's resident memory is sampled every 10 s: flat means
within 5 MiB of its value after the first minute; her CPU is the share of a core over the
attack, beside the hostile section's target for a flood from one host. Fresh shells for each.
Everything on namespace hosts."""
import os
import subprocess
import sys
import threading
import time

from common import Hosts, make_profile, next_line, record, rss_mib, section, wait_for_line
from crowds import cpu_seconds_precise
from hostile import shell

PEER = os.path.join(os.path.dirname(os.path.abspath(__file__)), "hostile_peer.py")
ATTACKS = [("forged", "2,000 forged step 1s and refresh proofs a second in ben's name", 2000),
           ("half-open", "first handshake messages from 1,000 announced keys, 2,000 a second, never finished", 2000),
           ("offers", "file offers from 1,000 keys in sessions, 200 a second", 200),
           ("chunks", "chunks of files never offered from 1,000 keys in sessions, 200 a second", 200)]
TARGET_CORE = 0.10


def soak(binary, work, env, minutes, venv_python, only=()):
    section(f"soak: {minutes:g} minutes of each hostile peer; ann's memory every 10 s (flat: within 5 MiB of minute 1)")
    unknown = set(only) - {kind for kind, _, _ in ATTACKS}
    if unknown:
        sys.exit(f"no hostile peer called {', '.join(sorted(unknown))}; they are {', '.join(kind for kind, _, _ in ATTACKS)}")
    password = os.path.join(work, "password")
    results = {}
    for number, (kind, what, rate) in enumerate(ATTACKS):
        if only and kind not in only:
            continue
        # Hosts of their own each time: a namespace deleted goes some moments later.
        hosts = Hosts(3, f"s{number}{os.getpid() % 10000}")
        try:
            results[kind] = one(binary, work, env, password, hosts, kind, what, rate, minutes * 60, venv_python)
        finally:
            hosts.close()
    record("soak", **results)


def one(binary, work, env, password, hosts, kind, what, rate, seconds, python):
    a_dir, b_dir = os.path.join(work, f"soak-{kind}-ann"), os.path.join(work, f"soak-{kind}-ben")
    make_profile(binary, a_dir, "ann", password, env)
    make_profile(binary, b_dir, "ben", password, env)
    ann = shell(binary, a_dir, "ann", password, env, hosts.run(1))
    ben = shell(binary, b_dir, "ben", password, env, hosts.run(2), "open ann --wait 20")
    threading.Thread(target=lambda: [None for _ in iter(lambda: ben.stdout.read(65536), "")], daemon=True).start()
    arrived = []
    attacker = None
    try:
        wait_for_line(ann, "ben#", 30)
        attacker = subprocess.Popen([*hosts.run(3), python, PEER, "--address", hosts.address(3), "--kind", kind, "--rate", str(rate),
                                     "--seconds", str(seconds)], stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
        sessions = None
        while (line := next_line(attacker, 300)) is not None and not line.startswith("ready"):
            if line.startswith("sessions "):
                sessions = int(line.split()[1])
        if line is None:
            print(f"{kind}: the hostile peer never got ready: {attacker.stderr.read()[-500:]}")
            return None

        def count_arrivals():
            while (line := next_line(ann, 3600)) is not None:
                if "ben line" in line:
                    arrived.append(line)
        # ann's output is read on a thread: ben's lines, counted as they come.
        threading.Thread(target=count_arrivals, daemon=True).start()
        began = time.perf_counter()
        cpu_before = cpu_seconds_precise(ann.pid)
        samples, n = [], 0
        while time.perf_counter() - began < seconds:
            n += 1
            ben.stdin.write(f"ben line {n}\n")
            ben.stdin.flush()
            if n % 10 == 1:
                samples.append((time.perf_counter() - began, rss_mib(ann.pid)))
            time.sleep(max(0, began + n - time.perf_counter()))
        elapsed = time.perf_counter() - began
        share = (cpu_seconds_precise(ann.pid) - cpu_before) / elapsed
        time.sleep(2)
        after_first = [rss for at, rss in samples if at >= 60]
        base = after_first[0] if after_first else samples[-1][1]
        drift = max(abs(rss - base) for rss in after_first) if after_first else 0
        flat = drift <= 5
        print(f"{what}" + (f" ({sessions} sessions made)" if sessions is not None else ""))
        print(f"    ann RSS {samples[0][1]:6.1f} MiB at the start, {base:6.1f} after a minute, {max(r for _, r in samples):6.1f} at most; "
              f"drift after the first minute {drift:4.1f} MiB ({'flat' if flat else 'NOT FLAT'}; target: within 5)")
        print(f"    ann {share * 100:5.1f} % of a core (target: at most {TARGET_CORE * 100:.0f} %); ben's lines {len(arrived)}/{n} arrived")
        return dict(rss_start=samples[0][1], rss_minute=base, rss_max=max(r for _, r in samples), drift=drift, core_share=share,
                    lines=n, arrived=len(arrived), sessions=sessions, samples=samples)
    finally:
        if attacker:
            attacker.kill()
            attacker.wait()
        for proc in (ann, ben):
            proc.kill()
            proc.wait()


if __name__ == "__main__":
    sys.exit("run through bench.py --only soak (make soak)")
