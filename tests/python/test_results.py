"""condbench.results, the Python side's one reader of condbench's result files: what it accepts and
refuses (one line, exit 2), the merge the device check makes of its suites, the CUDA cases without
GPU time, a gtest log's undeclared skips. Runs without the C++ build or torch. Usage: test_results.py."""
import json
import os
import subprocess
import sys
import tempfile
import unittest

from condbench import results

ROOT = os.path.realpath(os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", ".."))
FIXTURES = os.path.join(ROOT, "tests", "report", "fixtures")


def cli(*args):
    return subprocess.run([sys.executable, "-m", "condbench.results", *args], capture_output=True, text=True,
                          timeout=60)


def row(name, **counters):
    return {"name": name, "run_name": name, "run_type": "iteration", "real_time": 1.0, **counters}


class Results(unittest.TestCase):
    def setUp(self):
        self.tmp = tempfile.TemporaryDirectory()

    def tearDown(self):
        self.tmp.cleanup()

    def file(self, name, doc):
        path = os.path.join(self.tmp.name, name)
        with open(path, "w") as f:
            f.write(doc if isinstance(doc, str) else json.dumps(doc))
        return path

    def test_reads_every_committed_result_file(self):
        folder = os.path.join(ROOT, "results")
        files = sorted(f for f in os.listdir(folder) if f.endswith(".json") and not os.path.islink(os.path.join(folder, f)))
        self.assertTrue(files)
        for name in files:
            with self.subTest(file=name):
                doc = results.read(os.path.join(folder, name))
                self.assertTrue(results.iterations(doc))

    def test_committed_results_are_kept_compact(self):
        # results/ travels with every GPU call (64 MiB in all, the bundle included): a run is kept
        # with `condbench.results keep`, one line, not as condbench printed it
        folder = os.path.join(ROOT, "results")
        for name in sorted(os.listdir(folder)):
            path = os.path.join(folder, name)
            if name.endswith(".json") and not os.path.islink(path):
                with self.subTest(file=name), open(path, encoding="utf-8") as f:
                    self.assertEqual(sum(1 for _ in f), 1)

    def test_keep_writes_the_same_numbers_compact_and_never_replaces(self):
        doc = {"context": {"condbench_schema": "2"},
               "benchmarks": [{"run_name": "a", "run_type": "iteration", "real_time": 0.1 + 0.2, "x": "µ"}]}
        source = self.file("run.json", json.dumps(doc, indent=2))
        kept = os.path.join(self.tmp.name, "kept.json")
        ran = cli("keep", source, kept)
        self.assertEqual(ran.returncode, 0, ran.stderr)
        with open(kept, encoding="utf-8") as f:
            text = f.read()
        self.assertEqual(json.loads(text), doc)
        self.assertEqual(text.count("\n"), 1)
        again = cli("keep", source, kept)
        self.assertEqual((again.returncode, len(again.stderr.strip().splitlines())), (2, 1), again.stderr)
        self.assertIn("never replaced", again.stderr)
        bad = cli("keep", self.file("bad.json", "{"), os.path.join(self.tmp.name, "other.json"))
        self.assertEqual(bad.returncode, 2, bad.stderr)
        self.assertFalse(os.path.exists(os.path.join(self.tmp.name, "other.json")))

    def test_refuses_what_condbench_did_not_write_in_one_line(self):
        context = {"condbench_schema": "1"}
        for doc, said in [("{", "not JSON"), ("[]", "no context object"), ({"context": {}}, "no condbench_schema"),
                          ({"context": {"condbench_schema": 1}, "benchmarks": []}, "no condbench_schema"),
                          ({"context": context}, "not a list of objects"),
                          ({"context": context, "benchmarks": [1]}, "not a list of objects"),
                          ("[" * 100000, "not JSON")]:
            with self.subTest(doc=str(doc)[:40]):
                path = self.file("bad.json", doc)
                with self.assertRaises(results.ResultFileError) as caught:
                    results.read(path)
                self.assertIn(said, str(caught.exception))
                ran = cli("context", path, "threads")
                self.assertEqual(ran.returncode, 2, ran.stderr)
                self.assertEqual(len(ran.stderr.strip().splitlines()), 1, ran.stderr)
                self.assertIn(path, ran.stderr)
        ran = cli("context", os.path.join(self.tmp.name, "none.json"), "threads")
        self.assertEqual((ran.returncode, len(ran.stderr.strip().splitlines())), (2, 1), ran.stderr)

    def test_context_prints_a_key_or_exits_1(self):
        path = self.file("r.json", {"context": {"condbench_schema": "1", "threads": 2, "device_name": "none"},
                                    "benchmarks": []})
        self.assertEqual(cli("context", path, "threads").stdout, "2\n")
        self.assertEqual(cli("context", path, "device_name").stdout, "none\n")
        self.assertEqual(cli("context", path, "absent").returncode, 1)

    def test_merge_keeps_the_first_context_and_every_row_in_order(self):
        a = self.file("a.json", {"context": {"condbench_schema": "1", "part": "a"}, "benchmarks": [row("x")]})
        b = self.file("b.json", {"context": {"condbench_schema": "1", "part": "b"}, "benchmarks": [row("y"), row("z")]})
        out = os.path.join(self.tmp.name, "merged.json")
        ran = cli("merge", out, a, os.path.join(self.tmp.name, "absent.json"), b)
        self.assertEqual(ran.returncode, 0, ran.stderr)
        merged = results.read(out)
        self.assertEqual(merged["context"]["part"], "a")
        self.assertEqual([r["name"] for r in merged["benchmarks"]], ["x", "y", "z"])
        self.assertEqual(sorted(os.listdir(self.tmp.name)), ["a.json", "b.json", "merged.json"])  # no temporary
        self.assertEqual(cli("merge", out, os.path.join(self.tmp.name, "absent.json")).returncode, 1)
        bad = self.file("bad.json", "{}")
        ran = cli("merge", out, a, bad)
        self.assertEqual(ran.returncode, 2, ran.stderr)
        self.assertEqual(results.read(out)["context"]["part"], "a")  # the earlier merge is left whole

    def test_merge_replaces_only_a_regular_file_no_input_and_takes_each_part_once(self):
        a = self.file("a.json", {"context": {"condbench_schema": "1"}, "benchmarks": [row("x")]})
        fifo, link = os.path.join(self.tmp.name, "fifo"), os.path.join(self.tmp.name, "link")
        os.mkfifo(fifo)
        os.symlink(a, link)
        for out, parts, said in [(fifo, [a], "is a FIFO"), (link, [a], "is a symbolic link"),
                                 (self.tmp.name, [a], "is a folder"), (a, [a], "is the part"),
                                 (os.path.join(self.tmp.name, "m.json"), [a, link], "given twice")]:
            with self.subTest(said=said):
                ran = cli("merge", out, *parts)
                self.assertEqual(ran.returncode, 2, ran.stderr)
                self.assertEqual(len(ran.stderr.splitlines()), 1, ran.stderr)
                self.assertIn(said, ran.stderr)
        self.assertEqual(sorted(os.listdir(self.tmp.name)), ["a.json", "fifo", "link"])
        self.assertEqual(results.read(a)["benchmarks"], [row("x")])
        # a FIFO to read is refused at once, by every command (opening it would wait for a writer)
        for args in [["context", fifo, "k"], ["merge", os.path.join(self.tmp.name, "m.json"), fifo],
                     ["keep", fifo, os.path.join(self.tmp.name, "k.json")], ["missing-gpu-us", fifo],
                     ["gtest-skips", fifo]]:
            with self.subTest(command=args[0]):
                ran = cli(*args)
                self.assertEqual((ran.returncode, ran.stderr), (2, f"results: {fifo}: not a regular file (a FIFO): "
                                                                   "give a file\n"))

    def test_names_the_cuda_cases_without_gpu_time(self):
        doc = {"context": {"condbench_schema": "1"}, "benchmarks": [
            row("early_exit/cuda/torch/masked/exit:1/batch:1", gpu_us=3.0),
            row("early_exit/cuda/torch/graph_cond/exit:1/batch:1"),
            row("early_exit/cuda/torch/graph_while/exit:1/batch:1/model:decoder", error_occurred=True),
            row("early_exit/cpu/torch/masked/exit:1/batch:1"),
            {"name": "early_exit/cuda/torch/masked/exit:1/batch:1_median", "run_type": "aggregate"}]}
        missing, cases = results.cases_without_gpu_us(doc)
        self.assertEqual(missing, ["early_exit/cuda/torch/graph_cond/exit:1/batch:1"])
        self.assertEqual(len(cases), 2)
        ran = cli("missing-gpu-us", self.file("r.json", doc))
        self.assertEqual(ran.stdout, "warning  1 of 2 CUDA cases came back without gpu_us: "
                                     "early_exit/cuda/torch/graph_cond/exit:1/batch:1\n")
        doc["benchmarks"] = doc["benchmarks"][:1]
        self.assertEqual(cli("missing-gpu-us", self.file("r.json", doc)).stdout, "")

    def test_a_gtest_skip_must_say_the_strategy_declared_it(self):
        log = ("[ RUN      ] Cuda.A\nunsupported: batch > 4\n[  SKIPPED ] Cuda.A (0 ms)\n"
               "[ RUN      ] Cuda.B\n[       OK ] Cuda.B (1 ms)\n"
               "[ RUN      ] Cuda.C\nno GPU\n[  SKIPPED ] Cuda.C (0 ms)\n")
        self.assertEqual(results.gtest_skips(log), (["Cuda.A", "Cuda.C"], ["Cuda.C"]))
        self.assertEqual(cli("gtest-skips", self.file("gtest.log", log)).stdout, "2 1 Cuda.C\n")

    def test_bad_usage_is_one_line_and_exit_2(self):
        for args in [[], ["nonsense"], ["context", "f"], ["merge", "out"], ["missing-gpu-us"]]:
            ran = cli(*args)
            self.assertEqual((ran.returncode, len(ran.stderr.strip().splitlines())), (2, 1), f"{args}: {ran.stderr}")


if __name__ == "__main__":
    unittest.main(verbosity=2)
