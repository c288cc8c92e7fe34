"""What a message costs its receiver and its sender, in instructions (issue 51): ben (or ann)
runs under callgrind while ann sends him pings one at a time (each once the one before is
shown) and then bursts; two runs that differ only in how many, the difference divided by the
difference in messages. Instructions do not depend on the machine's load: the same figure from
run to run."""
import os
import re
import subprocess
import tempfile

from common import make_profile, next_line, record, section, wait_for_line

TARGET = 150_000


def instructions(out_file):
    """The total instructions callgrind counted (its `summary:` or `totals:` line)."""
    with open(out_file) as f:
        for line in f:
            found = re.match(r"(?:summary|totals): (\d+)", line)
            if found:
                return int(found.group(1))
    raise RuntimeError(f"no totals in {out_file}")


def one_run(binary, work, env, password, tag, pings, burst, traced="ben", indexed=True):
    """The instructions of `traced` (ben, who receives, or ann, who sends) from login to quit,
    for `pings` pings and a burst of `burst`; `indexed` false: on databases whose tables the
    search index no longer follows (the search section's reference)."""
    a_dir, b_dir = os.path.join(work, f"cost-{tag}-a"), os.path.join(work, f"cost-{tag}-b")
    make_profile(binary, a_dir, "ann", password, env)
    make_profile(binary, b_dir, "ben", password, env)
    for directory in () if indexed else (a_dir, b_dir):
        subprocess.run(["sqlite3", os.path.join(directory, "seance.sqlite"), "DELETE FROM search_indexed;"], check=True)
    out_file = os.path.join(work, f"callgrind-{tag}.out")
    callgrind = ["valgrind", "--tool=callgrind", f"--callgrind-out-file={out_file}"]
    ben = subprocess.Popen((callgrind if traced == "ben" else []) + [binary, "--data-dir", b_dir],
                           stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=subprocess.DEVNULL, env=env, text=True, bufsize=1)
    ben.stdin.write(f"login ben --password-file {password}\nchat\n")
    ben.stdin.flush()
    ann = subprocess.Popen((callgrind if traced == "ann" else []) + [binary, "--data-dir", a_dir], stdin=subprocess.PIPE,
                           stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL, env=env, text=True, bufsize=1)
    ann.stdin.write(f"login ann --password-file {password}\nchat\nopen ben --wait 120\n")
    ann.stdin.flush()
    try:
        if wait_for_line(ben, "ann#", 120) is None:
            raise RuntimeError("ben under callgrind never listed ann")
        # The session is made by the first message; then the pings, each after the one before.
        for i in range(pings + 1):
            ann.stdin.write(f"ping {i}\n")
            ann.stdin.flush()
            if wait_for_line(ben, f"ping {i}", 60) is None:
                raise RuntimeError(f"ping {i} never reached ben")
        if burst:
            ann.stdin.write("".join(f"burst {i}\n" for i in range(burst)))
            ann.stdin.flush()
            if wait_for_line(ben, f"burst {burst - 1}", 300) is None:
                raise RuntimeError("the burst never reached ben")
        if traced == "ann":
            # Out of chat, then out of the shell: its count ends when it exits.
            ann.stdin.write("quit\nquit\n")
            ann.stdin.close()
            ann.wait(120)
        ben.stdin.write("quit\n")
        ben.stdin.flush()
        while next_line(ben, 60) is not None:
            pass
        ben.wait(120)
    finally:
        for proc in (ann, ben):
            if proc.poll() is None:
                proc.kill()
                proc.wait()
    return instructions(out_file)


def indexed_rows(work, tag, traced="ben"):
    """The highest id of `traced`'s messages the search index holds after the run `tag`: on
    these fresh profiles, whose ids start at 1 without gaps, how many it holds (rows wait to be
    indexed until `SearchSchema.deferLimit` of them do, so a burst ends with some waiting)."""
    database = os.path.join(work, f"cost-{tag}-{'b' if traced == 'ben' else 'a'}", "seance.sqlite")
    found = subprocess.run(["sqlite3", database, "SELECT upTo FROM search_indexed WHERE tableName = 'message'"],
                           capture_output=True, text=True, check=True).stdout.strip()
    return int(found or 0)


def burst_costs(binary, work, env, password, bursts, pings, traced, few):
    """`traced`'s instructions a message within a burst, with the index and without it, and the
    index's a row. `few`: its run of `pings` pings without a burst."""
    tag = "" if traced == "ben" else "sent-"
    burst = one_run(binary, work, env, password, f"{tag}burst", pings, bursts[1], traced=traced)
    unindexed_few = one_run(binary, work, env, password, f"{tag}unindexed-few", pings, bursts[0], traced=traced, indexed=False)
    unindexed_burst = one_run(binary, work, env, password, f"{tag}unindexed-burst", pings, bursts[1], traced=traced, indexed=False)
    unindexed = (unindexed_burst - unindexed_few) / (bursts[1] - bursts[0])
    # The index's cost by the rows it took in: the last of a burst wait for company (up to
    # `deferLimit`), and a stream indexes every one. A message within a burst costs the rest
    # and its row's share of the index (the per-transaction step that watches for a batch is
    # spread over these rows too).
    rows = indexed_rows(work, f"{tag}burst", traced) - indexed_rows(work, f"{tag}few", traced)
    if rows <= 0:
        raise RuntimeError(f"the burst of {bursts[1]} indexed no row: it must be longer than the index's batch")
    index_row = ((burst - few) - (unindexed_burst - unindexed_few)) / rows
    return dict(burst=unindexed + index_row, measured=(burst - few) / (bursts[1] - bursts[0]), unindexed=unindexed,
                index_row=index_row, rows=rows)


def message_cost(binary, work, env, pings=(50, 250), bursts=(0, 10_000)):
    """Prints and records the instructions a message costs ben, who receives, and ann, who
    sends: one at a time, and within a burst, with the search index and without it."""
    section("cost: instructions a message at each end (callgrind: the same count on any load)")
    password = os.path.join(work, "password")
    # Valgrind cannot read the debug sections swift writes: a copy without them (the symbols
    # stay, for callgrind_annotate).
    stripped = os.path.join(work, "seance-for-callgrind")
    subprocess.run(["objcopy", "--strip-debug", binary, stripped], check=True)
    binary = stripped
    few = one_run(binary, work, env, password, "few", pings[0], bursts[0])
    more = one_run(binary, work, env, password, "pings", pings[1], bursts[0])
    per_ping = (more - few) / (pings[1] - pings[0])
    received = burst_costs(binary, work, env, password, bursts, pings[0], "ben", few)
    sent_few = one_run(binary, work, env, password, "sent-few", pings[0], bursts[0], traced="ann")
    sent_more = one_run(binary, work, env, password, "sent-pings", pings[1], bursts[0], traced="ann")
    per_sent = (sent_more - sent_few) / (pings[1] - pings[0])
    sent = burst_costs(binary, work, env, password, bursts, pings[0], "ann", sent_few)
    # Both shells store and index every message: the rate at both ends pays both indexes,
    # over what both ends spend on a message.
    both_index = received["index_row"] + sent["index_row"]
    both_rest = received["unindexed"] + sent["unindexed"]
    record("message_instructions", ping=per_ping, burst=received["burst"], burst_measured=received["measured"],
           burst_unindexed=received["unindexed"], sent=per_sent, sent_burst=sent["burst"], sent_burst_unindexed=sent["unindexed"],
           index_share_both=both_index / both_rest)
    print(f"receiver's instructions a message, one at a time {per_ping:10,.0f}   (callgrind; target: at most {TARGET:,})")
    print(f"sender's instructions a message, one at a time   {per_sent:10,.0f}   (its line read, stored, sealed, sent, shown)")
    for who, costs in (("receiver", received), ("sender", sent)):
        print(f"{who + chr(39) + 's instructions a message, in a burst':49}{costs['burst']:10,.0f}   "
              f"(its row's share of the index included; {costs['measured']:,.0f} over the burst, {costs['rows']:,} of whose rows were indexed)")
        print(f"… the same without the search index               {costs['unindexed']:10,.0f}   "
              f"(the index costs {costs['index_row'] / costs['unindexed'] * 100:.1f} %, {costs['index_row']:,.0f} a row over {costs['rows']:,} rows)")
    print(f"the index at both ends together                  {both_index / both_rest * 100:10.1f} %   "
          f"({both_index:,.0f} instructions a message more than the {both_rest:,.0f} the two ends spend without it: "
          "what the rate stored at both ends pays; target: at most 10 %)")
    return per_ping, received["burst"]


if __name__ == "__main__":
    import sys
    binary = os.path.abspath(sys.argv[1])
    with tempfile.TemporaryDirectory(prefix="seance-cost-") as work:
        env = dict(os.environ, NO_COLOR="1", HOME=work)
        with open(os.path.join(work, "password"), "w") as f:
            f.write("correct horse\n")
        message_cost(binary, work, env)
