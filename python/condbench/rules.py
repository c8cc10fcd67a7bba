"""The rules condbench applies, as C++ states them (include/condbench/rules.h): rules.json beside
this file is what C++ writes, checked by its unit test Rules.ThePythonPackageHoldsWhatCppSays. Every
exit test the package makes goes through exit_fires, and every tolerance it compares with is read
from here or from the exported workload (which carries the same values for the run that wrote it):
no Python file types either."""
import json
import operator
import os


def _load():
    path = os.path.join(os.path.dirname(os.path.abspath(__file__)), "rules.json")
    with open(path, encoding="utf-8") as f:
        return json.load(f)


RULES = _load()

# "score > threshold": the comparison C++'s math::exit_fires makes, read off it.
_COMPARISONS = {"score > threshold": operator.gt, "score >= threshold": operator.ge}
try:
    _fires = _COMPARISONS[RULES["exit_rule"]["fires_when"]]
except KeyError as e:
    raise ImportError(f"condbench/rules.json: an exit rule this package cannot apply ({e}); "
                      f"write it again from this checkout's C++") from None
if RULES["exit_rule"]["score"] != "max_softmax":
    raise ImportError(f"condbench/rules.json: unknown default score {RULES['exit_rule']['score']!r}")


def max_softmax(logits):
    """The exit rule's default score of each row (docs/design.md §1): its largest softmax probability."""
    import torch  # here, not above: the package's readers of rules without torch (device_check) import this

    return torch.softmax(logits, dim=-1).amax(dim=-1)


def exit_fires(score, threshold):
    """The exit test (docs/design.md §1): whether an exit with this score leaves at this threshold.
    Tensors (a bool tensor, traceable by torch.compile and torch.export) or floats (a bool)."""
    return _fires(score, threshold)


# The tolerances and tie margins (dicts of absolute_tolerance, relative_tolerance, tie_margin).
AGREEMENT = RULES["agreement"]                          # condbench-infer's agree, the decoder's check
MODEL_FILE_AGREEMENT = RULES["model_file_agreement"]    # a strategy or variant against a model file's module
COMPILE_CHECK = RULES["compile_check"]                  # condbench.aoti: a package against its module
# What condbench reads of a compiled folder (max_row_values, max_stages, max_classes): model_file.py's
# limits where no caller gives its own
MODEL_FILE_LIMITS = RULES["model_file_limits"]
# The most rows a batch holds (every tool's --batch): what condbench.aoti exports a package to accept
MAX_BATCH = RULES["max_batch"]
# The --trace file's track of GPU spans (nvtx::kGpuTrack)
GPU_TRACK = RULES["trace"]["gpu_track"]

# How a family's sizes must relate (C++'s SizeRelation): {family: [{size, must, other, says}, ...]}
CONFIG_RELATIONS = RULES["config_relations"]
_MUST = {"divide": lambda size, other: size != 0 and other % size == 0, "be below": operator.lt}
if not set(_MUST).issuperset(r["must"] for relations in CONFIG_RELATIONS.values() for r in relations):
    raise ImportError("condbench/rules.json: a relation of sizes this package cannot apply; write it again "
                      "from this checkout's C++")


def broken_relation(family, sizes):
    """The first relation of the family's sizes (a dict of them) that does not hold, said as C++'s
    SizeRelation::violation says it (its statement, then the sizes), or None."""
    for r in CONFIG_RELATIONS.get(family, []):
        size, other = sizes[r["size"]], sizes[r["other"]]
        if not _MUST[r["must"]](size, other):
            return f"{r['says']}, got {r['size']}={size} {r['other']}={other}"
    return None


def logits_agree(logits, expected, relative_tolerance=AGREEMENT["relative_tolerance"]):
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
