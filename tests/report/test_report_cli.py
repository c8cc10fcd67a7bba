"""condbench-report as a user runs it: a report from result files, A/B comparison, and one-line
errors with exit code 2 and nothing left behind for each kind of bad input.
Usage: test_report_cli.py CONDBENCH_REPORT FIXTURES_DIR."""
import copy
import json
import os
import re
import shutil
import subprocess
import sys
import tempfile
import unittest

REPORT, FIXTURES = sys.argv[1], sys.argv[2]
del sys.argv[1:3]
SMALL = os.path.join(FIXTURES, "small.json")


def run(*args):
    return subprocess.run([REPORT, *args], capture_output=True, text=True, timeout=120)


class Report(unittest.TestCase):
    def setUp(self):
        self.dir = tempfile.mkdtemp()

    def tearDown(self):
        shutil.rmtree(self.dir)

    def write_json(self, name, data):
        path = os.path.join(self.dir, name)
        with open(path, "w") as f:
            f.write(data if isinstance(data, str) else json.dumps(data))
        return path

    def test_report_has_tables_sentences_and_offline_html(self):
        out = os.path.join(self.dir, "report")
        result = run("--out", out, SMALL)
        self.assertEqual(result.returncode, 0, result.stderr)
        md = open(os.path.join(out, "report.md")).read()
        html = open(os.path.join(out, "report.html")).read()
        # 3 and 1 repetitions: no claim, a "?" in the table; its sentence (the HTML's title) says why
        self.assertIn("| mlp h64 ×3 · batch 1 | mix:early | native/fused | torch/eager_host | ? ‡◊ |", md)
        self.assertIn('title="ambiguous between native/fused (1.5 µs [1–2]) and torch/eager_host (11 µs [10–12]): 3 '
                      'and 3 repetitions are too few for a 99% interval of their ratio"', html.replace("&#39;", "'"))
        self.assertNotRegex(md, r"FASTER ≥\d")
        # the median and the unstable mark; the interval of the median, the cv, the repetitions in the title
        self.assertIn("| native/fused | 1.5 unstable | 5 |", md)
        self.assertIn('title="interval of the median [1–2] µs, 3 repetitions, cv 33%"', html)
        self.assertIn("75% with 3 repetitions", md)
        # one repetition each: no interval of a ratio, so no margin; the runner-up and the rest in its title
        self.assertIn("| mlp h64 ×3 · batch 1 | native/fused ? | native/fused ? |", md)
        self.assertIn('title="runner-up torch/masked; not separated from torch/masked; not separated from '
                      'torch/eager_host"', html)
        # 1 - 9000/25600 wasted; bytes_read_back and gpu_us, measured by none, are left out
        self.assertIn("| torch/masked | 21 | 0 | 25 | 64.8% |", md)
        self.assertEqual([line for line in md.splitlines() if len(line) > 300 and not line.startswith("|")], [])
        # self-contained: nothing fetched from anywhere
        self.assertNotRegex(html, r"<script[^>]*src=|<link[^>]*href=|src=\"https?:|url\(https?:")
        if shutil.which("gnuplot"):
            self.assertEqual(len(re.findall(r"<figure class=\"chart\"><svg", html)), 2)
            self.assertEqual(sorted(os.listdir(os.path.join(out, "charts"))), sorted(
                [f for f in os.listdir(os.path.join(out, "charts")) if f.endswith(".svg")]))
            self.assertEqual(len(os.listdir(os.path.join(out, "charts"))), 2)
        else:
            self.assertIn("Charts were skipped", md)
        self.assertEqual(sorted(os.listdir(self.dir)), ["report"])  # no temporary directory left

    def table(self, *paths):
        """condbench-report --table's rows: the cells of each Markdown row after the header."""
        result = run("--table", *paths)
        self.assertEqual(result.returncode, 0, result.stderr)
        lines = [line for line in result.stdout.splitlines() if line.startswith("| ")]
        return result.stdout, [[c.strip() for c in line.strip("|").split("|")] for line in lines[1:]]

    def test_table_reads_transformer_names_by_their_axes(self):
        with open(SMALL) as f:
            data = json.loads(f.read().replace("NaN", "null"))
        for b in data["benchmarks"]:
            for key in ("name", "run_name"):
                if b.get(key, "").startswith("early_exit/"):
                    b[key] = b[key].replace("/hidden:64/", "/model:transformer/d_model:256/heads:4/ffn:1024/seq:32/")
        _, rows = self.table(self.write_json("transformer.json", data))
        self.assertIn(["cpu · Test CPU", "transformer: d_model 256, heads 4, ffn 1024, seq 32, 3 blocks", "1",
                       "mix:early"], [r[:4] for r in rows])

    def test_table_reads_names_by_their_axes_and_keeps_unknown_ones(self):
        with open(SMALL) as f:
            data = json.loads(f.read().replace("NaN", "null"))
        extra = copy.deepcopy([b for b in data["benchmarks"] if b["name"].startswith("early_exit/")])
        for b in extra:
            for key in ("name", "run_name"):
                b[key] = b[key].replace("/hidden:", "/seq:128/hidden:")
        data["benchmarks"] += extra
        text, rows = self.table(self.write_json("extra-axis.json", data))
        self.assertEqual(len(rows), 4, text)  # two scenarios, with and without the extra axis
        self.assertIn(["cpu · Test CPU", "seq 128, hidden 64, 3 blocks", "1", "mix:early"], [r[:4] for r in rows])
        self.assertIn(["cpu · Test CPU", "hidden 64, 3 blocks", "1", "mix:early"], [r[:4] for r in rows])
        self.assertIn("1.5 (7.3×)", [r[4] for r in rows], text)  # native/fused: median (speedup over eager_host)

        # milliseconds-long medians and hundredfold speedups print as plain numbers, never 6.99e+03
        for b in data["benchmarks"]:
            if "/native/fused/" not in b["name"] and isinstance(b.get("real_time"), (int, float)):
                b["real_time"] *= 12345.0
        text, _ = self.table(self.write_json("slow.json", data))
        self.assertNotRegex(text, r"[0-9]e[+-]?[0-9]")
        self.assertRegex(text, r" [0-9]{4,}(\.[0-9]+)? ")

        result = run("--table", os.path.join(self.dir, "missing.json"))
        self.assertEqual(result.returncode, 2)
        self.assertIn("missing.json", result.stderr)
        self.assertEqual(run("--table", "--out", os.path.join(self.dir, "r"), SMALL).returncode, 2)

    def test_glossary_names_each_strategy_with_what_its_file_says_it_does(self):
        with open(SMALL) as f:
            data = json.loads(f.read().replace("NaN", "null"))
        data["context"]["strategy:cpu/native/fused"] = "the whole forward in one loop nest"
        data["context"]["strategy:cuda/native/fused"] = "not shown: no cuda benchmark in this file"
        data["context"]["build:cpu/aoti/cond in_features=32 hidden=64 num_classes=10 blocks=3"] = "compiled in 20.6 s"
        out = os.path.join(self.dir, "glossary")
        self.assertEqual(run("--out", out, self.write_json("described.json", data)).returncode, 0)
        report = open(os.path.join(out, "report.md")).read()
        glossary = report.split("## Strategies")[1].split("\n## ")[0]
        self.assertIn("| native/fused | cpu | the whole forward in one loop nest |", glossary)
        self.assertIn("| torch/eager_host | cpu | (not in the result file", glossary)
        self.assertNotIn("not shown", glossary)
        self.assertIn("| strategy | device | what it does |\n|:---|:---|:---|", glossary)  # text left-aligned
        # what was built ahead of the run (AOTInductor packages), as the file records it
        self.assertIn("- cpu/aoti/cond in_features=32 hidden=64 num_classes=10 blocks=3: compiled in 20.6 s", glossary)

    def test_report_replaces_an_older_one_whole(self):
        out = os.path.join(self.dir, "report")
        self.assertEqual(run("--out", out, SMALL).returncode, 0)  # an earlier report: --out may replace it
        open(os.path.join(out, "stale.txt"), "w").write("old")
        self.assertEqual(run("--out", out, SMALL).returncode, 0)
        self.assertNotIn("stale.txt", os.listdir(out))

    def test_each_kind_of_bad_input_is_named_and_leaves_nothing(self):
        good = json.load(open(SMALL))
        unknown_schema = copy.deepcopy(good)
        unknown_schema["context"]["condbench_schema"] = "99"
        no_schema = copy.deepcopy(good)
        del no_schema["context"]["condbench_schema"]
        not_ours = copy.deepcopy(good)
        not_ours["benchmarks"] = [b for b in good["benchmarks"] if b["name"] == "some_other_benchmark"]
        cases = {
            "text.json": ("this is not json", "not JSON"),
            "list.json": ([1, 2, 3], "not Google Benchmark output"),
            "schema.json": (unknown_schema, "unknown condbench schema '99'"),
            "noschema.json": (no_schema, "not a condbench result"),
            "foreign.json": (not_ours, "no condbench benchmarks"),
        }
        for name, (content, message) in cases.items():
            with self.subTest(name):
                path = self.write_json(name, content)
                out = os.path.join(self.dir, "out-" + name)
                result = run("--out", out, SMALL, path)
                self.assertEqual(result.returncode, 2)
                lines = result.stderr.strip().splitlines()
                self.assertEqual(len(lines), 1, result.stderr)
                self.assertIn(name, lines[0])
                self.assertIn(message, lines[0])
                self.assertFalse([f for f in os.listdir(self.dir) if f.startswith("out-")])
        result = run("--out", os.path.join(self.dir, "out"), os.path.join(self.dir, "missing.json"))
        self.assertEqual(result.returncode, 2)
        self.assertIn("missing.json", result.stderr)
        # an option given twice or with no value: one line, not the last or an empty one taken
        a, b, c = (os.path.join(self.dir, name) for name in "abc")
        for args, message in [(["--out", a, "--out", b, SMALL], "--out: given twice"),
                              (["--table", "--table", SMALL], "--table: given twice"),
                              (["--compare", SMALL, SMALL, "--min-effect="], "--min-effect: needs a value"),
                              (["--out", c, "--unstable-cv", "", SMALL], "--unstable-cv: needs a value")]:
            with self.subTest(args=args):
                result = run(*args)
                self.assertEqual((result.returncode, result.stderr), (2, f"condbench-report: {message}\n"))
        self.assertFalse([f for f in os.listdir(self.dir) if f in ("a", "b", "c")])

    def test_compare_same_run_is_same_and_regression_fails_on_request(self):
        result = run("--compare", SMALL, SMALL)
        self.assertEqual(result.returncode, 0, result.stderr)
        # 3 + 3 repetitions cannot reach a 99% interval of a ratio, 1 + 1 even less: no verdict for any
        self.assertIn("Summary: 0 faster, 0 slower, 0 same, 0 ambiguous, 6 too few repetitions, of 6", result.stdout)
        slower = json.load(open(SMALL))
        for b in slower["benchmarks"]:
            if "fused/mix:early" in b["name"] and b.get("run_type") == "iteration":
                b["real_time"] *= 3
        path = self.write_json("slower.json", slower)
        result = run("--compare", SMALL, path)
        self.assertEqual(result.returncode, 0, result.stderr)
        # 3 vs 3 repetitions, fully separated: P(U = 0) = 1/20, no 99% interval
        self.assertIn("| early_exit/cpu/native/fused/mix:early/batch:1/hidden:64/blocks:3 | 1.5 | 4.5 | +200.0% | - | "
                      "TOO FEW REPETITIONS |", result.stdout)
        five = json.load(open(SMALL))
        extra = [copy.deepcopy(b) for b in five["benchmarks"] if "fused/mix:early" in b["name"] and b.get("run_type") == "iteration"]
        for i, b in enumerate(extra[:2]):
            b["real_time"] = 1.2 + 0.1 * i
            b["repetition_index"] = len(extra) + i  # repetitions of their own, not copies of one
        five["benchmarks"] += extra[:2]
        slow5 = copy.deepcopy(five)
        for b in slow5["benchmarks"]:
            if "fused/mix:early" in b["name"] and b.get("run_type") == "iteration":
                b["real_time"] *= 10  # 1-2 µs spread: 10x clears the drift allowance between runs (1.7x)
        a, b = self.write_json("a5.json", five), self.write_json("b5.json", slow5)
        result = run("--compare", a, b, "--fail-on-regression", "50")
        self.assertEqual(result.returncode, 1, result.stdout + result.stderr)
        self.assertIn("SLOWER", result.stdout)
        self.assertIn("slower by more than 50% (SLOWER, docs/statistics.md): early_exit/cpu/native/fused/mix:early",
                      result.stderr)
        self.assertEqual(run("--compare", a, b, "--fail-on-regression", "1000").returncode, 0)
        self.assertEqual(run("--compare", a, b, "--fail-on-regression", "x").returncode, 2)

    def test_compare_lists_what_one_file_lacks_and_a_lost_strategy_fails_the_gate(self):
        # #59 item 6: B lost native/fused (one benchmark absent, one errored) and ran one A did not
        data = json.load(open(SMALL))
        b = copy.deepcopy(data)
        early, late = ("early_exit/cpu/native/fused/mix:early/", "early_exit/cpu/native/fused/mix:late/")
        b["benchmarks"] = [x for x in b["benchmarks"] if not x["name"].startswith(early)]
        for x in b["benchmarks"]:
            if x["name"].startswith(late) and x.get("run_type") == "iteration":
                x.update(error_occurred=True, error_message="error: the kernel failed")
        extra = copy.deepcopy(next(x for x in b["benchmarks"] if "torch/masked/mix:late" in x["name"]))
        extra["name"] = extra["run_name"] = "early_exit/cpu/torch/masked/mix:uniform/batch:1/hidden:64/blocks:3"
        b["benchmarks"].append(extra)
        path = self.write_json("b.json", b)
        result = run("--compare", SMALL, path)
        self.assertEqual(result.returncode, 0, result.stderr)
        listed = result.stdout[result.stdout.index("### Only in A"):]
        self.assertEqual(listed.splitlines(), [
            "### Only in A (not run in B): 1", "",
            "- early_exit/cpu/native/fused/mix:early/batch:1/hidden:64/blocks:3", "",
            "### Errored in B (A has times): 1", "",
            "- early_exit/cpu/native/fused/mix:late/batch:1/hidden:64/blocks:3: error: the kernel failed", "",
            "### Only in B: 1", "",
            "- early_exit/cpu/torch/masked/mix:uniform/batch:1/hidden:64/blocks:3", ""])
        # a CI gate: a strategy that stopped working fails it, unless told B ran less on purpose
        result = run("--compare", SMALL, path, "--fail-on-regression=10")
        self.assertEqual(result.returncode, 1, result.stdout + result.stderr)
        self.assertEqual(result.stderr, "condbench-report: in A, missing or errored in B (--allow-missing passes them): "
                                        f"{early}batch:1/hidden:64/blocks:3 (missing), "
                                        f"{late}batch:1/hidden:64/blocks:3 (errored)\n")
        self.assertEqual(run("--compare", SMALL, path, "--fail-on-regression=10", "--allow-missing").returncode, 0)
        self.assertEqual(run("--compare", SMALL, path, "--allow-missing").returncode, 2)

    def five_repetition_run(self, seed, scale=1.0, cv=0.01):
        """SMALL with 5 repetitions of every mix:early series, drawn around its median with `cv` noise."""
        import random
        rng = random.Random(seed)
        data = json.load(open(SMALL))
        runs = []
        for b in data["benchmarks"]:
            if "mix:early" in b["name"] and b.get("run_type") == "iteration":
                if any(r["name"] == b["name"] for r in runs):
                    continue
                center = {"eager_host": 11.0, "fused": 1.5, "masked": 21.0}[b["name"].split("/")[3]] * scale
                for i in range(5):
                    r = copy.deepcopy(b)
                    r["real_time"], r["time_unit"], r["repetition_index"] = center * (1 + rng.gauss(0, cv)), "us", i
                    runs.append(r)
        data["benchmarks"] = runs
        return data

    def test_pairs_are_the_verdict_rules_judgements_as_data(self):
        a = self.write_json("a.json", self.five_repetition_run(1))
        b = self.write_json("b.json", self.five_repetition_run(2, scale=1.02))
        result = run("--pairs", a)
        self.assertEqual(result.returncode, 0, result.stderr)
        pairs = json.loads(result.stdout)["pairs"]
        self.assertEqual(len(pairs), 3)  # fused, eager_host, masked at mix:early: three pairs of one group
        by_names = {frozenset((p["a"]["strategy"], p["b"]["strategy"])): p for p in pairs}
        p = by_names[frozenset(("native/fused", "torch/eager_host"))]
        fast = p[p["fast"]]
        self.assertEqual(fast["strategy"], "native/fused")
        # the fixture's repetitions ran in order, not interleaved: its cells get the drift allowance
        self.assertEqual((p["standing"], p["drift"], p["k"], fast["repetitions"]), ("faster", 1.7, 1, 5))
        # 5 and 5 at 99%: [min(slow) / max(fast), max(slow) / min(fast)], and the factor is L / D
        self.assertAlmostEqual(p["factor"], p["low"] / 1.7)
        self.assertLess(p["low"], 11.0 / 1.5)
        self.assertGreater(p["high"], 11.0 / 1.5)
        # across two runs: each benchmark against itself, with the drift allowance, never the same
        result = run("--pairs", "--across", a, b)
        self.assertEqual(result.returncode, 0, result.stderr)
        across = json.loads(result.stdout)["pairs"]
        self.assertEqual(len(across), 3)
        for p in across:
            self.assertEqual(p["a"]["name"], p["b"]["name"])
            self.assertEqual((p["drift"], p["standing"]), (1.7, "ambiguous"))
            self.assertGreaterEqual(p["cannot_exclude"], 1.7)
        # the summary an A/A quotes (scripts/aa-check --lockstep): the drift shown is the farthest
        # interval's distance beyond 1, the medians' largest ratio either way
        summary = json.loads(result.stdout)["summary"]
        self.assertEqual((summary["pairs"], summary["faster"]), (3, 0))
        self.assertAlmostEqual(summary["drift_shown"], max([1.0] + [p["low"] for p in across]))
        self.assertAlmostEqual(summary["largest_median_ratio"],
                               max(max(p["median_ratio"], 1 / p["median_ratio"]) for p in across))
        # two files of one lockstep, interleaved: the allowance the lockstep was given (the larger
        # word), not 1.7; a word that is not a number from 1 to 10 is a file timed apart
        for allowance, drift in (("1.25", 1.3), ("x", 1.7), ("11", 1.7)):
            for path, word in ((a, "1.3"), (b, allowance)):
                data = json.load(open(path))
                data["context"].update(condbench_interleaving="rounds", condbench_lockstep="L",
                                       condbench_lockstep_allowance=word)
                self.write_json(os.path.basename(path), data)
            with self.subTest(allowance=allowance):
                result = run("--pairs", "--across", a, b)
                self.assertEqual(result.returncode, 0, result.stderr)
                self.assertEqual({p["drift"] for p in json.loads(result.stdout)["pairs"]}, {drift})
        # the scripts that measure the rule take these figures, not their own
        root = os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "..")
        widths = subprocess.run([sys.executable, os.path.join(root, "scripts", "interval_widths.py"),
                                 "--report-tool", REPORT, a], capture_output=True, text=True, timeout=120)
        self.assertEqual(widths.returncode, 0, widths.stderr)
        self.assertIn("repetitions [5], 3 pairs;", widths.stdout)
        self.assertIn("faster 100.0%", widths.stdout)  # fused, eager_host and masked are 1.5, 11 and 21 µs
        drift = subprocess.run([sys.executable, os.path.join(root, "scripts", "drift_allowance.py"),
                                "--report-tool", REPORT, "--aa", a, b], capture_output=True, text=True, timeout=120)
        self.assertEqual(drift.returncode, 0, drift.stderr)
        self.assertIn("3 pairs of benchmarks run in both files", drift.stdout)
        for bad in (("--pairs",), ("--pairs", "--across", a), ("--across", a, b), ("--pairs", "--out", "x", a)):
            with self.subTest(args=bad):
                result = run(*bad)
                self.assertEqual(result.returncode, 2, result.stderr)
                self.assertEqual(len(result.stderr.strip().splitlines()), 1, result.stderr)

    def test_compare_aa_is_no_claim_with_a_summary_and_a_shift_is_slower(self):
        a = self.write_json("a.json", self.five_repetition_run(1))
        b = self.write_json("b.json", self.five_repetition_run(2))
        result = run("--compare", a, b)
        self.assertEqual(result.returncode, 0, result.stderr)
        # one benchmark between two runs is never SAME: the drift allowance alone is wider than the margin
        self.assertIn("Summary: 0 faster, 0 slower, 0 same, 3 ambiguous, 0 too few repetitions, of 3", result.stdout)
        self.assertNotIn("WARNING", result.stdout)
        # one benchmark per strategy: too few to take together
        self.assertIn("| early_exit/cpu/native/fused | 1 | ", result.stdout)
        self.assertEqual(result.stdout.count("| TOO FEW BENCHMARKS |"), 3)
        # 20% slower, tight: apart, but within the drift allowance between two runs
        slow = self.write_json("slow.json", self.five_repetition_run(3, scale=1.2))
        result = run("--compare", a, slow)
        self.assertIn("Summary: 0 faster, 0 slower, 0 same, 3 ambiguous", result.stdout)
        slow = self.write_json("slow3.json", self.five_repetition_run(3, scale=3))
        result = run("--compare", a, slow)
        self.assertIn("Summary: 0 faster, 3 slower, 0 same", result.stdout)
        # 3x is below an 80% minimum effect beyond the allowance (1.8 x 1.7 = 3.06)
        result = run("--compare", a, slow, "--min-effect", "80")
        self.assertIn("Summary: 0 faster, 0 slower, 0 same, 3 ambiguous", result.stdout)
        self.assertIn("beyond 80%", result.stdout)
        for bad in (["--min-effect", "x"], ["--min-effect=-1"]):
            self.assertEqual(run("--compare", a, b, *bad).returncode, 2)
        self.assertEqual(run("--out", os.path.join(self.dir, "r"), a, "--min-effect", "5").returncode, 2)

    def test_compare_warns_when_a_file_was_recorded_on_a_busy_machine(self):
        busy = self.five_repetition_run(2)
        busy["context"].update({"load_avg": [6.2, 5.1, 4.0], "num_cpus": 2})
        a = self.write_json("a.json", self.five_repetition_run(1))
        b = self.write_json("busy.json", busy)
        result = run("--compare", a, b)
        self.assertEqual(result.returncode, 0, result.stderr)
        self.assertIn("WARNING: recorded on a busy machine: busy.json: load average 6.20 on 2 CPUs", result.stdout)
        self.assertIn("condbench-report: warning: recorded on a busy machine: busy.json", result.stderr)

    def answer_run(self, seed):
        """SMALL's context with 10 interleaved repetitions (cv 2%) of PyTorch options and condbench's
        strategies at exit:1 and exit:4, batch 1: what the answer section reads."""
        import random
        rng = random.Random(seed)
        data = json.load(open(SMALL))
        data["context"]["condbench_interleaving"] = "random"
        centers = {"native/fused": 0.2, "torch/eager_host": 20.0, "python/py_eager_if": 40.0,
                   "python/py_cond": 700.0, "aoti/cond": 10.0}
        runs = []
        for strategy, center in centers.items():
            for scenario, scale in (("exit:1", 1.0), ("exit:4", 3.0)):
                name = f"early_exit/cpu/{strategy}/{scenario}/batch:1/hidden:64/blocks:3"
                for i in range(10):
                    t = center * scale * (1 + rng.gauss(0, 0.02))
                    runs.append({"name": name, "run_name": name, "run_type": "iteration", "repetitions": 10,
                                 "repetition_index": i, "threads": 1, "iterations": 100, "real_time": t,
                                 "cpu_time": t, "time_unit": "us", "sequence": len(runs)})
        data["benchmarks"] = runs
        return data

    def test_the_answer_comes_first_with_standings_a_chart_and_verdicts_even_on_a_busy_machine(self):
        out = os.path.join(self.dir, "answer")
        result = run("--out", out, self.write_json("answer.json", self.answer_run(1)))
        self.assertEqual(result.returncode, 0, result.stderr)
        md = open(os.path.join(out, "report.md")).read()
        answer = md.split("## The answer: what to write for an early exit")[1].split("\n## ")[0]
        self.assertIn("| option | exit 1 | standing | exit 4 (full depth) | standing |", answer)
        self.assertRegex(answer, r"\| native/fused \| 0\.2\d* \\\[[^|]*\] \| fastest \|")
        self.assertRegex(answer, r"\| python/py_cond \| [^|]* \| ≥\d+× slower \|")
        # the verdict table: a row a question, a column a scenario, one status each
        self.assertIn("| question | exit 1 | exit 4 (full depth) |", answer)
        self.assertIn("| Python if vs nested torch.cond (py_eager_if vs py_cond) | FASTER ≥16× | FASTER ≥17× |", answer)
        self.assertIn("| condbench's fastest vs PyTorch's | native/fused vs aoti/cond: FASTER ≥48× ◊ | ", answer)
        # the unit of what it shows: only inferences here
        self.assertIn("Median µs \\[interval of the median\\] per inference; every row", answer)
        # the legend once, and no sentence restating the tables
        self.assertEqual(md.count("FASTER ≥N×: the first is at least N× faster"), 1)
        self.assertNotIn("is at least", answer.split("### ", 1)[1].split("### Reading the verdicts")[0])
        # the options table, its chart and the verdict table fit a screen
        self.assertLessEqual(len(answer.split("#### mlp h64 ×3 · batch 1")[1].split("\n###")[0].strip().splitlines()),
                             40)
        if shutil.which("gnuplot"):
            self.assertIn("answer-0-b1-64-3.svg", answer)
            self.assertTrue(os.path.exists(os.path.join(out, "charts", "answer-0-b1-64-3.svg")))
        html = open(os.path.join(out, "report.html")).read()
        self.assertLess(html.index("<h2>The answer"), html.index("<h2>What was compared"))
        self.assertIn('<div class="pair">', html)

        busy = self.answer_run(1)
        busy["context"].update({"condbench_machine_busy": "yes", "condbench_running_start": "2.0",
                                "condbench_loadavg_start": "6.20 5.10 4.00", "condbench_cpus": "2"})
        out = os.path.join(self.dir, "answer-busy")
        result = run("--out", out, self.write_json("answer-busy.json", busy))
        self.assertEqual(result.returncode, 0, result.stderr)
        md = open(os.path.join(out, "report.md")).read()
        self.assertIn("Recorded on a busy machine", md.split("## The answer")[0])
        # the load marks the run; the intervals and the measured drift decide, as on a quiet machine
        answer = md.split("## The answer: what to write for an early exit")[1].split("\n## ")[0]
        self.assertIn("| Python if vs nested torch.cond (py_eager_if vs py_cond) | FASTER ≥16× ⚑ | FASTER ≥17× ⚑ |",
                      answer)
        best = md.split("## Best strategy")[1].split("\n## ")[0]
        self.assertRegex(best, r"\| native/fused ≥\d+× \|")

    def test_explain_gives_the_sentence_behind_a_cell(self):
        path = self.write_json("explain.json", self.answer_run(1))
        result = run("--explain", "py_eager_if vs py_cond at exit:1", path)
        self.assertEqual(result.returncode, 0, result.stderr)
        self.assertRegex(result.stdout, r"^cpu · Test CPU · mlp h64 ×3 · batch 1 · exit:1: python/py_eager_if \([\d.]+ µs "
                                        r"\[[\d.]+–[\d.]+\]\) is at least 16× faster than python/py_cond \([\d.]+ µs "
                                        r"\[[\d.]+–[\d.]+\]\) \(ratio \[[\d.]+–[\d.]+\]×\)\.\n$")
        # every scenario where both ran, and a group named by its title; engine/name or name alike
        both = run("--explain", "python/py_eager_if vs py_cond in mlp h64", path)
        self.assertEqual(both.returncode, 0, both.stderr)
        self.assertEqual([line.split(":")[0] for line in both.stdout.splitlines()],
                         ["cpu · Test CPU · mlp h64 ×3 · batch 1 · exit"] * 2)
        for query, names in (("py_eager_if py_cond", "is not"), ("py_eager_if vs nothing", "no group has both"),
                             ("py_eager_if vs py_cond at exit:9", "at exit:9"), ("", "needs a query")):
            with self.subTest(query=query):
                bad = run(f"--explain={query}", path)
                self.assertEqual(bad.returncode, 2, bad.stderr)
                self.assertEqual(len(bad.stderr.strip().splitlines()), 1, bad.stderr)
                self.assertIn(names, bad.stderr)

    def test_undecided_names_the_cells_an_answer_budget_runs_again(self):
        full = self.answer_run(1)
        result = run("--undecided", self.write_json("all.json", full))
        self.assertEqual(result.returncode, 0, result.stderr)
        answer = json.loads(result.stdout)
        self.assertEqual((answer["looks"], answer["undecided"], answer["cells"]), (3, 0, []))
        self.assertAlmostEqual(answer["confidence"], 1 - 0.01 / 3)
        # The peer's cells in a file of their own, py_eager_if with 3 repetitions: at 99.67% too few for an
        # interval against 10. Undecided at each exit: py_eager_if against the fastest (the table), against
        # aoti/cond (the fastest PyTorch option) and against py_cond. The cells of the last file run again.
        ours, peer = copy.deepcopy(full), copy.deepcopy(full)
        ours["benchmarks"] = [b for b in full["benchmarks"] if "/python/" not in b["run_name"]]
        peer["benchmarks"] = [b for b in full["benchmarks"] if "/python/" in b["run_name"] and
                              not ("py_eager_if" in b["run_name"] and b["repetition_index"] >= 3)]
        result = run("--undecided", self.write_json("ours.json", ours), self.write_json("peer.json", peer))
        self.assertEqual(result.returncode, 0, result.stderr)
        answer = json.loads(result.stdout)
        self.assertEqual(answer["undecided"], 6)
        self.assertEqual(answer["cells"], [f"early_exit/cpu/python/{s}/{e}/batch:1/hidden:64/blocks:3"
                                           for s in ("py_cond", "py_eager_if") for e in ("exit:1", "exit:4")])
        # condbench's side: the cells in those comparisons, and eager_host, which the answer compares with
        # fused: it must see the same rounds
        result = run("--undecided", self.dir + "/peer.json", self.dir + "/ours.json")
        self.assertEqual(json.loads(result.stdout)["cells"], [f"early_exit/cpu/{s}/{e}/batch:1/hidden:64/blocks:3"
                                                              for s in ("aoti/cond", "native/fused", "torch/eager_host")
                                                              for e in ("exit:1", "exit:4")])
        # The budget's schedule and its words, as condbench's own budget has them (the peer's take them from here)
        result = run("--undecided", "--repetitions=3", "--spent=5,2,1.23456,3,7", self.dir + "/ours.json",
                     self.dir + "/peer.json")
        self.assertEqual(result.returncode, 0, result.stderr)
        answer = json.loads(result.stdout)
        self.assertEqual(answer["rounds_before_next_look"], [3, 6])
        self.assertEqual(answer["spent"], "5 rounds over 2 cells in 1.23 s, 3 looks (verdicts at 99.7%): 7 comparisons "
                                          "undecided before, 6 after")
        result = run("--undecided", "--spent=0,0,0.5,1,0", self.dir + "/ours.json")
        self.assertEqual(json.loads(result.stdout)["spent"],
                         "every comparison of the answer was decided by the run's own repetitions")
        result = run("--undecided", "--spent=0,0,0.5,1,4", self.dir + "/ours.json")
        self.assertEqual(json.loads(result.stdout)["spent"],
                         "4 comparisons of the answer undecided; no round fitted the budget")
        for bad in ("--repetitions=0", "--repetitions=2.5", "--spent=1,2,3", "--spent=1,2,3,4,5,", "--spent=1,2,x,4,5",
                    "--spent=-1,2,3,4,5"):
            with self.subTest(bad=bad):
                result = run("--undecided", bad, self.dir + "/ours.json")
                self.assertEqual(result.returncode, 2, result.stderr)
                self.assertEqual(len(result.stderr.strip().splitlines()), 1, result.stderr)
                self.assertIn(bad.split("=")[0] + ":", result.stderr)
        result = run("--table", "--spent=1,2,3,4,5", self.dir + "/ours.json")
        self.assertEqual(result.returncode, 2)
        self.assertIn("--repetitions and --spent go with --undecided", result.stderr)
        # A report of a run that spent a budget says what it did and what stayed ambiguous.
        peer["context"].update({"condbench_answer_budget": "3 rounds over 4 cells in 1.5 s", "condbench_answer_looks": "3"})
        out = os.path.join(self.dir, "budget")
        result = run("--out", out, self.dir + "/ours.json", self.write_json("peer.json", peer))
        self.assertEqual(result.returncode, 0, result.stderr)
        md = open(os.path.join(out, "report.md")).read()
        self.assertIn("Answer budget: peer.json: 3 rounds over 4 cells in 1.5 s.\n\n6 comparisons stayed undecided:", md)
        # a table, its group named once
        self.assertIn("| cpu · Test CPU · mlp h64 ×3 · batch 1 | exit:1 | native/fused vs python/py_eager_if | too few "
                      "repetitions |", md)
        self.assertIn("|  | exit:1 | python/py_eager_if vs python/py_cond | too few repetitions |", md)
        for args in (["--undecided"], ["--undecided", "--out", out, self.dir + "/ours.json"],
                     ["--undecided", "--compare", self.dir + "/ours.json", self.dir + "/peer.json"]):
            result = run(*args)
            self.assertEqual(result.returncode, 2, f"{args}: {result.stderr}")
            self.assertEqual(len(result.stderr.strip().splitlines()), 1, f"{args}: {result.stderr}")
            self.assertIn("--undecided", result.stderr)

    def test_a_busy_run_says_so_at_the_top_and_keeps_its_verdicts(self):
        quiet = self.five_repetition_run(1)
        out = os.path.join(self.dir, "quiet")
        self.assertEqual(run("--out", out, self.write_json("quiet.json", quiet)).returncode, 0)
        md = open(os.path.join(out, "report.md")).read()
        self.assertNotIn("Recorded on a busy machine", md)
        # a quiet, stable run gives advice
        self.assertIn("| mlp h64 ×3 · batch 1 | mix:early | native/fused | torch/eager_host | FASTER ≥4.2× ‡◊ |", md)
        busy = copy.deepcopy(quiet)
        busy["context"].update({"condbench_machine_busy": "yes", "condbench_machine_busy_end": "no",
                                "condbench_running_start": "2.0", "condbench_loadavg_start": "6.20 5.10 4.00",
                                "condbench_cpus": "2"})
        out = os.path.join(self.dir, "busy")
        result = run("--out", out, self.write_json("busy.json", busy))
        self.assertEqual(result.returncode, 0, result.stderr)
        self.assertIn("recorded on a busy machine", result.stderr)
        md = open(os.path.join(out, "report.md")).read()
        top = md.split("## What was compared")[0]
        self.assertIn("Recorded on a busy machine", top)
        self.assertIn("busy.json: busy when the run started (2.0 other tasks running, load average 6.20 5.10 4.00 "
                      "on 2 CPUs)", top)
        self.assertIn("| mlp h64 ×3 · batch 1 | mix:early | native/fused | torch/eager_host | FASTER ≥4.2× ‡◊⚑ |", md)

    def test_unstable_threshold_is_configurable(self):
        out = os.path.join(self.dir, "loose")
        self.assertEqual(run("--out", out, SMALL, "--unstable-cv", "50").returncode, 0)
        md = open(os.path.join(out, "report.md")).read()
        self.assertIn("| native/fused | 1.5 | 5 |", md)  # 33% is under 50: not marked unstable
        self.assertEqual(run("--out", os.path.join(self.dir, "x"), SMALL, "--unstable-cv", "many").returncode, 2)

    @unittest.skipUnless(shutil.which("chromium") and shutil.which("gnuplot"),
                         "needs chromium and gnuplot (scripts/setup --with-browser)")
    def test_every_chart_renders_in_headless_chromium(self):
        out = os.path.join(self.dir, "report")
        self.assertEqual(run("--out", out, SMALL).returncode, 0)
        html = open(os.path.join(out, "report.html")).read()
        probe = ("<script>document.title = Array.from(document.querySelectorAll('figure.chart svg'))"
                 ".map(s => { const r = s.getBoundingClientRect(); return Math.round(r.width) + 'x' + Math.round(r.height); })"
                 ".join(',');</script>")
        page = os.path.join(self.dir, "probe.html")
        open(page, "w").write(html.replace("</body>", probe + "</body>"))
        result = subprocess.run(["chromium", "--headless", "--no-sandbox", "--disable-gpu", "--dump-dom",
                                 "file://" + page], capture_output=True, text=True, timeout=120)
        title = re.search(r"<title>(.*?)</title>", result.stdout)
        self.assertIsNotNone(title, result.stderr[-2000:])
        sizes = title.group(1).split(",")
        self.assertEqual(len(sizes), 2, sizes)
        for size in sizes:
            w, h = map(int, size.split("x"))
            self.assertGreater(w, 0)
            self.assertGreater(h, 0)



class ReferenceVerdicts(unittest.TestCase):
    """Nothing decided before is lost: every verdict the committed reference run's report made before the
    verdict tables (its standings and its sentences, kept as fixtures/verdicts-cpu-2026-12-05.json) is a
    status in the report of the same files now, with the same factor."""

    def test_every_verdict_of_the_reference_report_is_a_status_in_todays(self):
        root = os.path.join(FIXTURES, "..", "..", "..")
        with open(os.path.join(FIXTURES, "verdicts-cpu-2026-12-05.json")) as f:
            golden = json.load(f)
        with tempfile.TemporaryDirectory() as d:
            out = os.path.join(d, "report")
            made = run("--out", out, *(os.path.join(root, "results", f"cpu-2026-12-05{s}.json") for s in ("", "-python")))
            self.assertEqual(made.returncode, 0, made.stderr)
            with open(os.path.join(out, "report.md")) as f:
                md = f.read()
        answer = md.split("## The answer: what to write for an early exit")[1].split("\n## ")[0]
        standings, verdicts = {}, {}  # (group, scenario, option) -> standing; (group, scenario, {a, b}) -> (a, status)
        for section in answer.split("\n#### ")[1:]:
            group = section.split("\n")[0]
            for table in re.split(r"\n\n(?=\| )", section)[1:]:
                rows = [[c.strip() for c in line.strip().strip("|").split("|")]
                        for line in table.split("\n") if line.startswith("| ")]
                header = rows[0]
                scenarios = ["exit:" + re.match(r"exit (\d+)", h).group(1) if h.startswith("exit") else h
                             for h in header]
                for row in rows[1:]:  # (the separator line begins "|:" or "|-")
                    if header[0] == "option":
                        for k in range(1, len(header), 2):
                            standings[(group, scenarios[k], row[0])] = row[k + 1]
                    elif header[0] == "question":
                        fixed = re.search(r"\((\S+) vs (\S+)\)$", row[0])
                        for k in range(1, len(header)):
                            cell = re.match(r"(?:(\S+) vs (\S+): )?(\S+)", row[k])
                            a, b = (fixed.groups() if fixed else cell.group(1, 2))
                            a, b = (x if "/" in x else "python/" + x for x in (a, b))
                            verdicts[(group, scenarios[k], frozenset((a, b)))] = (a, row[k].split(": ")[-1])
        self.assertGreater(len(golden["tables"]), 70)
        for e in golden["tables"]:
            with self.subTest(**e):
                now = standings[(e["group"], e["scenario"], e["option"])]
                if e["standing"] == "faster":
                    self.assertTrue(now.startswith("≥" + e["factor"] + " slower"), now)
                elif e["standing"] == "same":
                    self.assertTrue(now.startswith("SAME"), now)
        self.assertGreater(len(golden["sentences"]), 35)
        for e in golden["sentences"]:
            with self.subTest(**e):
                a, status = verdicts[(e["group"], e["scenario"], frozenset((e["fast"], e["slow"])))]
                if e["standing"] == "faster":
                    word = "FASTER" if a == e["fast"] else "SLOWER"
                    self.assertTrue(status.startswith(f"{word} ≥{e['factor']}"), status)
                elif e["standing"] == "same":
                    self.assertTrue(status.startswith("SAME"), status)

class FewRepetitions(unittest.TestCase):
    def test_the_answer_says_when_its_verdicts_had_too_few_repetitions_to_decide(self):
        # the reference run's batch-1 hidden-64 cells, their first 3 repetitions: no 99% interval at all
        results = os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "..", "results")
        with open(os.path.join(results, "cpu-2026-12-05.json")) as f:
            data = json.load(f)
        data["benchmarks"] = [b for b in data["benchmarks"] if b["run_type"] == "iteration" and
                              b["repetition_index"] < 3 and "/batch:1/hidden:64/" in b["name"]]
        with tempfile.TemporaryDirectory() as d:
            path, out = os.path.join(d, "few.json"), os.path.join(d, "report")
            with open(path, "w") as f:
                json.dump(data, f)
            self.assertEqual(run("--out", out, path).returncode, 0)
            with open(os.path.join(out, "report.md")) as f:
                md = f.read()
        self.assertRegex(md, r"\n(\d+) of the \1 verdicts are \? because their cells have too few repetitions for a "
                             r"99% interval of their ratio \(at 99%, 5 repetitions of each suffice")


class Schemas(unittest.TestCase):
    """Schema 2 keys every strategy's summary "strategy:<device>/<engine>/<name>", a decoder's with
    " per token"; schema 1 kept the decoder's apart ("decoder strategy:..."). The committed decoder
    reference (schema 1) and the same cells written as schema 2 give the same report."""

    def test_a_schema_1_file_and_its_schema_2_twin_give_the_same_report(self):
        results = os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "..", "results")
        names = ["cpu-2026-12-05.json", "cpu-2026-12-05-python.json"]
        with tempfile.TemporaryDirectory() as d:
            reports = []
            for schema in ("1", "2"):
                folder = os.path.join(d, schema)
                os.makedirs(folder)
                for name in names:
                    with open(os.path.join(results, name)) as f:
                        data = json.load(f)
                    self.assertEqual(data["context"]["condbench_schema"], "1")
                    if schema == "2":
                        context = {}
                        for key, value in data["context"].items():
                            if key.startswith("decoder strategy:"):
                                key = "strategy:" + key[len("decoder strategy:"):] + " per token"
                            context[key] = value
                        data["context"] = {**context, "condbench_schema": "2"}
                    with open(os.path.join(folder, name), "w") as f:
                        json.dump(data, f)
                out = os.path.join(folder, "report")
                made = subprocess.run([REPORT, "--out", out, *(os.path.join(folder, n) for n in names)],
                                      capture_output=True, text=True, timeout=120)
                self.assertEqual(made.returncode, 0, made.stderr)
                with open(os.path.join(out, "report.md")) as f:
                    reports.append(f.read())
            self.assertEqual(reports[0], reports[1])
            # the decoder's strategies are described in both, from the files' own keys
            self.assertIn("| torch/masked (decoder) | cpu | every layer and exit head", reports[1])
            self.assertIn("| python/py_cond (decoder) | cpu | per token", reports[1])
            self.assertNotIn("not in the result file", reports[1])
            # the unit of each family shown: in the answer, the latencies and where the time goes
            self.assertIn("per inference, and per generated token for the decoder; every row", reports[1])
            self.assertIn("Median wall time in µs per inference, and per generated token for the decoder; each",
                          reports[1])
            self.assertIn("beside what it did per inference, and per generated token for the decoder;", reports[1])
            self.assertNotIn("Median wall time per inference", reports[1])

class Layering(unittest.TestCase):
    """condbench-report reads result files, not models: report/ includes no model's definition (a
    family, the decoder, a model file, a strategy), only what a result file promises
    (condbench/result_format.h) and shared tools."""
    MODEL_HEADERS = re.compile(r'#include "condbench/(decoder/|family\.h|config\.h|model\.h|model_file|strategy|'
                               r'families|parameters\.h)')

    def test_no_report_source_includes_a_model_header(self):
        root = os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "..", "report")
        found = []
        for folder, _, files in os.walk(root):
            for name in files:
                if name.endswith((".cpp", ".h")):
                    with open(os.path.join(folder, name)) as f:
                        found += [f"{name}: {line.strip()}" for line in f if self.MODEL_HEADERS.match(line)]
        self.assertGreater(sum(1 for _ in os.walk(root)), 1)  # the sources are there to scan
        self.assertEqual(found, [])

if __name__ == "__main__":
    unittest.main(verbosity=2)
