"""AOTInductor: the one path from a module to a package condbench runs, for every route to one

    export   torch.export (export), a module that takes rows taking any batch condbench runs
             (rules.MAX_BATCH, C++'s --batch limit)
    compile  torch._inductor.aoti_compile_and_package (compile_program: its one call), side by side
             in processes of their own where there are several (compile_side_by_side)
    check    the package loaded back and run against the module it was compiled from, within C++'s
             tolerance (rules.COMPILE_CHECK); a package that fails its check is not kept (build).
             A CUDA package is loaded and run in a process of its own (condbench.package_run, with
             faulthandler on): a loader that crashes takes that process, not the compile.

The routes: the built-in families' and decoders' packages (condbench.aoti, a command) and a model
file's parts and whole-model modules (condbench.model_file compile). The whole-model modules are the
same on both: condbench.deployed's nested torch.cond (DeployedCond) and masking (DeployedMasked) on
the model's early-exit view, exported with the check that sends example rows to every exit
(whole_model_programs); a decoder's are one decode step of each (deployed.DecodeStep, step_program).
Every route's packages sit in one cache (cache_root), the place condbench looks too.
"""
import contextlib
import io
import logging
import os
import sys
import time
from typing import TYPE_CHECKING, Any, Callable, Iterator, NamedTuple, Sequence, TypedDict, cast

from .errors import Described, first_line
from .rules import COMPILE_CHECK, MAX_BATCH

if TYPE_CHECKING:
    import torch
    from torch import nn
    from torch.export import ExportedProgram

    from .deployed import DecodeStep
    from .model import EarlyExitModel

MODULES = ("cond", "masked")  # the whole-model modules
CHECK_ROWS = 8  # the example rows a whole-model module is checked on
# torch.export's dynamic_shapes as condbench gives them: a Dim for each input's dynamic dimension, or
# None for an input without one
DynamicShapes = tuple[dict[int, "torch.export.Dim"] | None, ...] | None


@contextlib.contextmanager
def quiet() -> Iterator[None]:
    """torch.export and Inductor print and log what they do (warnings, a partial graph, generated
    code); the path says what matters in one line."""
    logging.getLogger("torch").setLevel(logging.CRITICAL)
    with contextlib.redirect_stdout(io.StringIO()), contextlib.redirect_stderr(io.StringIO()):
        yield


def rows_dim() -> "torch.export.Dim":
    """The batch dimension of a module that takes rows: any batch condbench runs."""
    import torch

    return torch.export.Dim("rows", min=1, max=MAX_BATCH)


def export(module: "nn.Module", example: tuple[object, ...], dynamic_shapes: DynamicShapes = None) -> "ExportedProgram":
    """torch.export of `module` on the tuple `example`; raises what torch.export raises."""
    import torch

    with quiet():
        return torch.export.export(module, example, dynamic_shapes=dynamic_shapes)


def compile_program(program: "ExportedProgram", path: str, options: dict[str, object] | None = None) -> float:
    """AOTInductor's one call: the exported `program` into the package `path`, with Inductor's
    `options` (None: its defaults); the seconds it took."""
    import torch

    start = time.perf_counter()
    with quiet(), own_inductor_cache():
        extra = {"inductor_configs": options} if options else {}
        torch._inductor.aoti_compile_and_package(program, package_path=path, **extra)
    return time.perf_counter() - start


@contextlib.contextmanager
def own_inductor_cache() -> Iterator[None]:
    """Inductor's (and Triton's) cache folder for one compile alone, removed after it. AOTInductor
    writes a package's files into <cache>/<digest of the graph's code>/ and packs them from there,
    rewriting them in place: two compiles of the same code at once (a model's identical blocks in two
    workers, two processes compiling one model file) packed each other's half-written files. A shared
    cache saves only a compile of the same code run before (examples/models/mlp.py, --jobs 1: 80 s
    with it warm, 90 to 100 s cold or with a folder of its own, on the 2-core machine); what condbench
    keeps is the package itself."""
    from torch._inductor import utils

    fresh = getattr(utils, "fresh_cache", None) or utils.fresh_inductor_cache  # its older name
    with fresh():
        folder = os.environ.get("TORCHINDUCTOR_CACHE_DIR", "?")
        try:
            yield
        except Exception as e:  # Inductor keeps the folder of a compile that failed: say where
            raise Described(f"{first_line(e)} (its Inductor folder is kept: {folder})") from e


def load(path: str) -> Callable[..., Any]:
    """A package, loaded as Python runs it (what its check calls)."""
    import torch

    with quiet():
        return torch._inductor.aoti_load_package(path)


class Built(TypedDict, total=False):
    """What build made of a package (its docstring says which keys come together)."""
    package: str
    compile_s: float
    unavailable: str
    workaround: str
    default: str


class Check(NamedTuple):
    """How a package is checked (build): the calls to make of it, each a tuple of inputs, and
    judge(outputs, one per call) -> None where they are its module's, else why not."""
    calls: Sequence[tuple[object, ...]]
    judge: Callable[[list[Any]], str | None]  # a package's outputs: what its module returns, flattened and rebuilt


# A whole-model module or a decoder step exported, with its check; or why it could not be, and None
Exported = tuple["ExportedProgram", Check] | tuple[str, None]

# Set, a CPU package is checked in a process of its own too (the tests' way to run that path).
CHECK_APART_ENV = "CONDBENCH_AOTI_CHECK_APART"


def outputs(package: Callable[..., Any], calls: Sequence[tuple[object, ...]]) -> list[Any]:
    """The package's outputs on each call."""
    import torch

    with torch.no_grad():
        return [package(*call) for call in calls]


def outputs_apart(path: str, calls: Sequence[tuple[object, ...]]) -> list[Any]:
    """outputs(load(path), calls) in a fresh process with faulthandler on (condbench.package_run): the
    loader of a CUDA package that crashes (a segfault seen on an H200 loading one in the process that
    compiled it) ends that process alone, and the error says how it ended."""
    import subprocess
    import tempfile

    import torch

    with tempfile.TemporaryDirectory() as folder:
        given, made = os.path.join(folder, "calls.pt"), os.path.join(folder, "outputs.pt")
        torch.save(calls, given)
        done = subprocess.run([sys.executable, "-X", "faulthandler", "-m", "condbench.package_run", path, given, made],
                              capture_output=True, text=True, timeout=600)
        if done.returncode != 0:
            how = f"signal {-done.returncode}" if done.returncode < 0 else f"exit {done.returncode}"
            said = [line for line in done.stderr.strip().splitlines() if line.strip()]
            raise RuntimeError(f"loading and running it in a process of its own ended with {how}: "
                               f"{said[-1][:200] if said else 'nothing said'}")
        said_back: list[Any] = torch.load(made)
        return said_back


def check_package(path: str, check: Check) -> str | None:
    """check's verdict on the package at `path`: run here, or apart where it runs on CUDA."""
    import torch

    tensors = [t for call in check.calls for t in torch.utils._pytree.tree_leaves(call) if isinstance(t, torch.Tensor)]
    if any(t.is_cuda for t in tensors) or os.environ.get(CHECK_APART_ENV):
        return check.judge(outputs_apart(path, check.calls))
    return check.judge(outputs(load(path), check.calls))


def _compile_saved(saved: str, path: str, options: dict[str, object] | None) -> float:
    """A worker's job (compile_side_by_side): the program saved at `saved` compiled into `path`."""
    import torch

    with quiet():  # its loader warns of a name not ending .pt2, then reads it
        program = torch.export.load(saved)
    return compile_program(program, path, options)


def compile_side_by_side(jobs: Sequence[tuple[str, "ExportedProgram", dict[str, object] | None]],
                         workers: int) -> dict[str, float]:
    """Compiles [(package path, exported program, options)] `workers` processes at once; returns
    {path: seconds}. A package is compiled by itself, so the packages of a model compile side by side
    (a GPU machine's cores; two on the 2-core one). Best effort: a program that cannot be saved for a
    worker, or whose worker fails, is left for build, which compiles it here and names what went
    wrong."""
    import concurrent.futures
    import multiprocessing

    import torch

    if workers < 2 or len(jobs) < 2:
        return {}
    saved: list[tuple[str, dict[str, object] | None]] = []
    for path, program, options in jobs:
        try:
            with quiet():
                torch.export.save(program, path + ".exported")
            saved.append((path, options))
        except Exception:  # compiled by build, in this process
            pass
    seconds: dict[str, float] = {}
    try:
        # spawn: a fork of a process that has used CUDA cannot use it
        with concurrent.futures.ProcessPoolExecutor(min(workers, len(saved)) or 1,
                                                    mp_context=multiprocessing.get_context("spawn")) as pool:
            # The largest programs first (a whole model's nested cond takes longest: 100 s of an
            # H200 machine's 137 s for a model file, measured): the small ones fill the other workers.
            largest_first = sorted(saved, key=lambda job: os.path.getsize(job[0] + ".exported"), reverse=True)
            running = {pool.submit(_compile_saved, path + ".exported", path, options): path
                       for path, options in largest_first}
            for done in concurrent.futures.as_completed(running):
                with contextlib.suppress(Exception):  # build compiles it again, here, and says why it cannot
                    seconds[running[done]] = done.result()
    except Exception:  # no workers (a broken pool, no processes left): build compiles the rest
        pass
    for path, _ in saved:
        for leftover in [path + ".exported"] + ([] if path in seconds else [path]):
            with contextlib.suppress(OSError):  # a failed worker's half-written package is not used
                os.remove(leftover)
    return seconds


def build(program: "ExportedProgram | str", path: str, check: Check | None, noun: str,
          options: dict[str, object] | None = None, fallback: dict[str, object] | None = None) -> Built:
    """The exported `program` compiled into `path` (unless compile_side_by_side made it already),
    loaded back and checked (check_package, with `check` a Check): None where it computes what its
    module does, else why not. Returns one of
      {"package": file name, "compile_s": seconds}   accepted
      {"unavailable": why}                           `program` is why it could not be exported
                                                     (check None), or the compile or the check failed
      {"package", "compile_s", "workaround": the options, "default": why the first was refused}
                                                     refused with `options`, accepted with `fallback`
    A refused package is removed. `noun` names the module in the reasons ("cond module", "part")."""
    from .deployed import options_text

    if check is None:
        return {"unavailable": cast(str, program)}  # no check: `program` is why there is none
    exported = cast("ExportedProgram", program)
    seconds = 0.0

    def refuse(why: str) -> Built:
        with contextlib.suppress(OSError):
            os.remove(path)
        return {"unavailable": why}

    def attempt(opts: dict[str, object] | None) -> tuple[str | None, str | None]:
        """(why the check refused the package or None, None), or (None, why it could not be made)."""
        nonlocal seconds
        try:
            if not os.path.isfile(path):
                seconds += compile_program(exported, path, opts)
            return check_package(path, check), None
        except (KeyboardInterrupt, MemoryError):
            raise
        except Exception as e:
            return None, first_line(e)

    why, error = attempt(options)
    if error:
        return refuse(f"AOTInductor cannot compile the {noun} ({error})")
    if not why:
        return {"package": os.path.basename(path), "compile_s": seconds}
    default = f"the compiled {noun} {why}"
    refuse(default)
    if fallback is None:
        return {"unavailable": default}
    text = options_text(fallback)
    why, error = attempt(fallback)
    if error:
        return refuse(f"{default}; with {text} AOTInductor cannot compile it ({error})")
    if why:
        return refuse(f"{default}, and with {text} too")
    return {"package": os.path.basename(path), "compile_s": seconds, "workaround": text, "default": default}


def close(got: "torch.Tensor", want: "torch.Tensor") -> bool:
    """Whether a package's output is its module's: floats within COMPILE_CHECK, the rest equal."""
    import torch

    if got.shape != want.shape:
        return False
    if not want.is_floating_point():
        return torch.equal(got.to(want.dtype), want)
    return torch.allclose(got, want, rtol=COMPILE_CHECK["relative_tolerance"],
                          atol=COMPILE_CHECK["absolute_tolerance"])


def whole_model_programs(view: "EarlyExitModel", x: "torch.Tensor", inputs: str = "example_input",
                         modules: Sequence[str] = MODULES) -> dict[str, Exported]:
    """The aoti engine's whole-model `modules` of condbench.deployed on the early-exit `view`, exported:
    {"cond": (program, or why it cannot be exported, check), "masked": ...}. cond, the nested
    torch.cond generated from the blocks, takes one row; masked any number. check(package) compares
    its (exit id, logits) with the view's masked forward on the rows `x` (named `inputs` in what it
    says) at thresholds halfway between each exit's two middle scores, so that rows leave at every
    exit; a row whose score is within the tie margin of a threshold may go either way in compiled
    code and is not compared. The check is a Check."""
    import torch

    from .deployed import DeployedCond, DeployedMasked, masked_forward

    for p in view.parameters():
        p.requires_grad_(False)  # torch.export of torch.cond: frozen parameters, no no_grad region
    with torch.no_grad():
        h = x
        scores: list[torch.Tensor] = []
        for k in range(view.blocks):
            h = view.block(k, h)
            scores.append(view.confidence(view.head(k)(h)).float())
        middle = [s.sort().values[len(s) // 2 - 1:len(s) // 2 + 1] for s in scores]
        thresholds = torch.stack([m.mean() for m in middle])
        expected_logits, expected_ids = masked_forward(view, x, thresholds)
        near = torch.stack([(s - t).abs() < COMPILE_CHECK["tie_margin"] for s, t in zip(scores, thresholds)], 1).any(1)

    def check(slices: list[slice]) -> Check:
        def judge(outs: list[Any]) -> str | None:
            for rows, (ids, logits) in zip(slices, outs):
                keep = ~near[rows]
                if not close(ids.to(torch.int32).reshape(-1)[keep], expected_ids[rows].to(torch.int32)[keep]) or \
                        not close(logits[keep], expected_logits[rows][keep]):
                    which = f"row {rows.start}" if rows.stop - rows.start == 1 else f"rows {rows.start}..{rows.stop - 1}"
                    return f"differs from the module on {inputs} {which}"
            return None

        return Check([(x[rows], thresholds) for rows in slices], judge)

    programs: dict[str, Exported] = {}
    one_row_each = [slice(r, r + 1) for r in range(x.shape[0])]
    for module, deployed, example, dynamic, calls in (
            ("cond", DeployedCond, (x[:1], thresholds), None, one_row_each),
            ("masked", DeployedMasked, (x[:2], thresholds), ({0: rows_dim()}, None), [slice(0, x.shape[0])])):
        if module not in modules:
            continue
        try:
            programs[module] = (export(deployed(view), example, dynamic), check(calls))
        except (KeyboardInterrupt, MemoryError):
            raise
        except Exception as e:  # a model file's parts still run; the aoti engine's strategy says why it cannot
            programs[module] = (f"torch.export cannot trace the model's {module} module ({first_line(e)})", None)
    return programs


def step_program(step: "DecodeStep") -> tuple["ExportedProgram", Check]:
    """A decoder's DecodeStep exported, with its check: the package's next token, exit id, logits and
    cache against the step's own, for a token at two positions whose thresholds send it out at the
    first exit and at none."""
    import torch

    program = export(step, step.example_inputs())
    samples = [step.sample_inputs(position, threshold) for position in (1, step.config["context"] - 1)
               for threshold in (0.0, 1.0)]

    with torch.no_grad():
        wanted = [torch.utils._pytree.tree_leaves(step(*inputs)) for inputs in samples]

    def judge(outs: list[Any]) -> str | None:
        for inputs, want, out in zip(samples, wanted, outs):
            got = torch.utils._pytree.tree_leaves(out)
            if len(got) != len(want) or not all(close(g, w) for g, w in zip(got, want)):
                position = int(inputs[1].nonzero())
                return f"differs from the step on a token at position {position}, thresholds {float(inputs[3][0])}"
        return None

    return program, Check(samples, judge)



def cache_root() -> str:
    """condbench's cache, absolute: a relative $CONDBENCH_AOTI_DIR is the working folder's now, before
    any module's code could change the working folder."""
    if os.environ.get("CONDBENCH_AOTI_DIR"):
        return os.path.abspath(os.environ["CONDBENCH_AOTI_DIR"])
    base = os.environ.get("XDG_CACHE_HOME") or os.path.join(os.path.expanduser("~"), ".cache")
    return os.path.abspath(os.path.join(base, "condbench", "aoti"))
