"""What every section of the benchmarks shares: running and timing commands, recording and
printing figures beside their references, shells in chat mode and their output, brokers."""
import argparse
import io
import json
import os
import re
import select
import statistics
import subprocess
import sys
import tempfile
import threading
import time


def run_measured(argv, stdin_path=None, env=None):
    """Runs argv to completion; returns (seconds, peak RSS in KiB). Output is discarded.

    Peak memory comes from GNU time, a small C program: a child forked from Python would carry
    the interpreter's own resident memory into its ru_maxrss.
    """
    with tempfile.NamedTemporaryFile("r") as report:
        stdin = open(stdin_path, "rb") if stdin_path else subprocess.DEVNULL
        start = time.perf_counter()
        status = subprocess.call(["/usr/bin/time", "-o", report.name, "-f", "%M"] + argv, stdin=stdin,
                                 stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL, env=env)
        elapsed = time.perf_counter() - start
        if stdin_path:
            stdin.close()
        if status != 0:
            sys.exit(f"benchmark command failed: {' '.join(argv)}")
        return elapsed, int(report.read().split()[-1])


FIGURES = {}


def record(name, **values):
    """Keeps a figure for the JSON file (seconds, counts and ratios as they were measured)."""
    FIGURES[name] = values


def spread(values):
    """median, min and max of a list."""
    return {"median": statistics.median(values), "min": min(values), "max": max(values), "n": len(values)}


def ms(summary):
    """`12.34 ms (min 11.90, max 15.02)` for a spread of seconds."""
    return (f"{summary['median'] * 1e3:8.2f} ms   (min {summary['min'] * 1e3:.2f}, max {summary['max'] * 1e3:.2f}, "
            f"{summary['n']} runs)")


def timed(argv, env):
    start = time.perf_counter()
    subprocess.call(argv, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL, env=env)
    return time.perf_counter() - start


def paired_times(first, second, runs, env=None):
    """Wall times of two commands run alternately `runs` times each, exec to exit."""
    a, b = [], []
    for _ in range(runs):
        a.append(timed(first, env))
        b.append(timed(second, env))
    return spread(a), spread(b)


def latency(name, sets, label):
    """Prints and records one-way latencies (seconds) measured in several sets: each of p50,
    p90, p99 and the maximum is the median of the sets' own, so that one busy moment of the
    machine moves one set, not the figure; p99 also with its range over the sets."""
    summary = {key: statistics.median(percentile(values, fraction) for values in sets)
               for key, fraction in (("p50", 0.5), ("p90", 0.9), ("p99", 0.99), ("max", 1.0))}
    p99s = [percentile(values, 0.99) for values in sets]
    samples = sum(len(values) for values in sets)
    record(name, **summary, p99_min=min(p99s), p99_max=max(p99s), n=samples, sets=len(sets))
    print(f"{label:26} p50 {summary['p50'] * 1e3:7.3f}  p90 {summary['p90'] * 1e3:7.3f}  p99 {summary['p99'] * 1e3:7.3f}"
          f"  max {summary['max'] * 1e3:7.3f} ms   (p99 {min(p99s) * 1e3:.3f}–{max(p99s) * 1e3:.3f} over {len(sets)} sets; {samples} samples)")
    return summary["p50"], summary["p99"]


def latency_ratio(name, sets, references, target):
    """The p99 of each set over its reference set's, measured just before it: the median of
    those ratios, with their range."""
    ratios = [percentile(values, 0.99) / percentile(reference, 0.99) for values, reference in zip(sets, references)]
    summary = spread(ratios)
    record(name, p99=summary["median"], min=summary["min"], max=summary["max"], n=summary["n"])
    print(f"ratio                      p99 {summary['median']:7.1f} x   (min {summary['min']:.1f}, max {summary['max']:.1f} "
          f"over {summary['n']} sets; {target})")


def rates(name, values, label, target):
    """Prints and records the median of several measured rates, with their range."""
    if not values:
        return print(f"{label:26} no burst completed")
    summary = spread(values)
    record(name, unit="messages/s", **summary)
    print(f"{label:26} {summary['median']:9,.0f} messages/s   (min {summary['min']:,.0f}, max {summary['max']:,.0f}, "
          f"{summary['n']} bursts; {target})")


def median_time(argv, runs, env=None):
    """Median and worst wall time of `runs` runs, exec to exit (no wrapper in between)."""
    times = []
    for _ in range(runs):
        start = time.perf_counter()
        subprocess.call(argv, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL, env=env)
        times.append(time.perf_counter() - start)
    return statistics.median(times), max(times)


def section(title):
    print(f"\n== {title}")


def make_profile(binary, data, name, password_file, env):
    # Its status line goes to standard error: kept out of the figures unless it fails.
    made = subprocess.run([binary, "--data-dir", data, "-c", f"profile new {name} --password-file {password_file}"],
                          env=env, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True)
    if made.returncode != 0:
        sys.exit(f"cannot make profile {name} in {data}: {made.stderr.strip()}")


def start_chat(binary, data, name, password_file, env, seconds):
    """A shell in chat mode for `seconds`, its output on a pipe (live lines arrive there)."""
    script = f"login {name} --password-file {password_file}\nchat\nsleep {seconds}\nnearby stats\n"
    # Status lines ("announcing …") are on standard error in a script: read with the rest.
    proc = subprocess.Popen([binary, "--data-dir", data], stdin=subprocess.PIPE, stdout=subprocess.PIPE,
                            stderr=subprocess.STDOUT, env=env, text=True, bufsize=1)
    proc.stdin.write(script)
    proc.stdin.close()
    return proc


def next_line(proc, timeout):
    """The next line of proc's stdout, or None at its end or after `timeout` seconds. The pipe is
    read here (os.read) into a buffer of this proc's own: select() on a file object whose own
    buffer already holds lines would wait for more and miss them."""
    fd = proc.stdout.fileno()
    buffer = proc.__dict__.setdefault("pending", bytearray())
    deadline = time.perf_counter() + timeout
    while b"\n" not in buffer:
        left = deadline - time.perf_counter()
        if left <= 0 or not select.select([fd], [], [], left)[0]:
            return None
        chunk = os.read(fd, 65536)
        if not chunk:
            return None
        buffer += chunk
    end = buffer.index(b"\n")
    line = bytes(buffer[:end])
    del buffer[:end + 1]  # In place: a long listing is not copied once a line.
    return line.decode("utf-8", "replace") + "\n"


def wait_for_line(proc, needle, timeout):
    """The perf_counter() time at which a line containing `needle` appeared on proc's stdout,
    or None after `timeout` seconds."""
    deadline = time.perf_counter() + timeout
    while (line := next_line(proc, deadline - time.perf_counter())) is not None:
        if needle in line:
            return time.perf_counter()
    return None


def one_way(writer, reader, lines, wait=None):
    """One-way latencies (seconds) of `lines`, each written into `writer`'s standard input once
    the one before came out of `reader`'s standard output: the same pipes-in, pipes-out method
    for seance and for its references. `wait(reader, line, timeout)`: when it came out
    (`wait_for_line` unless given)."""
    times = []
    for line in lines:
        start = time.perf_counter()
        writer.stdin.write(line + "\n")
        writer.stdin.flush()
        seen = (wait or wait_for_line)(reader, line, 5)
        if seen is not None:
            times.append(seen - start)
    return times


def burst_rate(writer, reader, count, tag, wait=None):
    """Lines a second: `count` lines written into `writer` at once, until the last came out of
    `reader` (`wait` as for `one_way`); None when it did not within two minutes."""
    start = time.perf_counter()
    writer.stdin.write("".join(f"{tag} {i}\n" for i in range(count)))
    writer.stdin.flush()
    done = (wait or wait_for_line)(reader, f"{tag} {count - 1}", 120)
    return None if done is None else count / (done - start)


def count_arrivals(proc, quiet):
    """Peers proc reports arriving before it is quiet for `quiet` seconds: its "is nearby" lines,
    plus the ones its notice limit held back and counted in one line."""
    count = 0
    while (line := next_line(proc, quiet)) is not None:
        if re.search(r" p\d+#.* is nearby", line):
            count += 1
        held = re.search(r"… (\d+) more presence notices", line)
        if held:
            count += int(held.group(1))
    return count


def cpu_seconds(pid):
    with open(f"/proc/{pid}/stat") as f:
        fields = f.read().rsplit(")", 1)[1].split()
    return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")


def rss_mib(pid):
    with open(f"/proc/{pid}/status") as f:
        for line in f:
            if line.startswith("VmRSS:"):
                return int(line.split()[1]) / 1024
    return 0.0


def percentile(values, fraction):
    ordered = sorted(values)
    return ordered[min(len(ordered) - 1, int(len(ordered) * fraction))]


def wait_for_broker(port, timeout=30):
    """Until a publish to the broker on loopback `port` gets through."""
    deadline = time.perf_counter() + timeout
    while time.perf_counter() < deadline:
        if subprocess.run(["mosquitto_pub", "-h", "127.0.0.1", "-p", str(port), "-i", "bench-ready", "-q", "1",
                           "-t", "bench/ready", "-m", "x"], stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL).returncode == 0:
            return True
        time.sleep(0.2)
    return False


class BrokerFloor:
    """The broker's own one-way latency for a payload of `size` bytes: a line into a long-lived
    mosquitto_pub, out of a long-lived mosquitto_sub (the same pipes-in, pipes-out method).
    Called with a number of rounds, it measures that many."""

    def __init__(self, publish_port, subscribe_port, size):
        self.sub = subprocess.Popen(["mosquitto_sub", "-h", "127.0.0.1", "-p", str(subscribe_port), "-q", "1", "-t", "bench/floor"],
                                    stdout=subprocess.PIPE, stderr=subprocess.DEVNULL, text=True)
        self.pub = subprocess.Popen(["mosquitto_pub", "-h", "127.0.0.1", "-p", str(publish_port), "-q", "1", "-t", "bench/floor", "-l"],
                                    stdin=subprocess.PIPE, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL, text=True)
        self.padding = "x" * max(0, size - 16)
        self.count = 0
        self.rates = []
        for _ in range(50):  # Until both are connected.
            self.pub.stdin.write(f"warm {self.padding}\n")
            self.pub.stdin.flush()
            if wait_for_line(self.sub, "warm", 0.2) is not None:
                break

    def __call__(self, rounds):
        first, self.count = self.count + 1, self.count + rounds
        return one_way(self.pub, self.sub, [f"floor {n} {self.padding}" for n in range(first, self.count + 1)])

    def burst(self, count):
        """The broker's own sustained rate: `count` lines at once into mosquitto_pub, until the
        last is out of mosquitto_sub (kept in `rates`, beside seance's bursts)."""
        first, self.count = self.count + 1, self.count + count
        start = time.perf_counter()
        self.pub.stdin.write("".join(f"floor {n} {self.padding}\n" for n in range(first, self.count + 1)))
        self.pub.stdin.flush()
        done = wait_for_line(self.sub, f"floor {self.count} ", 120)
        if done is not None:
            self.rates.append(count / (done - start))

    def close(self):
        self.pub.kill()
        self.sub.kill()
        self.pub.wait()
        self.sub.wait()


STALLED = 25
"""A broker whose own p99 is this many times its p50 in some set, or whose bursts are this many
times apart, stalled. On this two-core machine a freshly started three-node NATS cluster holds
messages for 0.2-0.5 s a few times a second in one start out of three or four (its floor's p99
then 280-450 ms instead of 2-4 ms, its rate 100-1,000/s instead of ~15,000, with or without
seance connected), and the next start does not. Such a run's figures are the broker's."""


def broker_stalls(name, references, rates):
    """Says, and records for compare.py, whether the broker's own floor stalled in this run: a
    set's p99 over `STALLED` times its p50, or one of its bursts that many times slower than
    another."""
    worst = max(percentile(values, 0.99) / percentile(values, 0.5) for values in references)
    spread_of_rates = max(rates) / min(rates) if rates else 1
    stalled = worst > STALLED or spread_of_rates > STALLED
    record(f"{name}_stalls", stalled=stalled, floor_p99_over_p50=worst, floor_rates_max_over_min=spread_of_rates)
    if stalled:
        print(f"the broker stalled in this run (its own p99 {worst:.0f}x its p50, its bursts {spread_of_rates:.0f}x apart): "
              f"its figures above are the broker's, not seance's; compare.py leaves them out")


LISTED = re.compile(r" p\d+#.* seen ")


def newcomer_discovery(binary, work, env, password, peers, runs, args=(), name="newcomer_lists_all", label=None, polls=150,
                       prefix=(), others=0):
    """From a newcomer's `chat` to its listing every one of the crowd (`p0`, `p1`, …: it asks who is
    there and they answer within a fraction of a second, or a broker hands it their presence), and
    the packets its arrival brings in meanwhile. It polls `nearby --count` (the rows `nearby`
    would list, counted in the same visit to the engine) every 10 ms until it reaches `peers`
    and the `others` present besides the crowd (an observer), then lists them once to check that
    every one of the crowd is named: listing 500 rows every 10 ms was itself a load on the
    newcomer and on the CPU the crowd answers with. `args`: the newcomer's flags (a broker);
    `prefix`: what runs it (`ip netns exec HOST`). Returns the times, in seconds."""
    data = os.path.join(work, "newcomer")
    if not os.path.exists(data):
        make_profile(binary, data, "newcomer", password, env)
    times, received, missed, most = [], [], [], []
    for _ in range(runs):
        script = [f"login newcomer --password-file {password}", "chat"]
        script += ["sleep 0.01\nnearby --count"] * polls + ["echo :::", "nearby", "echo :::", "nearby stats"]
        # "announcing …" (where the time starts) is a status line: on standard error in a script.
        proc = subprocess.Popen([*prefix, binary, "--data-dir", data, *args], stdin=subprocess.PIPE, stdout=subprocess.PIPE,
                                stderr=subprocess.STDOUT, env=env, bufsize=0)
        proc.stdin.write(("\n".join(script) + "\n").encode())
        proc.stdin.close()
        # Each line with the time it came out: a thread does nothing but read.
        lines = []
        reader = threading.Thread(target=lambda: lines.extend((time.perf_counter(), line) for line in io.BufferedReader(proc.stdout)))
        reader.start()
        reader.join(120)
        proc.kill()
        proc.wait()
        start = next((at for at, line in lines if b"announcing" in line), None)
        counts = []  # (seconds since start, how many in sight) of each poll
        seen_all = seen_most = stats = None
        markers, named = 0, set()
        for at, raw in lines:
            line = raw.decode("utf-8", "replace").strip()
            if line == ":::":
                markers += 1
            elif markers == 0 and line.isdigit() and start is not None:
                counts.append((at - start, int(line)))
                if int(line) >= peers + others and seen_all is None:
                    seen_all = at
                if int(line) >= (peers + others) * 0.9 and seen_most is None:
                    seen_most = at
            elif markers == 1 and LISTED.search(line):
                named.add(line.split("#")[0].split()[-1])
            elif line.startswith("sent "):
                stats = line
                received.append(int(line.split("received ")[1].split(",")[0]))
        best = max((n for _, n in counts), default=0)
        if seen_all is not None and len(named) < peers:
            missed.append(f"counted {best} but named {len(named)} of the {peers}; {stats}")
            seen_all = None
        elif seen_all is None:
            missed.append(f"counted {best} of {peers} + {others} at most; {stats}")
        if os.environ.get("SEANCE_BENCH_LISTINGS") and counts:
            # Where the time goes: the polls' times and counts, each change of count, up to all.
            upto = next((i for i, (_, n) in enumerate(counts) if n >= peers + others), len(counts) - 1)
            changes = [counts[0]] + [c for previous, c in zip(counts, counts[1:upto + 1]) if c[1] != previous[1]]
            print("in sight: " + ", ".join(f"{t * 1000:.0f} ms {n}" for t, n in changes[-14:]) + (f"   ({stats})" if stats else ""))
        if start is not None and seen_all is not None:
            times.append(seen_all - start)
        if start is not None and seen_most is not None:
            most.append(seen_most - start)
    label = label or f"newcomer lists all {peers}"
    if times:
        record(name, unit="s", **spread(times), peers=peers)
        print(f"{label:27} median {statistics.median(times) * 1000:7.1f} ms   worst {max(times) * 1000:7.1f} ms"
              f"   ({len(times)} of {runs} saw everyone)")
    else:
        print(f"{label:27} never: no run saw everyone")
    if most:
        # Where a slow tail is: the first nine tenths against the last.
        print(f"{'… nine tenths of them':27} median {statistics.median(most) * 1000:7.1f} ms")
    if received:
        print(f"packets a newcomer gets     median {statistics.median(received):7.0f} while it lists them")
    for run in missed:
        print(f"a newcomer that did not see everyone: {run}")
    return times


class Hosts:
    """Hosts for what crosses a network: `count` network namespaces, each with a veth pair on one
    bridge, made inside the benchmark's own namespace (`scripts/in-netns`), addresses in
    198.18.0.0/15, multicast routed to each host's link. The bridge has an address too, so the
    benchmark can listen on the link itself. Deleted by `close`."""

    def __init__(self, count, tag):
        self.count, self.tag = count, tag
        self.bridge = f"{tag}br"
        lines = [f"link add {self.bridge} type bridge", f"link set {self.bridge} type bridge mcast_snooping 0",
                 f"link set {self.bridge} up", f"addr add 198.19.255.254/15 dev {self.bridge}"]
        for host in range(1, count + 1):
            lines += [f"netns add {self.namespace(host)}",
                      f"link add {tag}v{host} type veth peer name e0 netns {self.namespace(host)}",
                      f"link set {tag}v{host} master {self.bridge} up"]
        subprocess.run(["ip", "-batch", "-"], input="\n".join(lines) + "\n", text=True, check=True)
        for host in range(1, count + 1):
            inside = [f"addr add {self.address(host)}/15 dev e0", "link set e0 up", "link set lo up", "route add 224.0.0.0/4 dev e0"]
            subprocess.run(["ip", "-n", self.namespace(host), "-batch", "-"], input="\n".join(inside) + "\n", text=True, check=True)

    def namespace(self, host):
        return f"{self.tag}-{host}"

    @staticmethod
    def address(host):
        return f"198.18.{(host - 1) // 250}.{(host - 1) % 250 + 1}"

    def run(self, host):
        """What runs a command on `host`: `ip netns exec` (which execs it: the process is the command)."""
        return ["ip", "netns", "exec", self.namespace(host)]

    def close(self):
        lines = [f"netns del {self.namespace(host)}" for host in range(1, self.count + 1)] + [f"link del {self.bridge}"]
        subprocess.run(["ip", "-force", "-batch", "-"], input="\n".join(lines) + "\n", text=True, stderr=subprocess.DEVNULL)


NATS_LEADERS = os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "scripts", "nats-leaders")


class NatsCluster:
    """Three nats-server nodes clustered on loopback, JetStream and MQTT on each (MQTT port
    18840 + N). Every node lists all three routes, so the MQTT streams are replicated on all
    three (listing only the two others made them R2); once the streams exist, their leaders are
    moved to node 2, which no client of ours uses: nats-server 2.9.x otherwise stalls a QoS 1
    publish when that leader is on its subscriber's node (scripts/nats-leaders, README)."""

    def __init__(self, work, tag="bench", earlier=False):
        """`earlier`: as configured before (each node lists the two others' routes only, and
        the leaders stay where they were elected), for comparison."""
        self.nodes, self.placed, self.earlier = [], None, earlier
        for n in range(1, 4):
            routes = ", ".join(f"nats-route://127.0.0.1:{6230 + m}" for m in range(1, 4) if not (earlier and m == n))
            store = os.path.join(work, f"nats-{tag}-{n}")
            path = os.path.join(work, f"nats-{tag}-{n}.conf")
            with open(path, "w") as f:
                f.write(f"server_name: bench-{n}\nlisten: 127.0.0.1:{4230 + n}\nhttp: 127.0.0.1:{8220 + n}\n"
                        f"jetstream {{ store_dir: \"{store}\" }}\n"
                        f"cluster {{ name: bench, listen: 127.0.0.1:{6230 + n}, routes: [{routes}] }}\n"
                        f"mqtt {{ listen: 127.0.0.1:{18840 + n} }}\n")
            self.nodes.append(subprocess.Popen(["nats-server", "-c", path], stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL))

    def ready(self):
        """Every node takes MQTT clients (which makes the streams), and the streams' leaders are
        on node 2."""
        if not all(wait_for_broker(18840 + n, 60) for n in range(1, 4)):
            return False
        if self.earlier:
            return True
        monitors = [f"--monitor=bench-{n}=127.0.0.1:{8220 + n}" for n in range(1, 4)]
        self.placed = subprocess.run([sys.executable, NATS_LEADERS, "--to", "bench-2", "--client", "127.0.0.1:4231", *monitors],
                                     stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL).returncode == 0
        return True

    def close(self):
        for node in self.nodes:
            node.kill()
            node.wait()
