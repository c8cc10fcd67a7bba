"""scripts/run_history.py: every run kept in results/runs/, results/latest.* on the newest complete
one, and a filtered run never replacing a full one as latest without saying so."""
import json
import os
import stat
import subprocess
import sys
import tempfile
import unittest

SCRIPT = os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "scripts", "run_history.py")


def promote(results, stamp, *args, own=()):
    return subprocess.run([sys.executable, SCRIPT, "promote", results, stamp, *own, "--", *args],
                          capture_output=True, text=True, timeout=60)


class RunHistory(unittest.TestCase):
    def setUp(self):
        self.dir = tempfile.TemporaryDirectory()
        self.results = self.dir.name
        os.makedirs(os.path.join(self.results, "runs"))

    def tearDown(self):
        self.dir.cleanup()

    def make_run(self, stamp, python=False, selection="suite"):
        """A run's files; its result's context says what condbench selected (None: says nothing)."""
        runs = os.path.join(self.results, "runs")
        for name in [f"{stamp}.log"] + ([f"{stamp}-python.json"] if python else []):
            with open(os.path.join(runs, name), "w") as f:
                f.write(stamp)
        context = {"condbench_schema": "1"} if selection is None else {"condbench_schema": "1", "condbench_selection": selection}
        with open(os.path.join(runs, f"{stamp}.json"), "w") as f:
            json.dump({"context": context, "benchmarks": [], "stamp": stamp}, f)
        os.makedirs(os.path.join(runs, f"{stamp}-report"))

    def latest(self, name="latest.json"):
        path = os.path.join(self.results, name)
        if not os.path.lexists(path):
            return None
        self.assertTrue(os.path.islink(path), path)
        self.assertFalse(os.path.isabs(os.readlink(path)))  # the folder can move
        return os.readlink(path)

    def test_full_then_filtered_then_forced_then_full(self):
        self.make_run("A", python=True)
        self.assertEqual(promote(self.results, "A", "--threads=1").returncode, 0)
        self.assertEqual(self.latest(), os.path.join("runs", "A.json"))
        self.assertEqual(self.latest("latest-report"), os.path.join("runs", "A-report"))
        self.assertEqual(self.latest("latest-python.json"), os.path.join("runs", "A-python.json"))
        with open(os.path.join(self.results, "latest.json")) as f:
            self.assertEqual(json.load(f)["stamp"], "A")

        self.make_run("B", selection="part: --strategy")
        result = promote(self.results, "B", "--strategy=fused")
        self.assertEqual(result.returncode, 0, result.stderr)
        self.assertIn("stay on the full run A", result.stdout)
        self.assertEqual(self.latest(), os.path.join("runs", "A.json"))
        self.assertTrue(os.path.exists(os.path.join(self.results, "runs", "B.json")))  # kept all the same

        self.make_run("C", selection="part: --benchmark_filter")
        self.assertEqual(promote(self.results, "C", "--benchmark_filter", "fused", own=["--as-latest"]).returncode, 0)
        self.assertEqual(self.latest(), os.path.join("runs", "C.json"))
        self.assertIsNone(self.latest("latest-python.json"))  # C has no peer file: no stale link to A's

        self.make_run("D", selection="part: --hidden")
        self.make_run("E")
        promote(self.results, "D", "--hidden=64")  # filtered after a filtered latest: it replaces it
        self.assertEqual(self.latest(), os.path.join("runs", "D.json"))
        promote(self.results, "E")
        self.assertEqual(self.latest(), os.path.join("runs", "E.json"))
        self.assertEqual(self.latest("latest.log"), os.path.join("runs", "E.log"))
        # a result that does not say what it selected counts as filtered: it never replaces a full run
        self.make_run("F", selection=None)
        self.assertIn("stay on the full run E", promote(self.results, "F").stdout)

    def test_only_its_own_links_are_replaced_or_removed(self):
        # a file and a folder someone put where the links go are moved into the history, never deleted;
        # a FIFO is left alone (and no link is made there)
        with open(os.path.join(self.results, "latest.json"), "w") as f:
            f.write("my notes")
        os.makedirs(os.path.join(self.results, "latest-report"))
        with open(os.path.join(self.results, "latest-python.json"), "w") as f:
            f.write("mine too")  # the run has no peer file: still moved, not removed
        os.mkfifo(os.path.join(self.results, "latest.log"))
        self.make_run("A")
        result = promote(self.results, "A")
        self.assertEqual(result.returncode, 0, result.stderr)
        self.assertEqual(self.latest(), os.path.join("runs", "A.json"))
        self.assertEqual(self.latest("latest-report"), os.path.join("runs", "A-report"))
        self.assertIsNone(self.latest("latest-python.json"))
        with open(os.path.join(self.results, "runs", "before-history-latest.json")) as f:
            self.assertEqual(f.read(), "my notes")
        with open(os.path.join(self.results, "runs", "before-history-latest-python.json")) as f:
            self.assertEqual(f.read(), "mine too")
        self.assertTrue(os.path.isdir(os.path.join(self.results, "runs", "before-history-latest-report")))
        self.assertTrue(stat.S_ISFIFO(os.lstat(os.path.join(self.results, "latest.log")).st_mode))
        self.assertIn("latest.log is neither a file, a folder nor a link", result.stderr)
        # a second time: nothing of anyone's is in the way now, and nothing is moved again
        self.make_run("B")
        with open(os.path.join(self.results, "latest.json.new"), "w") as f:
            f.write("not the script's temporary")
        self.assertEqual(promote(self.results, "B").returncode, 0)
        self.assertEqual(self.latest(), os.path.join("runs", "B.json"))
        with open(os.path.join(self.results, "latest.json.new")) as f:
            self.assertEqual(f.read(), "not the script's temporary")

    def test_two_runs_ending_together_leave_the_links_on_one_of_them(self):
        # Two promotes at once, over and over: without the lock about 1 in 40 left latest.* mixed.
        for n in range(24):
            a, b = f"A{n}", f"B{n}"
            self.make_run(a, python=True)
            self.make_run(b, python=True)
            both = [subprocess.Popen([sys.executable, SCRIPT, "promote", self.results, s], stdout=subprocess.DEVNULL,
                                     stderr=subprocess.PIPE, text=True) for s in (a, b)]
            for p in both:
                self.assertEqual(p.wait(timeout=60), 0, p.stderr.read())
                p.stderr.close()
            targets = {os.path.basename(self.latest(name)).split(".")[0].split("-")[0] for name in
                       ("latest.json", "latest.log", "latest-python.json", "latest-report")}
            self.assertEqual(len(targets), 1, targets)
            self.assertIn(targets.pop(), (a, b))

    def test_an_incomplete_run_changes_nothing(self):
        self.make_run("A")
        promote(self.results, "A")
        result = promote(self.results, "Z")
        self.assertEqual(result.returncode, 1)
        self.assertIn("did not complete", result.stderr)
        self.assertEqual(self.latest(), os.path.join("runs", "A.json"))

    def test_help_has_no_side_effects(self):
        for flag in ["--help", "-h"]:
            result = subprocess.run([sys.executable, SCRIPT, flag], capture_output=True, text=True, timeout=60)
            self.assertEqual(result.returncode, 0)
            self.assertIn("results/runs/STAMP.json", result.stdout)
        self.assertEqual(os.listdir(os.path.join(self.results, "runs")), [])

    def test_scripts_run_help_runs_nothing(self):
        run_script = os.path.join(os.path.dirname(SCRIPT), "run")
        result = subprocess.run(["bash", run_script, "--help"], capture_output=True, text=True, timeout=120)
        self.assertEqual(result.returncode, 0, result.stderr)
        self.assertIn("results/runs/<UTC time>-<host>.json", result.stdout)
        self.assertNotIn("condbench:", result.stderr)

    def test_scripts_run_gives_a_model_file_to_condbench_as_it_is(self):
        # condbench decides the device a model file is compiled for (model_file_device); the script
        # once compiled it for the CPU under --device=all on a GPU machine where condbench chose CUDA.
        run_script = os.path.join(os.path.dirname(SCRIPT), "run")
        with tempfile.TemporaryDirectory() as elsewhere:
            result = subprocess.run(["bash", run_script, "--dry-run", "--device=all", "--model-file=side.py",
                                     "--model-weights=w.pt"], capture_output=True, text=True, timeout=60,
                                    cwd=elsewhere)
            self.assertEqual(result.returncode, 0, result.stderr)
            lines = result.stdout.splitlines()
            self.assertEqual(len(lines), 2, result.stdout)
            for line in lines:
                words = line.split()
                self.assertEqual(words[0], "build/release/condbench")
                # named from where the user stands: the run works from the checkout
                self.assertIn(f"--model-file={os.path.join(os.path.realpath(elsewhere), 'side.py')}", words)
                self.assertIn(f"--model-weights={os.path.join(os.path.realpath(elsewhere), 'w.pt')}", words)
                self.assertIn("--device=all", words)
            # a workload folder of the run's own, named by its stamp (time, host, process)
            self.assertRegex(lines[0].split()[1], r"^--export-workload=build/workload-\d{8}T\d{6}Z-\S+-\d+$")
            self.assertNotIn("model_file.py", result.stdout + result.stderr)


if __name__ == "__main__":
    unittest.main(verbosity=2)
