"""One model condbench exported for the Python peer (`condbench --export-workload DIR`): its
workload.json, read once into a frozen record and checked before anything is built from it, and
the files beside it the peer reads."""
import json
import os
import re
from dataclasses import dataclass
from typing import Any, Dict, List, Mapping, Optional, Tuple

from . import decoder
from .families import build_model
from .regular_file import NotRegularFile, open_regular, require_regular, workload_folders
from .rules import CONFIG_SIZES, MEMORY_BUDGET, broken_relation, broken_size, module_floats, over_memory_budget

DECODER = "decoder"


class WorkloadError(Exception):
    """A workload the peer cannot run: one line naming the file."""


@dataclass(frozen=True)
class Workload:
    """One exported model, as its workload.json says (docs/peer.md)."""
    directory: str
    config: Mapping[str, Any]  # the model's sizes, "family" among them
    name_axes: Tuple[Tuple[str, str], ...]  # the axes of its benchmark names after the batch, C++'s
    thresholds: Mapping[str, Tuple[float, ...]]  # scenario -> each exit's threshold
    walk: Mapping[str, Tuple[int, ...]]  # scenario -> the pool rows condbench walks at batch 1 (a decoder: none)
    pool_rows: int  # the rows of its input pool (a decoder: 0, it has prompts)
    model_file: Optional[str]  # a model file's compiled folder, else None
    agreement: Optional[Mapping[str, float]]  # a model file's and a decoder's rule of agreement, C++'s

    @property
    def family(self) -> str:
        return str(self.config["family"])

    @property
    def decodes(self) -> bool:
        """A decoder: one generated token an iteration (docs/design.md §8)."""
        return self.family == DECODER

    def files(self) -> Tuple[str, ...]:
        """The files beside workload.json the peer reads, itself included."""
        return files_of(self.config, self.model_file is not None)

    def path(self, name: str) -> str:
        return os.path.join(self.directory, name)


def files_of(config: Mapping[str, Any], model_file: bool) -> Tuple[str, ...]:
    if config.get("family") == DECODER:
        return ("prompts.pt", "workload.json", "weights.pt")
    return ("pool.pt", "workload.json") + (() if model_file else ("weights.pt",))


def load(root: str) -> List[Workload]:
    """Every model condbench exported under `root`, or the one model `root` is (the folder
    --export-workload prints), each checked before anything is built from it (problem): a file cut
    short or not condbench's raises WorkloadError, one line."""
    found = []
    for d in workload_folders(root):
        path = os.path.join(d, "workload.json")
        try:
            with open_regular(path, "r") as f:
                meta = json.load(f)
        except (OSError, ValueError, RecursionError) as e:
            raise WorkloadError(f"{path}: not a workload condbench --export-workload wrote ({type(e).__name__}: "
                                f"{str(e).splitlines()[0][:200] if str(e) else ''})") from None
        if why := problem(d, meta):
            raise WorkloadError(f"{path}: {why}")
        found.append(record(d, meta))
    if not found:
        raise WorkloadError(f"{root}: no exported workload (run condbench --export-workload={root} first)")
    return found


def record(directory: str, meta: Dict[str, Any]) -> Workload:
    """workload.json as its record (problem has checked it). A model file's folder is a path or absent:
    an empty or null one would pass for a built-in family whose sizes nobody checked."""
    model_file = meta.get("model_file")
    if model_file is not None and not (isinstance(model_file, str) and model_file):
        raise ValueError(f"model_file is {model_file!r}, not a compiled folder's path")
    return Workload(
        directory=directory, config=dict(meta["config"]),
        name_axes=tuple((str(k), str(v)) for k, v in meta["name_axes"]),
        thresholds={scenario: tuple(float(t) for t in values) for scenario, values in meta["thresholds"].items()},
        walk={scenario: tuple(int(i) for i in rows) for scenario, rows in meta.get("walk", {}).items()},
        pool_rows=0 if meta["config"].get("family") == DECODER else meta["pool_rows"],
        model_file=model_file,
        agreement=dict(meta["agreement"]) if "agreement" in meta else None)


def is_scenario(name: str) -> bool:
    """exit:K (K >= 1) or mix:early|uniform|late, as C++'s Scenario::parse reads a scenario (a test
    holds the two to the same answers: test_python_peer.py, ScenarioGrammar)."""
    kind, _, value = name.partition(":")
    return kind == "exit" and value.isascii() and value.isdigit() and int(value) >= 1 or \
        kind == "mix" and value in ("early", "uniform", "late")


def scenarios_problem(w: Workload) -> Optional[str]:
    """Why a workload's scenarios cannot run as written: a name that is not exit:K (K an exit of the
    model) or mix:SHAPE, a threshold that is no number in [0, 1] or a count of them that is not the
    model's exits before the final one, or (not a decoder) a walk that is empty or leaves the input pool; else None."""
    exits = (len(decoder.exit_layers(w.config["layers"], w.config["exit_every"])) if w.decodes
             else int(w.config["blocks"]) + 1 if w.model_file is None else None)  # a model file's: once loaded
    pool_rows = w.pool_rows
    if not w.decodes and not (isinstance(pool_rows, int) and not isinstance(pool_rows, bool) and pool_rows >= 1):
        return f"pool_rows is {pool_rows!r}, not a count of rows"
    if not w.thresholds:
        return "no scenario"
    for scenario, limits in w.thresholds.items():
        if not is_scenario(scenario) or scenario.startswith("exit:") and exits is not None and \
                int(scenario[5:]) > exits:
            return f"scenario {scenario!r} is not exit:K (an exit of the model) or mix:early|uniform|late"
        if exits is not None and len(limits) != exits - 1 or not all(0 <= t <= 1 for t in limits):
            return f"scenario {scenario}: its thresholds {list(limits)} are not one in [0, 1] per exit before the last"
        rows = w.walk.get(scenario, ())
        if not w.decodes and not (rows and all(0 <= r < pool_rows for r in rows)):
            return f"scenario {scenario}: its walk is empty or leaves the input pool of {pool_rows} rows"
    for key, value in w.name_axes:
        if not (re.fullmatch(r"[a-z_][a-z0-9_]*", key) and re.fullmatch(r"[A-Za-z0-9_.-]+", value)):
            return f"name axis {key!r}:{value!r} is not a word and a value of letters, digits, '_', '.' and '-'"
    return None


def problem(directory: str, meta: Dict[str, Any]) -> Optional[str]:
    """Why the peer cannot run a workload.json as it reads (its keys, its sizes as C++ bounds and
    relates them, its model and a batch of one within C++'s memory budget, its files regular files),
    or None. Checked before any tensor is made: a crafted file cannot ask for terabytes."""
    try:
        config = meta["config"]
        family = config["family"]
        if "name_axes" not in meta or ("model_file" in meta or family == DECODER) and "agreement" not in meta or \
                family != DECODER and "walk" not in meta:
            return "exported by an older condbench (no name_axes, walk, or a model file's agreement rule); run " \
                   "condbench --export-workload again"
        if "model_file" not in meta:  # a model file's sizes are its compiled folder's (load_compiled checks it)
            if family not in MEMORY_BUDGET["terms"]:
                return f"an unknown model family {family!r}"
            sizes = {size["size"]: config[size["size"]] for size in CONFIG_SIZES[family]}
            if family == DECODER:
                sizes.update(prompt=config["prompt"], generate=config["generate"])
                if not all(isinstance(sizes[k], int) and 1 <= sizes[k] for k in ("prompt", "generate")) or \
                        sizes["prompt"] + sizes["generate"] - 1 > sizes.get("context", 0):
                    return "prompt + generate - 1 must fit the context"
            if broken := broken_size(family, sizes) or broken_relation(family, sizes):
                return broken
            build = (lambda: decoder.Decoder(*(sizes[k] for k in ("vocab", "d_model", "layers", "ffn", "context")))) \
                if family == DECODER else (lambda: build_model(config))
            if over := over_memory_budget(family, sizes, 1, module_floats(build)):
                return over
        w = record(directory, meta)  # every value of the kind the record holds
        if why := scenarios_problem(w):
            return why
        for name in files_of(config, "model_file" in meta):
            require_regular(os.path.join(directory, name))
    except NotRegularFile as e:
        return str(e)
    except (KeyError, TypeError, AttributeError, ValueError) as e:
        return f"not a workload condbench --export-workload wrote ({type(e).__name__}: {e})"
    return None
