"""condbench.lockstep, the coordinator that times two processes in turns: with stand-ins that record
when each of their rounds ran, it alternates them round by round and never lets one run while the
other does; a process that crashes or is killed ends the run in one line with the other stopped.
Runs without the C++ build or torch. Usage: test_lockstep.py."""
import os
import signal
import subprocess
import sys
import tempfile
import time
import unittest

# A stand-in for condbench or the peer: ROUNDS rounds, each a turn, recording its turns' spans; with
# CRASH_AT it dies of SIGSEGV in that round (only the one named CRASH_NAME, where that is set), with
# HANG_AT it waits there for ever.
STAND_IN = r"""
import os, sys, time
from condbench import lockstep
name, rounds, out = sys.argv[1], int(sys.argv[2]), sys.argv[3]
crash_at, hang_at = int(os.environ.get("CRASH_AT", "-1")), int(os.environ.get("HANG_AT", "-1"))
if os.environ.get("CRASH_NAME", name) != name:
    crash_at = -1
turns = lockstep.turns()
with open(out, "w") as f:
    for r in range(rounds):
        turns.wait()
        start = time.monotonic()
        if r == crash_at:
            os.kill(os.getpid(), 11)
        while r == hang_at:
            time.sleep(1)
        while time.monotonic() - start < 0.02:  # "timed" work
            pass
        f.write(f"{name} {r} {start:.6f} {time.monotonic():.6f} {turns.allowance}\n")
        f.flush()
"""


def coordinate(*commands, env=None, timeout=60, options=()):
    argv = [sys.executable, "-m", "condbench.lockstep", *options, "--"]
    for i, c in enumerate(commands):
        argv += ([lockstep_separator()] if i else []) + c
    return subprocess.run(argv, capture_output=True, text=True, timeout=timeout, env=env)


def lockstep_separator():
    return "::"


class Coordinator(unittest.TestCase):
    def setUp(self):
        self.dir = tempfile.TemporaryDirectory()
        self.addCleanup(self.dir.cleanup)
        self.stand_in = os.path.join(self.dir.name, "stand_in.py")
        with open(self.stand_in, "w") as f:
            f.write(STAND_IN)

    def command(self, name, rounds):
        return [sys.executable, self.stand_in, name, str(rounds), os.path.join(self.dir.name, name + ".txt")]

    def spans(self, name):
        with open(os.path.join(self.dir.name, name + ".txt")) as f:
            return [(line.split()[0], int(line.split()[1]), float(line.split()[2]), float(line.split()[3]))
                    for line in f]

    def test_the_two_are_timed_in_turns_round_by_round(self):
        result = coordinate(self.command("a", 6), self.command("b", 4))
        self.assertEqual(result.returncode, 0, result.stderr)
        a, b = self.spans("a"), self.spans("b")
        self.assertEqual([r for _, r, _, _ in a], list(range(6)))
        self.assertEqual([r for _, r, _, _ in b], list(range(4)))
        every = sorted(a + b, key=lambda s: s[2])
        for first, second in zip(every, every[1:]):  # no round starts before the one before it ended
            self.assertLessEqual(first[3], second[2], (first, second))
        # round by round: each process's round k ran before its round k+1 and after the other's round k-1
        for k in range(1, 4):
            for mine, other in ((a, b), (b, a)):
                self.assertGreater(mine[k][2], other[k - 1][3])
        # the longer one runs on alone once the other has finished
        self.assertGreater(a[5][2], b[3][3])

    def test_a_crashed_one_ends_the_run_in_one_line_with_the_other_stopped(self):
        started = time.monotonic()
        result = coordinate(self.command("a", 50), self.command("b", 50), env={**os.environ, "CRASH_AT": "2"})
        self.assertLess(time.monotonic() - started, 30)
        self.assertEqual(result.returncode, 128 + signal.SIGSEGV, result.stderr)  # as a shell says a signal
        lines = result.stderr.strip().splitlines()
        self.assertEqual(len(lines), 1, result.stderr)
        self.assertIn(lines[0], ("lockstep: stand_in.py ended with signal SIGSEGV; stopped stand_in.py",))

    def test_keep_going_leaves_the_other_its_rounds_and_exits_with_the_failure(self):
        env = {**os.environ, "CRASH_AT": "2", "CRASH_NAME": "b"}
        result = coordinate(self.command("a", 6), self.command("b", 6), env=env, options=("--keep-going",))
        self.assertEqual(result.returncode, 128 + signal.SIGSEGV, result.stderr)
        self.assertEqual(result.stderr.strip(), "lockstep: stand_in.py ended with signal SIGSEGV; stand_in.py keeps going")
        self.assertEqual([r for _, r, _, _ in self.spans("a")], list(range(6)))  # every round of the survivor
        self.assertEqual([r for _, r, _, _ in self.spans("b")], [0, 1])

    def test_a_killed_one_ends_the_run_and_a_hanging_one_is_stopped(self):
        # b hangs in its round 1; a is killed from outside while b holds the turn: the coordinator,
        # waiting on b, stops it when its own SIGTERM comes, and says nothing it did not see
        argv = [sys.executable, "-m", "condbench.lockstep", "--", *self.command("a", 50), "::",
                *self.command("b", 50)]
        coordinator = subprocess.Popen(argv, env={**os.environ, "HANG_AT": "1"}, stderr=subprocess.PIPE, text=True)
        try:
            time.sleep(3)
            coordinator.terminate()
            _, err = coordinator.communicate(timeout=30)
            self.assertEqual(coordinator.returncode, 128 + signal.SIGTERM, err)
        finally:
            if coordinator.poll() is None:
                coordinator.kill()
        out = subprocess.run(["pgrep", "-f", self.stand_in], capture_output=True, text=True)
        self.assertEqual(out.stdout, "", "a stand-in outlived the coordinator")

    def test_one_killed_from_outside_ends_the_run(self):
        argv = [sys.executable, "-m", "condbench.lockstep", "--", *self.command("a", 500), "::",
                *self.command("b", 500)]
        coordinator = subprocess.Popen(argv, stderr=subprocess.PIPE, text=True)
        try:
            time.sleep(3)
            children = subprocess.run(["pgrep", "-P", str(coordinator.pid)], capture_output=True, text=True).stdout.split()
            victim = next(pid for pid in children
                          if open(f"/proc/{pid}/cmdline").read().split("\0")[2] == "b")  # stand_in.py b ...
            os.kill(int(victim), signal.SIGKILL)
            _, err = coordinator.communicate(timeout=30)
            self.assertEqual(coordinator.returncode, 128 + signal.SIGKILL, err)
            self.assertEqual(err.strip(), "lockstep: stand_in.py ended with signal SIGKILL; stopped stand_in.py")
        finally:
            if coordinator.poll() is None:
                coordinator.kill()
        self.assertEqual(subprocess.run(["pgrep", "-f", self.stand_in], capture_output=True, text=True).stdout, "")

    def test_both_are_given_the_allowance_and_a_bad_one_is_one_line(self):
        for options, env, given in (((), {}, "1"), (("--allowance", "1.2"), {}, "1.2"),
                                    ((), {"CONDBENCH_LOCKSTEP_ALLOWANCE": "1.15"}, "1.15")):
            with self.subTest(options=options, env=env):
                result = coordinate(self.command("a", 2), self.command("b", 2), options=options,
                                    env={**os.environ, **env})
                self.assertEqual(result.returncode, 0, result.stderr)
                for name in ("a", "b"):
                    with open(os.path.join(self.dir.name, name + ".txt")) as f:
                        self.assertEqual({line.split()[4] for line in f}, {given})
        for bad in ("0.9", "11", "x"):
            with self.subTest(bad=bad):
                result = coordinate(self.command("a", 1), self.command("b", 1), options=("--allowance", bad))
                self.assertEqual(result.returncode, 2, result.stderr)
                self.assertEqual(result.stderr.strip(),
                                 f"lockstep: CONDBENCH_LOCKSTEP_ALLOWANCE: '{bad}' is not a number from 1 to 10")

    def test_bad_usage_is_one_line_and_exit_2(self):
        for argv in ([], ["--", "true"], ["--", "true", "::"], ["--", "::", "true"]):
            with self.subTest(argv=argv):
                result = subprocess.run([sys.executable, "-m", "condbench.lockstep", *argv], capture_output=True,
                                        text=True, timeout=30)
                self.assertEqual(result.returncode, 2, result.stderr)
        result = subprocess.run([sys.executable, self.stand_in, "x", "1", os.devnull], capture_output=True, text=True,
                                timeout=30, env={**os.environ, "CONDBENCH_LOCKSTEP": "7,9"})
        self.assertEqual(result.returncode, 1)
        self.assertIn("CONDBENCH_LOCKSTEP: '7,9' is not GO_FD,DONE_FD,ID", result.stderr)


if __name__ == "__main__":
    unittest.main()
