#!/usr/bin/env python3
"""AOTInductor packages for condbench's engine aoti: the peer's nested torch.cond (DeployedCond) and
its torch.where masking (DeployedMasked), exported with torch.export and compiled with
torch._inductor.aoti_compile_and_package (default options but one, below), one package per model configuration,
device and module. condbench loads them with torch::inductor::AOTIModelPackageLoader and swaps in
the model's own weights (load_constants), so a package serves any weights of its configuration.

Packages are cached by torch version, device and configuration (ModelConfig::tag in condbench):
  <cache>/torch-<version>/<device>/<family>-<size><value>...-c<classes>-b<blocks>/<module>.pt2
  e.g. mlp-in_features32-hidden64-c10-b3, transformer-d_model256-heads4-ffn1024-seq32-c10-b6
beside <module>.json: the torch version, the export and compile seconds, the options, and a
digest of the code that made it (a package made by other code is compiled again). The cache is
$CONDBENCH_AOTI_DIR, else $XDG_CACHE_HOME/condbench/aoti, else ~/.cache/condbench/aoti: the place
condbench looks too.

usage: aoti_compile.py (--workload DIR | --config FAMILY:SIZE=N,...,num_classes=N,blocks=N ...)
                       [--device cpu|cuda] [--modules cond,masked] [--cache DIR] [--force]
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

HERE = os.path.dirname(os.path.abspath(__file__))
MODULES = ("cond", "masked")
# AOTInductor's defaults but one: inductor writes parameters of at most 8 elements (a small
# head's bias) into the generated code as literals, where condbench could not replace them with
# the model's; keeping every parameter a constant changes no arithmetic.
INDUCTOR_CONFIGS = {"always_keep_tensor_constants": True}


def fail(message):
    print(f"aoti_compile: {message}", file=sys.stderr)
    sys.exit(2)


def cache_root():
    if os.environ.get("CONDBENCH_AOTI_DIR"):
        return os.environ["CONDBENCH_AOTI_DIR"]
    base = os.environ.get("XDG_CACHE_HOME") or os.path.join(os.path.expanduser("~"), ".cache")
    return os.path.join(base, "condbench", "aoti")


def config_key(config):
    """condbench's ModelConfig::tag: the family, each size in the order given (--config: the family's,
    as condbench's messages print it), classes and depth."""
    sizes = "".join(f"-{k}{v}" for k, v in config.items() if k not in ("family", "num_classes", "blocks"))
    return f"{config.get('family', 'mlp')}{sizes}-c{config['num_classes']}-b{config['blocks']}"


def source_digest():
    """What made a package: this file and the modules it exports."""
    digest = hashlib.sha256()
    for name in ("aoti_compile.py", "early_exit.py"):
        with open(os.path.join(HERE, name), "rb") as f:
            digest.update(f.read())
    return digest.hexdigest()[:16]


def parse_config(text):
    """FAMILY:SIZE=N,...: the sizes in the family's order, as condbench's error messages print them."""
    family, _, sizes = text.partition(":")
    config = {"family": family}
    try:
        for item in sizes.split(","):
            key, _, value = item.partition("=")
            config[key] = int(value)
        values = [v for k, v in config.items() if k != "family"]
        if not key or min(values) < 1 or max(values) > 1 << 16 or "num_classes" not in config or "blocks" not in config:
            raise ValueError
    except ValueError:
        fail(f"--config {text!r}: want FAMILY:SIZE=N,...,num_classes=N,blocks=N with integers from 1 to 65536, e.g. "
             "mlp:in_features=32,hidden=64,num_classes=10,blocks=3")
    sys.path.insert(0, HERE)
    from early_exit import build_model
    try:
        build_model(config)  # the family's own checks: its sizes' names, heads dividing d_model, ...
    except (TypeError, ValueError, AssertionError) as e:
        fail(f"--config {text!r}: {type(e).__name__}: {str(e).strip().splitlines()[0] if str(e).strip() else ''}")
    return config


def workload_configs(root):
    """[(config, directory name)] of the built-in families' models in an exported workload, the name
    condbench's own (its "tag": the sizes in the family's order, which the JSON object's keys do not
    keep). A model file's packages are compiled with it (model_file.py compile), and the decoder has
    none yet: both skipped here."""
    configs, model_files = [], 0
    for name in sorted(os.listdir(root)) if os.path.isdir(root) else []:
        meta = os.path.join(root, name, "workload.json")
        if os.path.isfile(meta):
            with open(meta) as f:
                workload = json.load(f)
            if "model_file" in workload or workload["config"].get("family") == "decoder":
                model_files += 1  # compiled elsewhere, or (the decoder: docs/design.md §8) not yet
            else:
                configs.append((workload["config"], workload.get("tag") or config_key(workload["config"])))
    if not configs and not model_files:
        fail(f"{root}: no exported workload (condbench --export-workload={root} writes one)")
    return configs


def export(torch, module_name, config, device):
    """The exported program of `module_name` for `config`, with example inputs on `device`."""
    sys.path.insert(0, HERE)
    from early_exit import DeployedCond, DeployedMasked, build_model
    torch.manual_seed(0)  # the weights are placeholders: condbench loads the model's own
    model = build_model(config)
    for p in model.parameters():
        p.requires_grad_(False)  # torch.export of torch.cond: frozen parameters, no no_grad region
    model = model.to(device).eval()
    thresholds = torch.zeros(config["blocks"], device=device)
    if module_name == "cond":
        example = (torch.zeros(1, *model.row_shape, device=device), thresholds)
        return torch.export.export(DeployedCond(model), example)
    rows = torch.export.Dim("batch", min=1, max=1 << 20)  # masked serves any batch
    example = (torch.zeros(2, *model.row_shape, device=device), thresholds)
    return torch.export.export(DeployedMasked(model), example, dynamic_shapes=({0: rows}, None))


def compile_package(torch, module_name, config, device, directory, digest):
    started = time.perf_counter()
    program = export(torch, module_name, config, device)
    exported = time.perf_counter()
    temp = os.path.join(directory, f"{module_name}.tmp{os.getpid()}.pt2")
    logging.getLogger("torch").setLevel(logging.ERROR)
    with contextlib.redirect_stdout(io.StringIO()):
        torch._inductor.aoti_compile_and_package(program, package_path=temp, inductor_configs=INDUCTOR_CONFIGS)
    compiled = time.perf_counter()
    os.replace(temp, os.path.join(directory, f"{module_name}.pt2"))
    meta = {"torch_version": torch.__version__.split("+")[0], "device": device, "config": config,
            "module": module_name, "source_digest": digest, "export_s": round(exported - started, 2),
            "compile_s": round(compiled - exported, 2),
            "options": "default but " + ", ".join(f"{k}={v}" for k, v in INDUCTOR_CONFIGS.items())}
    temp = os.path.join(directory, f"{module_name}.tmp{os.getpid()}.json")
    with open(temp, "w") as f:
        json.dump(meta, f, indent=1)
    os.replace(temp, os.path.join(directory, f"{module_name}.json"))  # present only beside a whole package
    return meta


def main():
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
    args = parser.parse_args()
    modules = [m for m in args.modules.split(",") if m]
    if not modules or any(m not in MODULES for m in modules):
        fail(f"--modules {args.modules!r}: a comma-separated list of {', '.join(MODULES)}")
    configs = workload_configs(args.workload) if args.workload else \
        [(config, config_key(config)) for config in map(parse_config, args.config)]

    logging.getLogger("torch.utils.cpp_extension").setLevel(logging.ERROR)  # "No CUDA runtime is found": moot here
    import torch
    if args.device == "cuda" and not torch.cuda.is_available():
        fail("--device=cuda: no CUDA device here (AOTInductor compiles CUDA code on a GPU)")
    version = torch.__version__.split("+")[0]
    root = os.path.join(args.cache or cache_root(), f"torch-{version}", args.device)
    digest = source_digest()
    for config, key in configs:
        directory = os.path.join(root, key)
        os.makedirs(directory, exist_ok=True)
        for module_name in modules:
            label = f"{args.device} {key} {module_name}"
            meta_path = os.path.join(directory, f"{module_name}.json")
            if not args.force and os.path.isfile(meta_path) and os.path.isfile(meta_path[:-5] + ".pt2"):
                try:
                    with open(meta_path) as f:
                        meta = json.load(f)
                except (OSError, ValueError):
                    meta = {}
                if meta.get("source_digest") == digest and meta.get("torch_version") == version:
                    print(f"aoti: {label}: cached (compiled in {meta.get('compile_s')} s)", flush=True)
                    continue
            print(f"aoti: {label}: exporting and compiling ...", flush=True)
            try:
                meta = compile_package(torch, module_name, config, args.device, directory, digest)
            except Exception as e:  # noqa: BLE001 -- one line for whatever export or inductor raised
                first = (str(e).strip().splitlines() or [type(e).__name__])[0]
                fail(f"{label}: {type(e).__name__}: {first}")
            print(f"aoti: {label}: exported in {meta['export_s']} s, compiled in {meta['compile_s']} s "
                  f"-> {os.path.join(directory, module_name + '.pt2')}", flush=True)


if __name__ == "__main__":
    main()
