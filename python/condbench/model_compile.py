"""A model file's compile (docs/your-model.md), for condbench.model_file's check and compile: each
part exported (the batch dynamic) and costed, the manifest, and the compiled folder in condbench's
cache, on condbench.inductor's one path (export, compile, check): every part and the aoti engine's
whole-model modules compiled with AOTInductor and checked against the module's own output, the
folder whole or absent, reused while the file, the weights, torch, the files the module read and
the state_dict model() makes are what they were."""
import json
import math
import os
import shutil
import sys
from typing import TYPE_CHECKING, Any, Iterable, Mapping, Sequence, cast

from . import inductor
from .errors import first_line
from .model_source import (FORMAT, CompiledManifest, ModelFile, ProtocolError, changed_reads, digest, early_exit_view,
                           file_digest, read_manifest, shape_text)

if TYPE_CHECKING:
    import torch
    from torch import nn
    from torch.export import ExportedProgram

    from .model import EarlyExitModel, ModelFileModule

# A part's exported program, with the input and output it was checked on: (name, program, input, output)
Program = tuple[str, "ExportedProgram", "torch.Tensor", "torch.Tensor"]
# manifest.json as this module writes it and reads it back (its keys: docs/your-model.md, condbench's
# model_file.h)
Manifest = dict[str, Any]


def export_part(model_file: ModelFile, name: str, part: "nn.Module", example: "torch.Tensor") -> "ExportedProgram":
    """torch.export of one part of the model file's module, the batch dynamic (condbench.inductor's export)."""
    try:
        return inductor.export(part, (example,), ({0: inductor.rows_dim()},))
    except (KeyboardInterrupt, MemoryError):
        raise
    except Exception as e:
        raise ProtocolError(f"{model_file.path}: {name}: torch.export cannot trace it ({first_line(e)}); an if on a "
                            "tensor's value or a loop over its rows cannot be exported: write it with "
                            "torch.where or torch.cond") from None


def costs(part: "nn.Module", example: "torch.Tensor") -> tuple[int, int]:
    """FLOPs per row (torch.utils.flop_counter, on one row) and bytes of the part's parameters and buffers."""
    import torch
    from torch.utils.flop_counter import FlopCounterMode

    with torch.no_grad(), FlopCounterMode(display=False) as counter:
        part(example[:1])
    tensors = list(part.parameters()) + list(part.buffers())
    return counter.get_total_flops(), sum(t.numel() * t.element_size() for t in tensors)


def manifest(model_file: ModelFile, weights: str | None, batch: int, programs: list[Program] | None = None) -> Manifest:
    """What condbench needs to know of the model, checked and exported part by part; each part's
    exported program, input and output appended to `programs` when given."""
    traced, classes = model_file.trace(batch)
    parts: list[dict[str, Any]] = []
    for name, part, x, out in traced:
        program = export_part(model_file, name, part, x)
        if programs is not None:
            programs.append((name, program, x, out))
        flops, size = costs(part, x)
        parts.append({"name": name, "input": ["rows", *x.shape[1:]], "output": ["rows", *out.shape[1:]],
                      "flops_per_row": flops, "bytes": size})
    return {"file": os.path.basename(model_file.path), "digest": digest(model_file.path, weights, model_file.device),
            "input": input_record(model_file),
            "stages": len(model_file.module.stages), "classes": classes,
            "confidence": "confidence()" if model_file.custom_confidence else "max softmax", "parts": parts}


def input_record(model_file: ModelFile, pool: "torch.Tensor | None" = None) -> dict[str, Any]:
    """The manifest's "input": its dtype, each input's row and (ids) limit, and pool.pt's name."""
    integer = model_file.inputs["integer"]
    limits = model_file.limits(model_file.pool() if pool is None and integer else pool)
    return {"dtype": "int64" if integer else "float32",
            "inputs": [{"row": ["rows", *row], "below": limit}
                       for row, limit in zip(model_file.inputs["rows"], limits)],
            "pool": "pool.pt" if integer else None}


def within_limits(model_file: ModelFile, batch: int, max_row_values: int | None, max_stages: int | None,
                  max_classes: int | None = None) -> None:
    """Refuses a model condbench could not read or run (the limits are condbench's, given as flags),
    before anything is exported or compiled."""
    stages = len(model_file.module.stages)
    if max_stages is not None and stages > max_stages:
        raise ProtocolError(f"{model_file.path}: model().stages: {stages} stages, more than the {max_stages} "
                            "condbench reads")
    if max_row_values is None and max_classes is None:
        return
    traced, classes = model_file.trace(batch)
    if max_classes is not None and classes > max_classes:
        raise ProtocolError(f"{model_file.path}: the heads give {classes} classes, more than the {max_classes} "
                            "condbench reads")
    if max_row_values is None:
        return
    for name, _, x, out in traced:
        for what, t in (("input", x), ("output", out)):
            values = math.prod(t.shape[1:])
            if values > max_row_values:
                raise ProtocolError(f"{model_file.path}: {name}: its {what} row holds {values} values, more than "
                                    f"the {max_row_values} condbench can run (a smaller input or a narrower part)")


def package_name(part: str) -> str:
    """stages[2] -> stage2.pt2, exits[2] -> exit2.pt2, final -> final.pt2, confidence -> confidence.pt2"""
    return part.replace("stages[", "stage").replace("exits[", "exit").rstrip("]") + ".pt2"


REFERENCE_ROWS = 64  # rows of the module's own forward kept beside the packages, for condbench's check


def confidence_module(module: "ModelFileModule") -> "nn.Module":
    """The module's confidence(logits) as a module of its own, for torch.export (the parameters it
    reads, if any, become the program's constants)."""
    from torch import nn

    class Confidence(nn.Module):
        def forward(self, logits: "torch.Tensor") -> "torch.Tensor":
            return module.confidence(logits)

    return Confidence()


def reference(model_file: ModelFile, view: "EarlyExitModel") -> dict[str, "torch.Tensor"]:
    """The module's own forward (through its early-exit `view`) on example_input(REFERENCE_ROWS): the
    input, every head's logits (logits.0 .. logits.<stages>, the last the final head's) and every
    exit's score (confidence.0 ..), what condbench checks each strategy against before timing it."""
    import torch

    x = model_file.input(REFERENCE_ROWS)
    out: dict[str, torch.Tensor] = {"input": x}
    with torch.no_grad():
        h = x
        for k in range(view.blocks):
            h = view.block(k, h)
            logits = view.head(k)(h)
            out[f"logits.{k}"] = logits
            out[f"confidence.{k}"] = view.confidence(logits)
            if not ((out[f"confidence.{k}"] > 0) & (out[f"confidence.{k}"] <= 1)).all():
                raise ProtocolError(f"{model_file.path}: confidence(): scores outside (0, 1] on "
                                    f"example_input({REFERENCE_ROWS}) at exits[{k}]; the exit rule's score must be in "
                                    "(0, 1], as the largest softmax probability is")
        out[f"logits.{view.blocks}"] = view.final(h)
    return {k: (v if k == "input" else v.float()).detach().cpu().contiguous() for k, v in out.items()}


def part_check(x: "torch.Tensor", out: "torch.Tensor", batch: int) -> inductor.Check:
    """A part's package against the part: its output on example_input(batch) (condbench.inductor.build's Check)."""
    def judge(outs: Sequence["torch.Tensor"]) -> str | None:
        got = outs[0]
        if inductor.close(got, out):
            return None
        if got.shape != out.shape:
            return f"returns {shape_text(got)} where the module returns {shape_text(out)} on example_input({batch})"
        return f"differs from the module by {(got - out).abs().max().item():.3g} on example_input({batch})"

    return inductor.Check([(x,)], judge)


def damaged(folder: str, files: Mapping[str, str]) -> list[str]:
    """The files of a compiled folder that are missing or not as compiled (its manifest's "files"),
    or ["manifest.json"] where it lists none."""
    if not files:
        return ["manifest.json"]
    bad: list[str] = []
    for name, sha256 in files.items():
        path = os.path.join(folder, name)
        try:
            if os.path.dirname(name) or os.path.islink(path) or file_digest(path) != sha256:
                bad.append(name)
        except OSError:
            bad.append(name)
    return bad


def read_now(paths: Iterable[str]) -> list[dict[str, str]]:
    """What a load of the file read, as a folder records it: [{"path": real path, "sha256": ...}]."""
    return [{"path": p, "sha256": file_digest(p)} for p in sorted(paths)]


def compiled_folder(path: str, weights: str | None, device: str, cache: str, state: str | None = None,
                    reads: Iterable[str] | None = None) -> str | None:
    """The folder the file and weights were compiled into for `device` before, found by the digest
    of their real paths and bytes, or None: also None where the folder's record of what its
    module read (a module it imports, weights model() loads) is not what this load read (`reads`,
    given: the file was loaded) or has changed since, where the module's state_dict now has another
    digest than `state` (the weights model() makes or fetches are not all read from files), where it
    names another file or weights than these, or where the folder is damaged; the stale folder is
    then removed, so that it is compiled again. A folder is never rewritten: a read-only cache
    serves it."""
    try:
        folder = os.path.join(cache, "models", f"{digest(path, weights, device)}-{device}")
    except OSError:
        return None  # a file or weights that cannot be read: ModelFile says so
    if not os.path.lexists(os.path.join(folder, "manifest.json")):
        return None
    try:
        m: CompiledManifest | None = read_manifest(folder)
    except ProtocolError:
        m = None
    source, weights_source = os.path.realpath(path), weights and os.path.realpath(weights)
    if m is None:
        why = "its manifest.json is unreadable"
    elif m.reads is None or m.files is None:
        why = "an older model_file.py made it, without a record of its files and of what the module read"
    elif (m.source, m.weights) != (source, weights_source):
        why = f"it was compiled from {m.source!r} (weights {m.weights!r})"
    elif stale := changed_reads(m.reads):
        why = f"{', '.join(stale)}, which the module read, changed since it was compiled"
    elif reads is not None and list(m.reads) != [(r["path"], r["sha256"]) for r in read_now(reads)]:
        why = "the module read other files when it was compiled than it reads now"
    elif state is not None and m.state_dict != state:
        why = "model() makes other weights than it was compiled with" if m.state_dict is not None else \
            "an older model_file.py made it, without a digest of model()'s weights"
    elif broken := damaged(folder, m.files):
        why = f"{', '.join(broken[:3])} {'is' if len(broken) == 1 else 'are'} missing or not as compiled"
    else:
        why = None
    if why:
        print(f"model_file: {path}: compiling it again: {folder}: {why}", file=sys.stderr)
        aside = f"{folder}.stale-{os.getpid()}"
        try:
            os.rename(folder, aside)
        except OSError:
            pass  # another process moved it first
        shutil.rmtree(aside, ignore_errors=True)
        return None
    return folder


def remove_abandoned(models: str) -> None:
    """Removes the half-built folders (NAME.tmp-PID) of compiles whose process is gone: killed before
    its own cleanup could run. A folder of a compile still running is left to it."""
    for name in os.listdir(models):
        base, _, pid = name.rpartition(".tmp-")
        if not base or not pid.isdigit():
            continue
        try:
            os.kill(int(pid), 0)
            continue  # alive (or another user's process): not ours to remove
        except ProcessLookupError:
            shutil.rmtree(os.path.join(models, name), ignore_errors=True)
        except (PermissionError, OverflowError, OSError):
            continue


def compile_parts(model_file: ModelFile, weights: str | None, batch: int, cache: str, jobs: int = 1) -> str:
    """Each part compiled with AOTInductor for the model file's device into <cache>/models/<digest>-<device>/,
    with manifest.json beside the packages, through condbench.inductor's path (exported, compiled side by
    side, each package loaded back and checked against the module's own output), and the aoti
    engine's whole-model modules generated from the stages; built in a temporary folder, then renamed
    into place, so the folder is either whole or absent. A folder already there is the same file,
    weights and torch: it is used as it is, nothing exported or compiled. Returns the folder."""
    import torch

    from .deployed import COND_LAYOUT_WORKAROUND

    source, weights_path = os.path.realpath(model_file.path), weights and os.path.realpath(weights)
    final = compiled_folder(model_file.path, weights, model_file.device, cache, model_file.state, model_file.reads)
    if final:
        return final
    final = os.path.join(cache, "models", f"{digest(model_file.path, weights, model_file.device)}-{model_file.device}")
    programs: list[Program] = []
    m = manifest(model_file, weights, batch, programs)
    m["format"], m["device"], m["torch"] = FORMAT, model_file.device, torch.__version__.split("+")[0]  # as LibTorch says it
    m["confidence_package"] = None  # the default exit rule: condbench's own
    # where the module came from, for the Python peer, which runs the module itself (load_compiled)
    m["source"], m["weights"] = source, weights_path
    m["state_dict"] = model_file.state  # the weights it is compiled with, however model() made them
    if model_file.custom_confidence:  # the exit rule's score, compiled as one more part
        logits = programs[1][3]
        programs.append(("confidence", export_part(model_file, "confidence()", confidence_module(model_file.module), logits),
                         logits, model_file.module.confidence(logits).detach()))
    view = early_exit_view(model_file, m["classes"])
    whole = inductor.whole_model_programs(view, model_file.input(max(batch, inductor.CHECK_ROWS)))
    os.makedirs(os.path.dirname(final), exist_ok=True)
    remove_abandoned(os.path.dirname(final))
    temp = f"{final}.tmp-{os.getpid()}"
    shutil.rmtree(temp, ignore_errors=True)
    os.makedirs(temp)
    try:
        # Every package side by side where it can be (Inductor's defaults: the weights are the
        # module's); then each checked in order by inductor.build, which compiles one the workers did not
        parts = [(package_name(name), program, part_check(x, out, batch)) for name, program, x, out in programs]
        seconds = inductor.compile_side_by_side(
            [(os.path.join(temp, package), program, None) for package, program, _ in parts] +
            [(os.path.join(temp, f"{module}.pt2"), cast("ExportedProgram", program), None)  # a check: it exported
             for module, (program, check) in whole.items() if check is not None], jobs)
        seconds = {os.path.basename(path): s for path, s in seconds.items()}
        program: ExportedProgram | str  # a part's, then a whole-model module's: exported or why it is not
        check: inductor.Check | None
        for i, ((name, *_), (package, program, check)) in enumerate(zip(programs, parts)):
            built = inductor.build(program, os.path.join(temp, package), check, "part")
            if "unavailable" in built:
                raise ProtocolError(f"{model_file.path}: {name}: {built['unavailable']}")
            seconds.setdefault(package, built["compile_s"])
            if i < len(m["parts"]):
                m["parts"][i]["package"] = package
            else:
                m["confidence_package"] = package
        m["whole_model"] = {}
        for module, (program, check) in whole.items():
            # cond as a user compiles it; where its check fails, again with the workaround for
            # Inductor's torch.cond on channels_last buffers (models with convolutions), which
            # condbench then puts beside its timings
            built = inductor.build(program, os.path.join(temp, f"{module}.pt2"), check, f"{module} module",
                               fallback=COND_LAYOUT_WORKAROUND if module == "cond" else None)
            if "package" in built:
                seconds.setdefault(f"{module}.pt2", built["compile_s"])
                if "workaround" in built:
                    seconds[f"{module}.pt2 with {built['workaround']}"] = built["compile_s"]
            m["whole_model"][module] = {k: v for k, v in built.items() if k != "compile_s"}
        # what each package took to compile (in its worker, or here), for the record
        m["compile_s"] = {package: round(s, 1) for package, s in sorted(seconds.items())}
        with torch.no_grad():
            torch.save(reference(model_file, view), os.path.join(temp, "reference.pt"))
        m["reference"] = "reference.pt"
        if m["input"]["pool"]:  # token ids: condbench runs on the model's own rows
            torch.save({"input": model_file.pool()}, os.path.join(temp, m["input"]["pool"]))
        # what the folder is, and what it depends on beside the file and the weights (compiled_folder)
        m["files"] = {name: file_digest(os.path.join(temp, name)) for name in sorted(os.listdir(temp))}
        m["reads"] = read_now(model_file.reads)
        with open(os.path.join(temp, "manifest.json"), "w") as f:
            json.dump(m, f, indent=1)
        try:
            os.rename(temp, final)
        except OSError:
            if not os.path.isfile(os.path.join(final, "manifest.json")):
                raise  # not another process's whole folder: a real failure
    finally:
        shutil.rmtree(temp, ignore_errors=True)
    return final
