"""Transfers: a file between two seance shells on two namespace hosts, beside nc sending the same
file over TCP between the same hosts in the same run; the memory of both shells while it moves.
Nothing here leaves the benchmark's namespace."""
import os
import statistics
import subprocess
import threading
import time

from common import Hosts, cpu_seconds, make_profile, next_line, record, rss_mib, section, wait_for_line


def nc_seconds(hosts, path, port):
    """Seconds for nc to carry the file from host 1 to host 2 (the listener writes it away)."""
    listener = subprocess.Popen(hosts.run(2) + ["nc", "-l", "-N", str(port)], stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    time.sleep(0.2)  # The listener is bound (nc prints nothing to wait for).
    start = time.perf_counter()
    with open(path, "rb") as source:
        subprocess.run(hosts.run(1) + ["nc", "-N", hosts.address(2), str(port)], stdin=source, check=True,
                       stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    listener.wait(timeout=120)
    return time.perf_counter() - start


class PeakMemory(threading.Thread):
    """The highest RSS (MiB) of a process, sampled every 20 ms until stopped."""

    def __init__(self, pid):
        super().__init__(daemon=True)
        self.pid, self.peak, self.running = pid, 0.0, True
        self.start()

    def run(self):
        while self.running:
            self.peak = max(self.peak, rss_mib(self.pid) or 0)
            time.sleep(0.02)

    def stop(self):
        self.running = False
        self.join()
        return self.peak


def shell(hosts, host, binary, data, name, password, env):
    proc = subprocess.Popen(hosts.run(host) + [binary, "--data-dir", data, "--announce-interval", "0.5"], stdin=subprocess.PIPE,
                            stdout=subprocess.PIPE, stderr=subprocess.DEVNULL, env=env, text=True, bufsize=1)
    proc.stdin.write(f"login {name} --password-file {password}\nchat\n")
    proc.stdin.flush()
    return proc


def one_transfer(binary, work, env, hosts, password, path, tag):
    """(seconds to store the file at the sender, seconds from the receiver's accept to the whole
    file stored and checked there, each shell's RSS growth in MiB while it moved)."""
    ann_data, ben_data = os.path.join(work, f"ann-{tag}"), os.path.join(work, f"ben-{tag}")
    make_profile(binary, ann_data, "ann", password, env)
    make_profile(binary, ben_data, "ben", password, env)
    ann = shell(hosts, 1, binary, ann_data, "ann", password, env)
    ben = shell(hosts, 2, binary, ben_data, "ben", password, env)
    shells = {"ann": ann, "ben": ben}

    def each(measure):
        return {name: measure(proc.pid) for name, proc in shells.items()}

    def command(proc, line, answer, timeout, failure):
        """Types `line` and waits for a line holding `answer`; `failure` when none comes."""
        proc.stdin.write(line + "\n")
        proc.stdin.flush()
        if wait_for_line(proc, answer, timeout) is None:
            raise RuntimeError(failure)

    try:
        command(ann, "open ben --wait 30\n/back\necho ready", "ready", 30, "ann never saw ben")
        time.sleep(1)  # Both at rest: what they hold before the file.
        before = each(rss_mib)
        sent = time.perf_counter()
        command(ann, f"send ben {path}", "sending file", 60, "ann never sent it")
        stored = time.perf_counter() - sent
        offered = None
        while (line := next_line(ben, 60)) is not None:
            if "offers" in line:
                offered = line.rsplit("/accept ", 1)[1].split()[0]
                break
        if offered is None:
            raise RuntimeError("ben was never offered it")
        peaks, cpu_before = each(PeakMemory), each(cpu_seconds)
        accepted = time.perf_counter()
        command(ben, f"accept {offered}", " sent file ", 600, "the file never arrived")
        moved = time.perf_counter() - accepted
        cpu = {name: (seconds - cpu_before[name]) / moved for name, seconds in each(cpu_seconds).items()}
        growth = {name: peaks[name].stop() - before[name] for name in peaks}
        return stored, moved, growth, cpu
    finally:
        for proc in (ann, ben):
            proc.kill()
            proc.wait()


def transfers(binary, work, env, runs=3):
    section("transfers: a 256 MiB file between two namespace hosts, beside nc (TCP) carrying it in the same run")
    hosts = Hosts(2, "tx")
    password = os.path.join(work, "password")
    sizes = (1, 16, 256)
    try:
        files = {}
        for mib in sizes:
            files[mib] = os.path.join(work, f"file-{mib}.bin")
            with open(files[mib], "wb") as f:
                for _ in range(mib):
                    f.write(os.urandom(1 << 20))
        size = 256 << 20
        nc_times, seance_times, store_times, growths, cpus = [], [], [], {mib: [] for mib in sizes}, []
        for run in range(runs):
            nc_times.append(nc_seconds(hosts, files[256], 5600 + run))
            stored, moved, growth, cpu = one_transfer(binary, work, env, hosts, password, files[256], f"256-{run}")
            cpus.append({name: share * moved for name, share in cpu.items()})
            seance_times.append(moved)
            store_times.append(stored)
            growths[256].append(growth)
            for mib in (1, 16):
                _, _, small, _ = one_transfer(binary, work, env, hosts, password, files[mib], f"{mib}-{run}")
                growths[mib].append(small)
            # Each run's files go: three of 256 MiB at each end otherwise.
            subprocess.run(["rm", "-rf"] + [os.path.join(work, f"{who}-{mib}-{run}") for who in ("ann", "ben") for mib in sizes])
        nc_rate = size / statistics.median(nc_times) / (1 << 20)
        rate = size / statistics.median(seance_times) / (1 << 20)
        print(f"nc (TCP), 256 MiB         median {nc_rate:8.1f} MiB/s   ({', '.join(f'{t:.2f}' for t in nc_times)} s)")
        print(f"seance, accept to stored  median {rate:8.1f} MiB/s   ({', '.join(f'{t:.2f}' for t in seance_times)} s)"
              f"   = {rate / nc_rate:.3f} of nc's (target: at least 0.25)")
        per_mib = {side: statistics.median(c[side] for c in cpus) / 256 * 1000 for side in ("ann", "ben")}
        print(f"CPU per MiB moved                  sender {per_mib['ann']:.2f} ms, receiver {per_mib['ben']:.2f} ms")
        print(f"the sender reads it first (its hash)   median {statistics.median(store_times):.2f} s")
        for side, role in (("ann", "sender"), ("ben", "receiver")):
            figures = ", ".join(f"{mib} MiB file {statistics.median(g[side] for g in growths[mib]):.1f}" for mib in sizes)
            print(f"{role}'s RSS growth while it moves (MiB, median): {figures}")
        record("transfer_256mib", nc_mib_s=nc_rate, seance_mib_s=rate, ratio=rate / nc_rate, store_s=statistics.median(store_times),
               sender_cpu_ms_per_mib=per_mib["ann"], receiver_cpu_ms_per_mib=per_mib["ben"],
               **{f"{side}_growth_{mib}mib": statistics.median(g[side] for g in growths[mib]) for side in ("ann", "ben") for mib in sizes})
    finally:
        hosts.close()
