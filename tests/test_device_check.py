"""scripts/device-check, as CI can run it: pack the build into a bundle (--prepare --from-build),
then --dry-run it without a GPU, and check what comes back in $OUT — the summary, a valid JSON of
the stand-in suite written benchmark by benchmark, and the archive of logs and report. Also the
checkpointed JSON of condbench itself: valid after every benchmark, not only at the end.
Usage: test_device_check.py SOURCE_DIR BUILD_DIR."""
import json
import os
import shutil
import subprocess
import sys
import tarfile
import tempfile
import time
import unittest

SOURCE, BUILD = sys.argv[1], sys.argv[2]
del sys.argv[1:3]
SCRIPT = os.path.join(SOURCE, "scripts", "device-check")


def read(path):
    with open(path) as f:
        return f.read()


def run(*args, timeout=300, env=None):
    return subprocess.run(list(args), capture_output=True, text=True, timeout=timeout, env=env)


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

            dry = run(SCRIPT, "--dry-run", "--bundle", bundle, "--out", out)
            self.assertEqual(dry.returncode, 0, dry.stdout + dry.stderr)
            self.assertIn("limit", dry.stdout)  # the budget table comes first
            # Exactly what the device tool can bring back: a few files, no folders.
            self.assertEqual(sorted(os.listdir(out)), ["device-check.tar.gz", "h200.json", "summary.txt"])
            summary = read(os.path.join(out, "summary.txt"))
            for part in ("recovery", "native", "torch", "graph-cond"):
                self.assertIn(f"ok       gpu-tests-{part}", summary)
            self.assertIn("skipped  memcheck: no GPU", summary)
            self.assertIn("skipped  trace: no GPU", summary)
            self.assertIn("skipped  aoti: no GPU", summary)
            self.assertIn("ok       suite-cpu", summary)
            self.assertIn("ok       report", summary)
            result = json.loads(read(os.path.join(out, "h200.json")))
            names = {b["run_name"] for b in result["benchmarks"]}
            self.assertIn("early_exit/cpu/native/fused/exit:1/batch:1/hidden:64/blocks:3/real_time", names)
            with tarfile.open(os.path.join(out, "device-check.tar.gz")) as archive:
                members = archive.getnames()
            self.assertTrue(any(m.endswith("logs/gpu-tests-graph-cond.log") for m in members), members)
            self.assertTrue(any(m.endswith("report/report.md") for m in members), members)

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
                seen = None
                for _ in range(600):
                    try:
                        data = json.loads(read(path))
                        if data["benchmarks"]:
                            seen = data
                            break
                    except (OSError, ValueError):
                        pass
                    if proc.poll() is not None:
                        break
                    time.sleep(0.05)
                proc.kill()
                proc.wait()
                self.assertIsNotNone(seen, "no checkpoint with a finished benchmark appeared")
                self.assertEqual(len(seen["benchmarks"]), 1)
            finally:
                if proc.poll() is None:
                    proc.kill()


if __name__ == "__main__":
    unittest.main()
