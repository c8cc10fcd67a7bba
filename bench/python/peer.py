#!/usr/bin/env python3
"""The Python peer of condbench: the early-exit MLP written as a PyTorch user would —
plain `if`, nested torch.cond (eager and torch.compile), torch.where masking (eager and compiled),
and on CUDA torch.cond captured in a CUDA graph — timed on exactly condbench's work (the weights,
input pool and thresholds `condbench --export-workload` writes) and written as Google Benchmark
JSON that condbench-report reads beside condbench's own results.

usage: peer.py --workload DIR --out FILE.json [--device cpu|cuda] [--variants LIST]
               [--scenarios LIST] [--threads N] [--repetitions 10] [--min-time 0.05]

Every variant x scenario is made ready first (an untimed pass, then the iteration count); then
each round times every case once in a freshly shuffled order, as condbench interleaves its own
repetitions, and each repetition records its round and its place in the run (sequence).
"""
import argparse
import datetime
import json
import os
import platform
import random
import socket
import sys
import time

import torch

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import benchmark_name  # noqa: E402
from early_exit import SUMMARIES, load_model, variants  # noqa: E402

SCHEMA = "1"  # kResultSchema of include/condbench/result_format.h (tests/test_python_peer.py checks)


def fail(message):
    print(f"peer: {message}", file=sys.stderr)
    sys.exit(2)


def cpu_model():
    try:
        with open("/proc/cpuinfo") as f:
            for line in f:
                if line.startswith("model name"):
                    return line.split(":", 1)[1].strip()
    except OSError:
        pass
    return platform.processor() or "unknown"


def load_workloads(root):
    """[(directory, workload.json contents)] for every model condbench exported."""
    dirs = [os.path.join(root, d) for d in sorted(os.listdir(root))] if os.path.isdir(root) else []
    found = [(d, json.load(open(os.path.join(d, "workload.json")))) for d in dirs
             if os.path.isfile(os.path.join(d, "workload.json"))]
    if not found:
        fail(f"{root}: no exported workload (run condbench --export-workload={root} first)")
    return found


def test_twins():
    """CONDBENCH_TEST_TWIN, as condbench reads it: the python/<variant> items name variants to run a
    second time as <variant>_twin (the same code under another name; docs/statistics.md)."""
    items = [i for i in os.environ.get("CONDBENCH_TEST_TWIN", "").split(",") if i]
    return [i.split("/", 1)[1] for i in items if i.startswith("python/")]


def run_variant(fn, rows, thresholds, sync):
    out = fn(rows, thresholds)
    if sync:
        torch.cuda.synchronize()
    return out


def timed_loop(case, n):
    """Seconds for n inferences of a case, walking its rows in condbench's order."""
    fn, walk, thresholds, sync = case["fn"], case["walk"], case["thresholds"], case["sync"]
    start = time.perf_counter()
    for i in range(n):
        fn(walk[i % len(walk)], thresholds)
        if sync:
            torch.cuda.synchronize()  # one inference = finished on the device, like condbench
    return time.perf_counter() - start


def iterations_for(case, min_time):
    """Like Google Benchmark: grow the count until a run lasts min_time."""
    n = 1
    while True:
        took = timed_loop(case, n)
        if took >= min_time or n >= 1 << 24:
            return n
        n = max(n * 2, int(n * min_time / max(took, 1e-9) * 1.2))


def interleaved_rounds(cases, repetitions, rng):
    """Each round times every case once, in a freshly shuffled order, so a change in the machine's
    speed lands on every case alike (condbench's --benchmark_enable_random_interleaving does the same
    for its own cases). Per case: [(per-inference µs, round, sequence)], sequence counting every
    repetition of the run in the order they ran."""
    samples = {id(c): [] for c in cases}
    sequence = 0
    for round_index in range(repetitions):
        order = list(cases)
        rng.shuffle(order)
        for case in order:
            seconds = timed_loop(case, case["iterations"])
            samples[id(case)].append((seconds / case["iterations"] * 1e6, round_index, sequence))
            sequence += 1
    return samples


def entry(name, rep, repetitions, iterations, sample, counters):
    value_us, round_index, sequence = sample
    return {"name": name, "family_index": 0, "per_family_instance_index": 0, "run_name": name,
            "run_type": "iteration", "repetitions": repetitions, "repetition_index": rep, "threads": 1,
            "iterations": iterations, "real_time": value_us, "cpu_time": value_us, "time_unit": "us",
            "round": round_index, "sequence": sequence, **counters}


def aggregates(name, repetitions, times, counters):
    mean = sum(times) / len(times)
    ordered = sorted(times)
    mid = len(ordered) // 2
    median = ordered[mid] if len(ordered) % 2 else 0.5 * (ordered[mid - 1] + ordered[mid])
    sd = (sum((t - mean) ** 2 for t in times) / (len(times) - 1)) ** 0.5 if len(times) > 1 else 0.0
    out = []
    for agg, value, unit in [("mean", mean, "time"), ("median", median, "time"), ("stddev", sd, "time"),
                             ("cv", sd / mean if mean else 0.0, "percentage")]:
        out.append({"name": f"{name}_{agg}", "family_index": 0, "per_family_instance_index": 0, "run_name": name,
                    "run_type": "aggregate", "repetitions": repetitions, "threads": 1, "aggregate_name": agg,
                    "aggregate_unit": unit, "iterations": repetitions, "real_time": value, "cpu_time": value,
                    "time_unit": "us", **(counters if agg in ("mean", "median") else {})})
    return out


# condbench's bench/benchmark_case.cpp: the most full-depth work (FLOPs) one pass over the walk
# holds, and the fewest rows it walks (the peer runs batch 1).
WALK_FLOPS = 2e10
MIN_WALK_ROWS = 64


def model_axes(config):
    """The model's axes of a benchmark name, as condbench writes them (BenchmarkCase::name)."""
    if config.get("family", "mlp") == "mlp":
        return [("hidden", config["hidden"]), ("blocks", config["blocks"])]
    return [("model", config["family"])] + [(k, config[k]) for k in ("d_model", "heads", "ffn", "seq", "blocks")]


def main():
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--workload", required=True, help="directory condbench --export-workload wrote")
    parser.add_argument("--out", required=True, help="Google Benchmark JSON to write")
    parser.add_argument("--device", default="cpu", choices=["cpu", "cuda"])
    parser.add_argument("--variants", default="", help="comma-separated subset (default: all that run here)")
    parser.add_argument("--scenarios", default="", help="comma-separated subset (default: all exported)")
    parser.add_argument("--threads", type=int, default=0, help="torch threads (condbench's count)")
    parser.add_argument("--repetitions", type=int, default=10, help="rounds (condbench's default)")
    parser.add_argument("--min-time", type=float, default=0.05, help="seconds per repetition at least")
    args = parser.parse_args()
    if args.device == "cuda" and not torch.cuda.is_available():
        fail("--device=cuda: no CUDA device here")
    if args.repetitions < 1 or args.min_time <= 0:
        fail("--repetitions must be >= 1 and --min-time > 0")
    if args.threads > 0:
        torch.set_num_threads(args.threads)
    wanted_variants = [v for v in args.variants.split(",") if v]
    wanted_scenarios = [s for s in args.scenarios.split(",") if s]
    sync = args.device == "cuda"
    twins = test_twins()

    cases, notes = [], []
    for directory, meta in load_workloads(args.workload):
        config = meta["config"]
        model = load_model(os.path.join(directory, "weights.pt"), config, args.device)
        pool_all = torch.load(os.path.join(directory, "pool.pt")).to(args.device)
        pool = [pool_all[i:i + 1] for i in range(pool_all.shape[0])]
        runnable, skipped = variants(model, args.device)
        runnable += [(name + "_twin", *rest) for name, *rest in runnable if name in twins]
        notes += [f"{name}: skipped ({why})" for name, why in skipped if not wanted_variants or name in wanted_variants]
        for name, fn, host_syncs, tensor_thresholds in runnable:
            if wanted_variants and name not in wanted_variants:
                continue
            for scenario, values in meta["thresholds"].items():
                if wanted_scenarios and scenario not in wanted_scenarios:
                    continue
                # condbench's walk for this scenario: mixes interleave exits so any prefix keeps the shares
                walk = [pool[i] for i in meta.get("walk_order", {}).get(scenario, range(len(pool)))]
                # as much of it as condbench walks: at most WALK_FLOPS of full-depth work, at least
                # MIN_WALK_ROWS rows
                if meta.get("full_model_flops", 0) > 0:
                    walk = walk[:max(MIN_WALK_ROWS, int(WALK_FLOPS // meta["full_model_flops"]))]
                thresholds = torch.tensor(values, device=args.device) if tensor_thresholds else list(values)
                kind, _, value = scenario.partition(":")
                case = {"fn": fn, "walk": walk, "thresholds": thresholds, "sync": sync, "host_syncs": host_syncs,
                        "blocks": config["blocks"],
                        "name": benchmark_name.build(["early_exit", args.device, "python", name],
                                                     [(kind, value), ("batch", 1)] + model_axes(config))}
                # Untimed pass over the walk: compiles, warms up, and learns each row's exit; then the
                # iteration count that makes a repetition last --min-time.
                case["exits"] = [int(run_variant(fn, row, thresholds, sync)[1]) for row in walk]
                case["iterations"] = iterations_for(case, args.min_time)
                cases.append(case)

    benchmarks = []
    samples = interleaved_rounds(cases, args.repetitions, random.Random())
    for case in cases:
        exits, iterations = case["exits"], case["iterations"]
        visited = [exits[i % len(exits)] for i in range(min(iterations, len(exits)))]
        counters = {"host_syncs": sum(case["host_syncs"](e) for e in visited) / len(visited),
                    "exit_mean": sum(visited) / len(visited)}
        for k in range(1, case["blocks"] + 2):
            counters[f"exit_{k}"] = visited.count(k) / len(visited)
        mine = samples[id(case)]
        benchmarks += [entry(case["name"], r, args.repetitions, iterations, sample, counters)
                       for r, sample in enumerate(mine)]
        times = [sample[0] for sample in mine]
        benchmarks += aggregates(case["name"], args.repetitions, times, counters)
        print(f"{case['name']:<80} {sorted(times)[len(times) // 2]:10.2f} us", flush=True)

    device_name = torch.cuda.get_device_name(0) if args.device == "cuda" else "none"
    result = {
        "context": {
            "date": datetime.datetime.now().astimezone().isoformat(timespec="seconds"),
            "host_name": socket.gethostname(), "executable": "bench/python/peer.py",
            "num_cpus": os.cpu_count(), "library_build_type": "release",
            "condbench_schema": SCHEMA, "peer": "python", "condbench_interleaving": "rounds", "python_version": platform.python_version(),
            "torch_version": torch.__version__, "cuda_runtime_version": torch.version.cuda or "none",
            "device_name": device_name, "cpu_model": cpu_model(), "threads": str(torch.get_num_threads()),
            **{f"strategy:{args.device}/python/{name}": summary for name, summary in SUMMARIES.items()},
            **{f"strategy:{args.device}/python/{name}_twin": f"the same code as {name}, run twice (CONDBENCH_TEST_TWIN)"
               for name in twins},
            **({"condbench_test_twin": os.environ["CONDBENCH_TEST_TWIN"]} if twins else {}),
        },
        "benchmarks": benchmarks,
    }
    tmp = f"{args.out}.tmp.{os.getpid()}"
    with open(tmp, "w") as f:
        json.dump(result, f, indent=1)
    os.replace(tmp, args.out)  # atomic, like condbench's own output
    for note in notes:
        print(f"peer: {note}")
    print(f"wrote {args.out}")


if __name__ == "__main__":
    main()
