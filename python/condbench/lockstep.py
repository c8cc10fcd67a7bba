"""Lockstep: two processes that time (condbench and the PyTorch peer) timed in turns, so that neither
is timed while the other runs and both see the machine alike, round by round (docs/statistics.md,
"Lockstep"). Pairs of their cells are then judged as cells of one interleaved run.

usage: python -m condbench.lockstep [--log FILE] [--id ID] [--allowance X] [--keep-going] -- COMMAND... :: COMMAND...

The coordinator starts both commands with CONDBENCH_LOCKSTEP=GO_FD,DONE_FD,ID and
CONDBENCH_LOCKSTEP_ALLOWANCE=X: the drift allowance the report gives a pair across their files (what
scripts/aa-check --lockstep measured on the machine; --allowance, else the variable as given to the
coordinator, else 1: none), which both record. A process writes a
byte to DONE_FD when its startup or its turn is over and waits for a byte on GO_FD before its next
turn; its last turn ends when it exits. Once both are ready, each round gives every process still
running one turn, in a new random order. A process that ends with exit 0 or 1 (condbench: some
benchmarks failed, the rest ran) has finished; one killed by a signal or ending with another code
ends the run: the other is stopped, the coordinator says so in one line and exits with that code.
With --keep-going the other runs on, alone, to its end (the GPU check: a failing peer must not cost
the suite its rounds); the coordinator still says so at once and exits with the failed code.
Only the standard library: the coordinator times nothing and imports nothing that does.
"""
import argparse
import os
import random
import signal
import subprocess
import sys
import time
from types import FrameType
from typing import IO, List, NamedTuple, Optional

from .rules import MAX_LOCKSTEP_ALLOWANCE

ENV = "CONDBENCH_LOCKSTEP"
ALLOWANCE_ENV = "CONDBENCH_LOCKSTEP_ALLOWANCE"
SEPARATOR = "::"
STOP_GRACE_S = 5.0


class Turns:
    """This process's side: wait() ends the turn it holds (or its startup) and returns when the
    coordinator gives it the next. The peer's; condbench's is bench/lockstep.cpp."""

    def __init__(self, go: int, done: int, ident: str, allowance: str = "1") -> None:
        self.go, self.done, self.id, self.allowance = go, done, ident, allowance

    def wait(self) -> None:
        try:
            os.write(self.done, b"d")
            if os.read(self.go, 1) != b"g":
                raise OSError("closed")
        except OSError:
            raise SystemExit("lockstep: the coordinator is gone (its pipe closed); stopping") from None


def allowance(text: str) -> str:
    """CONDBENCH_LOCKSTEP_ALLOWANCE as given, once checked: a number from 1 to C++'s most (rules.json)."""
    try:
        ok = 1.0 <= float(text) <= MAX_LOCKSTEP_ALLOWANCE
    except ValueError:
        ok = False
    if not ok:
        raise SystemExit(f"{ALLOWANCE_ENV}: '{text[:40]}' is not a number from 1 to {MAX_LOCKSTEP_ALLOWANCE:g}")
    return text


def turns() -> Optional[Turns]:
    """The lockstep this process was started in (CONDBENCH_LOCKSTEP), or None."""
    value = os.environ.get(ENV, "")
    if not value:
        return None
    try:
        go, done, ident = value.split(",", 2)
        turn = Turns(int(go), int(done), ident, allowance(os.environ.get(ALLOWANCE_ENV) or "1"))
        os.fstat(turn.go), os.fstat(turn.done)
    except (ValueError, OSError):
        raise SystemExit(f"{ENV}: '{value[:80]}' is not GO_FD,DONE_FD,ID of descriptors open here") from None
    return turn


class Worker(NamedTuple):
    name: str
    process: subprocess.Popen[bytes]
    go: int    # the coordinator's end: it writes a byte to give a turn
    done: int  # the coordinator's end: it reads a byte when the turn is over, nothing when the process ended


def start(command: List[str], ident: str, given: str = "1") -> Worker:
    go_read, go_write = os.pipe()
    done_read, done_write = os.pipe()
    env = {**os.environ, ENV: f"{go_read},{done_write},{ident}", ALLOWANCE_ENV: given}
    process = subprocess.Popen(command, env=env, pass_fds=(go_read, done_write))
    os.close(go_read)
    os.close(done_write)
    return Worker(program(command), process, go_write, done_read)


def program(command: List[str]) -> str:
    """What a command runs, in a word: "condbench", "condbench.peer" (python -m), "script.py"."""
    if os.path.basename(command[0]).startswith("python") and len(command) > 1:
        return command[2] if command[1] == "-m" and len(command) > 2 else os.path.basename(command[1])
    return os.path.basename(command[0])


def finished(worker: Worker) -> bool:
    """Waits for the end of the worker's startup or turn: True when it ended its turn, False when it
    exited (its pipe closed)."""
    try:
        return os.read(worker.done, 1) == b"d"
    except OSError:
        return False


def stop(workers: List[Worker]) -> None:
    """Stops every worker still running: SIGTERM, then SIGKILL after a grace period."""
    for w in workers:
        if w.process.poll() is None:
            w.process.terminate()
    deadline = time.monotonic() + STOP_GRACE_S
    for w in workers:
        try:
            w.process.wait(timeout=max(0.1, deadline - time.monotonic()))
        except subprocess.TimeoutExpired:
            w.process.kill()
            w.process.wait()


def fatal(code: int) -> bool:
    """A worker that ended this way ends the run (0 and 1 are finished: condbench's 1 keeps what ran)."""
    return code not in (0, 1)


def how(code: int) -> str:
    return f"signal {signal.Signals(-code).name}" if code < 0 else f"exit {code}"


def exit_code(code: int) -> int:
    """A worker's end as the coordinator's exit: a signal as a shell reports one, 128 + its number."""
    return 128 - code if code < 0 else code


def coordinate(commands: List[List[str]], log: Optional[IO[str]], ident: str, keep_going: bool = False,
               given: str = "1") -> int:
    workers = [start(c, ident, given) for c in commands]
    stopping: List[int] = []

    def on_signal(number: int, frame: Optional[FrameType]) -> None:  # the coordinator stopped: so are its workers
        stopping.append(number)
        stop(workers)

    for number in (signal.SIGTERM, signal.SIGINT, signal.SIGHUP):
        signal.signal(number, on_signal)
    began = time.monotonic()
    outcome = 0
    failure = 0  # with --keep-going, the first failed worker's exit, returned at the end

    def ended(w: Worker) -> Optional[int]:
        """A worker whose pipe closed: its exit, or the run's if it failed."""
        nonlocal failure
        code = w.process.wait()
        if fatal(code) and not stopping and keep_going:
            alone = [o.name for o in workers if o is not w and o.process.poll() is None]
            going = f"; {', '.join(alone)} keeps going" if alone else ""
            print(f"lockstep: {w.name} ended with {how(code)}{going}", file=sys.stderr, flush=True)
            failure = failure or exit_code(code)
            return None
        if fatal(code) and not stopping:
            others = [o for o in workers if o is not w and o.process.poll() is None]
            stop(others)
            stopped = f"; stopped {', '.join(o.name for o in others)}" if others else ""
            print(f"lockstep: {w.name} ended with {how(code)}{stopped}", file=sys.stderr, flush=True)
            return exit_code(code)
        return None

    # Everyone's startup first, side by side: no turn is given before all are ready.
    running: List[Worker] = []
    for w in workers:
        if finished(w):
            running.append(w)
        elif (code := ended(w)) is not None:
            return code
        else:
            outcome = max(outcome, w.process.returncode)
    turn = 0
    rng = random.Random()
    while running and not stopping:
        order = list(running)
        rng.shuffle(order)
        for w in order:
            start_s = time.monotonic() - began
            try:
                os.write(w.go, b"g")
                gave = True
            except OSError:
                gave = False
            done = gave and finished(w)
            if log:  # a turn that ended with the process's exit is logged too
                log.write(f"{turn} {workers.index(w)} {start_s:.6f} {time.monotonic() - began:.6f}\n")
                log.flush()
            if not done:
                running.remove(w)
                if (code := ended(w)) is not None:
                    return code
                outcome = max(outcome, w.process.returncode)
            turn += 1
    if stopping:
        return 128 + stopping[0]
    return failure or outcome


def main(argv: Optional[List[str]] = None) -> int:
    argv = list(sys.argv[1:] if argv is None else argv)
    parser = argparse.ArgumentParser(prog="python -m condbench.lockstep", description=__doc__,
                                     formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--log", help="a line per turn: turn, process (0 or 1), start and end in seconds")
    parser.add_argument("--id", default=None, help="the lockstep's name in the result files (default: made here)")
    parser.add_argument("--allowance", default=None, metavar="X",
                        help=f"the drift allowance of a pair across the two files (default ${ALLOWANCE_ENV}, else 1)")
    parser.add_argument("--keep-going", action="store_true",
                        help="a failed command leaves the other running alone; the exit is still the failure's")
    if "--" not in argv:
        parser.error("give the commands after --: -- COMMAND... :: COMMAND...")
    at = argv.index("--")
    args = parser.parse_args(argv[:at])
    rest = argv[at + 1:]
    if rest.count(SEPARATOR) != 1 or rest.index(SEPARATOR) in (0, len(rest) - 1):
        parser.error(f"two commands: -- COMMAND... {SEPARATOR} COMMAND...")
    split = rest.index(SEPARATOR)
    try:
        given = allowance(args.allowance or os.environ.get(ALLOWANCE_ENV) or "1")
    except SystemExit as e:
        print(f"lockstep: {e}", file=sys.stderr)
        return 2
    ident = args.id or f"{time.strftime('%Y%m%dT%H%M%S', time.gmtime())}-{os.getpid()}"
    log = open(args.log, "w", encoding="utf-8") if args.log else None
    try:
        return coordinate([rest[:split], rest[split + 1:]], log, ident, args.keep_going, given)
    except OSError as e:
        print(f"lockstep: cannot start {e.filename or 'a command'}: {e.strerror}", file=sys.stderr)
        return 2
    finally:
        if log:
            log.close()


if __name__ == "__main__":
    sys.exit(main())
