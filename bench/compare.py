#!/usr/bin/env python3
"""Compares two `make bench` JSON files (two runs, or two commits) figure by figure.

    python3 bench/compare.py OLD.json NEW.json [--tolerance 0.10]

Each headline figure (medians, p50/p90/p99, rates, ratios, differences) is printed with both
values and the change; those that moved by more than the tolerance are marked. A figure that
one run printed as below its noise is compared with its noise, not as a number. Exit status 1
when any figure moved by more than the tolerance (two runs of one commit should not).
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
    moved = 0
    for name, value, context in leaves(new):
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
    sys.exit(1 if moved else 0)


if __name__ == "__main__":
    main()
