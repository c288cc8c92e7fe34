"""Crowds: N real shells on one namespace LAN (a network namespace each, on one bridge), watched
by one more; then a site of 1,000 profiles on a broker, their retained announcements published
by a load script, that a newcomer lists on connecting. Nothing here leaves the namespace."""
import os
import re
import socket
import struct
import subprocess
import threading
import time

from common import (Hosts, NatsCluster, make_profile, newcomer_discovery, next_line, record, rss_mib, section, wait_for_broker,
                    wait_for_line)

GROUP, PORT = "239.255.77.77", 47777
SITE_SCRIPT = os.path.join(os.path.dirname(os.path.abspath(__file__)), "site.py")


def cpu_seconds_precise(pid):
    """CPU time of a process's threads in seconds, to the nanosecond (each thread's
    /proc/PID/task/TID/schedstat; the clock-tick figures of /proc/PID/stat are 10 ms coarse, a
    whole idle minute of a quiet observer). Threads that ended are not counted."""
    total = 0
    for task in os.listdir(f"/proc/{pid}/task"):
        try:
            with open(f"/proc/{pid}/task/{task}/schedstat") as f:
                total += int(f.read().split()[0])
        except FileNotFoundError:
            pass
    return total / 1e9


class LinkCounter(threading.Thread):
    """Counts what the presence group carries: announcements (refreshes and answers apart; an
    unchanged refresh is a proof, type 25 of version 3) and queries, as a host on the link hears
    them."""

    def __init__(self, interface_address="127.0.0.1"):
        super().__init__(daemon=True)
        self.sock = socket.socket(socket.AF_INET, socket.SOCK_DGRAM)
        self.sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
        self.sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEPORT, 1)
        self.sock.bind(("", PORT))
        self.sock.setsockopt(socket.IPPROTO_IP, socket.IP_ADD_MEMBERSHIP, socket.inet_aton(GROUP) + socket.inet_aton(interface_address))
        self.sock.setsockopt(socket.SOL_SOCKET, socket.SO_RCVBUF, 4 << 20)
        self.sock.settimeout(0.5)
        self.lock = threading.Lock()
        self.counts = {"refresh": 0, "answer": 0, "query": 0}
        self.stopped = False

    def run(self):
        while not self.stopped:
            try:
                data = self.sock.recv(2048)
            except socket.timeout:
                continue
            except OSError:  # Closed by stop().
                break
            if len(data) < 8 or data[:4] != b"SEAN" or data[4] not in (2, 3):
                continue
            if data[4] == 3:
                # Version 3 on the group: a refresh proof (type 25), an unchanged refresh unsigned.
                kind = "refresh" if data[5] == 25 else None
            else:
                kind = {1: "answer" if struct.unpack(">H", data[6:8])[0] & 1 else "refresh", 8: "query"}.get(data[5])
            if kind:
                with self.lock:
                    self.counts[kind] += 1

    def snapshot(self):
        with self.lock:
            return dict(self.counts)

    def stop(self):
        self.stopped = True
        self.sock.close()


class Observer:
    """One shell in chat mode whose input stays open: asked how many it lists, it answers."""

    def __init__(self, binary, data, password, env, prefix=()):
        # Status lines ("announcing …") are on standard error in a script: read with the rest.
        self.proc = subprocess.Popen([*prefix, binary, "--data-dir", data], stdin=subprocess.PIPE, stdout=subprocess.PIPE,
                                     stderr=subprocess.STDOUT, env=env, text=True, bufsize=1)
        self.send(f"login watcher --password-file {password}", "chat")
        wait_for_line(self.proc, "announcing", 10)
        self.asked = 0

    def send(self, *lines):
        self.proc.stdin.write("\n".join(lines) + "\n")
        self.proc.stdin.flush()

    def listed(self, within=60):
        """How many crowd members (p0, p1, …) `nearby` lists now. A crowd that keeps arriving
        and leaving writes notices without end, each of which would restart a per-line wait:
        past `within` seconds in all the count so far is returned, and said to be partial."""
        self.asked += 1
        self.send(f"echo ::: {self.asked}", "nearby", f"echo ;;; {self.asked}")
        count, inside, deadline = 0, False, time.monotonic() + within
        while (line := next_line(self.proc, 30)) is not None:
            if line.startswith(f"::: {self.asked}"):
                inside = True
            elif line.startswith(f";;; {self.asked}"):
                return count
            elif inside and re.search(r" p\d+#.* seen ", line):
                count += 1
            if time.monotonic() > deadline:
                print(f"the observer did not finish listing within {within} s (its crowd's notices kept coming): "
                      f"{count} counted so far")
                break
        return count

    def close(self):
        self.proc.kill()
        self.proc.wait()


def crowd_shell(binary, data, name, password, env, prefix=()):
    """A member of the crowd: online until killed, its output unread (to /dev/null)."""
    proc = subprocess.Popen([*prefix, binary, "--data-dir", data], stdin=subprocess.PIPE, stdout=subprocess.DEVNULL,
                            stderr=subprocess.DEVNULL, env=env, text=True)
    proc.stdin.write(f"login {name} --password-file {password}\nchat\n")
    proc.stdin.flush()
    return proc


def make_profiles(binary, work, env, password, count):
    """Profiles p0 … p{count-1}, made two at a time (each costs a scrypt)."""
    dirs = [os.path.join(work, f"crowd-{i}") for i in range(count)]
    pending = [(i, d) for i, d in enumerate(dirs) if not os.path.exists(d)]
    for start in range(0, len(pending), 2):
        procs = [subprocess.Popen([binary, "--data-dir", d, "-c", f"profile new p{i} --password-file {password}"], env=env,
                                  stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL) for i, d in pending[start:start + 2]]
        for proc in procs:
            proc.wait()
    return dirs


def backlog_drops():
    """Packets the kernel dropped because a CPU's input backlog was full, since boot (the second
    column of /proc/net/softnet_stat, one row a CPU). One kernel plays every host here: a
    multicast to N hosts is N copies queued on the sending CPU at once, where on a real LAN each
    host's own kernel takes one."""
    with open("/proc/net/softnet_stat") as f:
        return sum(int(row.split()[1], 16) for row in f if row.strip())


def send_discards(pids):
    """Datagrams the shells' kernels refused to send (`UdpSndbufErrors` of /proc/PID/net/snmp:
    each shell is in a host namespace of its own, so this is its host's count). Here that is
    mostly a unicast to a host not yet in the neighbour (ARP) table: one kernel plays every
    host, and its table is shared by all their namespaces, full at
    net.ipv4.neigh.default.gc_thresh3 entries (1,024 by default), where 500 hosts that each
    answer every newcomer need some 500 each. UDP reports such a send as done."""
    total = 0
    for pid in pids:
        try:
            with open(f"/proc/{pid}/net/snmp") as f:
                rows = [line.split() for line in f if line.startswith("Udp:")]
            total += int(rows[1][rows[0].index("SndbufErrors")])
        except (OSError, ValueError, IndexError):
            pass
    return total


def lan_crowds(binary, work, env, sizes, settle, watch, newcomer_runs, kernel_backlog=None, neighbour_table=None):
    password = os.path.join(work, "password")
    section(f"crowds: {', '.join(map(str, sizes))} shells on one LAN (a namespace host each), watched by one more")
    started = time.perf_counter()
    dirs = make_profiles(binary, work, env, password, max(sizes))
    # Host 1 watches, host 2 is the newcomer, the crowd from host 3 on.
    hosts = Hosts(max(sizes) + 2, f"sc{os.getpid() % 10000}")
    print(f"profiles and {hosts.count} hosts made in {time.perf_counter() - started:.0f} s")
    observer_dir = os.path.join(work, "crowd-observer")
    make_profile(binary, observer_dir, "watcher", password, env)
    observer = Observer(binary, observer_dir, password, env, prefix=hosts.run(1))
    link = LinkCounter("198.19.255.254")
    link.start()
    shells, results = [], {}
    try:
        for size in sizes:
            while len(shells) < size:
                # Four arrivals a second: each costs every member an answer to drop (and the two
                # cores play every host), and a login's scrypt takes 16 MiB for a moment.
                shells.append(crowd_shell(binary, dirs[len(shells)], f"p{len(shells)}", password, env, prefix=hosts.run(len(shells) + 3)))
                time.sleep(0.25)
            deadline, listed = time.perf_counter() + 120, 0
            while time.perf_counter() < deadline and (listed := observer.listed()) < size:
                time.sleep(1)
            # Everyone has heard everyone: the intervals have stretched by the next refresh.
            time.sleep(settle(size))
            before_link, before_cpu, before = link.snapshot(), cpu_seconds_precise(observer.proc.pid), time.perf_counter()
            time.sleep(watch)
            elapsed = time.perf_counter() - before
            after_link, cpu = link.snapshot(), cpu_seconds_precise(observer.proc.pid) - before_cpu
            refreshes = (after_link["refresh"] - before_link["refresh"]) / elapsed
            packets = sum(after_link[k] - before_link[k] for k in after_link) / elapsed
            rss = rss_mib(observer.proc.pid)
            still = observer.listed()
            memory = sum(rss_mib(p.pid) for p in shells) / len(shells)
            results[size] = dict(listed=still, core_share=cpu / elapsed, rss_mib=rss, presence_per_s=packets,
                                 refreshes_per_s=refreshes, shell_rss_mib=memory)
            print(f"N = {size:3}: observer lists {still:3}   CPU {cpu / elapsed * 100:6.3f} % of a core   RSS {rss:5.1f} MiB   "
                  f"link {packets:5.1f} presence packets/s ({refreshes:.1f} refreshes)   each shell {memory:4.1f} MiB RSS")
            drops_before, discards_before = backlog_drops(), send_discards(p.pid for p in shells)
            times = newcomer_discovery(binary, work, env, password, size, newcomer_runs, name=f"crowd_{size}_newcomer",
                                       label=f"N = {size:3}: newcomer lists all", polls=300, prefix=hosts.run(2),
                                       others=1)  # and the observer
            drops, discards = backlog_drops() - drops_before, send_discards(p.pid for p in shells) - discards_before
            results[size].update(newcomer_median_s=sorted(times)[len(times) // 2] if times else None, backlog_drops=drops,
                                 kernel_backlog=kernel_backlog, send_discards=discards, neighbour_table=neighbour_table)
            print(f"N = {size:3}: meanwhile the harness kernel dropped {drops} packets over its backlog "
                  f"(net.core.netdev_max_backlog = {kernel_backlog or '?'}) and refused {discards} of the crowd's sends "
                  f"(its neighbour table holds net.ipv4.neigh.default.gc_thresh3 = {neighbour_table or '?'})")
    finally:
        for proc in shells:
            proc.kill()
        for proc in shells:
            proc.wait()
        observer.close()
        link.stop()
        hosts.close()
    small, large = results[min(sizes)], results[max(sizes)]
    if len(results) < 2:
        return record("crowds", **{str(size): figures for size, figures in results.items()})
    per_peer = (large["rss_mib"] - small["rss_mib"]) * 1024 / (max(sizes) - min(sizes))
    record("crowds", **{str(size): figures for size, figures in results.items()}, memory_per_peer_kib=per_peer)
    print(f"observer CPU, N = {max(sizes)} over N = {min(sizes)}:   {large['core_share'] / small['core_share']:5.2f} x   (target: at most 2x)")
    print(f"presence packets, N = {max(sizes)} over {min(sizes)}:  {large['presence_per_s'] / small['presence_per_s']:5.2f} x   "
          "(target: at most 2x)")
    print(f"observer memory per peer listed:     {per_peer:5.1f} KiB   (RSS growth from N = {min(sizes)} to {max(sizes)})")


def publish_site(venv_python, port, count, work):
    """The load script's 1,000 retained signed announcements on a broker (port on loopback)."""
    subprocess.run([venv_python, SITE_SCRIPT, "--port", str(port), "--count", str(count)], check=True, cwd=work)


def broker_site(binary, work, env, count, runs, venv_python):
    password = os.path.join(work, "password")
    section(f"crowds through a broker: a site of {count:,} profiles, a newcomer connects")
    conf = os.path.join(work, "site-mosquitto.conf")
    with open(conf, "w") as f:
        f.write("listener 18850 127.0.0.1\nallow_anonymous true\npersistence false\nset_tcp_nodelay true\n"
                "max_queued_messages 0\n")
    mosquitto = subprocess.Popen(["mosquitto", "-c", conf], stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    try:
        if not wait_for_broker(18850):
            return print("mosquitto did not start")
        started = time.perf_counter()
        publish_site(venv_python, 18850, count, work)
        print(f"{count:,} retained announcements published in {time.perf_counter() - started:.1f} s")
        newcomer_discovery(binary, work, env, password, count, runs, args=["--no-lan", "--broker", "mqtt://127.0.0.1:18850"],
                           name="site_mosquitto_newcomer", label=f"mosquitto: lists all {count:,}", polls=300)
    finally:
        mosquitto.kill()
        mosquitto.wait()
    cluster = NatsCluster(work, tag="site")
    try:
        if not cluster.ready():
            return print("the NATS cluster did not start")
        started = time.perf_counter()
        publish_site(venv_python, 18841, count, work)
        print(f"{count:,} retained announcements published on node 1 in {time.perf_counter() - started:.1f} s")
        newcomer_discovery(binary, work, env, password, count, runs, args=["--no-lan", "--broker", "mqtt://127.0.0.1:18843"],
                           name="site_nats_newcomer", label=f"NATS x3, node 3: lists all {count:,}", polls=300)
    finally:
        cluster.close()
