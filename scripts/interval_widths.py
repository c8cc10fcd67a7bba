#!/usr/bin/env python3
"""How sharp a run's verdicts can be: for every pair of cells (benchmarks of one model and batch) in
each result file, the width of the report's 99% interval of their ratio, and how many pairs the
report's rule decides (docs/statistics.md). The measure behind condbench's default repetitions:
run the same selection with two settings, alternating, and compare.

  scripts/interval_widths.py RESULT.json...

Per file: repetitions per cell, the median over pairs of U / L (1 is a point; 1.5 means the
ratio is known to within a factor 1.5), the share of pairs decided (faster or the same) and the share
called faster, on the rule with no drift allowance (the pairs are cells of one interleaved run).
"""
import argparse
import collections
import itertools
import json
import os
import sys

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "bench", "python"))
import benchmark_name  # noqa: E402  (the names' one reader on the Python side)


def rank_sum_order(n1, n2, tail=0.005):
    """The largest k with P(U <= k - 1) <= tail under the exact rank-sum null (report/statistics.cpp)."""
    counts = {(0, 0): [1]}

    def table(i, j):
        if (i, j) not in counts:
            if i == 0 or j == 0:
                counts[(i, j)] = [1]
            else:
                a, b = table(i - 1, j), table(i, j - 1)
                size = i * j + 1
                counts[(i, j)] = [(a[u - j] if 0 <= u - j < len(a) else 0) + (b[u] if u < len(b) else 0)
                                  for u in range(size)]
        return counts[(i, j)]

    dist = table(n1, n2)
    total, below, k = sum(dist), 0, 0
    while k < len(dist) and (below + dist[k]) / total <= tail:
        below += dist[k]
        k += 1
    return k


def cells(path):
    try:
        with open(path) as f:
            data = json.load(f)
    except (OSError, ValueError) as e:
        print(f"interval_widths: {path}: not a result file ({e})", file=sys.stderr)
        sys.exit(2)
    out = collections.defaultdict(list)
    for b in data["benchmarks"]:
        name = str(b.get("run_name", ""))
        if b.get("run_type") == "iteration" and name.startswith("early_exit/") and not b.get("error_occurred"):
            out[name].append(float(b["real_time"]))
    return out


def main():
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("files", nargs="+", metavar="RESULT.json")
    for path in parser.parse_args().files:
        groups = collections.defaultdict(dict)
        for name, times in cells(path).items():
            parsed = benchmark_name.parse(name)
            if parsed:  # one model and batch: the axes but the scenario
                groups[benchmark_name.build([], [a for a in parsed[1] if a[0] not in ("exit", "mix")])][name] = times
        widths, decided, faster, reps = [], 0, 0, set()
        for group in groups.values():
            for a, b in itertools.combinations(group.values(), 2):
                reps.update((len(a), len(b)))
                k = rank_sum_order(len(a), len(b))
                if k == 0:
                    continue
                med = lambda v: sorted(v)[len(v) // 2]
                fast, slow = (a, b) if med(a) <= med(b) else (b, a)
                ratios = sorted(y / x for x in fast for y in slow)
                low, high = ratios[k - 1], ratios[-k]
                widths.append(high / low)
                decided += low >= 1.05 or (low * 1.2 >= 1 and high <= 1.2)  # faster, or the same (kEquivalenceMargin)
                faster += low >= 1.05
        if not widths:
            print(f"{path}: no pair of cells with enough repetitions")
            continue
        widths.sort()
        n = len(widths)
        print(f"{path}: repetitions {sorted(reps)}, {n} pairs; median U/L {widths[n // 2]:.3f}; "
              f"decided {decided / n:.1%}, faster {faster / n:.1%}")


if __name__ == "__main__":
    main()
