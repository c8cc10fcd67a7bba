"""Which of two causes made an AOTInductor package segfault its loader on the H200 (the device check's
call 2 of 2026-12-04: model_file.py loading a CUDA package in the process that had exported it, after
spawn workers had compiled packages into one shared Inductor cache)? One module, compiled four ways:

  A  two spawn workers compiling it at once into one shared Inductor cache (condbench at 4752837)
  B  two spawn workers at once, each in an Inductor cache of its own (condbench.inductor now)
  C  compiled once here and loaded here, in the process that exported it (a check loaded in-process)
then every package loaded again in a fresh process (condbench.package_run, faulthandler on) and run
against the module, each package's members' digests printed so two racing packages can be compared.
C's in-process load comes last, after everything else has been printed: a crash there ends only it.

usage: python -m condbench.load_experiment [--device cuda|cpu] [--work DIR] [--rounds N]

The last line is the verdict, read as docs/profiling.md says:
  race        A's packages crashed or differed, B's and C's fresh loads were right
  load path   C crashed in the exporting process, its fresh-process load was right
  loader      every load crashed: this torch's Python loader (check CUDA packages from C++)
  none        nothing crashed or differed here
"""
import argparse
import concurrent.futures
import hashlib
import multiprocessing
import os
import sys
import tempfile
import zipfile
from typing import TYPE_CHECKING, Sequence

from . import inductor
from .errors import first_line

if TYPE_CHECKING:
    import torch


def module_and_input(device: str) -> tuple["torch.nn.Module", "torch.Tensor"]:
    import torch

    torch.manual_seed(0)
    module = torch.nn.Sequential(torch.nn.Linear(64, 64), torch.nn.ReLU()).to(device).eval()
    for p in module.parameters():
        p.requires_grad_(False)
    return module, torch.randn(4, 64, device=device)


def compile_shared(exported: str, package: str, cache: str) -> str:
    """A worker of A: the saved program compiled into one shared Inductor cache, as 4752837 did."""
    import torch

    os.environ["TORCHINDUCTOR_CACHE_DIR"] = cache
    os.environ["TRITON_CACHE_DIR"] = os.path.join(cache, "triton")
    program = torch.export.load(exported)
    torch._inductor.aoti_compile_and_package(program, package_path=package)
    return package


def compile_own(exported: str, package: str) -> str:
    """A worker of B: condbench.inductor's compile, in an Inductor cache of its own."""
    import torch

    inductor.compile_program(torch.export.load(exported), package)
    return package


def digests(package: str) -> list[str]:
    """'member sha256[:12]' for each member of a package (a zip), or why it cannot be read."""
    try:
        with zipfile.ZipFile(package) as z:
            return [f"{short(os.path.basename(n))} {hashlib.sha256(z.read(n)).hexdigest()[:12]}"
                    for n in sorted(z.namelist())]
    except (OSError, zipfile.BadZipFile) as e:
        return [f"unreadable ({type(e).__name__}: {e})"]


def short(name: str) -> str:
    """A member's name with Inductor's 52-character digest cut: "ci4lobty…wrapper.so"."""
    stem, dot, kind = name.partition(".")
    return f"{stem[:8]}…{dot}{kind}" if len(stem) > 20 else name


def fresh_load(package: str, x: "torch.Tensor", want: "torch.Tensor") -> str:
    """'ok', 'differs' or how the fresh process ended."""
    try:
        got = inductor.outputs_apart(package, [(x,)])[0]
    except Exception as e:  # noqa: BLE001 -- how it ended is the result
        return f"failed: {first_line(e)}"
    return "ok" if inductor.close(got.to(want.device), want) else "differs"


def verdict(results: dict[str, list[str]]) -> str:
    """The verdict line from {way: [fresh-load outcomes]} and C's in-process outcome (results['C here'])."""
    bad = {way: [r for r in outcomes if r != "ok"] for way, outcomes in results.items()}
    if all(bad[way] for way in results):
        return "loader: every load failed; check CUDA packages from C++ only"
    if bad.get("C here") and not bad.get("C"):
        return "load path: the exporting process's load failed, a fresh process's did not; check in a subprocess"
    if bad.get("A") and not bad.get("B") and not bad.get("C"):
        return "race: packages compiled side by side into one shared cache failed; each cache its own fixes it"
    if not any(bad.values()):
        return "none: nothing crashed or differed here"
    return "unclear: " + "; ".join(f"{way} {', '.join(outcome)}" for way, outcome in bad.items() if outcome)


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m condbench.load_experiment", usage=argparse.SUPPRESS,
                                     description=__doc__,
                                     formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--device", default="cuda", choices=["cuda", "cpu"])
    parser.add_argument("--work", default=None, help="where the packages go (default: a temporary folder)")
    parser.add_argument("--rounds", type=int, default=2, help="rounds of A, two workers each (default 2)")
    args = parser.parse_args(argv)
    import torch

    if args.device == "cuda" and not torch.cuda.is_available():
        print("load_experiment: --device=cuda: no CUDA device here", file=sys.stderr)
        return 2
    work = args.work or tempfile.mkdtemp(prefix="condbench-load-experiment-")
    os.makedirs(work, exist_ok=True)
    module, x = module_and_input(args.device)
    with torch.no_grad():
        want = module(x)
    exported = os.path.join(work, "linear.exported")
    program = inductor.export(module, (x,))
    torch.export.save(program, exported)
    print(f"load_experiment: torch {torch.__version__}, {args.device}, packages in {work}", flush=True)

    spawn = multiprocessing.get_context("spawn")
    packages: dict[str, list[str]] = {"A": [], "B": [], "C": []}
    with concurrent.futures.ProcessPoolExecutor(2, mp_context=spawn) as pool:
        shared = os.path.join(work, "shared-inductor-cache")
        for r in range(args.rounds):
            jobs = [pool.submit(compile_shared, exported, os.path.join(work, f"A{r}-{w}.pt2"), shared) for w in (0, 1)]
            packages["A"] += [job.result() for job in jobs]
        jobs = [pool.submit(compile_own, exported, os.path.join(work, f"B-{w}.pt2")) for w in (0, 1)]
        packages["B"] += [job.result() for job in jobs]
    here = os.path.join(work, "C.pt2")
    inductor.compile_program(program, here)
    packages["C"].append(here)

    results: dict[str, list[str]] = {}
    for way, paths in packages.items():
        for path in paths:
            outcome = fresh_load(path, x, want)
            results.setdefault(way, []).append(outcome)
            print(f"load_experiment: {way} {os.path.basename(path)}: fresh process {outcome}; "
                  + ", ".join(digests(path)), flush=True)
    print("load_experiment: C loaded in the exporting process ...", flush=True)
    try:
        got = inductor.outputs(inductor.load(here), [(x,)])[0]
        results["C here"] = ["ok" if inductor.close(got, want) else "differs"]
    except Exception as e:  # noqa: BLE001 -- a crash never gets here; an exception is a result
        results["C here"] = [f"failed: {first_line(e)}"]
    print(f"load_experiment: C here: {results['C here'][0]}", flush=True)
    print(f"verdict: {verdict(results)}", flush=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
