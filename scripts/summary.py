#!/usr/bin/env python3
"""Prints the median latency table of a condbench result file: one row per model, batch and
scenario, one column per strategy, plus each strategy's speedup over eager_host.

usage: scripts/summary.py [--markdown] RESULT.json...   (flags in any position; several files are
                                                       read as one, e.g. a run and its peer)
"""
import json
import math
import os
import sys
from collections import defaultdict

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "bench", "python"))
import benchmark_name  # noqa: E402  (the names' one definition on the Python side)


def load(path):
    try:
        with open(path) as f:
            data = json.load(f)
    except (OSError, ValueError) as e:
        sys.exit(f"summary: {path}: {e}")
    if "benchmarks" not in data:
        sys.exit(f"summary: {path}: not a Google Benchmark JSON file")
    return data


def medians(data):
    """{(device, width, blocks, batch, scenario): {engine/strategy: median real time in us}}; a
    transformer's width is its d_model, its other sizes follow the scenario"""
    table = defaultdict(dict)
    scale = {"ns": 1e-3, "us": 1.0, "ms": 1e3, "s": 1e6}
    for b in data["benchmarks"]:
        if not b["name"].startswith("early_exit/") or b.get("error_occurred"):
            continue
        if b.get("run_type") == "aggregate" and b.get("aggregate_name") != "median":
            continue
        name = benchmark_name.parse(b["run_name"].removesuffix("/real_time"))
        if name is None or len(name[0]) != 4:
            continue
        (_, device, engine, strategy), axes = name
        known = dict(axes)
        # the width: the mlp's hidden, another family's d_model (its name says model:<family>)
        width = "d_model" if "model" in known else "hidden"
        if width not in known or "blocks" not in known or "batch" not in known:
            continue
        extra = "/".join(f"{k}:{v}" for k, v in axes if k not in ("exit", "mix", "batch", width, "blocks"))
        scenario = benchmark_name.scenario(axes) + (f" ({extra})" if extra else "")
        key = (device, int(known[width]), int(known["blocks"]), int(known["batch"]), scenario)
        value = b["real_time"] * scale[b["time_unit"]]
        # with repetitions the median aggregate wins over single runs
        if b.get("run_type") == "aggregate" or f"{engine}/{strategy}" not in table[key]:
            table[key][f"{engine}/{strategy}"] = value
    return table


def number(value, figures=3):
    """`figures` significant figures below 10**figures, whole numbers above; never an exponent:
    0.371, 28.1, 5209."""
    if value == 0 or not abs(value) < float("inf"):
        return f"{value:g}"
    decimals = figures - 1 - int(math.floor(math.log10(abs(value))))
    return f"{value:.{max(0, decimals)}f}"


def scenario_order(name):
    kind, _, rest = name.split(" ")[0].partition(":")
    return (0, int(rest), "") if kind == "exit" else (1, 0, ["early", "uniform", "late"].index(rest))


def main():
    args = sys.argv[1:]
    if "-h" in args or "--help" in args:
        print(__doc__.strip())
        return
    unknown = [a for a in args if a.startswith("-") and a != "--markdown"]
    if unknown:
        print(f"summary: unknown option '{unknown[0]}' (see --help)", file=sys.stderr)
        sys.exit(2)
    files = [a for a in args if not a.startswith("-")]
    if not files:
        sys.exit(__doc__.strip())
    markdown = "--markdown" in args
    table = {}
    for path in files:
        for key, row in medians(load(path)).items():
            table.setdefault(key, {}).update(row)
    if not table:
        sys.exit("summary: no early_exit results in the file")
    strategies = sorted({s for row in table.values() for s in row})
    header = ["device", "width", "blocks", "batch", "scenario"] + [f"{s} (us)" for s in strategies]
    rows = []
    for key in sorted(table, key=lambda k: (k[0], k[1], k[2], k[3], scenario_order(k[4]))):
        row = table[key]
        cells = [str(k) for k in key]
        base = row.get("torch/eager_host")
        for s in strategies:
            if s not in row:
                cells.append("-")
            elif base and s != "torch/eager_host":
                cells.append(f"{number(row[s])} ({number(base / row[s], 2)}x)")
            else:
                cells.append(number(row[s]))
        rows.append(cells)
    if markdown:
        print("| " + " | ".join(header) + " |")
        print("|" + "---|" * len(header))
        for r in rows:
            print("| " + " | ".join(r) + " |")
    else:
        widths = [max(len(h), *(len(r[i]) for r in rows)) for i, h in enumerate(header)]
        print("  ".join(h.ljust(w) for h, w in zip(header, widths)))
        for r in rows:
            print("  ".join(c.ljust(w) for c, w in zip(r, widths)))
    print("\nmedian wall time per inference; (Nx) = speedup over torch/eager_host")


if __name__ == "__main__":
    main()
