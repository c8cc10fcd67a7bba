"""How the peer times its cases, as condbench times its own: each case's iteration count grown until a
repetition lasts --min-time, as Google Benchmark grows it; then rounds, each timing every case once in
a freshly shuffled order."""
import dataclasses
import random
import time
from typing import Callable, Iterable, Sequence

import torch

from . import lockstep
from .deployed import Thresholds
from .variants import Case, VariantFn

# A repetition of a case: (per-inference µs, round, sequence)
Sample = tuple[float, int, int]


def run_variant(fn: VariantFn, rows: torch.Tensor, thresholds: Thresholds,
                sync: bool) -> tuple[torch.Tensor, "torch.Tensor | int"]:
    out = fn(rows, thresholds)
    if sync:
        torch.cuda.synchronize()
    return out


def walking(fn: VariantFn, walk: Sequence[torch.Tensor], thresholds: Thresholds, sync: bool) -> Callable[[int], float]:
    """A whole model's loop: seconds of n inferences walking condbench's rows in its order."""
    def loop(n: int) -> float:
        start = time.perf_counter()
        for i in range(n):
            fn(walk[i % len(walk)], thresholds)
            if sync:
                torch.cuda.synchronize()  # one inference = finished on the device, like condbench
        return time.perf_counter() - start
    return loop


def with_iterations(case: Case, min_time: float) -> Case:
    """The case with a repetition's iteration count, as Google Benchmark grows it: until a run lasts
    min_time."""
    n = 1
    while True:
        took = case.loop(n)
        if took >= min_time or n >= 1 << 24:
            return dataclasses.replace(case, iterations=n)
        n = max(n * 2, int(n * min_time / max(took, 1e-9) * 1.2))


class Rounds:
    """Each round times every case it is given once, in a freshly shuffled order, so a change in the
    machine's speed lands on every case alike (condbench's --benchmark_enable_random_interleaving
    does the same for its own cases). Per case: [(per-inference µs, round, sequence)], sequence
    counting every repetition of the run in the order they ran."""

    def __init__(self, cases: Iterable[Case], rng: random.Random, turns: lockstep.Turns | None = None) -> None:
        self.samples: dict[int, list[Sample]] = {id(c): [] for c in cases}
        self.rng = rng
        self.round = 0
        self.sequence = 0
        self.turns = turns  # in lockstep with condbench (condbench.lockstep): a turn a round

    def run(self, cases: Sequence[Case], count: int) -> None:
        for _ in range(count):
            if self.turns:
                self.turns.wait()
            order = list(cases)
            self.rng.shuffle(order)
            for case in order:
                seconds = case.loop(case.iterations)
                self.samples[id(case)].append((seconds / case.iterations * 1e6, self.round, self.sequence))
                self.sequence += 1
            self.round += 1


def median(values: Iterable[float]) -> float:
    ordered = sorted(values)
    mid = len(ordered) // 2
    return ordered[mid] if len(ordered) % 2 else 0.5 * (ordered[mid - 1] + ordered[mid])
