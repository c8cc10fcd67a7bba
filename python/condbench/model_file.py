#!/usr/bin/env python3
"""An early-exit model of your own, from one Python file: the protocol condbench's route for any
PyTorch module starts from (docs/your-model.md).

The file defines two functions:

    model()               an nn.Module with
                            stages  nn.ModuleList: each stage Tensor -> Tensor, the first taking
                                    the input, each next one the previous stage's output
                            exits   nn.ModuleList: one head per stage, on that stage's output,
                                    returning logits [rows, classes]
                            final   the last head, on the last stage's output
                          and optionally confidence(logits) -> [rows], the exit rule's score
                          (default: the largest softmax probability; a row leaves at the first
                          exit whose score is above its threshold)
    example_input(batch)  what the first stage takes, the rows in dimension 0: a float tensor
                          [batch, ...], an integer one (token ids), or a tuple of tensors of one
                          kind (ids and an attention mask), which the first stage takes in order

Weights are the module's own (model() must make the same ones on every call: seed it or load
them), or a state_dict (torch.save) given with --weights, loaded strictly.
A model file is code: loading it runs it, with your rights. Load only files you would run.

usage: python -m condbench.model_file check FILE [--weights STATE_DICT] [--batch N] [--device cpu|cuda]
       python -m condbench.model_file compile FILE [--weights STATE_DICT] [--batch N] [--device cpu|cuda]
                                         [--cache DIR] [--jobs N]
       (both: [--max-row-values N] [--max-stages N] [--max-classes N]: the limits condbench gives when it
       calls compile; by default the most condbench reads of a compiled folder)

check loads FILE, runs every part on example_input(N) (default 2) and checks what each returns,
exports every stage, exit and the final head with torch.export (the batch dynamic), and prints the
manifest as JSON: the parts in order with their input and output shapes (the batch as "rows"),
FLOPs per row (torch.utils.flop_counter) and bytes of parameters and buffers, the classes, and a
digest of the file, the weights, the device and the torch version. compile does the same, then
compiles each part with AOTInductor for the device (default the CPU; cuda where a GPU is, on the
machine that runs it: a CUDA package is native code for that GPU and that torch) into
<cache>/models/<digest>-<device>/, each package loaded back and checked against the module's own
output. The folder is whole or absent, and reused when there: the same file, weights and torch, the
files the module read as they were, and model() making the same state_dict, so weights it loads or
makes itself are in the key. It also holds the aoti engine's whole-model modules generated from
the stages (nested torch.cond: cond.pt2; masking: masked.pt2; each checked, or marked unavailable
with the reason). compile prints the folder. Anything wrong is one line naming the file and the
part, exit code 2.
"""
# This module is the command (the process, its signals, its answer's channel); condbench.model_compile
# is the compile, on condbench.inductor's one path (export, compile, check).
import argparse
import contextlib
import json
import os
import signal
import sys
from types import FrameType
from typing import IO, NoReturn, Sequence

from .model_compile import compile_parts, manifest, within_limits
from .model_source import ModelFile, ProtocolError
from .regular_file import require_regular


def _stopped(signum: int, frame: FrameType | None) -> NoReturn:
    """SIGTERM or SIGHUP (condbench ending the compile, at its limit or stopped itself, or gone): exit
    through the finally blocks, so the half-built folder goes. Run by condbench, in a process group
    of its own, what the user's code started ends too."""
    if _run_by_condbench():
        signal.signal(signal.SIGTERM, signal.SIG_IGN)
        with contextlib.suppress(OSError):
            os.killpg(os.getpgrp(), signal.SIGTERM)
    raise SystemExit(128 + signum)


def _run_by_condbench() -> bool:
    """Whether condbench runs this compile: it names itself (CONDBENCH_COMPILE_PARENT) and makes this
    process the leader of a group of its own, which is then this compile's alone."""
    parent = os.environ.get("CONDBENCH_COMPILE_PARENT", "")
    return parent.isdigit() and os.getpgrp() == os.getpid()


def _end_with_condbench() -> None:
    """Run by condbench: SIGTERM when condbench ends, however it ends (Linux's parent-death signal;
    killed outright, condbench cannot end the group itself), and an exit now where it is gone already."""
    if not _run_by_condbench():
        return
    try:
        import ctypes

        ctypes.CDLL(None, use_errno=True).prctl(1, signal.SIGTERM)  # PR_SET_PDEATHSIG
    except (OSError, AttributeError):
        return  # not Linux: condbench's own cleanup still ends the group when it can
    if os.getppid() != int(os.environ["CONDBENCH_COMPILE_PARENT"]):
        _stopped(signal.SIGTERM, None)


def main(argv: Sequence[str]) -> int:
    parser = argparse.ArgumentParser(prog="python -m condbench.model_file", usage=argparse.SUPPRESS,
                                     description=__doc__,
                                     formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("command", choices=["check", "compile"])
    parser.add_argument("file")
    parser.add_argument("--weights", help="a state_dict (torch.save) that model() loads: your trained weights")
    parser.add_argument("--batch", type=int, default=2,
                        help="example_input's rows to export with, 2..4096 (the batch stays dynamic)")
    parser.add_argument("--device", default="cpu", choices=["cpu", "cuda"],
                        help="what the packages run on (compile); cuda compiles on this machine's GPU")
    parser.add_argument("--cache", help="compile: the cache (default: condbench's, as condbench.aoti's)")
    # condbench's limits, which condbench and condbench-infer give (a run's the smaller: its pool of
    # inputs); by hand, what condbench reads of a compiled folder (rules.json's model_file_limits, C++'s):
    # a model over them is refused before anything is exported or compiled
    parser.add_argument("--max-row-values", type=int, metavar="N",
                        help="refuse a part whose input or output row holds more than N values (default: the "
                             "most condbench reads)")
    parser.add_argument("--max-stages", type=int, metavar="N",
                        help="refuse a model of more than N stages (default: the most condbench reads)")
    parser.add_argument("--max-classes", type=int, metavar="N",
                        help="refuse heads of more than N classes (default: the most condbench reads)")
    parser.add_argument("--jobs", type=int, default=min(os.cpu_count() or 1, 8),
                        help="compile: packages compiled at once, each in a process of its own (default: the "
                             "cores, at most 8; 1: one after another, in this process)")
    parser.add_argument("--answer-fd", type=int, metavar="FD",
                        help="write the answer (the folder, or check's manifest) to this open descriptor, not to "
                             "stdout (condbench's own channel)")
    args = parser.parse_args(argv)
    # The answer goes on a channel of its own: the descriptor condbench gives, else stdout as it is
    # now; stdout itself then goes to stderr, so that nothing the user's code prints (a library at
    # exit, a module naming a path) can pass for the answer
    try:
        answer = answer_channel(args.answer_fd)
    except OSError as e:
        print(f"model_file: --answer-fd {args.answer_fd}: {e.strerror}", file=sys.stderr)
        return 2
    # Every path absolute before the user's code runs: a model() that changes the working folder
    # changes nothing of what this reads or writes
    args.file = os.path.abspath(args.file)
    args.weights = args.weights and os.path.abspath(args.weights)
    args.cache = args.cache and os.path.abspath(args.cache)
    from .rules import MODEL_FILE_LIMITS

    for limit in ("max_row_values", "max_stages", "max_classes"):
        if getattr(args, limit) is None:
            setattr(args, limit, MODEL_FILE_LIMITS[limit])
    for stop in (signal.SIGTERM, signal.SIGHUP):
        signal.signal(stop, _stopped)
    _end_with_condbench()
    if not 1 <= args.jobs <= 64:
        print(f"model_file: --jobs {args.jobs}: not in 1..64", file=sys.stderr)
        return 2
    if not 2 <= args.batch <= 4096:
        # batch 1 would let torch.export specialise the rows to 1
        print(f"model_file: --batch {args.batch}: not in 2..4096", file=sys.stderr)
        return 2
    try:
        for given in (args.file, args.weights):
            if given:
                require_regular(given)
        from .inductor import cache_root  # condbench's cache, where its packages go too

        cache = args.cache or cache_root()
        # loaded (run) even where a folder is cached: model()'s weights are part of what the folder is
        model_file = ModelFile(args.file, args.weights, args.device)
        within_limits(model_file, args.batch, args.max_row_values, args.max_stages, args.max_classes)
        if args.command == "check":
            said = json.dumps(manifest(model_file, args.weights, args.batch), indent=1)
        else:
            said = compile_parts(model_file, args.weights, args.batch, cache, args.jobs)
    except ProtocolError as e:
        print(f"model_file: {e}", file=sys.stderr)
        return 2
    except OSError as e:  # a file or weights that is not a regular file (a FIFO), or unreadable
        print(f"model_file: {e}", file=sys.stderr)
        return 2
    answer.write(said + "\n")
    answer.flush()
    return 0


def answer_channel(fd: int | None) -> IO[str]:
    """Where main's answer goes (a file object): the descriptor `fd`, or the process's stdout as it is
    now; from here on, whatever writes to the process's stdout (the user's print, a library's at exit,
    a child's) goes to stderr. Called in a process whose stdout a caller has replaced (main() in a
    test, its output captured), the answer goes to that stream and the process's is left alone."""
    if fd is None and sys.stdout is not sys.__stdout__:
        return sys.stdout
    sys.stdout.flush()
    if fd is None:
        fd = os.dup(1)  # not inherited by what the user's code starts
    else:
        os.set_inheritable(fd, False)
    os.dup2(2, 1)
    return os.fdopen(fd, "w")


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
