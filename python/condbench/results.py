"""condbench's result files (Google Benchmark JSON with condbench's context), read and merged in one
place for the Python side: the scripts, the device check and the peer. What a file means — its
names, statistics and verdicts — is C++'s (condbench-report reads it; --pairs and --undecided give
the scripts its judgements as JSON); this module only loads a file, checks that condbench wrote it,
and gives its context and rows.

    python -m condbench.results context FILE KEY       the context's KEY, printed (exit 1 when absent)
    python -m condbench.results merge OUT PART...      one file: the first part's context, every
                                                       part's benchmarks (parts that do not exist are
                                                       left out; none: exit 1), written atomically
    python -m condbench.results keep FILE TO           a run kept in results/: FILE checked, written
                                                       to TO in its compact form (one line: the
                                                       tree a GPU call carries stays small); TO is
                                                       never replaced
    python -m condbench.results missing-gpu-us FILE    a warning line naming the CUDA cases that came
                                                       back without gpu_us, or nothing
    python -m condbench.results gtest-skips LOG        of a gtest log: "SKIPPED UNDECLARED NAMES...",
                                                       the skips, those that named no "unsupported: "
                                                       reason, and the first five of those

A file that cannot be read or that condbench did not write is one line on stderr, exit 2.
"""
import json
import os
import re
import sys
from typing import Any, Iterable, Sequence

from .regular_file import NotRegularFile, not_replaceable, open_regular

# A result file as JSON gives it: its shape is C++'s (result_format.h), checked by read() as far as this
# module reads it.
ResultDoc = dict[str, Any]


class ResultFileError(Exception):
    """One line: the file and what is wrong with it."""


def read(path: str) -> ResultDoc:
    """The result file at `path` as a dict: a JSON object whose context carries condbench_schema
    (condbench and the peer write it; condbench-report decides which schemas it reads) and whose
    benchmarks are a list of objects. Raises ResultFileError otherwise."""
    try:
        with open_regular(path, "r", encoding="utf-8") as f:
            doc = json.load(f)
    except NotRegularFile as e:
        raise ResultFileError(str(e)) from None
    except OSError as e:
        raise ResultFileError(f"{path}: {e.strerror or e}") from None
    except (ValueError, RecursionError) as e:
        raise ResultFileError(f"{path}: not JSON ({str(e).splitlines()[0] if str(e) else type(e).__name__})") from None
    if not isinstance(doc, dict) or not isinstance(doc.get("context"), dict):
        raise ResultFileError(f"{path}: not a result file (no context object)")
    if not isinstance(doc["context"].get("condbench_schema"), str):
        raise ResultFileError(f"{path}: not condbench's (its context has no condbench_schema)")
    rows = doc.get("benchmarks")
    if not isinstance(rows, list) or not all(isinstance(b, dict) for b in rows):
        raise ResultFileError(f"{path}: its benchmarks are not a list of objects")
    return doc


def write(path: str, doc: ResultDoc, compact: bool = False) -> None:
    """Writes `doc` to `path` whole or not at all (a temporary beside it, then renamed); compact:
    without spaces or line breaks, as committed results are kept (the same numbers: floats
    round-trip)."""
    temporary = f"{path}.tmp-{os.getpid()}"
    try:
        with open(temporary, "w", encoding="utf-8") as f:
            if compact:
                json.dump(doc, f, separators=(",", ":"), ensure_ascii=False)
                f.write("\n")
            else:
                json.dump(doc, f, indent=1)
        os.replace(temporary, path)
    finally:
        if os.path.exists(temporary):
            os.unlink(temporary)


def merge(parts: Iterable[str]) -> ResultDoc:
    """One result document of several files of one run: the first file's context, every file's
    benchmarks in order."""
    docs = [read(p) for p in parts]
    return {"context": docs[0]["context"], "benchmarks": [b for d in docs for b in d["benchmarks"]]}


def merge_refused(out: str, parts: Sequence[str]) -> str | None:
    """Why `merge OUT PART...` must not write, by condbench's output policy
    (include/condbench/output_file.h): OUT is something other than a regular file, or one of the
    parts; or a part is given twice (its repetitions would be in the file twice). None: it may."""
    what = not_replaceable(out)
    if what is not None:
        return f"{out}: is {what}; a merge writes only regular files and never replaces {what}"
    for i, part in enumerate(parts):
        if os.path.exists(out) and os.path.samefile(out, part):
            return f"{out}: is the part {part}; an output never overwrites an input"
        if any(os.path.samefile(part, earlier) for earlier in parts[:i]):
            return f"{part}: given twice; each part once"
    return None


def iterations(doc: ResultDoc) -> list[dict[str, Any]]:
    """The rows that are one repetition each (not Google Benchmark's aggregates)."""
    return [b for b in doc["benchmarks"] if b.get("run_type") == "iteration"]


def cases_without_gpu_us(doc: ResultDoc) -> tuple[list[str], set[str]]:
    """(missing, cases): the CUDA cases that ran (an errored row is a case the strategy cannot run)
    and have no GPU time (gpu_us, or gpu_span_us for a strategy that waits on the host), and every
    CUDA case that ran. A CUDA case is one the context's
    device list put on the GPU: its row names the device as condbench's names do, early_exit/cuda/."""
    rows = [b for b in iterations(doc) if str(b.get("run_name", "")).startswith("early_exit/cuda/")
            and not b.get("error_occurred")]
    timed = ("gpu_us", "gpu_span_us")
    return (sorted({b["run_name"] for b in rows if not any(key in b for key in timed)}),
            {b["run_name"] for b in rows})


def gtest_skips(log_text: str) -> tuple[list[str], list[str]]:
    """(skipped, undeclared): the tests a gtest log shows skipped, and those whose output named no
    "unsupported: " reason (gtest's JSON marks a skip but drops its message; the log keeps it
    between the test's RUN and SKIPPED lines)."""
    skipped = re.findall(r"^\[ RUN      \] (\S+)\n(.*?)^\[  SKIPPED \] \1 ", log_text, re.M | re.S)
    return [name for name, _ in skipped], [name for name, said in skipped if "unsupported: " not in said]


def main(argv: Sequence[str]) -> int:
    command, args = (argv[0], argv[1:]) if argv else ("", [])
    if command in ("-h", "--help"):
        print(__doc__.strip())
        return 0
    wanted = {"context": 2, "keep": 2, "missing-gpu-us": 1, "gtest-skips": 1}
    if command not in wanted and command != "merge" or command in wanted and len(args) != wanted[command] \
            or command == "merge" and len(args) < 2:
        print("results: usage: python -m condbench.results context FILE KEY | merge OUT PART... | keep FILE TO | "
              "missing-gpu-us FILE | gtest-skips LOG (see --help)", file=sys.stderr)
        return 2
    try:
        if command == "context":
            value = read(args[0])["context"].get(args[1])
            if value is None:
                return 1
            print(value if isinstance(value, str) else json.dumps(value))
        elif command == "merge":
            parts = [p for p in args[1:] if os.path.exists(p)]
            if not parts:
                return 1
            why = merge_refused(args[0], parts)
            if why:
                print(f"results: {why}", file=sys.stderr)
                return 2
            write(args[0], merge(parts))
        elif command == "keep":
            doc = read(args[0])
            if os.path.lexists(args[1]):
                print(f"results: {args[1]}: exists; a kept run is never replaced (remove it first)", file=sys.stderr)
                return 2
            write(args[1], doc, compact=True)
        elif command == "missing-gpu-us":
            missing, cases = cases_without_gpu_us(read(args[0]))
            if missing:
                print(f"warning  {len(missing)} of {len(cases)} CUDA cases came back without gpu_us: "
                      + ", ".join(missing[:8]) + (" ..." if len(missing) > 8 else ""))
        else:
            with open_regular(args[0], "r", errors="replace") as f:
                skipped, undeclared = gtest_skips(f.read())
            print(len(skipped), len(undeclared), " ".join(undeclared[:5]))
    except ResultFileError as e:
        print(f"results: {e}", file=sys.stderr)
        return 2
    except NotRegularFile as e:
        print(f"results: {e}", file=sys.stderr)
        return 2
    except OSError as e:
        print(f"results: {args[0]}: {e.strerror or e}", file=sys.stderr)
        return 2
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
