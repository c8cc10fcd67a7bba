#!/usr/bin/env python3
"""The AOTInductor packages of the built-in families and decoders (condbench's engine aoti), made by
condbench.inductor's one path (export, compile, check): the packages of a model configuration,
compiled with placeholder weights that condbench replaces with the model's own
(torch::inductor::AOTIModelPackageLoader, load_constants), so a package serves any weights of its
configuration. They are cached by torch version, device and configuration (ModelConfig::tag in
condbench):
  <cache>/torch-<version>/<device>/<family>-<size><value>...-c<classes>-b<blocks>/<module>.pt2
  e.g. mlp-in_features32-hidden64-c10-b3, transformer-d_model256-heads4-ffn1024-seq32-c10-b6
  (a decoder's: decoder-vocab512-...-exit_every2, the sizes of its step: condbench's step_tag)
beside <module>.json: the torch version, the export and compile seconds, the options, and a
digest of the code that made it (a package made by other code is compiled again). The cache is
$CONDBENCH_AOTI_DIR, else $XDG_CACHE_HOME/condbench/aoti, else ~/.cache/condbench/aoti: the place
condbench looks too. A model file's packages are condbench.model_file's.

usage: python -m condbench.aoti (--workload DIR | --config FAMILY:SIZE=N,...,num_classes=N,blocks=N ...
                               | --config decoder:vocab=N,...,exit_every=N ...)
                              [--device cpu|cuda] [--modules cond,masked] [--cache DIR] [--force] [--jobs N]
"""
import argparse
import contextlib
import hashlib
import json
import logging
import os
import sys
import time
from typing import TYPE_CHECKING, Any, Mapping, NamedTuple, NoReturn, cast

from .errors import first_line
from .inductor import (CHECK_ROWS, MODULES, Check, Exported, build, cache_root, compile_side_by_side, step_program,
                       whole_model_programs)
from .regular_file import open_regular, workload_folders
from .results import write as write_json
from .rules import COMPILE_CHECK, RULES, broken_relation, broken_size, module_floats, over_memory_budget

if TYPE_CHECKING:
    from torch import nn
    from torch.export import ExportedProgram

HERE = os.path.dirname(os.path.abspath(__file__))
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


def fail(message: str) -> NoReturn:
    print(f"aoti: {message}", file=sys.stderr)
    sys.exit(2)



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
    """What made a package: this file, the path it takes (inductor.py), the modules it exports and the
    rules they apply (rules.json, C++'s: a changed exit test is another graph)."""
    digest = hashlib.sha256()
    made_by = ("decoder.py", "deployed.py") if config.get("family") == DECODER else \
        ("families.py", "model.py", "deployed.py")
    for name in ("aoti.py", "inductor.py", "rules.py", "rules.json") + made_by:
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
    for folder in workload_folders(root):
        meta = os.path.join(folder, "workload.json")
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
    parser = argparse.ArgumentParser(prog="python -m condbench.aoti", usage=argparse.SUPPRESS, description=__doc__,
                                     formatter_class=argparse.RawDescriptionHelpFormatter)
    source = parser.add_mutually_exclusive_group(required=True)
    source.add_argument("--workload", help="every model of a directory condbench --export-workload wrote")
    source.add_argument("--config", action="append",
                        help="FAMILY:SIZE=N,...,num_classes=N,blocks=N, e.g. mlp:in_features=32,hidden=64,num_classes=10,"
                             "blocks=3 (repeatable)")
    parser.add_argument("--device", default="cpu", choices=["cpu", "cuda"], help="what the packages run on")
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
            write_json(os.path.join(job.directory, f"{job.module}.json"), meta)  # only beside a whole package
            print(f"aoti: {job.label}: exported in {meta['export_s']} s, compiled in {meta['compile_s']} s, checked "
                  f"-> {os.path.join(job.directory, job.module + '.pt2')}", flush=True)
    finally:  # stopped or refused half way: no half-made package stays in the cache
        for job in todo:
            for leftover in (job.temp, job.temp + ".exported"):
                with contextlib.suppress(OSError):
                    os.remove(leftover)


if __name__ == "__main__":
    main()
