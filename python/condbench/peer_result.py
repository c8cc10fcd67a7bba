"""The peer's result file: every repetition of every case, its aggregates and the run's context, in
the Google Benchmark JSON condbench writes, which condbench-report reads beside condbench's own."""
import argparse
import datetime
import os
import platform
import socket
from typing import Mapping, Sequence

import torch

from . import decoder_peer, results
from .rounds import Rounds, Sample, median
from .rules import (LOCKSTEP_ALLOWANCE_CONTEXT, LOCKSTEP_CONTEXT, PER_TOKEN_CONTEXT, PER_TOKEN_FAMILIES, RESULT_SCHEMA,
                    strategy_context_key)
from .variants import SUMMARIES, Case

SCHEMA = RESULT_SCHEMA  # kResultSchema of include/condbench/result_format.h, through rules.json
# The peer's notes (one a line), which the report's answer repeats where a variant was refused or
# replaced.
NOTES_CONTEXT = "condbench_peer_notes"


def cpu_model() -> str:
    try:
        with open("/proc/cpuinfo") as f:
            for line in f:
                if line.startswith("model name"):
                    return line.split(":", 1)[1].strip()
    except OSError:
        pass
    return platform.processor() or "unknown"


def entry(name: str, rep: int, repetitions: int, iterations: int, sample: Sample,
          counters: Mapping[str, float]) -> dict[str, object]:
    value_us, round_index, sequence = sample
    return {"name": name, "family_index": 0, "per_family_instance_index": 0, "run_name": name,
            "run_type": "iteration", "repetitions": repetitions, "repetition_index": rep, "threads": 1,
            "iterations": iterations, "real_time": value_us, "cpu_time": value_us, "time_unit": "us",
            "round": round_index, "sequence": sequence, **counters}


def aggregates(name: str, repetitions: int, times: Sequence[float],
               counters: Mapping[str, float]) -> list[dict[str, object]]:
    mean = sum(times) / len(times)
    sd = (sum((t - mean) ** 2 for t in times) / (len(times) - 1)) ** 0.5 if len(times) > 1 else 0.0
    out: list[dict[str, object]] = []
    for agg, value, unit in [("mean", mean, "time"), ("median", median(times), "time"), ("stddev", sd, "time"),
                             ("cv", sd / mean if mean else 0.0, "percentage")]:
        out.append({"name": f"{name}_{agg}", "family_index": 0, "per_family_instance_index": 0, "run_name": name,
                    "run_type": "aggregate", "repetitions": repetitions, "threads": 1, "aggregate_name": agg,
                    "aggregate_unit": unit, "iterations": repetitions, "real_time": value, "cpu_time": value,
                    "time_unit": "us", **(counters if agg in ("mean", "median") else {})})
    return out


def counters_of(case: Case) -> dict[str, float]:
    """A case's counters per iteration: host_syncs, exit_mean and exit_K, each iteration of its walk
    weighed as condbench weighs its twin's (Case.whole_walk)."""
    exits, iterations, n = case.exits, case.iterations, len(case.exits)
    weights = [1] * n if case.whole_walk else [iterations // n + (j < iterations % n) for j in range(n)]
    total = sum(weights)
    counters = {"host_syncs": sum(w * case.host_syncs(e) for e, w in zip(exits, weights)) / total,
                "exit_mean": sum(w * e for e, w in zip(exits, weights)) / total}
    for k in range(1, case.blocks + 2):
        counters[f"exit_{k}"] = sum(w for e, w in zip(exits, weights) if e == k) / total
    return counters


class Document:
    """The run as Google Benchmark JSON: every repetition of every case, its aggregates, the context."""

    def __init__(self, args: argparse.Namespace, cases: list[Case], rounds: Rounds, twins: list[str]) -> None:
        self.args, self.cases, self.rounds, self.twins = args, cases, rounds, twins
        self.turns_id = rounds.turns.id if rounds.turns else ""
        self.turns_allowance = rounds.turns.allowance if rounds.turns else ""
        self.context: dict[str, str] = {}  # added by the answer budget

    def build(self) -> results.ResultDoc:
        args, twins = self.args, self.twins
        benchmarks: list[dict[str, object]] = []
        for case in self.cases:
            counters = counters_of(case)
            mine = self.rounds.samples[id(case)]
            benchmarks += [entry(case.name, r, len(mine), case.iterations, sample, counters)
                           for r, sample in enumerate(mine)]
            benchmarks += aggregates(case.name, len(mine), [sample[0] for sample in mine], counters)
        device_name = torch.cuda.get_device_name(0) if args.device == "cuda" else "none"
        return {
            "context": {
                "date": datetime.datetime.now().astimezone().isoformat(timespec="seconds"),
                "host_name": socket.gethostname(), "executable": "python -m condbench.peer",
                "num_cpus": os.cpu_count(), "library_build_type": "release",
                "condbench_schema": SCHEMA, PER_TOKEN_CONTEXT: PER_TOKEN_FAMILIES,
                "peer": "python", "condbench_interleaving": "rounds",
                **({LOCKSTEP_CONTEXT: self.turns_id, LOCKSTEP_ALLOWANCE_CONTEXT: self.turns_allowance}
                   if self.turns_id else {}),
                "python_version": platform.python_version(),
                "torch_version": torch.__version__, "cuda_runtime_version": torch.version.cuda or "none",
                "device_name": device_name, "cpu_model": cpu_model(), "threads": str(torch.get_num_threads()),
                **{strategy_context_key(f"{args.device}/python/{name}"): summary for name, summary in SUMMARIES.items()},
                **{strategy_context_key(f"{args.device}/python/{name}", per_token=True): summary
                   for name, summary in decoder_peer.SUMMARIES.items()},
                **{strategy_context_key(f"{args.device}/python/{name}_twin"):
                   f"the same code as {name}, run twice (CONDBENCH_TEST_TWIN)" for name in twins},
                **({"condbench_test_twin": os.environ["CONDBENCH_TEST_TWIN"]} if twins else {}),
                **self.context,
            },
            "benchmarks": benchmarks,
        }
