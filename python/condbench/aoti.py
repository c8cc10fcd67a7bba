#!/usr/bin/env python3
"""AOTInductor for condbench's engine aoti: the one path from a module to a package condbench runs,

    export   torch.export (export), a module that takes rows taking any batch condbench runs
             (rules.MAX_BATCH, C++'s --batch limit)
    compile  torch._inductor.aoti_compile_and_package (compile_program: its one call), side by side
             in processes of their own where there are several (compile_side_by_side)
    check    the package loaded back and run against the module it was compiled from, within C++'s
             tolerance (rules.COMPILE_CHECK); a package that fails its check is not kept (build).
             A CUDA package is loaded and run in a process of its own (condbench.package_run, with
             faulthandler on): a loader that crashes takes that process, not the compile.

for both routes to a package: the built-in families' and decoders' (this module's command, below)
and a model file's parts and whole-model modules (condbench.model_file compile). The whole-model
modules are the same on both: condbench.deployed's nested torch.cond (DeployedCond) and masking
(DeployedMasked) on the model's early-exit view, exported with the check that sends example rows to
every exit (whole_model_programs); a decoder's are one decode step of each (deployed.DecodeStep,
step_program).

The built-in route: the packages of a model configuration, compiled with placeholder weights that
condbench replaces with the model's own (torch::inductor::AOTIModelPackageLoader, load_constants), so
a package serves any weights of its configuration. They are cached by torch version, device and
configuration (ModelConfig::tag in condbench):
  <cache>/torch-<version>/<device>/<family>-<size><value>...-c<classes>-b<blocks>/<module>.pt2
  e.g. mlp-in_features32-hidden64-c10-b3, transformer-d_model256-heads4-ffn1024-seq32-c10-b6
  (a decoder's: decoder-vocab512-...-exit_every2, the sizes of its step: condbench's step_tag)
beside <module>.json: the torch version, the export and compile seconds, the options, and a
digest of the code that made it (a package made by other code is compiled again). The cache is
$CONDBENCH_AOTI_DIR, else $XDG_CACHE_HOME/condbench/aoti, else ~/.cache/condbench/aoti: the place
condbench looks too.

usage: python -m condbench.aoti (--workload DIR | --config FAMILY:SIZE=N,...,num_classes=N,blocks=N ...
                               | --config decoder:vocab=N,...,exit_every=N ...)
                              [--device cpu|cuda] [--modules cond,masked] [--cache DIR] [--force] [--jobs N]
"""
import argparse
import contextlib
import hashlib
import io
import json
import logging
import os
import sys
import time
from typing import TYPE_CHECKING, Any, Callable, Iterator, Mapping, NamedTuple, NoReturn, Sequence, TypedDict, cast

from .errors import Described, first_line
from .regular_file import open_regular
from .rules import (COMPILE_CHECK, MAX_BATCH, RULES, broken_relation, broken_size, module_floats,
                    over_memory_budget)

if TYPE_CHECKING:
    import torch
    from torch import nn
    from torch.export import ExportedProgram

    from .deployed import DecodeStep
    from .model import EarlyExitModel

HERE = os.path.dirname(os.path.abspath(__file__))
MODULES = ("cond", "masked")
DECODER = "decoder"
# Each family's sizes in C++'s order, with the most it accepts: {family: [(size, most), ...]}. A
# decoder's are its step's (without the prompt and the tokens generated: docs/design.md §8).
CONFIG_SIZES = {family: [(size["size"], size["most"]) for size in sizes]
                for family, sizes in RULES["config_sizes"].items()}
DECODER_SIZES = tuple(key for key, _ in CONFIG_SIZES[DECODER])
# The built-in route's options, AOTInductor's defaults but one: inductor writes parameters of at
# most 8 elements (a small head's bias) into the generated code as literals, where condbench could
# not replace them with the model's; keeping every parameter a constant changes no arithmetic. (A
# model file's packages keep its weights: Inductor's defaults, the call a user writes.)
BUILT_IN_OPTIONS: dict[str, object] = {"always_keep_tensor_constants": True}
CHECK_ROWS = 8  # the example rows a whole-model module is checked on
# torch.export's dynamic_shapes as condbench gives them: a Dim for each input's dynamic dimension, or
# None for an input without one
DynamicShapes = tuple[dict[int, "torch.export.Dim"] | None, ...] | None


# --- the path: export, compile, check --------------------------------------------------------------

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


# --- the built-in route -----------------------------------------------------------------------------

def fail(message: str) -> NoReturn:
    print(f"aoti: {message}", file=sys.stderr)
    sys.exit(2)


def cache_root() -> str:
    """condbench's cache, absolute: a relative $CONDBENCH_AOTI_DIR is the working folder's now, before
    any module's code could change the working folder."""
    if os.environ.get("CONDBENCH_AOTI_DIR"):
        return os.path.abspath(os.environ["CONDBENCH_AOTI_DIR"])
    base = os.environ.get("XDG_CACHE_HOME") or os.path.join(os.path.expanduser("~"), ".cache")
    return os.path.abspath(os.path.join(base, "condbench", "aoti"))


def config_key(config: Mapping[str, Any]) -> str:
    """The folder condbench reads a --config's packages from: its ModelConfig::tag (the family, each
    size in the order given, which for --config must be the family's, as condbench's messages print
    them, then classes and depth) or a decoder's DecoderConfig::step_tag. Held to C++'s names of the
    built-in models (rules.json's config_tags; tests/python/test_package.py); an exported workload
    carries its tag as data instead."""
    sizes = "".join(f"-{k}{v}" for k, v in config.items() if k not in ("family", "num_classes", "blocks"))
    if config.get("family") == DECODER:
        return f"{DECODER}{sizes}"
    return f"{config.get('family', 'mlp')}{sizes}-c{config['num_classes']}-b{config['blocks']}"


def source_digest(config: Mapping[str, Any]) -> str:
    """What made a package: this file, the modules it exports and the rules they apply (rules.json,
    C++'s: a changed exit test is another graph)."""
    digest = hashlib.sha256()
    made_by = ("decoder.py", "deployed.py") if config.get("family") == DECODER else \
        ("families.py", "model.py", "deployed.py")
    for name in ("aoti.py", "rules.py", "rules.json") + made_by:
        with open(os.path.join(HERE, name), "rb") as f:
            digest.update(f.read())
    return digest.hexdigest()[:16]


def parse_config(text: str) -> dict[str, Any]:
    """FAMILY:SIZE=N,...: every size of the family in its order, each from 1 to the most C++ accepts
    (rules.json's config_sizes: the order of the family's tag, which names the package's folder), the
    sizes related as C++ relates them (config_relations: heads dividing d_model, ...)."""
    family, _, given = text.partition(":")
    if family not in CONFIG_SIZES:
        fail(f"--config {text!r}: unknown model family {family!r} ({', '.join(CONFIG_SIZES)})")
    sizes = CONFIG_SIZES[family]
    config: dict[str, Any] = {"family": family}
    try:
        for item in given.split(","):
            key, _, value = item.partition("=")
            config[key] = int(value)
    except ValueError:
        config = {}
    if list(config)[1:] != [key for key, _ in sizes]:
        fail(f"--config {text!r}: want {family}:{','.join(f'{key}=N' for key, _ in sizes)}, each size an "
             "integer, in this order")
    for key, most in sizes:
        if not 1 <= config[key] <= most:
            fail(f"--config {text!r}: {key} must be in 1..{most}")
    if refused := unbuildable(config):
        fail(f"--config {text!r}: {refused}")
    return config


def unbuildable(config: Mapping[str, Any]) -> str | None:
    """Why the package of `config` (its family, every size) must not be made, or None: a size C++
    refuses, sizes C++ does not relate so (config_relations), or a model over C++'s memory budget, its
    weights counted on the meta device and the rows its check runs (a decoder's step: one row over its
    whole cache). Asked before the module is made."""
    family = config.get("family", "mlp")
    try:
        broken = broken_size(family, config) or broken_relation(family, config)
    except KeyError as e:
        return f"no size {e} of the {family} family"
    return broken or over_memory_budget(family, config, 1 if family == DECODER else CHECK_ROWS,
                                        module_floats(lambda: placeholder_model(config)))


def placeholder_model(config: Mapping[str, Any]) -> "nn.Module":
    """The module whose weights a package of `config` holds as placeholders: the family's twin, or the
    decoder (condbench loads the model's own weights over them)."""
    if config.get("family") == DECODER:
        from .decoder import Decoder
        return Decoder(*(config[k] for k in ("vocab", "d_model", "layers", "ffn", "context")))
    from .families import build_model
    return build_model(config)


def workload_configs(root: str) -> list[tuple[dict[str, Any], str]]:
    """[(config, directory name)] of the built-in families' models and decoders in an exported
    workload, the name condbench's own (its "tag": the sizes in the family's order, which the JSON
    object's keys do not keep). A model file's packages are compiled with it (model_file.py
    compile): skipped here."""
    configs: list[tuple[dict[str, Any], str]] = []
    model_files = 0
    for name in sorted(os.listdir(root)) if os.path.isdir(root) else []:
        meta = os.path.join(root, name, "workload.json")
        if os.path.lexists(meta):
            try:
                with open_regular(meta, "r") as f:
                    workload = json.load(f)
            except (OSError, ValueError) as e:
                fail(f"{meta}: not a workload condbench --export-workload wrote ({type(e).__name__})")
            try:
                if "model_file" in workload:
                    model_files += 1  # compiled elsewhere
                    continue
                if workload["config"].get("family") == DECODER:  # its sizes in condbench's order
                    config = {"family": DECODER, **{k: workload["config"][k] for k in DECODER_SIZES}}
                    found = (config, workload.get("step_tag") or config_key(config))  # (older exports: none)
                else:
                    found = (workload["config"], workload.get("tag") or config_key(workload["config"]))
                refused = unbuildable(found[0])
            except (KeyError, TypeError, AttributeError) as e:
                refused = f"not a workload condbench --export-workload wrote ({type(e).__name__}: {e})"
            if refused:
                fail(f"{meta}: {refused}")
            configs.append(found)
    if not configs and not model_files:
        fail(f"{root}: no exported workload (condbench --export-workload={root} writes one)")
    return configs


def built_in_program(module_name: str, config: Mapping[str, Any], device: str) -> Exported:
    """(exported program, check) of the built-in route's `module_name` for `config` on `device`, its
    weights placeholders (condbench loads the model's own); (why, None) where it cannot be exported."""
    import torch

    torch.manual_seed(0)
    if config.get("family") == DECODER:
        from .deployed import DecodeStep
        try:
            return step_program(DecodeStep.of(config, module_name, device))
        except (KeyboardInterrupt, MemoryError):
            raise
        except Exception as e:
            return f"torch.export cannot trace the decoder's {module_name} step ({first_line(e)})", None
    from .families import build_model
    model = build_model(config).to(device).eval()
    x = torch.randn(CHECK_ROWS, *model.row_shape, device=device)
    return whole_model_programs(model, x, "random example", (module_name,))[module_name]


def cached(meta_path: str, digest: str, version: str) -> dict[str, Any] | None:
    """The record beside a package the cache holds, if the same code and torch made it."""
    try:
        with open(meta_path) as f:
            meta = json.load(f)
    except (OSError, ValueError):
        return None
    ok = isinstance(meta, dict) and os.path.isfile(meta_path[:-5] + ".pt2") and \
        meta.get("source_digest") == digest and meta.get("torch_version") == version
    return meta if ok else None


class Job(NamedTuple):
    """One package of the built-in route, exported and waiting for its compile and check."""
    label: str        # "cpu mlp-in_features32-hidden64-c10-b3 cond", for what is printed
    directory: str    # its configuration's folder in the cache
    module: str       # cond or masked
    config: dict[str, Any]
    digest: str       # source_digest(config), for its record
    program: "ExportedProgram"
    check: Check      # how build checks the package
    export_s: float

    @property
    def temp(self) -> str:
        """Where it is compiled, renamed into place once checked."""
        return os.path.join(self.directory, f"{self.module}.tmp{os.getpid()}.pt2")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    source = parser.add_mutually_exclusive_group(required=True)
    source.add_argument("--workload", help="every model of a directory condbench --export-workload wrote")
    source.add_argument("--config", action="append",
                        help="FAMILY:SIZE=N,...,num_classes=N,blocks=N, e.g. mlp:in_features=32,hidden=64,num_classes=10,"
                             "blocks=3 (repeatable)")
    parser.add_argument("--device", default="cpu", choices=["cpu", "cuda"])
    parser.add_argument("--modules", default=",".join(MODULES), help="comma-separated: cond, masked")
    parser.add_argument("--cache", default=None, help="the cache (default: condbench's, see above)")
    parser.add_argument("--force", action="store_true", help="compile even what the cache holds")
    parser.add_argument("--jobs", type=int, default=min(os.cpu_count() or 1, 8),
                        help="packages compiled at once, each in a process of its own (default: the cores, at "
                             "most 8; 1: one after another, in this process)")
    args = parser.parse_args()
    modules = [m for m in args.modules.split(",") if m]
    if not modules or any(m not in MODULES for m in modules):
        fail(f"--modules {args.modules!r}: a comma-separated list of {', '.join(MODULES)}")
    if not 1 <= args.jobs <= 64:
        fail(f"--jobs {args.jobs}: not in 1..64")
    configs = workload_configs(args.workload) if args.workload else \
        [(config, config_key(config)) for config in map(parse_config, args.config)]

    logging.getLogger("torch.utils.cpp_extension").setLevel(logging.ERROR)  # "No CUDA runtime is found": moot here
    import torch

    from .deployed import options_text
    if args.device == "cuda" and not torch.cuda.is_available():
        fail("--device=cuda: no CUDA device here (AOTInductor compiles CUDA code on a GPU)")
    version = torch.__version__.split("+")[0]
    root = os.path.join(args.cache or cache_root(), f"torch-{version}", args.device)
    # Exported first, every package that is not cached; then compiled side by side; then each checked,
    # in order (one the workers did not compile is compiled then, where a failure is named).
    todo: list[Job] = []
    try:
        for config, key in configs:
            digest = source_digest(config)
            directory = os.path.join(root, key)
            os.makedirs(directory, exist_ok=True)
            for module_name in modules:
                label = f"{args.device} {key} {module_name}"
                meta = None if args.force else cached(os.path.join(directory, f"{module_name}.json"), digest, version)
                if meta:
                    print(f"aoti: {label}: cached (compiled in {meta.get('compile_s')} s)", flush=True)
                    continue
                print(f"aoti: {label}: exporting ...", flush=True)
                started = time.perf_counter()
                program, check = built_in_program(module_name, config, args.device)
                if check is None:
                    fail(f"{label}: {program}")
                todo.append(Job(label, directory, module_name, config, digest, cast("ExportedProgram", program), check,
                                time.perf_counter() - started))
        if todo:
            print(f"aoti: compiling {len(todo)} package{'s' if len(todo) > 1 else ''}, "
                  f"{min(args.jobs, len(todo))} at once ...", flush=True)
        compiled = compile_side_by_side([(job.temp, job.program, BUILT_IN_OPTIONS) for job in todo], args.jobs)
        for job in todo:
            result = build(job.program, job.temp, job.check, f"{job.module} module", BUILT_IN_OPTIONS)
            if "unavailable" in result:
                fail(f"{job.label}: {result['unavailable']}")
            os.replace(job.temp, os.path.join(job.directory, f"{job.module}.pt2"))
            meta = {"torch_version": version, "device": args.device, "config": job.config, "module": job.module,
                    "source_digest": job.digest, "export_s": round(job.export_s, 2),
                    "compile_s": round(compiled.get(job.temp, result["compile_s"]), 2),
                    "options": "default but " + options_text(BUILT_IN_OPTIONS),
                    "checked": f"against the module, within {COMPILE_CHECK['absolute_tolerance']} + "
                               f"{COMPILE_CHECK['relative_tolerance']} x |value|"}
            write_whole(os.path.join(job.directory, f"{job.module}.json"), meta)  # only beside a whole package
            print(f"aoti: {job.label}: exported in {meta['export_s']} s, compiled in {meta['compile_s']} s, checked "
                  f"-> {os.path.join(job.directory, job.module + '.pt2')}", flush=True)
    finally:  # stopped or refused half way: no half-made package stays in the cache
        for job in todo:
            for leftover in (job.temp, job.temp + ".exported"):
                with contextlib.suppress(OSError):
                    os.remove(leftover)


def write_whole(path: str, value: object) -> None:
    """`value` as JSON at `path`, written beside it and renamed into place: whole or absent."""
    temp = f"{path}.tmp{os.getpid()}"
    with open(temp, "w") as f:
        json.dump(value, f, indent=1)
    os.replace(temp, path)


if __name__ == "__main__":
    main()
