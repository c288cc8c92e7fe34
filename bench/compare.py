#!/usr/bin/env python3
"""Compares two `make bench` JSON files (two runs, or two commits) figure by figure.

    python3 bench/compare.py OLD.json NEW.json [--tolerance 0.10]

Each headline figure (medians, p50/p90/p99, rates, ratios, differences) is printed with both
values and the change; those that moved by more than the tolerance are marked. A figure that
one run printed as below its noise is compared with its noise, not as a number. Then each
reference's change (how fast the machine was in each run) and each seance figure over the
reference measured beside it, which a change of the machine's speed leaves alone. Exit status
1 when any figure moved by more than the tolerance (two runs of one commit should not).
"""
import argparse
import json
import sys

# The values that are figures; the rest (min, max, n, …) says how far to trust them.
HEADLINES = ("median", "p50", "p90", "p99", "value", "ratio", "seance", "rate")


def leaves(figures):
    """(name, value) for every headline number, `figure.key` named."""
    for figure, values in sorted(figures.items()):
        for key, value in values.items():
            if isinstance(value, dict):
                for inner, number in value.items():
                    if inner in HEADLINES and isinstance(number, (int, float)):
                        yield f"{figure}.{key}.{inner}", number, values
            elif key in HEADLINES and isinstance(value, (int, float)):
                yield f"{figure}.{key}", value, values


def main():
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("old")
    parser.add_argument("new")
    parser.add_argument("--tolerance", type=float, default=0.10, help="relative change that counts as a difference (default 0.10)")
    args = parser.parse_args()
    with open(args.old) as f:
        old = json.load(f)["figures"]
    with open(args.new) as f:
        new = json.load(f)["figures"]
    old_leaves = {name: (value, context) for name, value, context in leaves(old)}
    stalled = stalled_brokers(old) | stalled_brokers(new)
    moved = 0
    for name, value, context in leaves(new):
        if name.split("_")[0] in stalled:
            print(f"{name:40} {'the broker stalled in a run':>31}")
            continue
        if name not in old_leaves:
            print(f"{name:40} {'':>12} {value:12.6g}   (new)")
            continue
        before, before_context = old_leaves[name]
        # A difference smaller than its noise in either run is not a number to compare.
        noise = max(context.get("noise", 0), before_context.get("noise", 0))
        if noise and abs(value) < noise and abs(before) < noise:
            print(f"{name:40} {'below the noise in both':>25}")
            continue
        change = (value - before) / before if before else float("inf")
        mark = ""
        if abs(change) > args.tolerance:
            moved += 1
            mark = "   <-- moved"
        print(f"{name:40} {before:12.6g} {value:12.6g} {change:+8.1%}{mark}")
    print(f"\n{moved} figure(s) moved by more than {args.tolerance:.0%}")
    against_references(old, new, args.tolerance)
    sys.exit(1 if moved else 0)


def stalled_brokers(figures):
    """The brokers (figure prefixes) whose own floor stalled in a run: bench.py records
    `NAME_stalls.stalled`, and such a run's figures of that broker are its, not seance's."""
    return {name.removesuffix("_stalls") for name, values in figures.items()
            if name.endswith("_stalls") and values.get("stalled")}


# seance's figures and the reference each was measured beside, in the same run: on a shared
# machine whose speed moves between runs, the change of a figure over its reference's is what
# seance itself did (a rate's reference is a rate too).
PAIRS = (
    ("startup.seance.median", "startup.sqlite3.median"),
    ("visions_page.seance.median", "visions_page.sqlite3.median"),
    ("batch.seance", "batch.sqlite3"),
    ("lan_latency.p50", "udp_round_trip.p50"),
    ("mosquitto_latency.p50", "mosquitto_floor.p50"),
    ("mosquitto_latency.p99", "mosquitto_floor.p99"),
    ("mosquitto_rate.median", "mosquitto_floor_rate.median"),
    ("nats_latency.p50", "nats_floor.p50"),
    ("nats_rate.median", "nats_floor_rate.median"),
)


def against_references(old, new, tolerance):
    """Each reference's own change (the machine's), then each figure's change over its
    reference's."""
    def value(figures, name):
        figure, _, key = name.partition(".")
        node = figures.get(figure, {})
        for part in key.split("."):
            node = node.get(part) if isinstance(node, dict) else None
        return node if isinstance(node, (int, float)) and node else None

    rows = [(figure, reference, *(value(run, name) for run in (old, new) for name in (figure, reference)))
            for figure, reference in PAIRS]
    stalled = stalled_brokers(old) | stalled_brokers(new)
    rows = [row for row in rows if None not in row[2:] and row[0].split("_")[0] not in stalled]
    if not rows:
        return
    print("\nthe references (the machine, as each run found it):")
    for _, reference, _, reference_before, _, reference_after in rows:
        print(f"{reference:40} {reference_before:12.6g} {reference_after:12.6g} {reference_after / reference_before - 1:+8.1%}")
    print("\nover their references (what seance did, the machine's change taken out):")
    for figure, reference, before, reference_before, after, reference_after in rows:
        change = (after / reference_after) / (before / reference_before) - 1
        mark = "   <-- moved" if abs(change) > tolerance else ""
        print(f"{figure:40} {before / reference_before:12.4g} {after / reference_after:12.4g} {change:+8.1%}{mark}")


if __name__ == "__main__":
    main()
