"""The user's early-exit module as a model file makes it (the protocol: docs/your-model.md, and
condbench.model_file's text): ModelFile loads the file, checks what each part returns and gives the
rows condbench carries; load_compiled gives back the module a compiled folder was made from, after
checking the folder's digest, which is what the Python peer runs. Nothing here exports or compiles
(condbench.model_file does), so the peer can load a model without the compiler."""
import contextlib
import functools
import hashlib
import json
import math
import os
import runpy
import sys
from dataclasses import dataclass, field
from types import ModuleType
from typing import (TYPE_CHECKING, Any, Callable, Iterable, Iterator, Mapping, Protocol, Sequence, TypedDict, TypeVar,
                    cast)

from .errors import first_line
from .regular_file import open_regular

if TYPE_CHECKING:
    import torch
    from torch import nn

    from .model import ModelFileModule, ModelFileView



class _Hash(Protocol):
    def update(self, data: bytes, /) -> None: ...


_H = TypeVar("_H", bound=_Hash)
_T = TypeVar("_T")

PROTOCOL = "docs/your-model.md"
# The format of a compiled folder (manifest.json and what it names), as condbench reads it (kModelFileFormat);
# in the digest. 6: the real paths in the digest, `source` and `weights` those paths, `reads` what the
# load that compiled it read; 7: the input's dtype, its inputs and their limits, pool.pt for ids
FORMAT = 7
POOL_ROWS = 1024  # an integer input's example rows kept as condbench's pool (kMinPoolRows)
POOL_SEED = 0x5eed  # torch's seed while example_input() makes them (kPoolSeed)
MAX_INPUTS = 8  # kModelFileMaxInputs


class ProtocolError(Exception):
    """A model file that does not follow the protocol: one line naming the file and the part."""


_recording: list[set[str]] = []  # the sets of files being recorded, innermost last
_hooked = False


def _audit(event: str, args: tuple[Any, ...]) -> None:
    if event == "open" and _recording and isinstance(args[0], (str, bytes)):
        mode = args[1] if isinstance(args[1], str) else "r"
        if not any(c in mode for c in "wax+"):
            _recording[-1].add(os.path.abspath(os.fsdecode(args[0])))


@contextlib.contextmanager
def files_read() -> Iterator[set[str]]:
    """The files opened for reading while the block runs (an audit hook, installed once)."""
    global _hooked
    if not _hooked:
        sys.addaudithook(_audit)
        _hooked = True
    seen: set[str] = set()
    _recording.append(seen)
    try:
        yield seen
    finally:
        _recording.remove(seen)


def _python_own() -> tuple[str, ...]:
    import site

    site_dirs = [p for p in sys.path if os.path.basename(p) in ("site-packages", "dist-packages")]  # .venv's .pth too
    roots = {sys.prefix, sys.base_prefix, sys.exec_prefix, *site.getsitepackages(), site.getusersitepackages(),
             *site_dirs, os.path.dirname(os.path.abspath(__file__))}  # and condbench's own Python
    return tuple(os.path.join(os.path.realpath(r), "") for r in roots if r) + ("/dev/", "/proc/", "/sys/")


def hash_file(h: _H, path: str) -> _H:
    """Feeds the file's bytes to the hash h, in chunks: a gigabyte of weights is not read into memory
    whole. A FIFO or a device is refused (NotRegularFile, an OSError), never waited on."""
    with open_regular(path) as f:
        for chunk in iter(lambda: f.read(1 << 20), b""):
            h.update(chunk)
    return h


def file_digest(path: str) -> str:
    return hash_file(hashlib.sha256(), path).hexdigest()


def state_digest(module: "nn.Module") -> str:
    """The digest of the module's state_dict: every name, dtype, shape and value. What a cached folder
    must have been compiled from, whatever made the weights (a file model() loads, a seed, a download)."""
    import torch

    h = hashlib.sha256()
    for name, value in sorted(module.state_dict().items()):
        h.update(name.encode() + b"\0")
        if isinstance(value, torch.Tensor):
            t = value.detach().to("cpu").contiguous()
            h.update(f"{t.dtype} {list(t.shape)}\0".encode())
            # numpy's stubs give ndarray the buffer protocol (__buffer__) on Python >= 3.12 only
            h.update(t.reshape(-1).view(torch.uint8).numpy())  # type: ignore[arg-type]
        else:  # a module's extra state
            h.update(repr(value).encode() + b"\0")
    return h.hexdigest()[:16]


def model_inputs(seen: Iterable[str], own: set[str]) -> list[str]:
    """Of the files a model file read while it loaded, the ones its folder depends on beside the file
    and --weights (`own`): a module it imports from beside it (its source, where Python read the
    cached bytecode), weights model() loads. Python's own files and its packages' are not."""
    ignore = _python_own()
    inputs: set[str] = set()
    for path in seen:
        head, name = os.path.split(path)
        if os.path.basename(head) == "__pycache__" and name.endswith(".pyc"):  # name.cpython-311.pyc
            path = os.path.join(os.path.dirname(head), name.split(".")[0] + ".py")
        real = os.path.realpath(path)
        if real.startswith(ignore) or real in own or not os.path.isfile(real):
            continue
        inputs.add(real)
    return sorted(inputs)


def shape_text(value: object) -> str:
    return "[" + ", ".join(str(d) for d in value.shape) + "]" if hasattr(value, "shape") else type(value).__name__


def _unpacked_class() -> type["nn.Module"]:
    from torch import nn

    class Unpacked(nn.Module):
        """The first stage of a model whose example_input() gives several tensors: condbench carries
        their rows packed into one row (ModelFile.input); this splits a packed row back into the
        tensors, in order, and calls the stage on them."""

        def __init__(self, stage: "nn.Module", rows: Iterable[Sequence[int]]) -> None:
            super().__init__()
            self.stage, self.rows = stage, [tuple(r) for r in rows]
            self.sizes = [int(math.prod(r)) for r in self.rows]

        def forward(self, packed: "torch.Tensor") -> "torch.Tensor":
            # torch's Tensor.split has no types
            parts = packed.split(self.sizes, dim=1)  # type: ignore[no-untyped-call]
            out: torch.Tensor = self.stage(*(p.reshape(p.shape[0], *r) for p, r in zip(parts, self.rows)))
            return out

    return Unpacked


class InputLayout(TypedDict):
    """What ModelFile reads of example_input(2): the kind of its tensors, each one's row shape, and
    each one's declared limit (model().input_limits, or its embedding's rows) or None."""
    integer: bool
    rows: list[tuple[int, ...]]
    declared: list[int | None]


# A part of the module as ModelFile.trace ran it: (name, module, input, output)
Traced = tuple[str, "nn.Module", "torch.Tensor", "torch.Tensor"]


class ModelFile:
    """The module a model file makes, with its example input and exit rule, checked part by part."""

    module: "ModelFileModule"  # the protocol's parts checked (_load)
    example_input: Callable[[int], Any]  # the user's: what it returns is checked where it is called
    custom_confidence: bool
    inputs: InputLayout

    def __init__(self, path: str, weights: str | None = None, device: str = "cpu") -> None:
        import torch
        from torch import nn

        self.path, self.device = path, device
        if device == "cuda" and not torch.cuda.is_available():
            raise ProtocolError(f"{path}: --device cuda: no CUDA device here (a model file is compiled for CUDA on "
                                "the machine with the GPU)")
        if not os.path.isfile(path):
            raise ProtocolError(f"{path}: no such file")
        with files_read() as seen:
            self._load(path, weights, device, torch, nn)
        own = {os.path.realpath(path)} | ({os.path.realpath(weights)} if weights else set())
        # what the compiled folder depends on beside the file and its weights (compiled_folder)
        self.reads = model_inputs(seen, own)

    def _load(self, path: str, weights: str | None, device: str, torch: ModuleType, nn: ModuleType) -> None:
        try:
            namespace = runpy.run_path(path, run_name="condbench_model_file")
        except (KeyboardInterrupt, MemoryError):
            raise
        except BaseException as e:  # noqa: B036 (a file may raise anything, SystemExit included)
            raise ProtocolError(f"{path}: does not load ({first_line(e)})") from None
        for name in ("model", "example_input"):
            if not callable(namespace.get(name)):
                raise ProtocolError(f"{path}: defines no {name}() (the protocol: {PROTOCOL})")
        self.example_input = namespace["example_input"]
        module = self.call("model()", namespace["model"])
        if not isinstance(module, nn.Module):
            raise ProtocolError(f"{path}: model(): returned a {type(module).__name__}, not an nn.Module")
        for part in ("stages", "exits"):
            if not isinstance(getattr(module, part, None), nn.ModuleList):
                raise ProtocolError(f"{path}: model().{part}: missing or not an nn.ModuleList ({PROTOCOL})")
        if len(module.stages) == 0:
            raise ProtocolError(f"{path}: model().stages: empty; an early-exit model has at least one stage")
        if len(module.exits) != len(module.stages):
            raise ProtocolError(f"{path}: model().exits: {len(module.exits)} heads for {len(module.stages)} stages; "
                                "one head per stage")
        if not isinstance(getattr(module, "final", None), nn.Module):
            raise ProtocolError(f"{path}: model().final: missing or not an nn.Module ({PROTOCOL})")
        if weights is None:
            # condbench, the peer and this check each call model(): they must get one model
            again = self.call("model()", namespace["model"]).state_dict()
            for key, value in module.state_dict().items():
                if key not in again or not torch.equal(value, again[key]):
                    raise ProtocolError(f"{path}: model(): makes other weights on each call ({key}); seed it "
                                        "(torch.manual_seed), load its weights, or give them with --weights")
        confidence = getattr(module, "confidence", None)
        if confidence is not None and not callable(confidence):
            raise ProtocolError(f"{path}: model().confidence: not callable")
        self.custom_confidence = confidence is not None
        if weights is not None:
            try:
                state = torch.load(weights, map_location="cpu", weights_only=True)
            except Exception as e:
                raise ProtocolError(f"{path}: --weights {weights}: not a state_dict torch.load reads "
                                    f"({first_line(e)})") from None
            if not isinstance(state, dict):
                raise ProtocolError(f"{path}: --weights {weights}: holds a {type(state).__name__}, not a state_dict")
            try:
                module.load_state_dict(state, strict=True)
            except Exception as e:
                raise ProtocolError(f"{path}: --weights {weights}: does not fit model() ({first_line(e)})") from None
        self.module = module.eval().to(device)
        self.inputs = self._input_layout()  # what example_input() reads is read here, recorded with the rest

    def _example(self, batch: int) -> list["torch.Tensor"]:
        """example_input(batch) as given, checked: a tuple of tensors of one kind (float or integer),
        each with the batch's rows in dimension 0."""
        import torch

        x = self.call(f"example_input({batch})", self.example_input, batch)
        tensors = x if isinstance(x, (tuple, list)) else (x,)
        what = f"{self.path}: example_input({batch})"
        if not 1 <= len(tensors) <= MAX_INPUTS:
            raise ProtocolError(f"{what}: returned {len(tensors)} tensors; 1 to {MAX_INPUTS}")
        for i, t in enumerate(tensors):
            which = f"input {i}" if len(tensors) > 1 else "returned"
            if not isinstance(t, torch.Tensor) or t.dim() < 1 or t.shape[0] != batch or t.dtype == torch.bool or \
                    t.is_complex():
                raise ProtocolError(f"{what}: {which} {shape_text(t)}"
                                    f"{'' if not isinstance(t, torch.Tensor) else ' ' + str(t.dtype)}, not a float or "
                                    f"integer tensor [{batch}, ...] (every input keeps the rows in dimension 0)")
        kinds = {t.is_floating_point() for t in tensors}
        if len(kinds) > 1:
            raise ProtocolError(f"{what}: mixes float and integer tensors ("
                                f"{', '.join(str(t.dtype) for t in tensors)}); condbench carries them in one row: give "
                                "them one kind (a mask as the ids' integers, or as the image's floats)")
        return [t.float() if t.is_floating_point() else t.long() for t in tensors]

    def _input_layout(self) -> InputLayout:
        """The inputs' rows, kind and limits, from example_input(2); where there are several, the
        first stage made to take them packed (Unpacked). Token ids are checked against the limit of
        the embedding that reads them before anything runs."""
        from torch import nn

        tensors = self._example(2)
        integer = not tensors[0].is_floating_point()
        embeddings = [m for m in self.module.stages[0].modules() if isinstance(m, nn.Embedding)]
        declared = getattr(self.module, "input_limits", None)
        if declared is not None and (not isinstance(declared, (tuple, list)) or len(declared) != len(tensors) or
                                     not all(b is None or (isinstance(b, int) and b >= 1) for b in declared)):
            raise ProtocolError(f"{self.path}: model().input_limits: not one limit (a positive int, or None) per "
                                f"input ({len(tensors)})")
        if embeddings and not integer:
            raise ProtocolError(f"{self.path}: example_input(2): input 0 is {tensors[0].dtype}, but stages[0] reads "
                                "an nn.Embedding: token ids are an integer tensor")
        limits: list[int | None] = []
        for i, t in enumerate(tensors):
            limit = declared[i] if declared is not None else None
            if limit is None and integer and i == 0 and embeddings:
                limit = embeddings[0].num_embeddings
            limits.append(limit)
            self._in_range(t, i, len(tensors), limit, "example_input(2)")
        if len(tensors) > 1:
            self.module.stages[0] = _unpacked_class()(self.module.stages[0], [t.shape[1:] for t in tensors])
        return {"integer": integer, "rows": [tuple(t.shape[1:]) for t in tensors], "declared": limits}

    def _in_range(self, t: "torch.Tensor", i: int, inputs: int, limit: int | None, where: str) -> None:
        """Refuses a negative integer, or one at or past `limit`, in input i: an embedding would read
        outside its table."""
        if t.is_floating_point() or t.numel() == 0:
            return
        low, high = int(t.min()), int(t.max())
        if low < 0 or (limit is not None and high >= limit):
            which = f"input {i}" if inputs > 1 else "the input"
            raise ProtocolError(f"{self.path}: {where}: {which} holds {low if low < 0 else high}, not in "
                                f"[0, {limit if limit is not None else '...'})"
                                + (" (the rows of the embedding that reads it)" if limit is not None else ""))

    def limits(self, pool: "torch.Tensor | None") -> list[int | None]:
        """Each integer input's limit: declared (input_limits) or its embedding's rows, else one above
        the largest value the example rows `pool` (packed) hold; every example value checked in range.
        Float inputs have none (`pool` None)."""
        if not self.inputs["integer"]:
            return [None] * len(self.inputs["rows"])
        pool = cast("torch.Tensor", pool)  # integer inputs: the caller gives their rows
        out: list[int | None] = []
        begin, inputs = 0, len(self.inputs["rows"])
        for i, (row, limit) in enumerate(zip(self.inputs["rows"], self.inputs["declared"])):
            values = pool.reshape(pool.shape[0], -1)[:, begin:begin + math.prod(row)]
            self._in_range(values, i, inputs, limit, f"example_input({pool.shape[0]})")
            out.append(limit if limit is not None else int(values.max()) + 1)
            begin += math.prod(row)
        return out

    def pool(self) -> "torch.Tensor":
        """POOL_ROWS example rows, packed, made under POOL_SEED: condbench's pool for an integer input."""
        import torch

        with torch.random.fork_rng(devices=[]):
            torch.manual_seed(POOL_SEED)
            return self.input(POOL_ROWS).cpu().contiguous()

    @functools.cached_property
    def state(self) -> str:
        """The digest of the module's weights (state_digest), as the folder compiled from it records."""
        return state_digest(self.module)

    def call(self, part: str, function: Callable[..., _T], *args: object) -> _T:
        try:
            return function(*args)
        except (KeyboardInterrupt, MemoryError):
            raise
        except Exception as e:
            raise ProtocolError(f"{self.path}: {part}: failed ({first_line(e)})") from None

    def input(self, batch: int) -> "torch.Tensor":
        """example_input(batch) as condbench carries it: one tensor [batch, ...], float32 or int64;
        several are packed into one [batch, values] row by row, in order (the first stage unpacks them)."""
        import torch

        tensors = self._example(batch)
        if hasattr(self, "inputs") and [tuple(t.shape[1:]) for t in tensors] != self.inputs["rows"]:
            raise ProtocolError(f"{self.path}: example_input({batch}): gives rows of other shapes than "
                                "example_input(2); every call must give the same rows")
        x = tensors[0] if len(tensors) == 1 else torch.cat([t.reshape(batch, -1) for t in tensors], 1)
        return x.to(self.device)

    def parts(self) -> Iterator[tuple[str, "nn.Module"]]:
        """(name, module) in the order an inference reaches them: stage k, then exit k; the final head."""
        for k, stage in enumerate(self.module.stages):
            yield f"stages[{k}]", stage
            yield f"exits[{k}]", self.module.exits[k]
        yield "final", self.module.final

    def trace(self, batch: int) -> tuple[list[Traced], int]:
        """Every part on example_input(batch), its output checked: [(name, module, input, output)].
        Each part runs twice: a forward that gives other values for the same input (randomness, a
        layer left in training mode) is named here, not later as a compile that disagrees with it."""
        import torch

        from .rules import COMPILE_CHECK as tolerance

        traced: list[Traced] = []
        h, classes = self.input(batch), None
        last_stage = None  # the stage whose output h is
        with torch.no_grad():
            for name, part in self.parts():
                is_stage = name.startswith("stages")
                source = f"the output of {last_stage}" if last_stage else "the input"
                out = self.call(f"{name} on {source} {shape_text(h)}", part, h)
                if not isinstance(out, torch.Tensor) or out.dim() < 1 or out.shape[0] != batch:
                    raise ProtocolError(f"{self.path}: {name}: returned {shape_text(out)} for {batch} rows; "
                                        "it must keep the rows in dimension 0")
                if out.is_floating_point() and not torch.isfinite(out).all():
                    raise ProtocolError(f"{self.path}: {name}: returned NaN or infinite values on {source} "
                                        f"(example_input({batch})); every part must give finite values")
                again = self.call(f"{name} on {source} {shape_text(h)}, again", part, h)
                same = isinstance(again, torch.Tensor) and again.shape == out.shape and again.dtype == out.dtype and (
                    torch.allclose(again, out, rtol=tolerance["relative_tolerance"], atol=tolerance["absolute_tolerance"])
                    if out.is_floating_point() else torch.equal(again, out))
                if not same:
                    raise ProtocolError(f"{self.path}: {name}: gave other values for the same input on a second call: "
                                        "its forward is not deterministic (randomness, or a layer in training mode), "
                                        "so nothing compiled from it can be checked against it")
                if not is_stage:
                    if out.dim() != 2:
                        raise ProtocolError(f"{self.path}: {name}: returned {shape_text(out)}, not logits "
                                            "[rows, classes]")
                    if classes is not None and out.shape[1] != classes:
                        raise ProtocolError(f"{self.path}: {name}: {out.shape[1]} classes where the heads before "
                                            f"it have {classes}")
                    classes = out.shape[1]
                    if self.custom_confidence:
                        score = self.call(f"confidence() on {name}'s logits", self.module.confidence, out)
                        if not isinstance(score, torch.Tensor) or tuple(score.shape) != (batch,):
                            raise ProtocolError(f"{self.path}: confidence(): returned {shape_text(score)} for "
                                                f"{name}'s logits, not a score per row [{batch}]")
                        if not ((score > 0) & (score <= 1)).all():
                            # condbench's scenarios read threshold 1 as "never" and 0 as "always"
                            raise ProtocolError(f"{self.path}: confidence(): scores outside (0, 1] for {name}'s "
                                                "logits; the exit rule's score must be in (0, 1], as the largest "
                                                "softmax probability is")
                traced.append((name, part, h, out))
                if is_stage:
                    h, last_stage = out, name
        return traced, cast(int, classes)  # set: the final head is always traced

def early_exit_view(model_file: ModelFile, classes: int) -> "ModelFileView":
    """The module as condbench's Python side sees a built-in family (condbench.model's view). The
    peer's variants and the whole-model packages (DeployedCond, DeployedMasked) run it unchanged."""
    from .model import ModelFileView

    row_shape = model_file.input(2).shape[1:]
    return ModelFileView(model_file.module, classes, row_shape, model_file.custom_confidence).eval()


def digest(path: str, weights: str | None, device: str) -> str:
    """The folder's name: the real paths of the file and the weights and their bytes, the torch
    version, the device and the format. The real path is in it: the same bytes elsewhere (a copy of
    model.py in another experiment's folder, beside other modules it imports) are another folder."""
    import torch

    h = hashlib.sha256()
    for name in [path] + ([weights] if weights else []):
        h.update(os.path.realpath(name).encode() + b"\0")
        hash_file(h, name)
    h.update(torch.__version__.encode())
    if device != "cpu":  # the CPU's digests are those of the folders compiled before CUDA ones could be
        h.update(f"device {device}".encode())
    h.update(f"format {FORMAT}".encode())
    return h.hexdigest()[:16]


@dataclass(frozen=True)
class CompiledManifest:
    """What the Python side reads of a compiled folder's manifest.json (condbench.model_file writes it;
    condbench's model_file_manifest.h reads its parts and packages), read once by read_manifest: the
    real paths of the file and its weights, the device, the classes and the digest of the three;
    where the model_file.py of the time kept them, the digest of model()'s state_dict, the files the
    module read while it loaded ((real path, sha256) each, by path), the folder's files by sha256 and
    each part's compile seconds."""
    source: str
    weights: str | None
    device: str
    classes: int
    digest: str
    state_dict: str | None = None
    reads: tuple[tuple[str, str], ...] | None = None
    files: Mapping[str, str] | None = None
    compile_s: Mapping[str, float] = field(default_factory=dict)


def read_manifest(folder: str) -> CompiledManifest:
    """FOLDER/manifest.json. Raises ProtocolError, one line naming it, where it cannot be read or is
    not one a compile wrote."""
    path = os.path.join(folder, "manifest.json")
    try:
        with open_regular(path, "r") as f:
            m = json.load(f)

        def strings(value: object, what: str) -> dict[str, str]:
            if not isinstance(value, dict) or not all(isinstance(k, str) and isinstance(v, str)
                                                      for k, v in value.items()):
                raise ValueError(f"{what} is not a table of strings")
            return value

        reads = m.get("reads")
        if reads is not None:
            if not isinstance(reads, list):
                raise ValueError("reads is not a list")
            reads = tuple(sorted((r["path"], r["sha256"]) for r in (strings(r, "a read") for r in reads)))
        compile_s = m.get("compile_s", {})
        if not isinstance(compile_s, dict) or not all(isinstance(v, (int, float)) for v in compile_s.values()):
            raise ValueError("compile_s is not a table of seconds")
        manifest = CompiledManifest(
            source=m["source"], weights=m["weights"], device=m["device"], classes=int(m["classes"]),
            digest=str(m.get("digest")), state_dict=m.get("state_dict"), reads=reads,
            files=strings(m["files"], "files") if "files" in m else None, compile_s=compile_s)
        if not isinstance(manifest.source, str) or not (manifest.weights is None or isinstance(manifest.weights, str)):
            raise ValueError("source or weights is not a path")
        if manifest.device not in ("cpu", "cuda"):
            raise ValueError("device is not cpu or cuda")
        if not (manifest.state_dict is None or isinstance(manifest.state_dict, str)):
            raise ValueError("state_dict is not a digest")
    except (OSError, ValueError, KeyError, TypeError, AttributeError, OverflowError) as e:
        raise ProtocolError(f"{path}: not a manifest model_file.py compile wrote ({first_line(e)})") from None
    return manifest


def changed_reads(reads: Iterable[tuple[str, str]]) -> list[str]:
    """Of the files a folder's manifest says the module read when it was compiled (a module it
    imports, weights model() loads), those that are not as they were then."""
    changed: list[str] = []
    for path, sha256 in reads:
        try:
            if file_digest(path) != sha256:
                changed.append(path)
        except OSError:
            changed.append(path)
    return changed


def load_compiled(folder: str) -> tuple[ModelFile, "ModelFileView"]:
    """The module a compiled folder was made from, as the peer runs it: (ModelFile, its early-exit
    view). The file and the weights must be those the folder was compiled from (the digest)."""
    m = read_manifest(folder)
    source, weights = m.source, m.weights
    # the digest before anything runs: a changed file, or another one, is never executed
    try:
        same = digest(source, weights, m.device) == m.digest
    except OSError as e:
        raise ProtocolError(f"{source}: cannot be read ({first_line(e)})") from None
    if not same:
        raise ProtocolError(f"{source}: changed since it was compiled into {folder} (or its weights did): "
                            "compile it again (scripts/run --model-file does)")
    if changed := changed_reads(m.reads or ()):
        raise ProtocolError(f"{source}: {changed[0]}, which it reads, changed since it was compiled into {folder}: "
                            "compile it again (scripts/run --model-file does)")
    model_file = ModelFile(source, weights)
    if m.state_dict is None:
        raise ProtocolError(f"{folder}: made by an older model_file.py, without a digest of model()'s weights: "
                            "compile it again (scripts/run --model-file does)")
    if model_file.state != m.state_dict:
        raise ProtocolError(f"{source}: model() makes other weights than it did when it was compiled into {folder}: "
                            "compile it again (scripts/run --model-file does)")
    return model_file, early_exit_view(model_file, m.classes)
