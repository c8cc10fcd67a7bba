#!/usr/bin/env python3
"""How sharp a run's verdicts can be: for every pair of cells (benchmarks of one model and batch) in
each result file, the width of the report's interval of their ratio, and how many pairs the
report's rule decides (docs/statistics.md). The measure behind condbench's default repetitions:
run the same selection with two settings, alternating, and compare.

  scripts/interval_widths.py [--report-tool PATH] RESULT.json...

Per file: repetitions per cell, the median over pairs of U / L (1 is a point; 1.5 means the ratio
is known to within a factor 1.5), the share of pairs decided (faster or the same) and the share
called faster. Every figure is condbench-report's (--pairs): the interval, its order statistic, the
drift allowance and the verdict are judge()'s, not this script's.
"""
import argparse
import json
import os
import subprocess
import sys

ROOT = os.path.join(os.path.dirname(os.path.abspath(__file__)), "..")


def fail(message):
    print(f"interval_widths: {message}", file=sys.stderr)
    sys.exit(2)


def judged_pairs(tool, *args):
    """condbench-report --pairs ARGS...: its list of judged pairs (report/pairs.h)."""
    try:
        result = subprocess.run([tool, "--pairs", *args], capture_output=True, text=True, timeout=600)
    except OSError as e:
        fail(f"{tool}: {e.strerror} (build it: scripts/build release, or give --report-tool)")
    if result.returncode != 0:
        fail((result.stderr.strip().splitlines() or [f"{tool} failed"])[-1])
    return json.loads(result.stdout)["pairs"]


def main():
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("files", nargs="+", metavar="RESULT.json")
    parser.add_argument("--report-tool", default=os.path.join(ROOT, "build", "release", "condbench-report"))
    args = parser.parse_args()
    for path in args.files:
        pairs = [p for p in judged_pairs(args.report_tool, path)
                 if p["a"]["name"].startswith("early_exit/") and p["k"] > 0 and p["high"] is not None]
        if not pairs:
            print(f"{path}: no pair of cells with enough repetitions")
            continue
        widths = sorted(p["high"] / p["low"] for p in pairs)
        reps = sorted({p[s]["repetitions"] for p in pairs for s in ("a", "b")})
        decided = sum(p["standing"] != "ambiguous" for p in pairs)
        faster = sum(p["standing"] == "faster" for p in pairs)
        n = len(widths)
        print(f"{path}: repetitions {reps}, {n} pairs; median U/L {widths[n // 2]:.3f}; "
              f"decided {decided / n:.1%}, faster {faster / n:.1%}")


if __name__ == "__main__":
    main()
