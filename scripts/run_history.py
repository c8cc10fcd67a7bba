#!/usr/bin/env python3
"""Keeps every run of scripts/run, and points results/latest.* at the newest complete one.

    .venv/bin/python scripts/run_history.py promote RESULTS STAMP [--as-latest] [-- CONDBENCH_ARGS...]

A run is the files results/runs/STAMP.json (required: condbench writes it only when the run
completes), STAMP.log, STAMP-python.json and STAMP-report/ (when made). `promote` records the
condbench arguments beside them (STAMP.args.json) and makes results/latest.json, latest.log,
latest-python.json and latest-report relative symbolic links to them, replaced atomically.

A filtered run (one that selects part of the suite: --strategy, --scenario, --device, --batch,
--model, a family's size flag such as --hidden, --blocks, --weights, --benchmark_filter; condbench
records which in its result's context, condbench_selection) does not replace a full run as latest:
it is kept in results/runs/ and the script says so, unless --as-latest is given.
"""
import fcntl
import json
import os
import sys

try:
    from condbench import results  # the result-file reader (python/condbench; scripts/setup installs it in .venv)
except ImportError:
    sys.exit("run_history: the condbench package is not importable here: run it with .venv/bin/python")

LINKS = {"latest.json": "{}.json", "latest.log": "{}.log", "latest-python.json": "{}-python.json",
         "latest-report": "{}-report"}


def is_filtered(result):
    """Whether the run selected part of the suite, as condbench recorded it in the result's context
    ("suite", or "part: --hidden, ..."); a file that does not say counts as filtered."""
    try:
        return results.read(result)["context"].get("condbench_selection") != "suite"
    except results.ResultFileError:
        return True


def current_latest(results):
    """The stamp results/latest.json points at, or None (no link, or a plain file of an older layout)."""
    link = os.path.join(results, "latest.json")
    if not os.path.islink(link):
        return None
    target = os.path.basename(os.readlink(link))
    return target[:-len(".json")] if target.endswith(".json") else None


def was_filtered(results, stamp):
    try:
        with open(os.path.join(results, "runs", stamp + ".args.json")) as f:
            return bool(json.load(f)["filtered"])
    except (OSError, ValueError, KeyError, TypeError):
        return True  # unknown: never guard it


def move_aside(results, name):
    """What is at results/<name> and is not this script's link (a file or folder someone put there, an
    older layout's copy): moved into the history, never deleted or replaced. A FIFO, device or socket
    is left alone and the link is not made."""
    path = os.path.join(results, name)
    if os.path.islink(path) or not os.path.lexists(path):
        return True
    if not (os.path.isfile(path) or os.path.isdir(path)):
        print(f"run_history: {path} is neither a file, a folder nor a link; left alone, not pointed at the run",
              file=sys.stderr)
        return False
    aside = os.path.join(results, "runs", "before-history-" + name)
    n = 1
    while os.path.lexists(aside):
        aside = os.path.join(results, "runs", f"before-history-{n}-{name}")
        n += 1
    os.replace(path, aside)
    print(f"run_history: moved {path} (not a link of the run history) to {aside}")
    return True


def point(results, name, target):
    """results/<name> -> runs/<target>, atomically; the link removed when the run has no such file.
    Only this script's links are ever replaced or removed (the output policy, docs/input.md)."""
    link = os.path.join(results, name)
    if not move_aside(results, name):
        return
    if not os.path.exists(os.path.join(results, "runs", target)):
        if os.path.islink(link):
            os.remove(link)
        return
    temp = f"{link}.new-{os.getpid()}"
    if os.path.lexists(temp):
        os.remove(temp)
    os.symlink(os.path.join("runs", target), temp)
    os.replace(temp, link)


def promote(results, stamp, as_latest, args):
    runs = os.path.join(results, "runs")
    if not os.path.isfile(os.path.join(runs, stamp + ".json")):
        print(f"run_history: {runs}/{stamp}.json does not exist: the run did not complete", file=sys.stderr)
        return 1
    filtered = is_filtered(os.path.join(runs, stamp + ".json"))
    args_file = os.path.join(runs, stamp + ".args.json")
    with open(f"{args_file}.tmp-{os.getpid()}", "w") as f:
        json.dump({"args": args, "filtered": filtered}, f)
    os.replace(f"{args_file}.tmp-{os.getpid()}", args_file)
    # The links switch as one set: two runs ending together take turns (an exclusive lock in the
    # history), so latest.* never point at two runs. Each link is replaced atomically; a reader
    # between two of them sees the set mid-switch for a moment, never a mixed set left behind.
    with open(os.path.join(runs, ".latest.lock"), "w") as lock:
        fcntl.flock(lock, fcntl.LOCK_EX)
        previous = current_latest(results)
        if filtered and not as_latest and previous and previous != stamp and not was_filtered(results, previous):
            print(f"results/latest.* stay on the full run {previous}; this filtered run is "
                  f"{runs}/{stamp}.json (scripts/run --as-latest ... makes a filtered run latest)")
            return 0
        for name, pattern in LINKS.items():
            point(results, name, pattern.format(stamp))
    print(f"results/latest.* -> {runs}/{stamp}" + (" (a filtered run)" if filtered else ""))
    return 0


def main(argv):
    if any(a in ("-h", "--help") for a in argv[: argv.index("--") if "--" in argv else len(argv)]):
        print(__doc__.strip())
        return 0
    args = argv[argv.index("--") + 1:] if "--" in argv else []
    own = argv[: argv.index("--")] if "--" in argv else argv
    as_latest = "--as-latest" in own
    own = [a for a in own if a != "--as-latest"]
    if len(own) != 3 or own[0] != "promote":
        print("usage: scripts/run_history.py promote RESULTS STAMP [--as-latest] [-- CONDBENCH_ARGS...]",
              file=sys.stderr)
        return 2
    return promote(own[1], own[2], as_latest, args)


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
