#!/usr/bin/env python3
"""seance benchmarks: every figure is printed next to a reference measured in the same run.

Run through `make bench`, which builds the release binary and runs this inside a private
network namespace. Nothing here asserts: the targets are printed beside the figures.
"""
import argparse
import os
import re
import select
import statistics
import subprocess
import sys
import tempfile
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


def startup(binary, work, env, runs):
    section(f"start-up: exec to exit, median of {runs} runs")
    data = os.path.join(work, "data")
    # An existing database, as a returning user has.
    subprocess.run([binary, "--data-dir", data, "-c", "zombies stats"], env=env, check=False,
                   stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    os.makedirs(data, mode=0o700, exist_ok=True)
    db = os.path.join(data, "seance.sqlite")
    if not os.path.exists(db):
        subprocess.run(["sqlite3", db, "create table t(x);"], check=True)
    seance, _ = median_time([binary, "--data-dir", data, "-c", "quit"], runs, env)
    sqlite, _ = median_time(["sqlite3", db, ".quit"], runs, env)
    _, seance_rss = run_measured([binary, "--data-dir", data, "-c", "quit"], env=env)
    _, sqlite_rss = run_measured(["sqlite3", db, ".quit"], env=env)
    print(f"seance -c quit      {seance * 1000:8.2f} ms   peak {seance_rss / 1024:6.1f} MiB")
    print(f"sqlite3 DB .quit    {sqlite * 1000:8.2f} ms   peak {sqlite_rss / 1024:6.1f} MiB   (reference)")
    print(f"ratio               {seance / sqlite:8.2f} x   (target: at most 3x)")


def throughput(binary, work, env, count):
    section(f"batch throughput: {count:,} commands piped in")
    commands = os.path.join(work, "commands.txt")
    with open(commands, "w") as f:
        f.write("echo x\n" * count)
    selects = os.path.join(work, "selects.sql")
    with open(selects, "w") as f:
        f.write("select 1;\n" * count)
    data = os.path.join(work, "data")
    seance_time, seance_rss = run_measured([binary, "--data-dir", data], commands, env)
    sqlite_time, sqlite_rss = run_measured(["sqlite3", ":memory:"], selects, env)
    seance_rate, sqlite_rate = count / seance_time, count / sqlite_time
    print(f"seance              {seance_rate:12,.0f} commands/s   peak {seance_rss / 1024:6.1f} MiB")
    print(f"sqlite3 select 1;   {sqlite_rate:12,.0f} commands/s   peak {sqlite_rss / 1024:6.1f} MiB   (reference)")
    print(f"ratio               {seance_rate / sqlite_rate:12.2f} x   (target: at least 50,000 commands/s)")


def fill_visions(binary, data, env, count, image):
    """A database with `count` visions: one added through seance, the rest copied in SQL."""
    subprocess.run([binary, "--data-dir", data, "-c", f"visions add Max --image {image}"], env=env, check=True,
                   stdout=subprocess.DEVNULL)
    db = os.path.join(data, "seance.sqlite")
    sql = f"""
        WITH RECURSIVE n(i) AS (SELECT 1 UNION ALL SELECT i + 1 FROM n WHERE i < {count - 1})
        INSERT INTO vision (rescuerId, image, thumbnail, thumbnailWidth, thumbnailHeight, rescued, createdAt)
        SELECT rescuerId, image, thumbnail, thumbnailWidth, thumbnailHeight, i % 3 = 0, createdAt + i FROM vision, n;
    """
    subprocess.run(["sqlite3", db, sql], check=True)
    return db


def visions_page(binary, work, env, runs):
    section(f"visions: first page of the list, median of {runs} runs (exec to exit)")
    image = os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "assets", "portraits", "max.png")
    query = ("SELECT vision.id, rescuer.name, vision.rescued, vision.thumbnail FROM vision "
             "JOIN rescuer ON rescuer.id = vision.rescuerId ORDER BY vision.id LIMIT 10 OFFSET 0;")
    results = {}
    for count in (100, 10_000):
        data = os.path.join(work, f"visions-{count}")
        db = fill_visions(binary, data, env, count, image)
        seance, worst = median_time([binary, "--data-dir", data, "-c", "visions"], runs, env)
        sqlite, _ = median_time(["sqlite3", db, query], runs, env)
        _, rss = run_measured([binary, "--data-dir", data, "-c", "visions"], env=env)
        results[count] = (seance, sqlite, rss)
    seance, sqlite, rss = results[10_000]
    print(f"seance: visions      {seance * 1000:8.2f} ms   (worst {worst * 1000:.2f} ms)   peak {rss / 1024:6.1f} MiB")
    print(f"sqlite3: same page   {sqlite * 1000:8.2f} ms   (reference)")
    print(f"ratio                {seance / sqlite:8.2f} x   (target: the page in under 20 ms)")
    small_rss = results[100][2]
    print(f"peak memory, 100 vs 10,000 visions: {small_rss / 1024:.1f} MiB vs {rss / 1024:.1f} MiB"
          "   (target: no growth with the number of visions)")


def make_profile(binary, data, name, password_file, env):
    subprocess.run([binary, "--data-dir", data, "-c", f"profile new {name} --password-file {password_file}"],
                   env=env, check=True, stdout=subprocess.DEVNULL)


def start_chat(binary, data, name, password_file, env, seconds):
    """A shell in chat mode for `seconds`, its output on a pipe (live lines arrive there)."""
    script = f"login {name} --password-file {password_file}\nchat\nsleep {seconds}\nnearby stats\n"
    proc = subprocess.Popen([binary, "--data-dir", data], stdin=subprocess.PIPE, stdout=subprocess.PIPE,
                            stderr=subprocess.DEVNULL, env=env, text=True, bufsize=1)
    proc.stdin.write(script)
    proc.stdin.close()
    return proc


def wait_for_line(proc, needle, timeout):
    """The perf_counter() time at which a line containing `needle` appeared on proc's stdout,
    or None after `timeout` seconds."""
    start = time.perf_counter()
    while time.perf_counter() - start < timeout:
        if select.select([proc.stdout], [], [], 0.05)[0]:
            line = proc.stdout.readline()
            if not line:
                return None
            if needle in line:
                return time.perf_counter()
    return None


def count_lines(proc, pattern, quiet):
    """How many lines matching `pattern` proc prints before it is quiet for `quiet` seconds."""
    count = 0
    while select.select([proc.stdout], [], [], quiet)[0]:
        line = proc.stdout.readline()
        if not line:
            break
        count += re.search(pattern, line) is not None
    return count


def count_arrivals(proc, quiet):
    """Peers proc reports arriving before it is quiet for `quiet` seconds: its "is nearby" lines,
    plus the ones its notice limit held back and counted in one line."""
    count = 0
    while select.select([proc.stdout], [], [], quiet)[0]:
        line = proc.stdout.readline()
        if not line:
            break
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


def nearby(binary, work, env, runs, peers, watch_seconds):
    section(f"nearby: discovery over {runs} runs, traffic, one shell among {peers} peers")
    password = os.path.join(work, "password")
    with open(password, "w") as f:
        f.write("correct horse\n")
    observer_dir, peer_dir = os.path.join(work, "observer"), os.path.join(work, "peer")
    make_profile(binary, observer_dir, "watcher", password, env)
    make_profile(binary, peer_dir, "visitor", password, env)
    observer = start_chat(binary, observer_dir, "watcher", password, env, 3600)
    wait_for_line(observer, "announcing", 10)

    # Discovery: from starting a peer's process to the observer listing it.
    times = []
    for _ in range(runs):
        start = time.perf_counter()
        peer = start_chat(binary, peer_dir, "visitor", password, env, 0.3)
        seen = wait_for_line(observer, "visitor#", 10)
        peer.wait()
        wait_for_line(observer, "visitor#", 5)  # Its goodbye.
        if seen is not None:
            times.append(seen - start)
    login_ref, _ = median_time([binary, "--data-dir", peer_dir, "-c", f"login visitor --password-file {password}"], 10, env)
    print(f"discovery, exec to listed  median {statistics.median(times) * 1000:7.1f} ms   worst {max(times) * 1000:7.1f} ms"
          f"   ({len(times)} of {runs} seen; target: under 1.5 s median)")
    print(f"reference: exec + login    median {login_ref * 1000:7.1f} ms   (the part that is start-up, not network)")

    # Traffic: one peer at the default interval, counted by its own statistics.
    peer = start_chat(binary, peer_dir, "visitor", password, env, watch_seconds)
    out = peer.stdout.read()
    peer.wait()
    sent = [line for line in out.splitlines() if line.startswith("sent ")]
    if sent:
        packets, size = int(sent[-1].split()[1]), int(sent[-1].split("(")[1].split()[0])
        print(f"presence traffic per peer  {size * 60 / watch_seconds:7.0f} bytes/min "
              f"({packets * 60 / watch_seconds:.1f} packets/min at the default 5 s interval, per interface)")

    # Load: the observer's CPU alone (the reference), then among `peers` announcing shells.
    before = cpu_seconds(observer.pid)
    time.sleep(watch_seconds / 3)
    alone = (cpu_seconds(observer.pid) - before) / (watch_seconds / 3)
    crowd = []
    for i in range(peers):
        data = os.path.join(work, f"crowd{i}")
        make_profile(binary, data, f"p{i}", password, env)
        # Alive through the load window and the newcomer runs after it.
        crowd.append(start_chat(binary, data, f"p{i}", password, env, watch_seconds + 90))
    arrived = count_arrivals(observer, 3)
    before = cpu_seconds(observer.pid)
    time.sleep(watch_seconds)
    busy = cpu_seconds(observer.pid) - before
    rss = rss_mib(observer.pid)
    print(f"peers the observer listed  {arrived} of {peers}")
    print(f"observer among {peers} peers  {busy / watch_seconds * 100:7.2f} % of a core over {watch_seconds} s"
          f"   RSS {rss:5.1f} MiB   (target: under 1 % of a core)")
    print(f"observer alone             {alone * 100:7.2f} % of a core   (reference)")
    newcomer_discovery(binary, work, env, password, peers, runs=10)
    for proc in crowd:
        proc.kill()
    observer.kill()


def newcomer_discovery(binary, work, env, password, peers, runs):
    """From a newcomer's `chat` to its listing every one of the crowd (it asks who is there and
    they answer within 20-120 ms), and the packets its arrival brings in during its first second."""
    data = os.path.join(work, "newcomer")
    make_profile(binary, data, "newcomer", password, env)
    times, received = [], []
    for _ in range(runs):
        script = [f"login newcomer --password-file {password}", "chat"]
        script += ["sleep 0.01\necho :::\nnearby"] * 150 + ["echo :::", "nearby stats"]
        proc = subprocess.Popen([binary, "--data-dir", data], stdin=subprocess.PIPE, stdout=subprocess.PIPE,
                                stderr=subprocess.DEVNULL, env=env, text=True, bufsize=1)
        proc.stdin.write("\n".join(script) + "\n")
        proc.stdin.close()
        start = wait_for_line(proc, "announcing", 10)
        listed, seen_all = 0, None
        for line in proc.stdout:
            if line.startswith(":::"):
                if listed >= peers and seen_all is None:
                    seen_all = time.perf_counter()
                listed = 0
            elif re.search(r" p\d+#.* seen ", line):  # A line of the list, not a live notice.
                listed += 1
            elif line.startswith("sent "):
                received.append(int(line.split("received ")[1].split(",")[0]))
        proc.wait()
        if start is not None and seen_all is not None:
            times.append(seen_all - start)
    if times:
        print(f"newcomer lists all {peers}    median {statistics.median(times) * 1000:7.1f} ms   worst {max(times) * 1000:7.1f} ms"
              f"   ({len(times)} of {runs} saw everyone; target: under 250 ms median)")
    if received:
        print(f"packets a newcomer gets     median {statistics.median(received):7.0f} in its first ~2 s among {peers} peers"
              f"   (one answer each to its query, plus their refreshes every 5 s)")


def udp_ping_pong(rounds):
    """Round trips of a 100-byte datagram between two processes on loopback: the reference."""
    import socket
    server = socket.socket(socket.AF_INET, socket.SOCK_DGRAM)
    server.bind(("127.0.0.1", 0))
    port = server.getsockname()[1]
    child = os.fork()
    if child == 0:
        for _ in range(rounds):
            data, address = server.recvfrom(2048)
            server.sendto(data, address)
        os._exit(0)
    client = socket.socket(socket.AF_INET, socket.SOCK_DGRAM)
    payload = b"x" * 100
    times = []
    for _ in range(rounds):
        start = time.perf_counter()
        client.sendto(payload, ("127.0.0.1", port))
        client.recvfrom(2048)
        times.append(time.perf_counter() - start)
    os.waitpid(child, 0)
    return times


def percentile(values, fraction):
    ordered = sorted(values)
    return ordered[min(len(ordered) - 1, int(len(ordered) * fraction))]


def conversations(binary, work, env, count):
    section("conversations: latency, sustained rate, paging over 1,000,000 messages")
    password = os.path.join(work, "password")
    a_dir, b_dir = os.path.join(work, "conv-a"), os.path.join(work, "conv-b")
    make_profile(binary, a_dir, "ann", password, env)
    make_profile(binary, b_dir, "ben", password, env)
    receiver = subprocess.Popen([binary, "--data-dir", b_dir], stdin=subprocess.PIPE, stdout=subprocess.PIPE,
                                stderr=subprocess.DEVNULL, env=env, text=True, bufsize=1)
    receiver.stdin.write(f"login ben --password-file {password}\nchat\n")
    receiver.stdin.flush()
    sender = subprocess.Popen([binary, "--data-dir", a_dir], stdin=subprocess.PIPE, stdout=subprocess.DEVNULL,
                              stderr=subprocess.DEVNULL, env=env, text=True, bufsize=1)
    sender.stdin.write(f"login ann --password-file {password}\nchat\nsleep 1.5\nopen ben\n")
    sender.stdin.flush()
    wait_for_line(receiver, "ann#", 10)
    time.sleep(1.6)

    # One-way latency: the line goes into ann's shell; the notice comes out of ben's.
    latencies = []
    for i in range(200):
        start = time.perf_counter()
        sender.stdin.write(f"ping {i}\n")
        sender.stdin.flush()
        seen = wait_for_line(receiver, f"ping {i}", 5)
        if seen is not None:
            latencies.append(seen - start)
    reference = udp_ping_pong(2000)
    p50, p99 = percentile(latencies, 0.5), percentile(latencies, 0.99)
    r50, r99 = percentile(reference, 0.5), percentile(reference, 0.99)
    print(f"one-way latency            p50 {p50 * 1e3:7.3f} ms   p99 {p99 * 1e3:7.3f} ms   ({len(latencies)} of 200)")
    print(f"raw UDP round trip         p50 {r50 * 1e3:7.3f} ms   p99 {r99 * 1e3:7.3f} ms   (reference)")
    print(f"ratio                      p99 {p99 / r99:7.1f} x   (target: within 5x)")

    # Sustained rate: `count` messages as fast as the shell takes them, until ben has them all.
    start = time.perf_counter()
    sender.stdin.write("".join(f"burst {i}\n" for i in range(count)))
    sender.stdin.flush()
    done = wait_for_line(receiver, f"burst {count - 1}", 120)
    if done is not None:
        print(f"sustained, stored at both  {count / (done - start):9,.0f} messages/s   (target: at least 2,000)")
    sender.kill()
    receiver.kill()

    # Paging: a conversation of 1,000,000 messages, then opening it and asking for older pages.
    db = os.path.join(a_dir, "seance.sqlite")
    subprocess.run(["sqlite3", db, """
        WITH RECURSIVE n(i) AS (SELECT 1 UNION ALL SELECT i + 1 FROM n WHERE i < 1000000)
        INSERT INTO message (conversationId, number, outgoing, text, firstSequence, lastSequence, sentAt, receivedAt, state)
        SELECT 1, (SELECT coalesce(max(number), 0) FROM message WHERE conversationId = 1) + i, i % 2,
               'filler message number ' || i, 100000 + i, 100000 + i, 1700000000 + i, 1700000000 + i, 'read' FROM n;
    """], check=True)
    login = f"login ann --password-file {password}; chat"
    base, _ = median_time([binary, "--data-dir", a_dir, "-c", login], 15, env)
    opened, _ = median_time([binary, "--data-dir", a_dir, "--no-anim", "-c", login + "; open ben"], 15, env)
    older, _ = median_time([binary, "--data-dir", a_dir, "--no-anim", "-c", login + "; open ben; older; older; older"], 15, env)
    query = "SELECT id, outgoing, text, sentAt, receivedAt, state FROM message WHERE conversationId = 1 AND id < 9223372036854775807 ORDER BY id DESC LIMIT 20;"
    sqlite, _ = median_time(["sqlite3", db, query], 15, env)
    print(f"open ben (newest page)     {(opened - base) * 1e3:7.2f} ms   over login + chat alone   (target: under 10 ms)")
    print(f"older, per page            {(older - opened) / 3 * 1e3:7.2f} ms")
    print(f"sqlite3: the same page     {sqlite * 1e3:7.2f} ms   (reference, including sqlite3's own start-up)")


def main():
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--binary", required=True)
    parser.add_argument("--runs", type=int, default=200)
    parser.add_argument("--commands", type=int, default=100_000)
    args = parser.parse_args()
    binary = os.path.abspath(args.binary)
    env = dict(os.environ, NO_COLOR="1")
    with tempfile.TemporaryDirectory(prefix="seance-bench-") as work:
        env["HOME"] = work
        print(f"seance benchmarks — {binary}")
        startup(binary, work, env, args.runs)
        throughput(binary, work, env, args.commands)
        visions_page(binary, work, env, max(20, args.runs // 4))
        nearby(binary, work, env, runs=20, peers=50, watch_seconds=30)
        conversations(binary, work, env, count=5000)


if __name__ == "__main__":
    main()
