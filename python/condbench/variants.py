"""The ways a PyTorch user writes the early-exit conditional: the variants the Python peer benchmarks
beside condbench's strategies (VARIANTS, each declared once). The forwards the aoti engine deploys
(the nested torch.cond, masking) are condbench.deployed's, which the compiler imports too.

Every variant runs a model of condbench.families (or a model file's view): it takes one input row
[1, ...] and thresholds, and returns (logits [1, num_classes], exit id as a Python int or a 0-d
tensor). Its exit test is condbench.rules' (C++'s, as data)."""
import os
import re
from dataclasses import dataclass
from types import ModuleType
from typing import TYPE_CHECKING, Any, Callable, Sequence, Tuple

import torch
from torch import nn

from .deployed import (COND_LAYOUT_WORKAROUND, WORKAROUND_DOC, ExportableCond, NestedCond, Thresholds, masked_forward,
                       should_exit)

if TYPE_CHECKING:
    from .model import EarlyExitModel

# A variant as the peer runs it: fn(one row, thresholds) -> (logits, exit id as an int or a 0-d tensor),
# the thresholds a tensor or a list as its make says
VariantFn = Callable[..., Tuple[torch.Tensor, "torch.Tensor | int"]]
# What a whole model's Variant.make returns: (fn, host_syncs(exit id), thresholds as a tensor?)
Made = Tuple[VariantFn, Callable[[int], int], bool]


class EagerIf(nn.Module):
    """`if confidence > t: return` in plain Python: one host read per exit test reached. Under
    torch.compile each read breaks the graph; with mode="reduce-overhead" cudagraph trees record one
    graph per path the tests take."""

    def __init__(self, model: "EarlyExitModel") -> None:
        super().__init__()
        self.model = model

    def host_syncs(self, exit_id: int) -> int:
        return min(exit_id, self.model.blocks)

    @torch.no_grad()
    def forward(self, x: torch.Tensor, thresholds: Thresholds) -> tuple[torch.Tensor, int]:
        m, h = self.model, x
        for k in range(m.blocks):
            h = m.block(k, h)
            logits = m.head(k)(h)
            if bool(should_exit(logits, thresholds[k], m.confidence)):  # the host reads the test
                return logits, k + 1
        return m.final(h), m.blocks + 1


def allow_recompiles() -> None:
    """Raise dynamo's recompile limit (8 per code object) to 256. A process of the peer runs one
    code object for many things: BlocksCompile's stages share one forward, and eager torch.cond
    traces every branch through one wrapper, each nested level and each variant one more entry.
    Past the limit a compiled unit quietly runs eager, or retraces inside a timed repetition."""
    config = torch._dynamo.config
    name = "recompile_limit" if hasattr(config, "recompile_limit") else "cache_size_limit"
    setattr(config, name, max(getattr(config, name), 256))


class Stage(nn.Module):
    """Block k and its exit head, and the exit test: one compiled unit of BlocksCompile."""

    def __init__(self, model: "EarlyExitModel", k: int) -> None:
        super().__init__()
        self.model, self.k = model, k

    def forward(self, h: torch.Tensor, threshold: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor, torch.Tensor]:
        h = self.model.block(self.k, h)
        logits = self.model.head(self.k)(h)
        return h, logits, should_exit(logits, threshold, self.model.confidence)


class BlocksCompile:
    """What the answers to the question suggested: compile each block with its head and exit test
    (torch.compile), and branch on the host between them with a Python if."""

    def __init__(self, model: "EarlyExitModel") -> None:
        self.model = model
        allow_recompiles()
        self.stages = [torch.compile(Stage(model, k)) for k in range(model.blocks)]
        self.final = torch.compile(model.final)

    def host_syncs(self, exit_id: int) -> int:
        return min(exit_id, self.model.blocks)

    @torch.no_grad()
    def __call__(self, x: torch.Tensor, thresholds: torch.Tensor) -> tuple[torch.Tensor, int]:
        h = x
        for k, stage in enumerate(self.stages):
            h, logits, fire = stage(h, thresholds[k])
            if bool(fire):  # the host reads the test
                return logits, k + 1
        return self.final(h), self.model.blocks + 1


class OrtIf:
    """The nested torch.cond exported to ONNX (ExportableCond -> If nodes, torch.onnx.export with
    dynamo=True) and run by ONNX Runtime's Python API on one thread, its outputs bound once to
    buffers made here (IOBinding). ONNX Runtime evaluates each If's condition on the host."""

    def __init__(self, model: "EarlyExitModel", onnxruntime: ModuleType, path: str) -> None:
        import contextlib
        import copy
        import io
        import logging
        frozen = copy.deepcopy(model)  # the other variants keep their parameters as they are
        for p in frozen.parameters():
            p.requires_grad_(False)
        example = (torch.zeros(1, *model.row_shape), torch.zeros(model.blocks))
        logging.getLogger("torch.onnx").setLevel(logging.ERROR)
        with contextlib.redirect_stdout(io.StringIO()):  # the exporter's progress lines
            # dynamo=True returns the ONNXProgram; torch's signature says ONNXProgram | None for either exporter
            torch.onnx.export(ExportableCond(frozen).eval(), example, dynamo=True,  # type: ignore[union-attr]
                              verbose=False).save(path)
        options = onnxruntime.SessionOptions()
        options.intra_op_num_threads = options.inter_op_num_threads = 1
        self.session = onnxruntime.InferenceSession(path, options, providers=["CPUExecutionProvider"])
        self.inputs = [i.name for i in self.session.get_inputs()]
        self.binding = self.session.io_binding()
        num_classes = model.num_classes
        self.logits = onnxruntime.OrtValue.ortvalue_from_shape_and_type([1, num_classes], "float32")
        self.exit_id = onnxruntime.OrtValue.ortvalue_from_shape_and_type([], "int64")
        outputs = [o.name for o in self.session.get_outputs()]
        self.binding.bind_ortvalue_output(outputs[0], self.logits)
        self.binding.bind_ortvalue_output(outputs[1], self.exit_id)
        self.blocks = model.blocks

    def host_syncs(self, exit_id: int) -> int:
        return min(exit_id, self.blocks)

    def __call__(self, x: torch.Tensor, thresholds: torch.Tensor) -> tuple[torch.Tensor, int]:
        self.binding.bind_cpu_input(self.inputs[0], x.numpy())
        self.binding.bind_cpu_input(self.inputs[1], thresholds.numpy())
        self.session.run_with_iobinding(self.binding)
        return torch.from_numpy(self.logits.numpy()), int(self.exit_id.numpy())


class Masked(nn.Module):
    """Every block and head, rows' results picked with torch.where: no host read."""

    def __init__(self, model: "EarlyExitModel") -> None:
        super().__init__()
        self.model = model

    def host_syncs(self, exit_id: int) -> int:
        return 0

    @torch.no_grad()
    def forward(self, x: torch.Tensor, thresholds: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor]:
        logits, exit_id = masked_forward(self.model, x, thresholds)
        return logits, exit_id.reshape(())


class Unavailable(Exception):
    """A variant that cannot run here; its message says why (the peer writes it beside the results)."""


@dataclass(frozen=True)
class Variant:
    """One way a PyTorch user writes the conditional, declared once: its name is its key in its table,
    VARIANTS here for a whole model, condbench.decoder_peer's VARIANTS for a decoder's token."""
    summary: str  # one line, written into the result file's context as "strategy:<device>/python/<name>"
                  # (a decoder's: "... per token"),
                  # where condbench-report's glossary finds it
    # A whole model's: (model, device) -> (callable, host_syncs(exit_id), thresholds as a tensor?),
    # raising Unavailable with the reason where it cannot run. A decoder's: () -> its step, made once
    # (its scenarios share it, and its compile).
    make: Callable[..., Any]
    # Where the peer runs it when no --variants names it: a variant that on some device times what
    # another already does (reduce-overhead on a CPU is py_*_compile) runs there only when named.
    default_devices: Tuple[str, ...] = ("cpu", "cuda")
    instead_of: str = ""  # a workaround: run only in that variant's place, where it disagrees with a
                          # model file's module (peer.py)
    cudagraph_trees: bool = False  # compiled with mode="reduce-overhead": the peer notes what Inductor captured
    # A decoder's: one host read per exit reached (eager torch.cond, and Inductor's lowering of it,
    # decide on the host at each cond reached). A whole model's make says it per exit id instead.
    host_decides: bool = False


@dataclass(frozen=True)
class Case:
    """One case the peer times, whatever its model: a variant on a scenario of a workload, named as
    condbench names its twin. loop(n) times n iterations and returns their seconds: a whole model's n
    inferences walking condbench's rows in its order, a decoder's n generated tokens (a new
    sequence's prefill outside the timed region). exits: the iterations' exit ids in that order;
    host_syncs(exit id): one iteration's host reads; blocks: the exits before the final one.
    whole_walk: the counters weigh every iteration of exits once, as condbench's token cases do (every
    sequence); else they weigh the timed iterations, as its inference cases do (the walk's first
    ones once more where the iterations do not fill whole walks)."""
    name: str
    loop: Callable[[int], float]
    exits: Tuple[int, ...]
    blocks: int
    host_syncs: Callable[[int], int]
    iterations: int = 1  # a repetition's: set by the peer once an untimed pass has measured the loop
    whole_walk: bool = False


def _as_is(module: EagerIf | NestedCond | Masked | BlocksCompile | OrtIf, tensor_thresholds: bool = True) -> Made:
    return module, module.host_syncs, tensor_thresholds


def _ort_if(model: "EarlyExitModel", device: str) -> Made:
    try:
        import onnxruntime
    except ImportError:
        raise Unavailable("onnxruntime is not installed (scripts/setup installs the pinned one)") from None
    if device != "cpu":
        raise Unavailable("the pinned onnxruntime package runs on the CPU only")
    import tempfile
    try:
        with tempfile.TemporaryDirectory() as d:  # the session holds the model once loaded
            ort_if = OrtIf(model, onnxruntime, os.path.join(d, "cond.onnx"))
    except Exception as e:  # the exporter or ONNX Runtime refuses this model: say so, run the rest
        first = re.sub(r"\x1b\[[0-9;]*m", "", str(e)).strip().splitlines()[0]  # the exporter colours its text
        raise Unavailable(f"ONNX export or load failed: {first[:200]}") from None
    return _as_is(ort_if)


def _cond_cudagraph(model: "EarlyExitModel", device: str) -> Made:
    if device != "cuda":
        raise Unavailable("CUDA only")
    if tuple(int(p) for p in torch.__version__.split(".")[:2]) < (2, 12):
        raise Unavailable(f"torch.cond under CUDA-graph capture needs PyTorch >= 2.12, this is {torch.__version__}")
    return CudaGraphed(NestedCond(model)), lambda exit_id: 0, True


def _masked_cudagraph(model: "EarlyExitModel", device: str) -> Made:
    if device != "cuda":
        raise Unavailable("CUDA only")
    return CudaGraphed(Masked(model)), lambda exit_id: 0, True


def _compiled(module: NestedCond | Masked | EagerIf, **options: Any) -> Made:
    return torch.compile(module, **options), module.host_syncs, True


# torch.compile's mode for CUDA graphs through cudagraph trees: a GPU user's first move. On a CPU
# Inductor makes no CUDA graph, so there it compiles what py_*_compile does.
REDUCE_OVERHEAD = "reduce-overhead"


def cudagraph_skips() -> int | None:
    """How many times Inductor declined CUDA graphs so far in this process (torch's own counter,
    counters["inductor"]["cudagraph_skips"], bumped with each reason it logs): None where this torch
    keeps no such counter."""
    try:
        from torch._dynamo.utils import counters
    except ImportError:
        return None
    return counters["inductor"]["cudagraph_skips"]


# The peer's variants, in the order it runs them.
VARIANTS = {
    "py_eager_if": Variant("a Python if on each exit's confidence: one .item() read back per exit test",
                           lambda m, d: _as_is(EagerIf(m), False)),
    "py_cond": Variant("nested torch.cond in eager mode: each level decided on the host",
                       lambda m, d: _as_is(NestedCond(m))),
    "py_cond_compile": Variant("the nested torch.cond under torch.compile", lambda m, d: _compiled(NestedCond(m))),
    "py_cond_compile_layout_off": Variant(
        "py_cond_compile with Inductor's layout_optimization=False: the workaround for Inductor's torch.cond on "
        f"convolutional models, run where py_cond_compile disagrees with the model file's module ({WORKAROUND_DOC})",
        lambda m, d: _compiled(NestedCond(m), options=COND_LAYOUT_WORKAROUND), instead_of="py_cond_compile"),
    "py_masked": Variant("every block and head for every row; each row's logits picked with torch.where",
                         lambda m, d: _as_is(Masked(m))),
    "py_masked_compile": Variant("py_masked under torch.compile", lambda m, d: _compiled(Masked(m))),
    "py_blocks_compile": Variant("each block with its head and exit test compiled; a Python if between them",
                                 lambda m, d: _as_is(BlocksCompile(m))),
    "ort_if": Variant("the nested torch.cond exported to ONNX (If nodes), run by ONNX Runtime on one thread", _ort_if),
    "py_cond_cudagraph": Variant("the nested torch.cond captured in a CUDA graph (IF nodes, PyTorch >= 2.12)",
                                 _cond_cudagraph),
    "py_masked_cudagraph": Variant("py_masked captured once with torch.cuda.graph and replayed per inference",
                                   _masked_cudagraph),
    "py_masked_compile_ro": Variant(
        'py_masked under torch.compile(mode="reduce-overhead"): CUDA graphs through cudagraph trees',
        lambda m, d: _compiled(Masked(m), mode=REDUCE_OVERHEAD), default_devices=("cuda",), cudagraph_trees=True),
    "py_cond_compile_ro": Variant(
        'the nested torch.cond under torch.compile(mode="reduce-overhead"); whether cudagraph trees captured it '
        "is in the file's notes",
        lambda m, d: _compiled(NestedCond(m), mode=REDUCE_OVERHEAD), default_devices=("cuda",), cudagraph_trees=True),
    "py_eager_if_compile_ro": Variant(
        'the Python if under torch.compile(mode="reduce-overhead"): the .item() breaks the graph, one graph '
        "per path taken",
        lambda m, d: _compiled(EagerIf(m), mode=REDUCE_OVERHEAD), default_devices=("cuda",),
        cudagraph_trees=True),
}
SUMMARIES = {name: v.summary for name, v in VARIANTS.items()}
# A variant that runs here: (name, fn, host_syncs(exit id), thresholds as a tensor?)
Runnable = Tuple[str, VariantFn, Callable[[int], int], bool]


def workarounds(model: "EarlyExitModel", device: str) -> dict[str, Runnable]:
    """{variant: (its workaround's name, callable, host_syncs, thresholds as tensor?)}: what the peer runs
    in a variant's place where the variant as written disagrees with a model file's module."""
    return {v.instead_of: (name, *v.make(model, device)) for name, v in VARIANTS.items() if v.instead_of}


def variants(model: "EarlyExitModel", device: str,
             named: Sequence[str] = ()) -> tuple[list[Runnable], list[tuple[str, str]]]:
    """(name, callable, host_syncs(exit_id), thresholds as tensor?) for every variant that runs here
    (those `named`, else the device's defaults); and (name, reason) for those that cannot."""
    runnable: list[Runnable] = []
    skipped: list[tuple[str, str]] = []
    for name, variant in VARIANTS.items():
        if variant.instead_of or (named and name not in named) or (not named and device not in variant.default_devices):
            continue
        try:
            runnable.append((name, *variant.make(model, device)))
        except Unavailable as why:
            skipped.append((name, str(why)))
    return runnable, skipped


class CudaGraphed:
    """A module captured once in a CUDA graph by torch.cuda.graph, as a user does without
    torch.compile (torch.cond's since PyTorch 2.12 as conditional IF nodes): the input is copied
    into the captured input and the graph replayed."""

    graph: "torch.cuda.CUDAGraph | None"
    static: "tuple[torch.Tensor, torch.Tensor]"  # the captured input, once captured
    out: "tuple[torch.Tensor, torch.Tensor]"  # the captured output

    def __init__(self, module: NestedCond | Masked) -> None:
        self.module, self.graph = module, None

    @torch.no_grad()
    def __call__(self, x: torch.Tensor, thresholds: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor]:
        if self.graph is None:
            self.static = (x.clone(), thresholds.clone())
            side = torch.cuda.Stream()  # type: ignore[no-untyped-call]  # torch's Stream has no types
            side.wait_stream(torch.cuda.current_stream())
            with torch.cuda.stream(side):
                for _ in range(3):
                    self.module(*self.static)  # warm-up outside capture
            torch.cuda.current_stream().wait_stream(side)
            self.graph = torch.cuda.CUDAGraph()
            with torch.cuda.graph(self.graph):
                self.out = self.module(*self.static)
        self.static[0].copy_(x)
        self.static[1].copy_(thresholds)
        self.graph.replay()
        return self.out
