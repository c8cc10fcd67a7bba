"""The rules condbench applies, as C++ states them (include/condbench/rules.h): rules.json beside
this file is what C++ writes, checked by its unit test Rules.ThePythonPackageHoldsWhatCppSays. Every
exit test the package makes goes through exit_fires, and every tolerance it compares with is read
from here or from the exported workload (which carries the same values for the run that wrote it):
no Python file types either."""
import json
import math
import operator
import os
from typing import TYPE_CHECKING, Any, Callable, Mapping, overload

if TYPE_CHECKING:  # for annotations alone: see max_softmax
    import torch
    from torch import nn


def _load() -> dict[str, Any]:
    path = os.path.join(os.path.dirname(os.path.abspath(__file__)), "rules.json")
    with open(path, encoding="utf-8") as f:
        rules: dict[str, Any] = json.load(f)  # as C++ wrote it: its shape is C++'s (rules.h)
    return rules


RULES = _load()

# "score > threshold": the comparison C++'s math::exit_fires makes, read off it.
_COMPARISONS: dict[str, Callable[[Any, Any], "torch.Tensor | bool"]] = {
    "score > threshold": operator.gt, "score >= threshold": operator.ge}
try:
    _fires = _COMPARISONS[RULES["exit_rule"]["fires_when"]]
except KeyError as e:
    raise ImportError(f"condbench/rules.json: an exit rule this package cannot apply ({e}); "
                      f"write it again from this checkout's C++") from None
if RULES["exit_rule"]["score"] != "max_softmax":
    raise ImportError(f"condbench/rules.json: unknown default score {RULES['exit_rule']['score']!r}")


def max_softmax(logits: "torch.Tensor") -> "torch.Tensor":
    """The exit rule's default score of each row (docs/design.md §1): its largest softmax probability."""
    import torch  # here, not above: the package's readers of rules without torch (device_check) import this

    return torch.softmax(logits, dim=-1).amax(dim=-1)


@overload
def exit_fires(score: float, threshold: float) -> bool: ...
@overload
def exit_fires(score: "torch.Tensor", threshold: "torch.Tensor | float") -> "torch.Tensor": ...


def exit_fires(score: "torch.Tensor | float", threshold: "torch.Tensor | float") -> "torch.Tensor | bool":
    """The exit test (docs/design.md §1): whether an exit with this score leaves at this threshold.
    Tensors (a bool tensor, traceable by torch.compile and torch.export) or floats (a bool)."""
    return _fires(score, threshold)


# The tolerances and tie margins (dicts of absolute_tolerance, relative_tolerance, tie_margin).
AGREEMENT = RULES["agreement"]                          # condbench-infer's agree, the decoder's check
MODEL_FILE_AGREEMENT = RULES["model_file_agreement"]    # a strategy or variant against a model file's module
COMPILE_CHECK = RULES["compile_check"]                  # condbench.inductor: a package against its module
# What condbench reads of a compiled folder (max_row_values, max_stages, max_classes): model_file.py's
# limits where no caller gives its own
MODEL_FILE_LIMITS = RULES["model_file_limits"]
# The most rows a batch holds (every tool's --batch): what condbench.inductor exports a package to accept
MAX_BATCH = RULES["max_batch"]
# The --trace file's track of GPU spans (nvtx::kGpuTrack)
GPU_TRACK = RULES["trace"]["gpu_track"]

# How a family's sizes must relate (C++'s SizeRelation): {family: [{size, must, other, says}, ...]}
CONFIG_RELATIONS = RULES["config_relations"]
_MUST = {"divide": lambda size, other: size != 0 and other % size == 0, "be below": operator.lt}
if not set(_MUST).issuperset(r["must"] for relations in CONFIG_RELATIONS.values() for r in relations):
    raise ImportError("condbench/rules.json: a relation of sizes this package cannot apply; write it again "
                      "from this checkout's C++")


def broken_relation(family: str, sizes: Mapping[str, Any]) -> str | None:
    """The first relation of the family's sizes (a dict of them) that does not hold, said as C++'s
    SizeRelation::violation says it (its statement, then the sizes), or None."""
    for r in CONFIG_RELATIONS.get(family, []):
        size, other = sizes[r["size"]], sizes[r["other"]]
        if not _MUST[r["must"]](size, other):
            return f"{r['says']}, got {r['size']}={size} {r['other']}={other}"
    return None


# Each family's sizes with the most C++ accepts: {family: [{size, most, default}, ...]} (a decoder's: its step's)
CONFIG_SIZES = RULES["config_sizes"]


def broken_size(family: str, sizes: Mapping[str, Any]) -> str | None:
    """The first of the family's sizes (a dict of them; those it holds) outside 1..the most C++
    accepts, said as C++'s range check says it, or None."""
    for size in CONFIG_SIZES.get(family, []):
        value = sizes.get(size["size"])
        if value is not None and not (isinstance(value, int) and 1 <= value <= size["most"]):
            return f"{size['size']} must be in 1..{size['most']}, got {value}"
    return None


# condbench's one memory budget (C++'s memory_budget.h): its bytes, its words, and what a batch of each
# built-in family and of the decoder holds beside the weights, as products of named sizes ("rows")
MEMORY_BUDGET = RULES["memory_budget"]

# the result files' schema (C++'s kResultSchema), which the peer's file says too
RESULT_SCHEMA = RULES["context"]["schema"]


def strategy_context_key(key: str, per_token: bool = False) -> str:
    """The context key of a strategy's summary (C++'s strategy_context_key): "strategy:cpu/python/py_cond",
    a decoder's (one generated token an iteration) "strategy:cpu/python/py_cond per token"."""
    context_key: str = RULES["context"]["strategy"] + key + (
        RULES["context"]["token_strategy_suffix"] if per_token else "")
    return context_key


# the families a result file's benchmarks are timed per generated token in, and its value as condbench
# writes it (C++'s kPerTokenContext, per_token_family_names)
PER_TOKEN_CONTEXT = RULES["context"]["per_token"]
PER_TOKEN_FAMILIES = RULES["context"]["per_token_families"]
# the context key under which a result file keeps its process's peak resident memory
PEAK_MEMORY_CONTEXT = RULES["context"]["peak_resident_memory"]
# ... and the lockstep it was timed in, with the allowance that lockstep gave a pair across its files
LOCKSTEP_CONTEXT = RULES["context"]["lockstep"]
LOCKSTEP_ALLOWANCE_CONTEXT = RULES["context"]["lockstep_allowance"]
MAX_LOCKSTEP_ALLOWANCE = RULES["max_lockstep_allowance"]  # CONDBENCH_LOCKSTEP_ALLOWANCE: 1 to this


def peak_resident_memory() -> str:
    """This process's peak resident memory so far (getrusage maxrss), in C++'s words for its own."""
    import resource

    kib = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss  # Linux: kilobytes
    size, unit = kib * 1024.0, 0
    units = ["bytes", "KiB", "MiB", "GiB", "TiB", "PiB"]
    while size >= 1024 and unit + 1 < len(units):
        size, unit = size / 1024, unit + 1
    return f"{size:.3g} {units[unit]} ({kib} kB, getrusage maxrss)"


def module_floats(build: Callable[[], "nn.Module"]) -> int:
    """The floats of the parameters and buffers the module build() makes, made on the meta device:
    what the weights of a model ask for, counted before any is allocated."""
    import torch

    with torch.device("meta"):
        module = build()
    return sum(t.numel() for t in list(module.parameters()) + list(module.buffers()))


def over_memory_budget(family: str, sizes: Mapping[str, Any], rows: int, weights: int) -> str | None:
    """None where `rows` rows of the family's model (`sizes` by name, with num_classes and blocks where
    it has them) and its `weights` floats fit condbench's memory budget, C++'s terms applied (rows 0:
    the weights alone); else the refusal, one line: what it asks for and its largest part."""
    parts = [("the weights", str(weights), weights)]
    for term in MEMORY_BUDGET["terms"][family] if rows else []:
        values = [rows if f == "rows" else sizes[f] for f in term["factors"]]
        product = " x ".join(f"{v} {f}" for v, f in zip(values, term["factors"]))
        if term["times"] != 1:
            product += f"{' x ' if product else ''}{term['times']:g}"
        parts.append((term["what"], product, term["times"] * math.prod(values)))
    asked = sum(floats for *_, floats in parts) * MEMORY_BUDGET["bytes_per_float"]
    if asked <= MEMORY_BUDGET["bytes"]:
        return None
    what, product, floats = max(parts, key=lambda part: part[2])
    return (f"asks for {asked / 2 ** 30:.3g} GiB, {MEMORY_BUDGET['says']}: {what} {product} floats = "
            f"{floats * MEMORY_BUDGET['bytes_per_float'] / 2 ** 30:.3g} GiB")


def logits_agree(logits: "torch.Tensor", expected: "torch.Tensor",
                 relative_tolerance: float = AGREEMENT["relative_tolerance"]) -> bool:
    """condbench's agreement of logits (C++'s results_agree, include/condbench/agreement.h): the same
    shape, and every logit within the tolerance times the larger of its expected value's magnitude
    and its row's largest. The package's one copy of that comparison, held to C++'s verdicts on the
    examples rules.json carries (agreement_examples; tests/python/test_package.py)."""
    import torch

    a = torch.as_tensor(logits).to("cpu", torch.float64)
    b = torch.as_tensor(expected).to("cpu", torch.float64)
    if a.shape != b.shape:
        return False
    if b.numel() == 0:
        return True
    scale = torch.maximum(b.abs(), b.abs().amax(-1, keepdim=True)).clamp_min(1e-30)
    return bool(((a - b).abs() <= relative_tolerance * scale).all())
