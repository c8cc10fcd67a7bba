"""condbench-report against result files from other machines, crafted to hurt: text from a file
never becomes code (gnuplot, shell, HTML, Markdown), --out never destroys what is not an earlier
report, a signal leaves nothing behind, and every bad file is one line with exit code 2.
Usage: test_report_hardening.py CONDBENCH_REPORT FIXTURES_DIR."""
import json
import os
import re
import shutil
import signal
import stat
import subprocess
import sys
import tempfile
import time
import unittest

REPORT, FIXTURES = os.path.abspath(sys.argv[1]), os.path.abspath(sys.argv[2])
del sys.argv[1:3]
SMALL = os.path.join(FIXTURES, "small.json")

# Each tries a different way out of a gnuplot string, a shell word, an HTML element or a Markdown
# table cell; if any worked, a file named PWNED* would appear.
PAYLOADS = [
    "q'uote) ; system(\"touch PWNED1\") ; print('",
    'dq"uote" ; system("touch PWNED2") ; #',
    "back\\slash\\' ; `touch PWNED3`",
    "new\nline\nsystem(\"touch PWNED4\")",
    "<script>alert(1)</script>",
    "pipe|in|name | x",
    "$(touch PWNED5)",
    "esc\x1b[31m red\x07",
]


def run(*args, timeout=120, **kwargs):
    return subprocess.run([REPORT, *args], capture_output=True, text=True, timeout=timeout, **kwargs)


def small_text():
    with open(SMALL) as f:
        return f.read()


def crafted(payload_of):
    """small.json with the engine and strategy parts of each name replaced by payload_of(part, name)."""
    data = json.loads(small_text())
    for b in data["benchmarks"]:
        for key in ("name", "run_name"):
            parts = b[key].split("/")
            if parts[0] == "early_exit":
                parts[2] = payload_of("engine", parts[2])
                parts[3] = payload_of("strategy", parts[3])
            b[key] = "/".join(parts)
    return data


class Case(unittest.TestCase):
    def setUp(self):
        self.dir = tempfile.mkdtemp()

    def tearDown(self):
        shutil.rmtree(self.dir)

    def write_json(self, name, data):
        path = os.path.join(self.dir, name)
        with open(path, "w") as f:
            f.write(data if isinstance(data, str) else json.dumps(data))
        return path

    def assert_bad_input(self, result, *fragments):
        self.assertEqual(result.returncode, 2, result.stderr)
        lines = result.stderr.strip().splitlines()
        self.assertEqual(len(lines), 1, result.stderr)
        for fragment in fragments:
            self.assertIn(fragment, lines[0])
        return lines[0]

    def pwned(self):
        return [os.path.join(root, f) for root, _, files in os.walk(self.dir) for f in files if "PWNED" in f]


class DataIsNeverCode(Case):
    def test_names_and_context_with_code_in_them_stay_text(self):
        for i, payload in enumerate(PAYLOADS):
            with self.subTest(payload=payload):
                in_name = payload.replace("/", "")  # a '/' would make it another benchmark's name
                data = crafted(lambda part, name: name + in_name if part == "strategy" else name)
                data["context"]["cpu_model"] = payload
                data["benchmarks"].append({"name": "early_exit/cpu/torch/x" + in_name + "/exit:1/batch:1/hidden:64/blocks:3",
                                           "error_occurred": True, "error_message": payload})
                path = self.write_json(f"run{i}.json", data)
                out = os.path.join(self.dir, f"out{i}")
                result = run("--out", out, path, cwd=self.dir)
                self.assertEqual(result.returncode, 0, result.stderr)
                self.assertEqual(self.pwned(), [])
                md = open(os.path.join(out, "report.md")).read()
                html = open(os.path.join(out, "report.html")).read()
                if shutil.which("gnuplot"):  # the charts were drawn, with the names in them
                    self.assertEqual(len(re.findall(r'<figure class="chart"><svg', html)), 2, result.stderr)
                self.assertNotIn("<script", html)
                self.assertIsNone(re.search(r"(?<!\\)<script", md), "unescaped <script> in report.md")
                self.assertNotIn("\nline", md)  # a newline in a name never starts a Markdown line
                # no control character reaches either file (HTML forbids them; a terminal acts on them)
                self.assertIsNone(re.search("[\x00-\x08\x0b-\x1f\x7f]", html + md), repr(payload))
                if "<script>" in payload:
                    self.assertIn("\\<script\\>", md)  # shown, escaped, not dropped
                    self.assertIn("&lt;script&gt;", html)

    def test_markdown_tables_keep_their_columns(self):
        data = crafted(lambda part, name: name + "|a|b" if part == "strategy" else name)
        out = os.path.join(self.dir, "out")
        self.assertEqual(run("--out", out, self.write_json("r.json", data)).returncode, 0)
        md = open(os.path.join(out, "report.md")).read()
        for table in md.split("\n\n"):
            rows = [l for l in table.splitlines() if l.startswith("|")]
            if rows:
                widths = {len(re.split(r"(?<!\\)\|", r)) for r in rows}
                self.assertEqual(len(widths), 1, table)

    def test_compare_escapes_names(self):
        data = crafted(lambda part, name: name + "|<b>x<b>" if part == "strategy" else name)
        path = self.write_json("r.json", data)
        result = run("--compare", path, path)
        self.assertEqual(result.returncode, 0, result.stderr)
        self.assertNotIn("<b>", result.stdout)
        rows = [l for l in result.stdout.splitlines() if l.startswith("| early_exit/")]
        self.assertTrue(rows, result.stdout)
        for row in rows:
            self.assertEqual(len(re.split(r"(?<!\\)\|", row)), 8, row)


class OutputsNeverDestroy(Case):
    def test_existing_file_is_refused_and_kept(self):
        target = os.path.join(self.dir, "notes.txt")
        open(target, "w").write("precious")
        self.assert_bad_input(run("--out", target, SMALL), "is not a condbench report", "--force")
        self.assertEqual(open(target).read(), "precious")

    def test_directory_holding_the_inputs_is_refused_even_with_force(self):
        data = os.path.join(self.dir, "data")
        os.makedirs(data)
        inp = os.path.join(data, "run.json")
        shutil.copy(SMALL, inp)
        for extra in ([], ["--force"]):
            with self.subTest(extra=extra):
                self.assert_bad_input(run("--out", data, *extra, inp), "holds the input")
                self.assertEqual(os.listdir(data), ["run.json"])

    def test_other_directory_is_refused_unless_forced(self):
        other = os.path.join(self.dir, "photos")
        os.makedirs(other)
        open(os.path.join(other, "cat.jpg"), "w").write("meow")
        self.assert_bad_input(run("--out", other, SMALL), "is not a condbench report")
        self.assertEqual(os.listdir(other), ["cat.jpg"])
        self.assertEqual(run("--out", other, "--force", SMALL).returncode, 0)
        self.assertIn("report.md", os.listdir(other))

    def test_a_fifo_a_link_or_a_device_is_never_replaced_even_with_force(self):
        # made here, never a path under /dev
        precious = os.path.join(self.dir, "precious")
        os.makedirs(precious)
        open(os.path.join(precious, "keep.txt"), "w").write("precious")
        os.symlink(precious, os.path.join(self.dir, "link"))
        os.mkfifo(os.path.join(self.dir, "fifo"))
        made = {"link": ("is a symbolic link", stat.S_ISLNK), "fifo": ("is a FIFO", stat.S_ISFIFO)}
        try:
            os.mknod(os.path.join(self.dir, "null"), stat.S_IFCHR | 0o600, os.makedev(1, 3))
            made["null"] = ("is a device", stat.S_ISCHR)
        except PermissionError:
            pass  # not root: the FIFO and the link stand for it
        for name, (kind, still) in made.items():
            target = os.path.join(self.dir, name)
            with self.subTest(target=name):
                self.assert_bad_input(run("--out", target, "--force", SMALL), f"--out: '{target}' {kind}",
                                      "never replaced, even with --force")
                self.assertTrue(still(os.lstat(target).st_mode))
        self.assertEqual(os.readlink(os.path.join(self.dir, "link")), precious)
        self.assertEqual(os.listdir(precious), ["keep.txt"])

    def test_earlier_report_is_replaced_and_marked(self):
        out = os.path.join(self.dir, "report")
        self.assertEqual(run("--out", out, SMALL).returncode, 0)
        self.assertTrue(os.path.exists(os.path.join(out, ".condbench-report")))
        self.assertEqual(run("--out", out, SMALL).returncode, 0)
        self.assertEqual(sorted(os.listdir(self.dir)), ["report"])


class Signals(Case):
    """A stand-in gnuplot that announces itself and waits: the signal arrives mid-chart."""

    def interrupt(self, sig):
        bin_dir = os.path.join(self.dir, "bin")
        os.makedirs(bin_dir)
        started = os.path.join(self.dir, "started")
        fake = os.path.join(bin_dir, "gnuplot")
        with open(fake, "w") as f:
            f.write(f"#!/bin/sh\ntouch '{started}'\nexec sleep 60\n")
        os.chmod(fake, 0o755)
        out = os.path.join(self.dir, "out")
        env = dict(os.environ, PATH=bin_dir + os.pathsep + os.environ.get("PATH", ""))
        proc = subprocess.Popen([REPORT, "--out", out, SMALL], env=env, stdout=subprocess.PIPE,
                                stderr=subprocess.PIPE)
        while not os.path.exists(started) and proc.poll() is None:
            time.sleep(0.02)  # polling for the stand-in to start; nothing is asserted about time
        proc.send_signal(sig)
        proc.communicate(timeout=60)
        self.assertEqual(proc.returncode, -sig)
        self.assertEqual(sorted(os.listdir(self.dir)), ["bin", "started"])  # no out, no out.tmp-PID

    def test_ctrl_c_during_a_chart_stops_the_report_and_leaves_nothing(self):
        self.interrupt(signal.SIGINT)

    def test_sigterm_during_a_chart_stops_the_report_and_leaves_nothing(self):
        self.interrupt(signal.SIGTERM)


class BadFiles(Case):
    def test_deep_nesting_in_the_context(self):
        text = small_text().replace('"threads": "2"', '"threads": ' + "[" * 100000 + "]" * 100000, 1)
        self.assert_bad_input(run("--out", os.path.join(self.dir, "o"), self.write_json("deep.json", text)),
                              "deep.json", "limit: JSON nesting")

    def test_malformed_names_and_values_are_named(self):
        cases = {
            "batch:abc": ("batch:1/", "batch:abc/", "is not batch:N"),
            "batch:huge": ("batch:1/", "batch:99999999999999999999/", "is not batch:N"),
            "exit:abc": ("mix:early/", "exit:abc/", "is not exit:K or mix:SHAPE"),
            "exit:0": ("mix:early/", "exit:0/", "benchmark scenario 'exit:0' is not exit:K or mix:SHAPE"),
            "mix:weird": ("mix:early/", "mix:weird/", "benchmark scenario 'mix:weird' is not exit:K or mix:SHAPE"),
            "batch:0": ("batch:1/", "batch:0/", "benchmark name part 'batch:0' is not batch:N with N >= 1"),
            "time": ('"real_time": 10.0', '"real_time": "fast"', "benchmark entry 1 is malformed"),
            "negative": ('"real_time": 10.0', '"real_time": -1e308', "is not a finite, non-negative time"),
            "unit": ('"time_unit": "us"', '"time_unit": "fortnights\\nx"', "unknown time unit 'fortnights\\nx'"),
        }
        for name, (old, new, message) in cases.items():
            with self.subTest(name):
                text = small_text().replace(old, new, 2)  # the first benchmark's name and run_name
                path = self.write_json(name + ".json", text)
                self.assert_bad_input(run("--out", os.path.join(self.dir, "o"), path), name + ".json", message)
                self.assertFalse(os.path.exists(os.path.join(self.dir, "o")))


class ResultsAreCountedOnce(Case):
    def test_a_repetition_given_twice_is_refused(self):
        # small.json joined with itself: every repetition twice would narrow every interval
        data = json.loads(small_text())
        for i, b in enumerate(data["benchmarks"]):
            b["repetition_index"] = i
        doubled = dict(data, benchmarks=data["benchmarks"] + data["benchmarks"])
        path = self.write_json("doubled.json", doubled)
        line = self.assert_bad_input(run("--out", os.path.join(self.dir, "o"), path), "doubled.json",
                                     "repeats repetition 0 of", "joined with itself")
        self.assertFalse(os.path.exists(os.path.join(self.dir, "o")), line)
        self.assert_bad_input(run("--compare", path, path), "repeats repetition")
        self.assertEqual(run("--out", os.path.join(self.dir, "o"), self.write_json("once.json", data)).returncode, 0)

    def test_a_fifo_or_a_folder_as_an_input_is_refused_without_waiting(self):
        fifo = os.path.join(self.dir, "pipe.json")
        os.mkfifo(fifo)
        for args in (("--table", fifo), ("--table", self.dir), ("--out", os.path.join(self.dir, "o"), fifo)):
            with self.subTest(args=args):
                self.assert_bad_input(run(*args, timeout=20), "not a regular file")

    def test_a_regression_threshold_that_can_never_fail_is_refused(self):
        a = self.write_json("a.json", small_text())
        for given in ("", "inf", "1e400", "0", "-5", "nan", "5%", "1001"):
            with self.subTest(given=given):
                self.assert_bad_input(run("--compare", a, a, f"--fail-on-regression={given}"),
                                      "--fail-on-regression:", "above 0 and at most 1000")
        self.assertEqual(run("--compare", a, a, "--fail-on-regression=1000").returncode, 0)



class Bounded(Case):
    def test_thousands_of_groups_draw_a_bounded_number_of_charts(self):
        if shutil.which("gnuplot") is None:
            self.skipTest("no gnuplot: the report draws no charts here")
        # small.json's benchmarks at 90 batch sizes: a group, and a chart or more, for each.
        data = json.loads(small_text())
        rows = [b for b in data["benchmarks"] if b["name"].startswith("early_exit/")]
        many = []
        for batch in range(1, 91):
            for b in rows:
                copy = dict(b)
                for key in ("name", "run_name"):
                    copy[key] = copy[key].replace("/batch:1/", f"/batch:{batch}/")
                many.append(copy)
        out = os.path.join(self.dir, "o")
        result = run("--out", out, self.write_json("many.json", dict(data, benchmarks=many)), timeout=300)
        self.assertEqual(result.returncode, 0, result.stderr)
        charts = os.listdir(os.path.join(out, "charts"))
        self.assertEqual(len(charts), 64)
        with open(os.path.join(out, "report.md")) as f:
            text = f.read()
        said = re.search(r"(\d+) more charts were not drawn: a report draws at most 64", text)
        self.assertIsNotNone(said, "the report says what it left out")
        self.assertGreater(int(said.group(1)), 0)
        self.assertIn("(64 charts)", result.stdout)

    def at_batches(self, batches, prefix="early_exit/"):
        """small.json's benchmarks whose name starts with prefix, at each of the batch sizes."""
        data = json.loads(small_text())
        rows = [b for b in data["benchmarks"] if b["name"].startswith(prefix)]
        many = []
        for batch in batches:
            for b in rows:
                copy = dict(b)
                for key in ("name", "run_name"):
                    copy[key] = copy[key].replace("/batch:1/", f"/batch:{batch}/")
                many.append(copy)
        return self.write_json("many.json", dict(data, benchmarks=many))

    def test_pairs_of_thousands_of_strategies_in_one_group_are_refused_before_judging(self):
        # small.json's strategies copied 600 times into its groups: pairs grow with their square
        data = json.loads(small_text())
        rows = [b for b in data["benchmarks"] if b["name"].startswith("early_exit/")]
        many = []
        for copy_index in range(600):
            for b in rows:
                copy = dict(b)
                for key in ("name", "run_name"):
                    parts = copy[key].split("/")
                    parts[3] = f"{parts[3]}{copy_index}"
                    copy[key] = "/".join(parts)
                many.append(copy)
        result = run("--pairs", self.write_json("many.json", dict(data, benchmarks=many)), timeout=120)
        self.assert_bad_input(result, "--pairs: ", "pairs of cells in these files' groups, more than 1000000")
        self.assertEqual(result.stdout, "")

    def test_thousands_of_groups_show_a_bounded_number_of_groups(self):
        # 600 batch sizes of one model: a group each; no gnuplot on PATH, so no charts
        path = self.at_batches(range(1, 601), "early_exit/cpu/torch/")
        out = os.path.join(self.dir, "o")
        result = run("--out", out, path, timeout=300, env=dict(os.environ, PATH=""))
        self.assertEqual(result.returncode, 0, result.stderr)
        with open(os.path.join(out, "report.md")) as f:
            text = f.read()
        note = re.search(r"This report shows the first 512 of the 600 groups \(device, model and batch\), up to "
                         r"(.*?) · mlp h64 ×3 · batch 512: a report shows at most 512\. condbench-report --table "
                         r"FILE\.\.\. prints every cell\.", text)
        self.assertIsNotNone(note, text[:2000])
        self.assertIn("condbench-report: This report shows the first 512 of the 600 groups", result.stderr)
        # each per-group section heads the groups it shows: 512 in "Latency by scenario", under their machine's
        latency = text.split("## Latency by scenario")[1].split("\n## ")[0]
        self.assertEqual(len(re.findall(r"^### ", latency, re.M)), 1)
        self.assertEqual(len(re.findall(r"^#### ", latency, re.M)), 512)
        self.assertIn("#### mlp h64 ×3 · batch 512\n", latency)
        self.assertNotIn("· batch 513", text)
        # the table mode leaves nothing out
        table = run("--table", path, timeout=300)
        self.assertEqual(table.returncode, 0, table.stderr)
        self.assertIn("| 600 |", table.stdout)

    def test_a_chart_gnuplot_cannot_draw_is_named_in_its_place(self):
        # a stand-in gnuplot that fails on the latency charts and draws nothing else either way
        bin_dir = os.path.join(self.dir, "bin")
        os.makedirs(bin_dir)
        fake = os.path.join(bin_dir, "gnuplot")
        with open(fake, "w") as f:
            f.write("#!/bin/sh\necho 'gnuplot: broke' >&2\nexit 1\n")
        os.chmod(fake, 0o755)
        out = os.path.join(self.dir, "o")
        result = run("--out", out, SMALL, env=dict(os.environ, PATH=bin_dir + os.pathsep + os.environ.get("PATH", "")))
        self.assertEqual(result.returncode, 0, result.stderr)
        with open(os.path.join(out, "report.md")) as f:
            text = f.read()
        missing = re.findall(r'\(A chart is missing here: gnuplot could not draw "([^"]+)"\.\)', text)
        self.assertTrue(any(m.startswith("Latency by exit scenario, ") for m in missing), missing)
        self.assertEqual(os.listdir(os.path.join(out, "charts")), [])
        self.assertIn("(0 charts)", result.stdout)


if __name__ == "__main__":
    unittest.main(verbosity=2)
