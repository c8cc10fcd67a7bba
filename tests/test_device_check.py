"""scripts/device-check, as CI can run it: its budget (each call's step limits fit its deadline,
results first), then pack the build into a bundle (--prepare --from-build), --dry-run both calls
without a GPU, and check what comes back in $OUT — the summary, a valid JSON of the stand-in suite
written benchmark by benchmark, and the archive of logs and report. Also the checkpointed JSON of
condbench itself: valid after every benchmark, not only at the end.
Usage: test_device_check.py SOURCE_DIR BUILD_DIR."""
import json
import os
import re
import shutil
import subprocess
import sys
import tarfile
import tempfile
import time
import unittest

from tools import run  # tests/tools.py: the tests' shared helpers

SOURCE, BUILD = sys.argv[1], sys.argv[2]
del sys.argv[1:3]
SCRIPT = os.path.join(SOURCE, "scripts", "device-check")


def read(path):
    with open(path) as f:
        return f.read()


def gpu_visible():
    smi = shutil.which("nvidia-smi")
    return smi is not None and subprocess.run([smi, "-L"], capture_output=True).returncode == 0


class RequireGpu(unittest.TestCase):
    @unittest.skipIf(gpu_visible(), "a GPU is visible here: the GPU tests run")
    def test_a_gpu_test_that_cannot_see_the_gpu_fails_under_the_device_check(self):
        tests = os.path.join(BUILD, "tests", "condbench_gpu_tests")
        plain = run(tests, "--gtest_filter=CudaRecovery.*")
        self.assertEqual(plain.returncode, 0, plain.stdout)
        self.assertIn("no CUDA device on this machine", plain.stdout)
        required = run(tests, "--gtest_filter=CudaRecovery.*", env={**os.environ, "CONDBENCH_REQUIRE_GPU": "1"})
        self.assertNotEqual(required.returncode, 0, required.stdout)
        self.assertIn("CONDBENCH_REQUIRE_GPU=1, but no CUDA device is visible to this process", required.stdout)
        self.assertNotIn("[  SKIPPED ]", required.stdout)


def budget(call):
    """The rows of a call's printed budget: (step, limit or None for "rest", estimate), and the
    deadline and reserve it states."""
    printed = run(SCRIPT, "--budget", "--call", str(call))
    assert printed.returncode == 0, printed.stderr
    rows, deadline, reserve = [], None, None
    for line in printed.stdout.splitlines():
        step = re.match(r"^ {9}([a-z0-9-]+) +(\d+ s|rest) +(\d+) s  ", line)
        if step and step.group(1) != "total":
            rows.append((step.group(1), None if step.group(2) == "rest" else int(step.group(2)[:-2]),
                         int(step.group(3))))
        total = re.search(r"deadline (\d+) s, (\d+) s kept", line)
        if total:
            deadline, reserve = int(total.group(1)), int(total.group(2))
    return rows, deadline, reserve


class Budget(unittest.TestCase):
    def test_every_step_gets_its_whole_limit_inside_its_call(self):
        for call in (1, 2):
            rows, deadline, reserve = budget(call)
            self.assertTrue(rows and deadline and reserve, call)
            limits = sum(limit for _, limit, _ in rows if limit is not None)
            usable = deadline - reserve
            self.assertLessEqual(limits, usable - 5, f"call {call}: the step limits outgrow the deadline")
            self.assertLess(sum(estimate for *_, estimate in rows), usable, f"call {call}")
            if any(limit is None for _, limit, _ in rows):  # "rest": what the limits leave, at least 30 s
                self.assertGreaterEqual(usable - limits, 30, call)
            # The device tool: at most 10 minutes a command, and both calls with a machine's start
            # inside 15 minutes of device time.
            self.assertLessEqual(deadline + 30, 600)
        self.assertLessEqual(budget(1)[1] + 30 + budget(2)[1] + 30 + 120, 900)

    def test_the_first_call_holds_the_results_in_order(self):
        first = [name for name, *_ in budget(1)[0]]
        second = [name for name, *_ in budget(2)[0]]
        order = lambda prefix: [i for i, name in enumerate(first) if name.startswith(prefix)]
        self.assertLess(max(order("gpu-tests-")), min(order("suite")))
        self.assertLess(max(order("suite")), first.index("report"))
        self.assertLess(first.index("report"), first.index("trace"))
        # call 2: the compiles start first; beside them only GPU work that times nothing; everything
        # compiled before anything that needs it is tested or timed
        self.assertEqual(second[0], "compile")
        waited = second.index("compile-wait")
        self.assertEqual(set(second[1:waited]),
                         {"gpu-tests-recovery", "gpu-tests-torch", "gpu-tests-decoder", "kernels"})
        self.assertEqual(second[-1], "memcheck")

    def test_every_step_the_script_runs_has_a_row(self):
        script = read(SCRIPT)
        table = script[script.index("<<'TABLE'"):script.index("\nTABLE\n")]
        rows = {line.split()[1] for line in table.splitlines()[1:] if line.strip()}
        used = set(re.findall(r"^\s*(?:if )?(?:step|gpu_tests|report|suite_in_lockstep) ([a-z0-9-]+)(?: |$)", script,
                              re.M))
        self.assertGreater(len(used), 15)
        self.assertEqual(used - rows, set())
        self.assertEqual(rows - used, set(), "a row no step uses")


class UndeclaredSkips(unittest.TestCase):
    """On the GPU machine a GPU-test step fails when a test skipped for a reason no strategy
    declared: the command the script runs (condbench.results gtest-skips), on real gtest output."""

    def check(self, log_text):
        command = "python3 -m condbench.results gtest-skips \"$logs/$name.log\""
        self.assertIn(f"skips=$({command})", read(SCRIPT))
        with tempfile.TemporaryDirectory() as tmp:
            log = os.path.join(tmp, "step.log")
            with open(log, "w") as f:
                f.write(log_text)
            result = run(sys.executable, "-m", "condbench.results", "gtest-skips", log)
        self.assertEqual(result.returncode, 0, result.stderr)
        skipped, undeclared, *names = result.stdout.split()
        return int(skipped), int(undeclared), names

    def test_a_skip_for_want_of_a_gpu_is_undeclared(self):
        tests = os.path.join(BUILD, "tests", "condbench_gpu_tests")
        if gpu_visible():
            self.skipTest("a GPU is visible here: these tests run")
        plain = run(tests, "--gtest_filter=*cuda_native_graph_cond_default:FusedLaunch.*")
        skipped, undeclared, names = self.check(plain.stdout)
        # 4 of the strategy, 1 of its stuck-conditional check, 1 of the kernel
        self.assertEqual((skipped, undeclared), (6, 6), plain.stdout)
        self.assertIn("Strategies/CudaStrategies.EveryScenarioAndBatchMatchesTheReference/cuda_native_graph_cond_default",
                      names)

    def test_a_declared_skip_is_not(self):
        log = ("[ RUN      ] Strategies/CudaStrategies.Counters/cuda_aoti_cond_default\n"
               "tests/gpu/test_cuda_strategies.cpp:113: Skipped\n"
               "unsupported: cuda/aoti/cond runs one row at a time\n\n"
               "[  SKIPPED ] Strategies/CudaStrategies.Counters/cuda_aoti_cond_default (0 ms)\n"
               "[ RUN      ] Strategies/CudaStrategies.Counters/cuda_native_fused_default\n"
               "[       OK ] Strategies/CudaStrategies.Counters/cuda_native_fused_default (3 ms)\n")
        self.assertEqual(self.check(log), (1, 0, []))


class DryRun(unittest.TestCase):
    def test_prepare_then_dry_run(self):
        with tempfile.TemporaryDirectory() as tmp:
            bundle, out = os.path.join(tmp, "bundle"), os.path.join(tmp, "out")
            prepared = run(SCRIPT, "--prepare", "--from-build", BUILD, "--bundle", bundle)
            self.assertEqual(prepared.returncode, 0, prepared.stdout + prepared.stderr)
            for exe in ("condbench", "condbench-infer", "condbench-report", "condbench_gpu_tests"):
                self.assertTrue(os.access(os.path.join(bundle, "bin", exe), os.X_OK), exe)
            self.assertTrue(any(f.startswith("libbenchmark.so") for f in os.listdir(os.path.join(bundle, "lib"))))
            manifest = read(os.path.join(bundle, "BUNDLE"))
            self.assertIn("torch=", manifest)

            self.assertIn("of the tool's 64 MiB", prepared.stdout)

            dry = run(SCRIPT, "--dry-run", "--bundle", bundle, "--out", out)
            self.assertEqual(dry.returncode, 0, dry.stdout + dry.stderr)
            self.assertIn("call 1   step", dry.stdout)  # the budget table comes first
            # Exactly what the device tool can bring back: a few files, no folders.
            self.assertEqual(sorted(os.listdir(out)),
                             ["device-check.tar.gz", "dry-run-peer.json", "dry-run.json", "summary.txt"])
            summary = read(os.path.join(out, "summary.txt"))
            self.assertIn("ok       gpu-tests-native", summary)
            self.assertIn("skipped  trace: no GPU", summary)
            self.assertIn("ok       suite-cpu", summary)
            self.assertIn("ok       report", summary)
            self.assertNotIn("memcheck", summary)  # the second call's
            result = json.loads(read(os.path.join(out, "dry-run.json")))
            self.assertEqual(result["context"]["condbench_interleaving"], "rounds")
            names = {b["run_name"] for b in result["benchmarks"]}
            self.assertIn("early_exit/cpu/native/fused/exit:1/batch:1/hidden:64/blocks:3/real_time", names)
            # the stand-in suite and the peer were one lockstep: the same id in both files, 5 rounds each
            peer = json.loads(read(os.path.join(out, "dry-run-peer.json")))
            self.assertTrue(result["context"]["condbench_lockstep"])
            self.assertEqual(peer["context"]["condbench_lockstep"], result["context"]["condbench_lockstep"])
            peer_names = {b["run_name"] for b in peer["benchmarks"] if b.get("run_type") == "iteration"}
            self.assertEqual({n.split("/")[3] for n in peer_names}, {"py_eager_if", "py_masked"})
            with tarfile.open(os.path.join(out, "device-check.tar.gz")) as archive:
                members = archive.getnames()
            self.assertTrue(any(m.endswith("logs/gpu-tests-native.log") for m in members), members)
            self.assertTrue(any(m.endswith("report/report.md") for m in members), members)

            # Each suite step's estimate, from the cases its selection holds, within its limit
            # (or said to be skipped where this build has no CUDA to list cases for); the peer's
            # from its variants.
            for step in ("suite", "suite-transformer", "suite-decoder"):
                self.assertRegex(summary, rf"(ok       estimate {step}: [1-9]\d* cases x [\d.]+ s \+ \d+ s(?: \+ "
                                          rf"the peer's \d+ s)? = \d+ s, within its limit of \d+ s|"
                                          rf"skipped  estimate {step}: this build cannot)")
            self.assertRegex(summary, r"estimate suite: .* \+ the peer's 23 s = ")  # 5 eager variants on the mlp

            first_summary = summary
            second = run(SCRIPT, "--dry-run", "--call", "2", "--bundle", bundle, "--out", out)
            self.assertEqual(second.returncode, 0, second.stdout + second.stderr)
            self.assertIn("call 2   step", second.stdout)
            summary = read(os.path.join(out, "summary.txt"))
            self.assertIn("skipped  aoti: no GPU", summary)
            self.assertIn("skipped  memcheck: no GPU", summary)
            for step in ("suite-aoti", "suite-model-file"):
                self.assertRegex(summary, rf"(ok|skipped)  +estimate {step}: ")

            # A selection that outgrows its step fails the dry run: the same script with the
            # suite's limit cut to 10 s (where this build lists CUDA cases; CI's does).
            if "ok       estimate suite:" not in first_summary:
                print("device_check: this build lists no CUDA cases; the cut-limit check did not run", file=sys.stderr)
            else:
                copy = os.path.join(tmp, "copy", "scripts", "device-check")
                os.makedirs(os.path.dirname(copy))
                with open(copy, "w") as f:
                    f.write(re.sub(r"^1 suite +\d+ ", "1 suite                10 ", read(SCRIPT), count=1, flags=re.M))
                os.chmod(copy, 0o755)
                cut = run(copy, "--dry-run", "--bundle", bundle, "--out", out)
                self.assertEqual(cut.returncode, 1, cut.stdout + cut.stderr)
                self.assertRegex(read(os.path.join(out, "summary.txt")),
                                 r"FAILED   estimate suite: \d+ cases x [\d.]+ s \+ \d+ s \+ the peer's \d+ s = \d+ s, "
                                 r"over its limit of 10 s")

    def test_prepare_refuses_a_bundle_a_device_call_could_not_carry(self):
        with tempfile.TemporaryDirectory() as tmp:
            prepared = run(SCRIPT, "--prepare", "--from-build", BUILD, "--bundle", os.path.join(tmp, "bundle"),
                           env={**os.environ, "CONDBENCH_CARRY_LIMIT_MIB": "1"})
            self.assertEqual(prepared.returncode, 1, prepared.stdout + prepared.stderr)
            self.assertIn("over 1 MiB", prepared.stderr)
            self.assertEqual(os.listdir(tmp), [])  # nothing left behind, not even the refused bundle

    def test_dry_run_without_a_bundle_fails_saying_so(self):
        with tempfile.TemporaryDirectory() as tmp:
            dry = run(SCRIPT, "--dry-run", "--bundle", os.path.join(tmp, "none"), "--out", os.path.join(tmp, "out"))
            self.assertEqual(dry.returncode, 1)
            self.assertIn("no bundle", dry.stdout)

    def test_help_and_bad_arguments(self):
        helped = run(SCRIPT, "--help")
        self.assertEqual(helped.returncode, 0)
        self.assertIn("--prepare", helped.stdout)
        bad = run(SCRIPT, "--frobnicate")
        self.assertEqual(bad.returncode, 2)
        self.assertIn("unknown argument", bad.stderr)
        bad = run(SCRIPT, "--call", "3")
        self.assertEqual(bad.returncode, 2)
        self.assertIn("--call must be 1 or 2", bad.stderr)


class CallTwoCompile(unittest.TestCase):
    def test_a_compile_killed_at_its_limit_loses_neither_the_other_nor_its_code(self):
        # scripts/device-compile, call 2's compile step, with stand-ins: the aoti compile finishes
        # (a package written, exit 0); the model file's is still compiling when its limit ends it.
        with tempfile.TemporaryDirectory() as tmp:
            work, packages = os.path.join(tmp, "work"), os.path.join(tmp, "aoti")
            env = {**os.environ,
                   "CONDBENCH_COMPILE_AOTI": f"mkdir -p {packages} && sleep 1 && echo pt2 > {packages}/cond.pt2",
                   "CONDBENCH_COMPILE_MODEL_FILE": "echo started; sleep 60; echo never",
                   # the upstream reproducer's verdict is a fact, its exit code never the step's
                   "CONDBENCH_COMPILE_REPRODUCER": "echo 'verdict: present (torch 0.0)'; exit 3"}
            started = time.monotonic()
            result = run(os.path.join(SOURCE, "scripts", "device-compile"), work, "4", env=env, timeout=60)
            self.assertLess(time.monotonic() - started, 20)  # its limit, not the stand-in's minute
            self.assertEqual(result.returncode, 1, result.stdout + result.stderr)
            self.assertEqual(read(os.path.join(work, "aoti.rc")).strip(), "0")
            self.assertEqual(read(os.path.join(packages, "cond.pt2")).strip(), "pt2")
            self.assertEqual(read(os.path.join(work, "model-file.rc")).strip(), "124")
            self.assertEqual(read(os.path.join(work, "model-file.out")).strip(), "started")
            self.assertIn("device-compile: aoti: rc 0", result.stdout)
            self.assertIn("device-compile: model-file: rc 124", result.stdout)
            # both finish: exit 0
            env["CONDBENCH_COMPILE_MODEL_FILE"] = "echo /folder"
            result = run(os.path.join(SOURCE, "scripts", "device-compile"), work, "20", env=env, timeout=60)
            self.assertEqual(result.returncode, 0, result.stdout + result.stderr)
            self.assertEqual(read(os.path.join(work, "model-file.rc")).strip(), "0")
            self.assertEqual(read(os.path.join(work, "reproducer.rc")).strip(), "3")
            self.assertIn("verdict: present", read(os.path.join(work, "reproducer.out")))

    def test_the_compiles_own_limit_ends_inside_the_steps_that_wait_for_it(self):
        # The compiles run in the background from the compile step to compile-wait's end: their own
        # limit (device-compile's, with its 3 s to kill) must end before that span does.
        script = read(SCRIPT)
        limit = int(re.search(r"^  compile_limit=(\d+)$", script, re.M).group(1))
        self.assertIn('"$1/scripts/device-compile" "$2" "$3" > "$2/compile.log" 2>&1 & echo $! > "$2/compile.pid"',
                      script)
        self.assertIn('_ "$root" "$work" "$compile_limit"', script)
        rows = [name_limit for name_limit in budget(2)[0]]
        names = [name for name, *_ in rows]
        span = sum(limit for _, limit, _ in rows[:names.index("compile-wait") + 1])
        self.assertLessEqual(limit + 3, span)
        self.assertIn("STEP_LIMIT=$limit timeout", script)

    def test_without_a_bundle_it_stops_at_once_saying_so(self):
        # No fallback build: the GPU machine could not build (no Google Benchmark, GoogleTest, network).
        self.assertNotIn("building against this machine's torch", read(SCRIPT))
        with tempfile.TemporaryDirectory() as tmp:
            result = run(SCRIPT, "--bundle", os.path.join(tmp, "none"), "--out", os.path.join(tmp, "out"))
            self.assertEqual(result.returncode, 1)
            self.assertIn("run scripts/device-check --prepare on the CPU machine and carry", result.stdout)


def checkpoint_when(path, proc, enough, tries=1200):
    """The checkpoint at `path` once enough(its JSON) holds, read while the run `proc` goes on; None
    when the run ended first or no such checkpoint appeared."""
    for _ in range(tries):
        try:
            data = json.loads(read(path))
            if enough(data):
                return data
        except (OSError, ValueError):
            pass
        if proc.poll() is not None:
            return None
        time.sleep(0.05)
    return None


class Checkpoint(unittest.TestCase):
    def test_the_checkpoint_is_valid_json_of_what_ran(self):
        with tempfile.TemporaryDirectory() as tmp:
            path = os.path.join(tmp, "partial.json")
            result = run(os.path.join(BUILD, "condbench"), "--device=cpu", "--strategy=fused", "--batch=1",
                         "--hidden=64", "--scenario=exit:1,exit:2", "--benchmark_repetitions=2",
                         "--benchmark_min_time=0.01", f"--checkpoint-out={path}")
            self.assertEqual(result.returncode, 0, result.stderr)
            data = json.loads(read(path))
            self.assertIn("context", data)
            iterations = [b for b in data["benchmarks"]
                          if b.get("run_type") == "iteration" and b["run_name"].startswith("early_exit/")]
            self.assertEqual(len(iterations), 4)  # 2 scenarios x 2 repetitions
            self.assertFalse([f for f in os.listdir(tmp) if ".tmp" in f])

    def test_a_run_cut_short_leaves_the_benchmarks_that_finished(self):
        # The checkpoint after the first benchmark is what a killed run leaves: check it by reading
        # the file while the run is still going, from the second benchmark's start.
        with tempfile.TemporaryDirectory() as tmp:
            path = os.path.join(tmp, "partial.json")
            proc = subprocess.Popen([os.path.join(BUILD, "condbench"), "--device=cpu", "--strategy=fused,eager_host",
                                     "--batch=1", "--hidden=64", "--scenario=exit:1", "--benchmark_repetitions=1",
                                     "--benchmark_min_time=2", f"--checkpoint-out={path}"],
                                    stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
            try:
                seen = checkpoint_when(path, proc, lambda data: data["benchmarks"])
                proc.kill()
                proc.wait()
                self.assertIsNotNone(seen, "no checkpoint with a finished benchmark appeared")
                self.assertEqual(len(seen["benchmarks"]), 1)
            finally:
                if proc.poll() is None:
                    proc.kill()


    def test_a_run_in_rounds_cut_short_leaves_whole_rounds_judged_as_interleaved(self):
        # --rounds: every cell once a round, the checkpoint after each round. Killed mid-run, the file
        # holds whole rounds (every cell as many repetitions, each saying its round), and the report
        # judges its cells as one interleaved run: no drift allowance between them.
        with tempfile.TemporaryDirectory() as tmp:
            path = os.path.join(tmp, "partial.json")
            proc = subprocess.Popen([os.path.join(BUILD, "condbench"), "--device=cpu",
                                     "--strategy=fused,eager_host,masked", "--batch=1", "--hidden=64",
                                     "--benchmark_filter=^early_exit/cpu/(native|torch)/",
                                     "--scenario=exit:1", "--rounds", "--benchmark_repetitions=400",
                                     "--benchmark_min_time=0.01", f"--checkpoint-out={path}"],
                                    stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
            try:
                seen = checkpoint_when(path, proc, lambda data: len([
                    b for b in data["benchmarks"]
                    if b["run_name"].startswith("early_exit/") and not b.get("error_occurred")]) >= 3 * 6)  # 6 rounds
                proc.kill()
                proc.wait()
                self.assertIsNotNone(seen, "no checkpoint of six rounds appeared")
                self.assertEqual(seen["context"]["condbench_interleaving"], "rounds")
                rows = [b for b in seen["benchmarks"] if b.get("run_type") == "iteration"
                        and b["run_name"].startswith("early_exit/") and not b.get("error_occurred")]
                by_cell = {}
                for b in rows:
                    by_cell.setdefault(b["run_name"], []).append(int(b["round"]))
                self.assertEqual(len(by_cell), 3)
                rounds = sorted(by_cell.values())[0]
                self.assertEqual(rounds, list(range(len(rounds))))  # rounds 0, 1, ... n-1, none cut
                for name, seen_rounds in by_cell.items():
                    self.assertEqual(sorted(seen_rounds), rounds, name)
                # the report reads the cut file and judges its pairs with no allowance
                judged = run(os.path.join(BUILD, "condbench-report"), "--pairs", path)
                self.assertEqual(judged.returncode, 0, judged.stderr)
                pairs = json.loads(judged.stdout)["pairs"]
                self.assertEqual(len(pairs), 3)
                self.assertEqual({p["drift"] for p in pairs}, {1.0})
            finally:
                if proc.poll() is None:
                    proc.kill()



class KernelTrace(unittest.TestCase):
    def test_a_kernel_trace_is_a_chrome_trace_the_device_check_tables(self):
        # --kernel-trace: LibTorch's profiler over the run; on a CPU its host operators, which the
        # device check's table falls back to where no GPU kernel ran
        with tempfile.TemporaryDirectory() as tmp:
            path = os.path.join(tmp, "kernels.json")
            result = run(os.path.join(BUILD, "condbench"), "--device=cpu", "--strategy=masked", "--batch=1",
                         "--hidden=16", "--scenario=exit:4", "--benchmark_repetitions=1", "--benchmark_min_time=0.002",
                         "--benchmark_filter=^early_exit/cpu/torch/", f"--kernel-trace={path}",
                         f"--benchmark_out={tmp}/run.json")
            self.assertEqual(result.returncode, 0, result.stderr)
            self.assertEqual(sorted(os.listdir(tmp)), ["kernels.json", "run.json"])  # no temporary left
            with open(os.path.join(tmp, "run.json")) as f:
                self.assertEqual(json.load(f)["context"]["condbench_kernel_trace"], path)
            table = run(sys.executable, "-m", "condbench.device_check", "kernels", path, "--top", "3")
            self.assertEqual(table.returncode, 0, table.stderr)
            lines = table.stdout.splitlines()
            self.assertRegex(lines[0], r"^host operators \(no GPU events in this trace\): \d+ events")
            self.assertEqual(len(lines), 5)  # the heading, the columns, the top three
            self.assertIn("aten::linear", table.stdout)  # masked runs every Linear


if __name__ == "__main__":
    unittest.main()
