#!/usr/bin/env python3
"""Measures how far the machine drifts between cells that were not timed interleaved: the figure
behind condbench-report's drift allowance (docs/statistics.md, "The drift allowance"), and what
margin of sameness identical work reaches ("The margin of sameness").

Pairs of cells that did identical work, timed apart, should not separate; the conservative ratio
of a pair is the low edge L of the report's interval of their ratio (condbench-report --pairs:
judge()'s interval at the order statistic and confidence the report takes). Above 1 the two
separated although the work was the same: the machine changed speed between them. The allowance
must exceed the largest such ratio. The largest ratio of the pairs' medians is printed too: what
drift and noise together did to the typical value; and the margin each pair's interval would need
to be called the same, max(U, 1/L).

  .venv/bin/python scripts/drift_allowance.py [--report-tool PATH] --aa A.json B.json
                                     the same benchmarks in two runs (two processes)
  .venv/bin/python scripts/drift_allowance.py [--report-tool PATH] --flat FILE.json...
                                     within each file, the scenarios of a strategy whose work does not
                                     depend on the scenario (masked)

A file whose repetitions were randomly interleaved (condbench's context condbench_interleaving)
pairs cells timed together, so --flat then measures what the interleaving leaves, not drift.
"""
import argparse
import os
import sys

try:
    from condbench import results  # the result-file reader (python/condbench; scripts/setup installs it in .venv)
except ImportError:
    sys.exit("drift_allowance: the condbench package is not importable here: run it with .venv/bin/python")
from interval_widths import ROOT, judged_pairs  # condbench-report --pairs, the one judge (beside this script)


def fail(message):
    print(f"drift_allowance: {message}", file=sys.stderr)
    sys.exit(2)


def measured(p):
    """(L, ratio of medians, the margin of sameness the interval needs: max(U, 1 / L), name)."""
    slow, fast = (p["b"], p["a"]) if p["fast"] == "a" else (p["a"], p["b"])
    return p["low"], slow["median_us"] / fast["median_us"], max(p["high"], 1 / p["low"]), p["a"]["name"]


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
    # What condbench-report's margin of sameness (kEquivalenceMargin) would call the same, drift aside:
    # the share of these identical pairs whose whole interval lies inside [1 / M, M].
    needed = sorted(n for _, _, n, _ in pairs)
    shares = ", ".join(f"{m}: {100 * sum(n <= m for n in needed) / len(needed):.0f}%" for m in (1.05, 1.1, 1.15, 1.2))
    print(f"margin each pair's interval needs to be the same, max(U, 1/L): median {needed[len(needed) // 2]:.3f}; "
          f"pairs inside a margin of {shares}")


def bounded(p):
    return p["k"] > 0 and p["high"] is not None and p["a"]["repetitions"] > 1 and p["b"]["repetitions"] > 1


def main():
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    mode = parser.add_mutually_exclusive_group(required=True)
    mode.add_argument("--aa", nargs=2, metavar="FILE", help="two runs of the same build")
    mode.add_argument("--flat", nargs="+", metavar="FILE", help="runs whose masked strategies did identical work")
    parser.add_argument("--report-tool", default=os.path.join(ROOT, "build", "release", "condbench-report"))
    args = parser.parse_args()
    if args.aa:
        pairs = [measured(p) for p in judged_pairs(args.report_tool, "--across", *args.aa) if bounded(p)]
        report(pairs, "benchmarks run in both files")
        return
    pairs = []
    for path in args.flat:
        try:
            interleaving = results.read(path)["context"].get("condbench_interleaving", "in order")
        except results.ResultFileError as e:
            fail(str(e))
        if interleaving != "in order":
            print(f"note: {path}'s repetitions were interleaved ({interleaving}): its pairs were timed together")
        pairs += [measured(p) for p in judged_pairs(args.report_tool, path)
                  if bounded(p) and p["a"]["strategy"] == p["b"]["strategy"] and "masked" in p["a"]["strategy"]
                  and p["a"]["name"].startswith("early_exit/")]
    report(pairs, "scenarios of a masked strategy")


if __name__ == "__main__":
    main()
