"""Hostile crowds: a listener, a peer it lists chatting with it, and one host (then three)
flooding the link with fresh, validly signed announcements. Figures: the listener's CPU through
the flood beside its CPU without one, the chatting peer's lines (their latency, whether all
arrive), and what the listener's flood limits dropped. Everything on namespace hosts."""
import os
import re
import statistics
import subprocess
import sys
import threading
import time

from common import Hosts, make_profile, next_line, percentile, record, section, wait_for_line
from crowds import cpu_seconds_precise

FLOOD = os.path.join(os.path.dirname(os.path.abspath(__file__)), "flood.py")


def shell(binary, data, name, password, env, prefix, *lines):
    proc = subprocess.Popen([*prefix, binary, "--data-dir", data], stdin=subprocess.PIPE, stdout=subprocess.PIPE,
                            stderr=subprocess.DEVNULL, env=env, text=True, bufsize=1)
    proc.stdin.write("\n".join([f"login {name} --password-file {password}", "chat", *lines]) + "\n")
    proc.stdin.flush()
    return proc


def flood(hosts, host, rate, keys, seconds, seed=None, start_in=6):
    return subprocess.Popen([*hosts.run(host), sys.executable, FLOOD, "--address", hosts.address(host), "--rate", str(rate),
                             "--keys", str(keys), "--seconds", str(seconds), "--start-in", str(start_in)]
                            + (["--seed", seed] if seed else []), stdout=subprocess.PIPE, stderr=subprocess.DEVNULL, text=True)


def window(ann, ben, hosts, floods, seconds, label):
    """`seconds` of ben writing to ann every 50 ms while `floods` (host, rate, keys, seed) run:
    ann's CPU share, and each line's way from ben's input to ann's output."""
    attackers = [flood(hosts, host, rate, keys, seconds, seed) for host, rate, keys, seed in floods]
    for attacker in attackers:
        wait_for_line(attacker, "flooding", 120)
    before, began = cpu_seconds_precise(ann.pid), time.perf_counter()
    latencies, sent, n = [], 0, 0
    while time.perf_counter() - began < seconds:
        n += 1
        line = f"{label} line {n}"
        start = time.perf_counter()
        ben.stdin.write(line + "\n")
        ben.stdin.flush()
        sent += 1
        seen = wait_for_line(ann, line, 5)
        if seen is not None:
            latencies.append(seen - start)
        time.sleep(max(0, start + 0.05 - time.perf_counter()))
    elapsed = time.perf_counter() - began
    share = (cpu_seconds_precise(ann.pid) - before) / elapsed
    for attacker in attackers:
        attacker.wait()
    return share, latencies, sent


def stats(ann):
    ann.stdin.write("echo :::\nnearby\nnearby stats\necho ;;;\n")
    ann.stdin.flush()
    lines = []
    while (line := next_line(ann, 30)) is not None and not line.startswith(";;;"):
        lines.append(line.rstrip("\n"))
    return lines


def hostile(binary, work, env):
    password = os.path.join(work, "password")
    section("hostile: floods of fresh signed announcements; a listed peer chats through them")
    hosts = Hosts(5, f"sh{os.getpid() % 10000}")
    a_dir, b_dir = os.path.join(work, "hostile-ann"), os.path.join(work, "hostile-ben")
    make_profile(binary, a_dir, "ann", password, env)
    make_profile(binary, b_dir, "ben", password, env)
    ann = shell(binary, a_dir, "ann", password, env, hosts.run(1))
    ben = shell(binary, b_dir, "ben", password, env, hosts.run(2), "open ann --wait 20")
    # Nobody reads ben's bubbles: drained, or a full pipe would stop ben after some 130 lines.
    threading.Thread(target=lambda: [None for _ in iter(lambda: ben.stdout.read(65536), "")], daemon=True).start()
    try:
        wait_for_line(ann, "ben#", 20)
        time.sleep(2)
        # 300 keys heard once each (slowly, within every limit), then blocked: their flood is
        # measured beside the same flood from 300 keys never heard.
        announcer = flood(hosts, 3, 15, 300, 20, seed="blocked", start_in=1)
        announcer.wait()
        time.sleep(1)
        ann.stdin.write("".join(f"block x{n} --yes\n" for n in range(300)) + "echo blocked-all\n")
        ann.stdin.flush()
        wait_for_line(ann, "blocked-all", 60)
        results = {}
        for name, floods, target in [("quiet", [], None),
                                     ("one host", [(3, 2000, 300, None)], 0.10),
                                     ("one host, blocked keys", [(3, 2000, 300, "blocked")], None),
                                     ("three hosts", [(3, 3334, 1000, None), (4, 3333, 1000, None), (5, 3333, 1000, None)], 0.20)]:
            share, latencies, sent = window(ann, ben, hosts, floods, 8, name.replace(" ", "-"))
            results[name] = dict(core_share=share, lines=sent, arrived=len(latencies),
                                 p50=percentile(latencies, 0.5) if latencies else None,
                                 p99=percentile(latencies, 0.99) if latencies else None)
            rate = sum(rate for _, rate, _, _ in floods)
            blocked = " blocked" if any(seed for *_, seed in floods) else ""
            what = (f"{rate:,}/s from {sum(k for _, _, k, _ in floods):,}{blocked} keys on {len(floods)} host{'s' * (len(floods) > 1)}"
                    if floods else "no flood")
            lat = (f"p50 {results[name]['p50'] * 1e3:6.2f} ms  p99 {results[name]['p99'] * 1e3:6.2f} ms" if latencies else "none arrived")
            print(f"{what:48} listener {share * 100:5.1f} % of a core   ben's lines {len(latencies)}/{sent} arrived, {lat}"
                  + (f"   (target: at most {target * 100:.0f} %)" if target else "   (reference)" if not floods else ""))
        after = stats(ann)
        listed = any("ben#" in line and " seen " in line for line in after)
        counts = next((line for line in after if line.startswith("sent ")), "")
        worst = next((line for line in after if line.startswith("dropped most from")), "")
        print(f"ben still listed: {'yes' if listed else 'NO'}")
        print(f"ann's nearby stats: {counts}")
        if worst:
            print(f"                    {worst}")
        record("hostile", **results, ben_listed=listed)
    finally:
        for proc in (ann, ben):
            proc.kill()
            proc.wait()
        hosts.close()
