#!/usr/bin/env python3
"""AOTInductor packages for condbench's engine aoti: the peer's nested torch.cond (DeployedCond) and
its torch.where masking (DeployedMasked), and for the decoder one decode step of each (the peer's
py_cond and masked steps over a fixed-size cache, the cache an explicit input and output:
decoder_peer.DecodeStep), exported with torch.export and compiled with
torch._inductor.aoti_compile_and_package (default options but one, below), one package per model configuration,
device and module. condbench loads them with torch::inductor::AOTIModelPackageLoader and swaps in
the model's own weights (load_constants), so a package serves any weights of its configuration.

Packages are cached by torch version, device and configuration (ModelConfig::tag in condbench):
  <cache>/torch-<version>/<device>/<family>-<size><value>...-c<classes>-b<blocks>/<module>.pt2
  e.g. mlp-in_features32-hidden64-c10-b3, transformer-d_model256-heads4-ffn1024-seq32-c10-b6
  (a decoder's: decoder-vocab512-...-exit_every2, the sizes of its step: condbench's step_tag)
beside <module>.json: the torch version, the export and compile seconds, the options, and a
digest of the code that made it (a package made by other code is compiled again). The cache is
$CONDBENCH_AOTI_DIR, else $XDG_CACHE_HOME/condbench/aoti, else ~/.cache/condbench/aoti: the place
condbench looks too.

usage: python -m condbench.aoti (--workload DIR | --config FAMILY:SIZE=N,...,num_classes=N,blocks=N ...
                               | --config decoder:vocab=N,...,exit_every=N ...)
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
DECODER = "decoder"
# A decoder step's sizes as condbench names them (DecoderConfig's, in its order, without the prompt
# and the tokens generated, which do not change the step: docs/design.md §8).
DECODER_SIZES = ("vocab", "d_model", "heads", "layers", "ffn", "context", "exit_every")
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
    """The folder condbench reads a --config's packages from: its ModelConfig::tag (the family, each
    size in the order given, which for --config must be the family's, as condbench's messages print
    them, then classes and depth) or a decoder's DecoderConfig::step_tag. Held to C++'s names of the
    built-in models (rules.json's config_tags; tests/python/test_package.py); an exported workload
    carries its tag as data instead."""
    sizes = "".join(f"-{k}{v}" for k, v in config.items() if k not in ("family", "num_classes", "blocks"))
    if config.get("family") == DECODER:
        return f"{DECODER}{sizes}"
    return f"{config.get('family', 'mlp')}{sizes}-c{config['num_classes']}-b{config['blocks']}"


def source_digest(config):
    """What made a package: this file, the modules it exports and the rules they apply (rules.json,
    C++'s: a changed exit test is another graph)."""
    digest = hashlib.sha256()
    made_by = ("decoder.py", "decoder_peer.py") if config.get("family") == DECODER else \
        ("families.py", "model.py", "variants.py")
    for name in ("aoti.py", "rules.py", "rules.json") + made_by:
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
        whole = tuple(k for k in config if k != "family") == DECODER_SIZES if family == DECODER else \
            "num_classes" in config and "blocks" in config
        if not key or min(values) < 1 or max(values) > (1 << 18 if family == DECODER else 1 << 16) or not whole:
            raise ValueError
    except ValueError:
        fail(f"--config {text!r}: want FAMILY:SIZE=N,...,num_classes=N,blocks=N (or decoder:"
             f"{'=N,'.join(DECODER_SIZES)}=N) with integers from 1 to 65536 (a decoder's to 262144), e.g. "
             "mlp:in_features=32,hidden=64,num_classes=10,blocks=3")
    if family == DECODER:
        if config["d_model"] % config["heads"] or config["exit_every"] >= config["layers"]:
            fail(f"--config {text!r}: heads must divide d_model, and exit_every be below layers")
        return config
    from .families import build_model
    try:
        build_model(config)  # the family's own checks: its sizes' names, heads dividing d_model, ...
    except (TypeError, ValueError, AssertionError) as e:
        fail(f"--config {text!r}: {type(e).__name__}: {str(e).strip().splitlines()[0] if str(e).strip() else ''}")
    return config


def workload_configs(root):
    """[(config, directory name)] of the built-in families' models and decoders in an exported
    workload, the name condbench's own (its "tag": the sizes in the family's order, which the JSON
    object's keys do not keep). A model file's packages are compiled with it (model_file.py
    compile): skipped here."""
    configs, model_files = [], 0
    for name in sorted(os.listdir(root)) if os.path.isdir(root) else []:
        meta = os.path.join(root, name, "workload.json")
        if os.path.isfile(meta):
            with open(meta) as f:
                workload = json.load(f)
            if "model_file" in workload:
                model_files += 1  # compiled elsewhere
            elif workload["config"].get("family") == DECODER:  # its sizes in condbench's order
                config = {"family": DECODER, **{k: workload["config"][k] for k in DECODER_SIZES}}
                configs.append((config, workload.get("step_tag") or config_key(config)))  # (older exports: none)
            else:
                configs.append((workload["config"], workload.get("tag") or config_key(workload["config"])))
    if not configs and not model_files:
        fail(f"{root}: no exported workload (condbench --export-workload={root} writes one)")
    return configs


def export(torch, module_name, config, device):
    """The exported program of `module_name` for `config`, with example inputs on `device`."""
    if config.get("family") == DECODER:
        from . import decoder_peer
        torch.manual_seed(0)  # placeholders, as below
        step = decoder_peer.DecodeStep.of(config, module_name, device)
        return torch.export.export(step, step.example_inputs())
    from .families import build_model
    from .variants import DeployedCond, DeployedMasked
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
    for config, key in configs:
        digest = source_digest(config)
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
