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
                json.dump({"compile_s": {"stage0.pt2": 41.234, "final.pt2": 3.0}}, f)
            result = command("compile-times", folder)
            self.assertEqual(result.returncode, 0, result.stderr)
            self.assertEqual(result.stdout.strip(), "model file compile: stage0.pt2 41.2 s, final.pt2 3.0 s")
            self.assertEqual(command("compile-times", os.path.join(folder, "absent")).returncode, 2)


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


if __name__ == "__main__":
    unittest.main(verbosity=2)
