"""condbench.device_check, what scripts/device-check and scripts/device-prepare read in Python: a
trace's host ranges and GPU spans, a model file's compile times, a torch wheel's build parts. Runs
without the C++ build or torch. Usage: test_device_tools.py."""
import json
import os
import subprocess
import sys
import tempfile
import unittest
import zipfile

from condbench import device_check


def command(*args):
    return subprocess.run([sys.executable, "-m", "condbench.device_check", *args], capture_output=True, text=True,
                          timeout=60)


class Trace(unittest.TestCase):
    def write(self, events):
        path = os.path.join(self.dir.name, "trace.json")
        with open(path, "w") as f:
            json.dump({"traceEvents": events}, f)
        return path

    def setUp(self):
        self.dir = tempfile.TemporaryDirectory()
        self.addCleanup(self.dir.cleanup)

    def test_host_ranges_and_gpu_spans_are_told_apart_by_their_track(self):
        path = self.write([
            {"ph": "M", "name": "thread_name", "tid": 7, "args": {"name": device_check.GPU_TRACK}},
            {"ph": "M", "name": "thread_name", "tid": 1, "args": {"name": "main"}},
            {"ph": "X", "tid": 1, "name": "inference", "ts": 0, "dur": 30.0},
            {"ph": "X", "tid": 1, "name": "stage", "ts": 1, "dur": 3.0},
            {"ph": "X", "tid": 7, "name": "inference", "ts": 2, "dur": 12.5},
            {"ph": "X", "tid": 7, "name": "inference", "ts": 40, "dur": 11.25},
        ])
        host, spans = device_check.trace_summary(path)
        self.assertEqual(len(host), 1)
        self.assertEqual([e["dur"] for e in spans], [12.5, 11.25])
        result = command("trace", path)
        self.assertEqual(result.returncode, 0, result.stderr)
        self.assertEqual(result.stdout.strip(), "trace: 1 host inference ranges, 2 GPU spans, durations (us): 12.5 11.2")

    def test_a_trace_without_gpu_spans_fails(self):
        path = self.write([{"ph": "X", "tid": 1, "name": "inference", "ts": 0, "dur": 30.0}])
        result = command("trace", path)
        self.assertEqual(result.returncode, 1)
        self.assertIn("0 GPU spans", result.stdout)

    def test_an_unreadable_trace_is_one_line_and_exit_2(self):
        path = os.path.join(self.dir.name, "bad.json")
        with open(path, "w") as f:
            f.write("{not json")
        result = command("trace", path)
        self.assertEqual(result.returncode, 2)
        self.assertEqual(len(result.stderr.strip().splitlines()), 1, result.stderr)


class CompileTimes(unittest.TestCase):
    def test_each_package_with_its_seconds(self):
        with tempfile.TemporaryDirectory() as folder:
            with open(os.path.join(folder, "manifest.json"), "w") as f:
                json.dump({"source": "/m/mlp.py", "weights": None, "device": "cuda", "classes": 10, "digest": "0" * 16,
                           "compile_s": {"stage0.pt2": 41.234, "final.pt2": 3.0}}, f)
            result = command("compile-times", folder)
            self.assertEqual(result.returncode, 0, result.stderr)
            self.assertEqual(result.stdout.strip(), "model file compile: stage0.pt2 41.2 s, final.pt2 3.0 s")
            self.assertEqual(command("compile-times", os.path.join(folder, "absent")).returncode, 2)

    def test_a_manifest_no_compile_wrote_is_one_line(self):
        # read_manifest's refusals: each a ProtocolError naming the file, never a traceback
        good = {"source": "/m/mlp.py", "weights": None, "device": "cpu", "classes": 10, "digest": "0" * 16}
        for change in [{"classes": float("inf")}, {"device": "tpu"}, {"reads": [{"path": "/m/helper.py"}]},
                       {"compile_s": {"stage0.pt2": "slow"}}, {"files": ["stage0.pt2"]}, {"source": None}]:
            with self.subTest(change=change), tempfile.TemporaryDirectory() as folder:
                with open(os.path.join(folder, "manifest.json"), "w") as f:
                    json.dump({**good, **change}, f)
                result = command("compile-times", folder)
                self.assertEqual(result.returncode, 2, result.stderr)
                self.assertEqual(len(result.stderr.strip().splitlines()), 1, result.stderr)
                self.assertIn("manifest.json: not a manifest model_file.py compile wrote", result.stderr)


class UnpackWheel(unittest.TestCase):
    def test_only_what_a_build_needs_is_extracted(self):
        with tempfile.TemporaryDirectory() as folder:
            wheel = os.path.join(folder, "torch-0-cp312-none-any.whl")
            with zipfile.ZipFile(wheel, "w") as z:
                for name in ("torch/include/ATen/ATen.h", "torch/share/cmake/Torch/TorchConfig.cmake",
                             "torch/lib/libc10.so", "torch/_C.py", "torch-0.dist-info/METADATA"):
                    z.writestr(name, "x")
            out = os.path.join(folder, "out")
            result = command("unpack-wheel", wheel, out)
            self.assertEqual(result.returncode, 0, result.stderr)
            found = sorted(os.path.relpath(os.path.join(d, f), out) for d, _, files in os.walk(out) for f in files)
            self.assertEqual(found, ["torch/include/ATen/ATen.h", "torch/lib/libc10.so",
                                     "torch/share/cmake/Torch/TorchConfig.cmake"])
            not_a_wheel = os.path.join(folder, "not.whl")
            with open(not_a_wheel, "w") as f:
                f.write("no zip")
            self.assertEqual(command("unpack-wheel", not_a_wheel, out).returncode, 2)



class KernelTable(unittest.TestCase):
    def test_gpu_kernels_by_total_time_with_calls_and_mean(self):
        events = [{"ph": "X", "cat": "kernel", "name": "gemv", "dur": 3.0},
                  {"ph": "X", "cat": "kernel", "name": "gemv", "dur": 5.0},
                  {"ph": "X", "cat": "kernel", "name": "exit_test", "dur": 2.0},
                  {"ph": "X", "cat": "cpu_op", "name": "aten::linear", "dur": 50.0}]  # the host's: not counted
        with tempfile.TemporaryDirectory() as d:
            path = os.path.join(d, "k.json")
            with open(path, "w") as f:
                json.dump({"traceEvents": events}, f)
            lines = device_check.kernel_table(path)
        self.assertEqual(lines[0], "GPU kernels and copies: 3 events, 10 us in all")
        self.assertEqual(lines[2].split(), ["8.0", "80.0%", "2", "4.00", "gemv"])
        self.assertEqual(lines[3].split(), ["2.0", "20.0%", "1", "2.00", "exit_test"])


class LoadExperiment(unittest.TestCase):
    """condbench.load_experiment's verdict (its compiles need torch and a GPU: the device check runs it)."""

    def test_the_verdict_names_the_one_way_that_failed(self):
        try:
            from condbench.load_experiment import verdict
        except ImportError as e:  # it imports condbench.inductor, which needs no torch to import
            self.fail(str(e))
        ok = ["ok", "ok"]
        self.assertTrue(verdict({"A": ["failed: signal 11", "ok"], "B": ok, "C": ["ok"], "C here": ["ok"]})
                        .startswith("race:"))
        self.assertTrue(verdict({"A": ok, "B": ok, "C": ["ok"], "C here": ["failed: ..."]}).startswith("load path:"))
        self.assertTrue(verdict({"A": ["differs"], "B": ["failed"], "C": ["failed"], "C here": ["failed"]})
                        .startswith("loader:"))
        self.assertTrue(verdict({"A": ok, "B": ok, "C": ["ok"], "C here": ["ok"]}).startswith("none:"))
        self.assertEqual(verdict({"A": ok, "B": ["differs", "ok"], "C": ["ok"], "C here": ["ok"]}),
                         "unclear: B differs")

if __name__ == "__main__":
    unittest.main(verbosity=2)
