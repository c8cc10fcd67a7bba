#!/usr/bin/env python3
"""Measures how far the machine drifts between cells that were not timed interleaved: the figure
behind condbench-report's drift allowance (docs/statistics.md, "The drift allowance").

Pairs of cells that did identical work, timed apart, should not separate; the conservative ratio
of a pair is the low edge L of the report's 99% interval of their ratio (the k-th smallest of the
pairwise ratios, k as condbench-report takes it: min(slower) / max(faster) with 5 and 5
repetitions). Above 1 the two separated although the work was the same: the machine changed
speed between them. The allowance must exceed the largest such ratio. The largest ratio of the
pairs' medians is printed too: what drift and noise together did to the typical value.

  scripts/drift_allowance.py --aa A.json B.json     the same benchmarks in two runs (two processes)
  scripts/drift_allowance.py --flat FILE.json...    within each file, the scenarios of a strategy whose
                                                    work does not depend on the scenario (masked)

A file whose repetitions were randomly interleaved (condbench's context condbench_interleaving)
pairs cells timed together, so --flat then measures what the interleaving leaves, not drift.
"""
import argparse
import collections
import json
import os
import sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "bench", "python"))
import benchmark_name  # noqa: E402  (the names' one reader on the Python side)
from interval_widths import rank_sum_order  # noqa: E402  the report's order statistic


def fail(message):
    print(f"drift_allowance: {message}", file=sys.stderr)
    sys.exit(2)


def cells(path):
    """{run_name: [real_time of each repetition]} and the file's interleaving."""
    try:
        with open(path) as f:
            data = json.load(f)
        out = collections.defaultdict(list)
        for b in data["benchmarks"]:
            if b.get("run_type", "iteration") == "iteration" and not b.get("error_occurred"):
                out[str(b["run_name"]).removesuffix("/real_time")].append(float(b["real_time"]))
        return out, data.get("context", {}).get("condbench_interleaving", "in order")
    except (OSError, ValueError, KeyError, TypeError) as e:
        fail(f"{path}: not a condbench result file ({e})")


def median(v):
    return sorted(v)[len(v) // 2]


def conservative_ratio(x, y):
    """(L, ratio of medians, the margin of sameness the interval needs: max(U, 1 / L)) of the slower
    over the faster, the two ordered by their medians."""
    fast, slow = (x, y) if median(x) <= median(y) else (y, x)
    k = max(1, rank_sum_order(len(fast), len(slow)))
    ratios = sorted(b / a for a in fast for b in slow)
    low, high = ratios[k - 1], ratios[-k]
    return low, median(slow) / median(fast), max(high, 1 / low)


def report(pairs, what):
    if not pairs:
        fail(f"no {what} to compare")
    pairs.sort()
    separated = sum(r > 1 for r, *_ in pairs)
    print(f"{len(pairs)} pairs of {what}; {separated} separated (L > 1)")
    for r, _, _, name in pairs[-5:]:
        print(f"  {r:6.3f}  {name}")
    print(f"largest conservative ratio L: {pairs[-1][0]:.3f}; largest ratio of medians: "
          f"{max(m for _, m, _, _ in pairs):.3f}")
    # What condbench-report's equivalence margin (kEquivalenceMargin) would call the same, drift aside:
    # the share of these identical pairs whose whole interval lies inside [1 / M, M].
    needed = sorted(n for _, _, n, _ in pairs)
    shares = ", ".join(f"{m}: {100 * sum(n <= m for n in needed) / len(needed):.0f}%" for m in (1.05, 1.1, 1.15, 1.2))
    print(f"margin each pair's interval needs to be the same, max(U, 1/L): median {needed[len(needed) // 2]:.3f}; "
          f"pairs inside a margin of {shares}")


def main():
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    mode = parser.add_mutually_exclusive_group(required=True)
    mode.add_argument("--aa", nargs=2, metavar="FILE", help="two runs of the same build")
    mode.add_argument("--flat", nargs="+", metavar="FILE", help="runs whose masked strategies did identical work")
    args = parser.parse_args()
    pairs = []
    if args.aa:
        (a, _), (b, _) = cells(args.aa[0]), cells(args.aa[1])
        for name in sorted(set(a) & set(b)):
            if not name.startswith("primitive/") and len(a[name]) > 1 and len(b[name]) > 1:
                pairs.append((*conservative_ratio(a[name], b[name]), name))
        report(pairs, "benchmarks run in both files")
        return
    for path in args.flat:
        runs, interleaving = cells(path)
        if interleaving != "in order":
            print(f"note: {path}'s repetitions were interleaved ({interleaving}): its pairs were timed together")
        by_strategy = collections.defaultdict(list)
        for name, times in runs.items():
            labels = (benchmark_name.parse(name) or ([], []))[0]
            if labels[:1] == ["early_exit"] and len(labels) > 3 and "masked" in labels[3] and len(times) > 1:
                by_strategy[benchmark_name.without_scenario(name)].append(times)
        for key, series in by_strategy.items():
            for i in range(len(series)):
                for j in range(i + 1, len(series)):
                    pairs.append((*conservative_ratio(series[i], series[j]), f"{path}: {key}"))
    report(pairs, "scenarios of a masked strategy")


if __name__ == "__main__":
    main()
