#!/usr/bin/env python3
"""The Python peer of condbench: each exported model (a built-in family, your model file's module,
the decoder's token) written as a PyTorch user would — plain `if`, nested torch.cond (eager and
torch.compile), torch.where masking (eager and compiled), and on CUDA torch.cond captured in a CUDA
graph (docs/peer.md lists every variant) — timed on exactly condbench's work (the weights, input
pool and thresholds `condbench --export-workload` writes) and written as Google Benchmark JSON that
condbench-report reads beside condbench's own results.

usage: python -m condbench.peer --workload DIR --out FILE.json [--device cpu|cuda] [--variants LIST]
               [--scenarios LIST] [--threads N] [--repetitions 10] [--min-time 0.05]
               [--answer-budget SECONDS --report-tool CONDBENCH-REPORT [--against CONDBENCH.json]]

Every variant x scenario is made ready first (an untimed pass, then the iteration count); then
each round times every case once in a freshly shuffled order, as condbench interleaves its own
repetitions, and each repetition records its round and its place in the run (sequence).

--answer-budget spends up to SECONDS more, as condbench's does: rounds over the cases in the report's
answer comparisons that are still undecided, judged by `condbench-report --undecided` (beside
condbench's file given by --against), until each is decided or the time is spent.
"""
# This module is the command; condbench.rounds times, condbench.peer_result writes the file and
# condbench.answer_budget spends the budget.
import argparse
import logging
import os
import random
import sys
from typing import TYPE_CHECKING, Callable, Mapping, NoReturn, Sequence, TypeVar, cast

import torch

from . import decoder_peer, lockstep, names, results, workload
from .answer_budget import spend_answer_budget
from .deployed import WORKAROUND_DOC, Thresholds
from .errors import first_line
from .families import load_model
from .peer_result import NOTES_CONTEXT, Document
from .regular_file import not_replaceable
from .rounds import Rounds, run_variant, walking, with_iterations
from .rules import PEAK_MEMORY_CONTEXT, exit_fires, peak_resident_memory
from .variants import VARIANTS, Case, VariantFn, cudagraph_skips, variants, workarounds

if TYPE_CHECKING:
    from .model import EarlyExitModel


def fail(message: str) -> NoReturn:
    print(f"peer: {message}", file=sys.stderr)
    sys.exit(2)


def load_workloads(root: str) -> list[workload.Workload]:
    """The exported models under `root` (condbench.workload), each checked: one line and exit 2 where not."""
    try:
        return workload.load(root)
    except workload.WorkloadError as e:
        fail(str(e))


def load_model_file(folder: str, device: str) -> "EarlyExitModel":
    """The user's module a model file's folder was compiled from (docs/your-model.md), as the variants
    run a built-in family: blocks, block(k, h), head(k), confidence(logits)."""
    from .model_source import ProtocolError, load_compiled
    try:
        _, view = load_compiled(folder)
    except ProtocolError as e:
        fail(f"model file: {e}")
    return view.to(device).eval()


T = TypeVar("T")


def first_repeat(items: Sequence[str]) -> str | None:
    """The first item given a second time, or None."""
    return next((item for i, item in enumerate(items) if item in items[:i]), None)


def loaded(w: workload.Workload, load: Callable[[], T]) -> T:
    """What `load` reads of the workload `w`, or one line and exit 2 where its files are not what
    condbench wrote (cut short, not torch's, other shapes, values that are not finite)."""
    try:
        return load()
    except Exception as e:  # noqa: BLE001 -- whatever torch raises for a file it cannot take
        fail(f"--workload: {w.directory}: {first_line(e)}")


def checked_inputs(w: workload.Workload, model: "EarlyExitModel") -> torch.Tensor:
    """The workload's input pool, once its files are checked against its model: the pool [pool_rows,
    *the model's row shape] of finite values (a built-in family's: float32), as condbench exported
    it; the weights finite; exit:K scenarios of its exits, with a threshold per exit before the last."""
    pool = torch.load(w.path("pool.pt"), weights_only=True)
    if not (isinstance(pool, torch.Tensor) and tuple(pool.shape) == (w.pool_rows, *model.row_shape) and
            (w.model_file or pool.dtype == torch.float32)):
        what = f"{str(pool.dtype).removeprefix('torch.')} {list(pool.shape)}" if isinstance(pool, torch.Tensor) \
            else type(pool).__name__
        raise ValueError(f"pool.pt is {what}, not {'' if w.model_file else 'float32 '}"
                         f"{[w.pool_rows, *model.row_shape]} as workload.json says")
    if pool.is_floating_point() and not bool(torch.isfinite(pool).all()):
        raise ValueError("pool.pt holds values that are not finite")
    if not all(bool(torch.isfinite(p).all()) for p in model.parameters()):
        raise ValueError("weights.pt holds values that are not finite")
    if any(len(limits) != model.blocks for limits in w.thresholds.values()):
        raise ValueError(f"its thresholds are not {model.blocks} a scenario (one per exit before the last)")
    if beyond := next((sc for sc in w.thresholds if sc.startswith("exit:") and int(sc[5:]) > model.blocks + 1), None):
        raise ValueError(f"scenario {beyond}: the model has {model.blocks + 1} exits")
    return pool


def disagreement_with_module(fn: VariantFn, ref: Mapping[str, torch.Tensor], thresholds: Thresholds, device: str,
                             sync: bool, agreement: Mapping[str, float]) -> str | None:
    """A variant on a model file's reference rows (`ref`: the module's own forward, which
    model_file.py compile kept in reference.pt) with a scenario's thresholds: None when every row's
    exit id and logits are the module's, else the first row that differs. `agreement` is condbench's
    rule (the workload's, from ModelFileAgreement in include/condbench/model_file.h): a row whose
    score is within its tie_margin of a threshold it reaches may go either way, and logits agree
    within its absolute and relative tolerances."""
    limits = [float(t) for t in thresholds]
    margin = float(agreement["tie_margin"])
    rtol, atol = float(agreement["relative_tolerance"]), float(agreement["absolute_tolerance"])
    for r in range(ref["input"].shape[0]):
        scores = [float(ref[f"confidence.{k}"][r]) for k in range(len(limits))]
        expected = next((k for k, s in enumerate(scores) if exit_fires(s, limits[k])), len(limits))
        if any(abs(s - t) < margin for s, t in zip(scores[:expected + 1], limits)):
            continue
        logits, exit_id = run_variant(fn, ref["input"][r:r + 1].to(device), thresholds, sync)
        if int(exit_id) != expected + 1:
            return f"differs from the module's own forward on reference row {r}: exit {int(exit_id)}, " \
                   f"the module's {expected + 1}"
        if not torch.allclose(logits.reshape(-1).float().cpu(), ref[f"logits.{expected}"][r], rtol=rtol, atol=atol):
            return f"differs from the module's own forward on reference row {r}: its logits at exit {expected + 1}"
    return None


def cudagraph_note(device: str, skips: int) -> str:
    """Whether cudagraph trees took a reduce-overhead variant's graphs, from Inductor's own count of
    the graphs it declined CUDA graphs for (counters["inductor"]["cudagraph_skips"]) over its compile
    and warm-up."""
    if device != "cuda":
        return "no CUDA graphs on the CPU (reduce-overhead compiles what the default mode does)"
    if skips == 0:
        return "cudagraph trees captured every graph Inductor compiled"
    return f"cudagraph trees skipped {skips} of its graphs (Inductor's cudagraph_skips; its log says why)"


def test_twins() -> list[str]:
    """CONDBENCH_TEST_TWIN, as condbench reads it: the python/<variant> items name variants to run a
    second time as <variant>_twin (the same code under another name; docs/statistics.md)."""
    items = [i for i in os.environ.get("CONDBENCH_TEST_TWIN", "").split(",") if i]
    return [i.split("/", 1)[1] for i in items if i.startswith("python/")]


def main() -> None:
    # the usage is the docstring's, written by hand: argparse's would print a second one above it
    parser = argparse.ArgumentParser(prog="python -m condbench.peer", usage=argparse.SUPPRESS, description=__doc__,
                                     formatter_class=argparse.RawDescriptionHelpFormatter, allow_abbrev=False)
    parser.add_argument("--workload", required=True,
                        help="the folder condbench --export-workload wrote, or one model's folder in it")
    parser.add_argument("--out", required=True, help="Google Benchmark JSON to write")
    parser.add_argument("--device", default="cpu", choices=["cpu", "cuda"], help="where the variants run")
    parser.add_argument("--variants", default="", help="comma-separated subset (default: all that run here)")
    parser.add_argument("--scenarios", default="", help="comma-separated subset (default: all exported)")
    parser.add_argument("--threads", type=int, default=0, help="torch threads (condbench's count)")
    parser.add_argument("--repetitions", type=int, default=10, help="rounds (condbench's default)")
    parser.add_argument("--min-time", type=float, default=0.05, help="seconds per repetition at least")
    parser.add_argument("--answer-budget", type=float, default=0.0,
                        help="seconds of rounds over the answer's undecided comparisons (default 0: none)")
    parser.add_argument("--report-tool", default="", help="condbench-report, which judges (--answer-budget)")
    parser.add_argument("--against", default="", help="condbench's result file of this run (--answer-budget)")
    given = [a.split("=", 1)[0] for a in sys.argv[1:] if a.startswith("--")]
    if twice := first_repeat(given):
        fail(f"{twice}: given twice")
    args = parser.parse_args()
    # libraries' warnings that say nothing of this run: ONNX's pass over ort_if's graph, and Inductor's
    # note on a machine without CUDA that it has no CUDA runtime
    for library in ("onnx_ir", "torch.utils.cpp_extension"):
        logging.getLogger(library).setLevel(logging.ERROR)
    if args.device == "cuda" and not torch.cuda.is_available():
        fail("--device=cuda: no CUDA device here")
    # condbench's ranges (--benchmark_repetitions, --benchmark_min_time, --threads)
    if not 1 <= args.repetitions <= 100000:
        fail(f"--repetitions: {args.repetitions} is out of range 1..100000")
    if not 0 < args.min_time <= 86400:  # (NaN is in no range)
        fail(f"--min-time: {args.min_time} is not a number of seconds in (0, 86400]")
    if not 0 <= args.threads <= 1024:
        fail(f"--threads: {args.threads} is out of range 0..1024 (0: torch's choice)")
    for flag, items in (("--variants", args.variants), ("--scenarios", args.scenarios)):
        listed = items.split(",")
        if flag in given and not items:
            fail(f"{flag}: needs a value (leave it out for every one)")
        if items and not all(listed):
            fail(f"{flag}: '{items}' has an empty item")
        if twice := first_repeat(listed):
            fail(f"{flag}: '{twice}' is given twice")
    if not 0 <= args.answer_budget <= 86400:
        fail("--answer-budget: seconds from 0 to 86400")
    if args.answer_budget > 0 and not args.report_tool:
        fail("--answer-budget needs --report-tool (condbench-report judges the answer)")
    workloads = load_workloads(args.workload)
    check_output(args.out, [("--against", args.against)] +
                 [("--workload", w.path(f)) for w in workloads for f in w.files()] +
                 [i for w in workloads if w.model_file for i in model_file_inputs(w.model_file)])
    twins = test_twins()
    wanted_variants = [v for v in args.variants.split(",") if v]
    known = [*VARIANTS, *decoder_peer.VARIANTS] + [f"{name}_twin" for name in twins]
    if unknown := next((v for v in wanted_variants if v not in known), None):
        fail(f"--variants: unknown variant '{unknown}' (known: {', '.join(sorted(set(known)))}; docs/peer.md)")
    wanted_scenarios = [s for s in args.scenarios.split(",") if s]
    exported = sorted({scenario for w in workloads for scenario in w.thresholds})
    if unknown := next((sc for sc in wanted_scenarios if sc not in exported), None):
        fail(f"--scenarios: '{unknown}' was not exported (the workload has {', '.join(exported)})")
    # In lockstep with condbench, the models' loading, compiles and untimed passes are a turn of their own.
    turns = lockstep.turns()
    if turns:
        turns.wait()
    if args.threads > 0:
        torch.set_num_threads(args.threads)
    sync = args.device == "cuda"

    cases: list[Case] = []
    notes: list[str] = []
    graph_skips: dict[str, int] = {}  # reduce-overhead variants: the graphs Inductor declined CUDA graphs for
    for w in workloads:
        config = w.config
        if w.decodes:  # docs/design.md §8: one generated token an iteration
            decoder_model, prompts = loaded(w, lambda: decoder_peer.load(w))
            found, skipped_here = decoder_peer.cases(w, decoder_model.to(args.device), prompts.to(args.device),
                                                     args.device, wanted_variants, wanted_scenarios, sync)
            notes += skipped_here
            cases += [with_iterations(case, args.min_time) for case in found]
            continue
        # (a built-in family's read and checked on the CPU: what fails there is the files', not the device's)
        model = loaded(w, lambda: load_model(w.path("weights.pt"), config, "cpu")) if not w.model_file \
            else load_model_file(w.model_file, args.device)
        pool_all = loaded(w, lambda: checked_inputs(w, model)).to(args.device)
        model = model.to(args.device)
        pool = [pool_all[i:i + 1] for i in range(pool_all.shape[0])]
        runnable, skipped = variants(model, args.device, named=wanted_variants)
        fallbacks = workarounds(model, args.device) if w.model_file else {}
        reference = torch.load(os.path.join(w.model_file, "reference.pt")) if w.model_file else None
        runnable += [(name + "_twin", fn, host_syncs, tensor_thresholds)
                     for name, fn, host_syncs, tensor_thresholds in runnable if name in twins]
        notes += [f"{name}: skipped ({why})" for name, why in skipped if not wanted_variants or name in wanted_variants]
        for name, fn, host_syncs, tensor_thresholds in runnable:
            if wanted_variants and name not in wanted_variants:
                continue
            for scenario, values in w.thresholds.items():
                if wanted_scenarios and scenario not in wanted_scenarios:
                    continue
                # condbench's walk for this scenario at batch 1, as long as condbench walks it (its
                # walked_batches: the workload carries it cut)
                walk = [pool[i] for i in w.walk[scenario]]
                thresholds = torch.tensor(values, device=args.device) if tensor_thresholds else list(values)
                if w.model_file:  # correct before it is fast: checked against the module itself
                    try:
                        # a model file's: its reference, and its rule of agreement (workload.problem)
                        why = disagreement_with_module(fn, cast(Mapping[str, torch.Tensor], reference), thresholds,
                                                       args.device, sync, cast(Mapping[str, float], w.agreement))
                    except Exception as e:  # noqa: BLE001 -- the user's module under this variant (a compiler's bug)
                        why = f"fails on it: {type(e).__name__}: {(str(e).strip().splitlines() or [''])[0][:200]}"
                    if why:
                        notes.append(f"{name}: {scenario} on {w.family} not run ({why})")
                        if name in fallbacks:  # its workaround runs instead, checked as every variant is
                            runnable.append(fallbacks.pop(name))
                            if wanted_variants:
                                wanted_variants.append(runnable[-1][0])
                            notes.append(f"{name}: {runnable[-1][0]} runs in its place ({WORKAROUND_DOC})")
                        continue
                kind, _, value = scenario.partition(":")
                # Untimed pass over the walk: compiles, warms up, and learns each row's exit; then the
                # iteration count that makes a repetition last --min-time.
                skips_before = cudagraph_skips()
                exits = tuple(int(run_variant(fn, row, thresholds, sync)[1]) for row in walk)
                if name in VARIANTS and VARIANTS[name].cudagraph_trees and skips_before is not None:
                    # the counter was there before: it is now
                    graph_skips[name] = graph_skips.get(name, 0) + cast(int, cudagraph_skips()) - skips_before
                case = Case(names.build(["early_exit", args.device, "python", name],
                                        [(kind, value), ("batch", 1), *w.name_axes]),
                            loop=walking(fn, walk, thresholds, sync), exits=exits, blocks=config["blocks"],
                            host_syncs=host_syncs)
                cases.append(with_iterations(case, args.min_time))

    notes += [f"{name}: {cudagraph_note(args.device, skips)}" for name, skips in graph_skips.items()]
    if not cases:  # no file: a result without benchmarks is no result (condbench-report refuses one)
        if not notes:  # what was asked selects nothing: bad input
            fail("nothing ran: the variants named run on none of the workload's models")
        # what was asked could not run (refused, not here): a failure, as condbench's exit 1
        print(f"peer: nothing ran: {notes[0]}" + (f" (and {len(notes) - 1} more)" if len(notes) > 1 else ""),
              file=sys.stderr)
        sys.exit(1)
    rounds = Rounds(cases, random.Random(), turns)
    rounds.run(cases, args.repetitions)
    document = Document(args, cases, rounds, twins)
    if args.answer_budget > 0:
        spent = spend_answer_budget(args, cases, rounds, document)
        print(f"peer: answer budget: {spent}", flush=True)
    if notes:  # what did not run and why, for the report (a model file's refused variants, workarounds)
        document.context[NOTES_CONTEXT] = "\n".join(notes)
    document.context[PEAK_MEMORY_CONTEXT] = peak_resident_memory()
    result = document.build()
    for case in cases:
        times = [sample[0] for sample in rounds.samples[id(case)]]
        print(f"{case.name:<80} {sorted(times)[len(times) // 2]:10.2f} us", flush=True)
    results.write(args.out, result)
    for note in notes:
        print(f"peer: {note}")
    print(f"peer: peak resident memory {document.context[PEAK_MEMORY_CONTEXT]}")
    print(f"wrote {args.out}")


def check_output(path: str, inputs: Sequence[tuple[str, str] | tuple[str, str, bool]]) -> None:
    """condbench's output policy (include/condbench/output_file.h) for the peer's --out, before
    anything runs: absent or a regular file (never a link, FIFO, device or socket), in a folder that
    exists, not one of the inputs, nor inside an input folder (a model file's compiled folder)."""
    what = not_replaceable(path)
    if what is not None:
        fail(f"--out: '{path}' is {what}; the peer writes only regular files and never replaces {what}")
    if not os.path.basename(path):
        fail(f"--out: '{path}' names a folder; name a file")
    folder = os.path.dirname(os.path.abspath(path))
    if not os.path.isdir(folder):
        fail(f"--out: '{path}': its folder '{folder}' does not exist")
    for flag, given, *whole in inputs:
        if given and os.path.exists(given) and os.path.exists(path) and os.path.samefile(given, path):
            fail(f"--out: '{path}' is the input of {flag}; an output never overwrites an input")
        inside = whole and given and os.path.commonpath([os.path.realpath(path), os.path.realpath(given)]) == \
            os.path.realpath(given)
        if inside:
            fail(f"--out: '{path}' lies inside '{given}', the folder of {flag}, which the peer reads; write elsewhere")


def model_file_inputs(folder: str) -> list[tuple[str, str] | tuple[str, str, bool]]:
    """What a model file's workload reads beyond its own files: its compiled folder (nothing may be
    written into it) and, as its manifest names them, the file, its weights and the files its module
    read while it loaded (a module it imports, weights model() loads)."""
    from .model_source import ProtocolError, read_manifest

    try:
        m = read_manifest(folder)
        files = [m.source, m.weights, *(path for path, _ in m.reads or ())]
    except ProtocolError:
        files = []  # load_model_file says what is wrong with it
    return [("--workload (its model file's folder)", folder, True)] + \
        [("--workload (its model file's module)", p) for p in files if isinstance(p, str)]


if __name__ == "__main__":
    main()
