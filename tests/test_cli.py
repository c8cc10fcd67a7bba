"""The command-line tools as a user meets them: exit codes, one-line errors, JSON, and the
state_dict files Python's torch.save writes. Usage: test_cli.py CONDBENCH CONDBENCH_INFER."""
import csv
import io
import json
import os
import re
import subprocess
import sys
import tempfile
import unittest

from tools import main, run  # tests/tools.py: the tests' shared helpers

# The schema the C++ side writes (include/condbench/result_format.h), read from the source of truth.
with open(os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "include", "condbench", "result_format.h")) as f:
    RESULT_SCHEMA = re.search(r'kResultSchema = "([^"]+)"', f.read()).group(1)

CONDBENCH, INFER = sys.argv[1], sys.argv[2]
del sys.argv[1:3]

# The aoti engine's packages (the ctest fixture aoti_packages compiled the default model's into
# condbench's cache): every test here runs without them, so what runs does not depend on what a
# cache holds, but AotiEngine, which runs with the cache as it is.
WITH_PACKAGES = {"CONDBENCH_AOTI_DIR": os.environ.get("CONDBENCH_AOTI_DIR")}  # as it was (None: condbench's default)
_no_packages = tempfile.TemporaryDirectory(prefix="condbench-no-aoti-")
os.environ["CONDBENCH_AOTI_DIR"] = _no_packages.name

REQUIRED_CONTEXT = ["condbench_version", "condbench_schema", "git_revision", "build_type", "torch_version",
                    "cuda_runtime_version", "cuda_driver_version", "device_name", "cpu_model", "threads",
                    "torch_conditional_capture", "condbench_peak_resident_memory", "condbench_per_token"]
REQUIRED_COUNTERS = ["host_syncs", "launches", "flops_executed", "flops_useful", "exit_mean"]

try:
    import torch
except ImportError:  # the interop tests need the torch that scripts/setup installs
    torch = None


class AotiEngine(unittest.TestCase):
    """The aoti engine with the default model's packages (the aoti_packages fixture): in
    condbench-infer beside every other strategy, and in a run whose context says how each package
    was built."""

    def test_infer_runs_both_aoti_strategies_at_batch_1_and_masked_at_any_batch(self):
        result = run(INFER, "--device=cpu", "--batch=1", "--thresholds=0.12,0.12,0.12", env=WITH_PACKAGES)
        self.assertEqual(result.returncode, 0, result.stderr)
        out = json.loads(result.stdout)
        self.assertTrue(out["agree"])
        ran = {f'{s["engine"]}/{s["strategy"]}' for s in out["strategies"]}
        self.assertLessEqual({"aoti/cond", "aoti/masked", "torch/eager_host"}, ran)
        result = run(INFER, "--device=cpu", "--batch=5", "--thresholds=0.12,0.12,0.12", env=WITH_PACKAGES)
        self.assertEqual(result.returncode, 0, result.stderr)
        out = json.loads(result.stdout)
        self.assertTrue(out["agree"])
        self.assertIn("aoti/masked", {f'{s["engine"]}/{s["strategy"]}' for s in out["strategies"]})
        self.assertEqual([s["strategy"] for s in out["skipped"]], ["cpu/aoti/cond"])
        self.assertIn("batch 1 only", out["skipped"][0]["reason"])

    def test_a_decoder_package_of_another_model_is_refused_when_loaded(self):
        # #59 item 12: the fixture's decoder step (exit_every 2) put where condbench looks for the same
        # decoder with exit_every 3, its description saying so: it loads, and computes another model
        import shutil
        sizes = "vocab=29,d_model=24,heads=2,layers=6,ffn=40,context=24"
        home = WITH_PACKAGES["CONDBENCH_AOTI_DIR"] or os.path.join(
            os.environ.get("XDG_CACHE_HOME") or os.path.expanduser("~/.cache"), "condbench", "aoti")
        version = torch.__version__.split("+")[0] if torch else "?"
        honest = os.path.join(home, f"torch-{version}", "cpu", "decoder-" + sizes.replace("=", "").replace(",", "-") +
                              "-exit_every2")
        if not os.path.isfile(os.path.join(honest, "cond.pt2")):
            self.skipTest(f"no decoder package at {honest} (the aoti_packages fixture compiles it)")
        with tempfile.TemporaryDirectory() as d:
            wrong = os.path.join(d, f"torch-{version}", "cpu", os.path.basename(honest)[:-1] + "3")
            shutil.copytree(honest, wrong)
            with open(os.path.join(wrong, "cond.json")) as f:
                meta = json.load(f)
            meta["config"]["exit_every"] = 3
            with open(os.path.join(wrong, "cond.json"), "w") as f:
                json.dump(meta, f)
            args = ["--model=decoder", "--strategy=cond,eager_host", "--batch=1", "--generate=4", "--device=cpu"]
            result = run(INFER, *args, "--decoder=" + sizes + ",exit_every=3", "--thresholds=0.5",
                         env={"CONDBENCH_AOTI_DIR": d})
            self.assertEqual(result.returncode, 1, result.stdout + result.stderr)
            self.assertEqual(result.stderr.strip().splitlines(), [
                f"condbench-infer: cpu/aoti/cond: aoti/cond: the package at {wrong}/cond.pt2 computes another model "
                f"than {sizes.replace(',', ' ')} exit_every=3 prompt=16 generate=4 (a token leaving at exit 1 differs "
                "from the model's own step): compile it again (.venv/bin/python -m condbench.aoti --force)"])
            self.assertEqual([s["strategy"] for s in json.loads(result.stdout)["strategies"]], ["eager_host"])
        # the package where it belongs: checked, run, and agreeing
        result = run(INFER, *args, "--decoder=" + sizes + ",exit_every=2", "--thresholds=0.5,0.5", env=WITH_PACKAGES)
        self.assertEqual(result.returncode, 0, result.stderr)
        self.assertTrue(json.loads(result.stdout)["agree"])

    def test_infer_with_nothing_it_can_run_says_why(self):
        result = run(INFER, "--device=cpu", "--strategy=cond", "--batch=2", "--thresholds=0.5,0.5,0.5", env=WITH_PACKAGES)
        self.assertEqual(result.returncode, 2, result.stderr)
        self.assertEqual(len(result.stderr.strip().splitlines()), 1, result.stderr)
        self.assertIn("cpu/aoti/cond: torch.cond branches on one boolean", result.stderr)

    def test_a_run_records_how_each_package_was_built(self):
        import fcntl
        with tempfile.TemporaryDirectory() as d:
            out, temp = os.path.join(d, "run.json"), os.path.join(d, "tmp")
            # what earlier runs left: one killed (its lock free), one killed before it locked its
            # folder (long ago), one running (its lock held), one starting (not locked yet), one
            # whose .lock is a FIFO (an open would block), and, where the test can make one,
            # another user's
            left = ["killed", "killed-unlocked", "running", "starting", "fifo", "other-user"]
            for name in left:
                os.makedirs(os.path.join(temp, "condbench-aoti-" + name, "data"))
            for name in ("killed", "running", "other-user"):
                open(os.path.join(temp, "condbench-aoti-" + name, ".lock"), "w").close()
            os.mkfifo(os.path.join(temp, "condbench-aoti-fifo", ".lock"))
            os.utime(os.path.join(temp, "condbench-aoti-killed-unlocked"), (0, 0))
            if os.geteuid() == 0:
                for path in ("", ".lock", "data"):
                    os.chown(os.path.join(temp, "condbench-aoti-other-user", path), 65534, 65534)
            else:
                left.remove("other-user")
            with open(os.path.join(temp, "condbench-aoti-running", ".lock")) as held:
                fcntl.flock(held, fcntl.LOCK_EX)
                result = run(CONDBENCH, "--device=cpu", "--strategy=cond", "--hidden=64", "--batch=1",
                             "--scenario=exit:2", "--benchmark_repetitions=1", "--benchmark_min_time=0.01",
                             f"--benchmark_out={out}", "--benchmark_out_format=json",
                             env={**WITH_PACKAGES, "TMPDIR": temp})
            self.assertEqual(result.returncode, 0, result.stderr)
            # the folder AOTInductor extracted the package into went at exit, and so did the killed
            # runs'
            self.assertEqual(sorted(os.listdir(temp)),
                             ["condbench-aoti-" + n for n in sorted(set(left) - {"killed", "killed-unlocked"})])
            with open(out) as f:
                data = json.load(f)
        note = data["context"]["build:cpu/aoti/cond in_features=32 hidden=64 num_classes=10 blocks=3"]
        self.assertRegex(note, r"^compiled in [0-9.]+ s \(export [0-9.]+ s\) by torch [0-9.]+; AOTInductor options: ")
        [b] = [b for b in data["benchmarks"] if b["run_name"].startswith("early_exit/cpu/aoti/cond/exit:2/")]
        self.assertNotIn("error_occurred", b)
        self.assertEqual(b["host_syncs"], 2)  # AOTInductor reads each torch.cond predicate on the host
        self.assertEqual(b["exit_mean"], 2)
        # what the run selected, for scripts/run_history.py: the selecting flags given, the size flag
        # of a family among them
        self.assertEqual(data["context"]["condbench_selection"], "part: --device, --strategy, --scenario, --batch, --hidden")
        # every counter in the file is one of the counters table's (include/condbench/counters.h), whose
        # descriptions the context carries: the harness names none by hand that the table lacks
        self.assertCountersDescribed(data, b)
        # so does the decoder's case: its counters (layers_run, exits_evaluated, ...) are rows too
        with tempfile.TemporaryDirectory() as d:
            out = os.path.join(d, "decoder.json")
            result = run(CONDBENCH, "--device=cpu", "--model=decoder", "--strategy=eager_host", "--batch=2",
                         "--scenario=exit:1",
                         "--vocab=29", "--d-model=24", "--heads=2", "--layers=4", "--ffn=40", "--context=24",
                         "--prompt=5", "--generate=4",
                         "--benchmark_repetitions=1", "--benchmark_min_time=0.01",
                         f"--benchmark_out={out}", "--benchmark_out_format=json")
            self.assertEqual(result.returncode, 0, result.stderr)
            with open(out) as f:
                data = json.load(f)
        [b] = [b for b in data["benchmarks"] if b["run_name"].startswith("early_exit/cpu/torch/eager_host/")]
        self.assertEqual((b["layers_run"], b["layers_propagated"], b["exits_evaluated"]), (2, 2, 1))  # left at exit 1
        self.assertCountersDescribed(data, b)

    def assertCountersDescribed(self, data, benchmark):
        described = {k[len("counter:"):] for k in data["context"] if k.startswith("counter:")}
        google = {"real_time", "cpu_time", "iterations", "repetitions", "repetition_index", "threads", "family_index",
                  "per_family_instance_index", "items_per_second", "bytes_per_second"}
        for key, value in benchmark.items():
            if isinstance(value, (int, float)) and not isinstance(value, bool) and key not in google:
                self.assertTrue(key in described or (key.startswith("exit_") and "exit_" in described), key)


    def test_an_answer_budget_adds_rounds_until_the_answer_is_decided(self):
        # aoti/cond, fused and eager_host at exit 1: 3 repetitions are too few for an interval, so both
        # comparisons of the answer (fused, the fastest, against each) start undecided. One look's rounds
        # double the three cells to 6 repetitions, where a 50x gap is decided: no further look.
        with tempfile.TemporaryDirectory() as d:
            out, checkpoint = os.path.join(d, "run.json"), os.path.join(d, "checkpoint.json")
            result = run(CONDBENCH, "--device=cpu", "--strategy=cond,fused,eager_host", "--hidden=64", "--batch=1",
                         "--scenario=exit:1", "--benchmark_repetitions=3", "--benchmark_min_time=0.01",
                         "--answer-budget=120", f"--benchmark_out={out}", f"--checkpoint-out={checkpoint}",
                         env=WITH_PACKAGES)
            self.assertEqual(result.returncode, 0, result.stderr)
            with open(out) as f:
                data = json.load(f)
            with open(checkpoint) as f:
                self.assertEqual(json.load(f)["benchmarks"], data["benchmarks"])
            self.assertEqual(sorted(os.listdir(d)), ["checkpoint.json", "run.json"])
        spent = data["context"]["condbench_answer_budget"]
        self.assertRegex(spent, r"^3 rounds over 3 cells in [0-9.e-]+ s, 2 looks \(verdicts at 99\.7%\): "
                                r"2 comparisons undecided before, 0 after$")
        self.assertEqual(data["context"]["condbench_answer_looks"], "3")
        self.assertIn(f"condbench: answer budget: {spent}", result.stderr)
        runs = {}
        for b in data["benchmarks"]:
            if b["run_type"] == "iteration":
                runs.setdefault(b["run_name"], []).append(b)
        for name, reps in runs.items():
            with self.subTest(name=name):
                n = 6 if name.startswith("early_exit/") else 3  # the primitives are not in the answer
                self.assertEqual([b["repetition_index"] for b in reps], list(range(n)))
                self.assertEqual({b["repetitions"] for b in reps}, {n})
                # the aggregates are over every repetition, once
                aggregates = {b["aggregate_name"]: b for b in data["benchmarks"]
                              if b["run_type"] == "aggregate" and b["run_name"] == name}
                self.assertEqual(sorted(aggregates), ["cv", "mean", "median", "stddev"])
                times = sorted(b["real_time"] for b in reps)
                self.assertAlmostEqual(aggregates["median"]["real_time"], (times[n // 2 - 1] + times[n // 2]) / 2
                                       if n % 2 == 0 else times[n // 2], delta=1e-9 * times[-1])
                self.assertEqual(aggregates["median"]["repetitions"], n)
        # the rounds ran after the run's own repetitions, each once per round
        cells = [b for name, reps in runs.items() if name.startswith("early_exit/") for b in reps]
        self.assertGreater(min(b["sequence"] for b in cells if b["repetition_index"] >= 3),
                           max(b["sequence"] for b in cells if b["repetition_index"] < 3))

    def test_an_answer_budget_with_nothing_undecided_adds_nothing(self):
        with tempfile.TemporaryDirectory() as d:
            out = os.path.join(d, "run.json")
            result = run(CONDBENCH, "--device=cpu", "--strategy=fused,eager_host", "--hidden=64", "--batch=1",
                         "--scenario=exit:1", "--benchmark_repetitions=3", "--benchmark_min_time=0.01",
                         "--answer-budget=60", f"--benchmark_out={out}", env=WITH_PACKAGES)
            self.assertEqual(result.returncode, 0, result.stderr)
            with open(out) as f:
                data = json.load(f)
        # no PyTorch option ran: the answer compares nothing
        self.assertEqual(data["context"]["condbench_answer_budget"],
                         "every comparison of the answer was decided by the run's own repetitions")
        self.assertNotIn("condbench_answer_looks", data["context"])
        self.assertEqual(len([b for b in data["benchmarks"] if b["run_type"] == "iteration"
                              and b["run_name"].startswith("early_exit/")]), 6)


class BadFlags(unittest.TestCase):
    def assert_rejected(self, tool, flag_args, names):
        result = run(tool, *flag_args)
        self.assertEqual(result.returncode, 2, f"{flag_args}: {result.stderr}")
        lines = result.stderr.strip().splitlines()
        self.assertEqual(len(lines), 1, f"{flag_args}: expected one line, got {result.stderr!r}")
        self.assertIn(names, lines[0])

    def test_condbench_rejects_each_bad_value_naming_the_flag(self):
        cases = [
            (["--device=gpu"], "--device"),
            (["--strategy=warp_drive"], "--strategy"),
            (["--scenario=exit:9"], "exit:9"),
            (["--scenario=mix:sideways"], "--scenario: scenario 'mix:sideways': unknown mix"),
            (["--batch=0"], "--batch"),
            (["--batch=abc"], "--batch"),
            (["--batch=1,,2"], "--batch"),
            (["--hidden=-5"], "--hidden"),
            (["--blocks=999"], "--blocks"),
            (["--nvtx=loud"], "--nvtx"),
            (["--threads=0"], "--threads"),
            (["--weights=/nonexistent/w.pt"], "/nonexistent/w.pt"),
            (["--device"], "--device"),
            (["--benchmark_out=/nonexistent/dir/out.json"], "--benchmark_out"),
            (["--benchmark_out_format=xml"], "--benchmark_out_format"),
            (["--benchmark_context=novalue"], "--benchmark_context"),
            (["--answer-budget=-1"], "--answer-budget"),
            (["--answer-budget=soon"], "--answer-budget"),
            (["--answer-budget=10", "--in-order"], "--answer-budget"),
            (["--rounds", "--in-order"], "--rounds"),
            (["--rounds", "--benchmark_enable_random_interleaving=false"], "--rounds"),
        ]
        for flag_args, names in cases:
            with self.subTest(flag_args=flag_args):
                self.assert_rejected(CONDBENCH, flag_args, names)

    def test_a_device_this_machine_lacks_is_one_line_and_exit_2(self):
        listing = run(CONDBENCH, "--list").stdout
        if "cuda/" in listing and "cannot run here" not in listing:
            self.skipTest("this machine has a GPU")
        for flag_args in [["--device=cuda"], ["--device=all"], ["--device", "cuda", "--strategy=fused"]]:
            with self.subTest(flag_args=flag_args):
                self.assert_rejected(CONDBENCH, flag_args, "--device")

    def test_a_strategy_on_a_device_it_does_not_run_on_is_named_with_its_devices(self):
        result = run(CONDBENCH, "--device=cpu", "--strategy=fused,graph_while")
        self.assertEqual(result.returncode, 2, result.stderr)
        if "unknown strategy" not in result.stderr:  # a CPU-only build does not register CUDA strategies
            self.assertEqual(result.stderr.strip(), "condbench: --strategy: graph_while runs on cuda only, which "
                                                    "--device does not select")

    def test_a_strategy_is_selected_by_its_name_or_by_the_key_list_prints(self):
        def listed(strategies, model="mlp", sizes=("--hidden=16",)):
            result = run(CONDBENCH, "--device=cpu", "--model=" + model, "--strategy=" + strategies, *sizes,
                         "--batch=1", "--scenario=exit:1", "--benchmark_list_tests=true")
            self.assertEqual(result.returncode, 0, result.stderr)
            return {"/".join(line.split("/")[1:4]) + (" decoder" if "/model:decoder/" in line else "")
                    for line in result.stdout.split() if line.startswith("early_exit/")}
        self.assertEqual(listed("cpu/native/fused"), {"cpu/native/fused"})
        self.assertEqual(listed("masked"), {"cpu/torch/masked", "cpu/aoti/masked"})
        self.assertEqual(listed("cpu/torch/masked,fused"), {"cpu/torch/masked", "cpu/native/fused"})
        # a key names its device, engine and name; --model picks the decoder's strategy of that key
        self.assertEqual(listed("cpu/torch/masked", "decoder", ("--d-model=16", "--heads=2")),
                         {"cpu/torch/masked decoder"})
        for args, said in [(["--strategy=cpu/torch/fused"], "unknown strategy 'cpu/torch/fused'"),
                           (["--strategy=cuda/native/fused"], "cuda/native/fused runs on cuda only")]:
            result = run(CONDBENCH, "--device=cpu", *args)
            self.assertEqual(result.returncode, 2, result.stderr)
            if "cuda" in args[0] and "unknown strategy" in result.stderr:
                continue  # a CPU-only build does not register CUDA strategies
            self.assertIn(said, result.stderr)

    def test_help_lists_every_flag_of_condbench_then_google_benchmarks(self):
        for flag in ["--help", "-h"]:
            result = run(CONDBENCH, flag)
            self.assertEqual(result.returncode, 0, result.stderr)
            for name in ["--device=cpu|cuda|all", "--strategy", "--scenario", "--batch", "--hidden", "--blocks",
                         "--weights", "--full", "--threads", "--nvtx", "--require-quiet", "--in-order",
                         "--checkpoint-out", "--export-workload", "--list", "--trace", "--progress", "--benchmark_filter",
                         "--answer-budget", "--wait-quiet",
                         "--model=FAMILY", "--in-features", "--d-model", "--heads", "--ffn", "--seq"]:
                self.assertIn(name, result.stdout, flag)
            # each family's sizes from its descriptor, with their defaults and sweeps
            self.assertIn("blocks 3 (--full 3,12), batch 1,64 (--full 1,8,64,512)", result.stdout)
            self.assertIn("hidden width (default 64,1024; --full 64,256,1024,4096)", result.stdout)
            self.assertIn("feed-forward width (default 4 x d_model)", result.stdout)
            self.assertLess(result.stdout.index("The mlp family"), result.stdout.index("The transformer family"))
            self.assertLess(result.stdout.index("--list"), result.stdout.index("--benchmark_filter"))

    def test_a_value_may_follow_its_flag(self):
        result = run(CONDBENCH, "--device", "cpu", "--strategy", "fused", "--hidden", "16", "--batch", "1",
                     "--scenario", "exit:1", "--benchmark_list_tests=true")
        self.assertEqual(result.returncode, 0, result.stderr)
        self.assertEqual([n for n in result.stdout.split() if not n.startswith("primitive/cpu/")],
                         ["early_exit/cpu/native/fused/exit:1/batch:1/hidden:16/blocks:3/real_time"])

    def test_the_decoders_sizes_are_flags_as_every_familys(self):
        # its sizes are FamilyAxis rows: a flag each, a list a sweep; a flag shared with the transformer
        # sets and selects both; --decoder=SIZE=N, the old spelling, names the same model
        def names(*args):
            result = run(CONDBENCH, "--device=cpu", "--strategy=eager_host", "--scenario=exit:1", "--batch=1", *args,
                         "--benchmark_list_tests=true")
            self.assertEqual(result.returncode, 0, result.stderr)
            return [n.removesuffix("/real_time") for n in result.stdout.split() if n.startswith("early_exit/")]
        tiny = "vocab:29/d_model:24/heads:2/layers:4/ffn:40/context:24/exit_every:2/prompt:5/generate:{}/blocks:1"
        decoder = "early_exit/cpu/torch/eager_host/exit:1/batch:1/model:decoder/" + tiny
        flags = ["--vocab=29", "--d-model=24", "--heads=2", "--layers=4", "--ffn=40", "--context=24", "--prompt=5"]
        self.assertEqual(names("--model=decoder", *flags, "--generate=4,3"), [decoder.format(4), decoder.format(3)])
        self.assertEqual(names("--model=decoder", "--decoder=" + ",".join(f[2:].replace("-", "_") for f in flags) +
                               ",generate=4"), [decoder.format(4)])
        self.assertEqual(names(*flags, "--generate=4"), [
            "early_exit/cpu/torch/eager_host/exit:1/batch:1/model:transformer/d_model:24/heads:2/ffn:40/seq:32/blocks:6",
            decoder.format(4)])
        self.assertTrue(all("model:decoder/vocab:3/" in n for n in names("--vocab=3")))
        # --model lists families of either unit, each with its own size flags
        self.assertEqual(names("--model=mlp,decoder", "--hidden=16", *flags, "--generate=4"),
                         ["early_exit/cpu/torch/eager_host/exit:1/batch:1/hidden:16/blocks:3", decoder.format(4)])
        # the flags' model equal to --full's GPT-2-shaped decoder runs once
        gpt2 = ["--full", "--model=decoder", "--d-model=768", "--heads=12", "--layers=12", "--ffn=3072", "--exit-every=3"]
        self.assertEqual(len(names(*gpt2)), 1)
        # ... and, as every family's --full extras, the flags do not change it
        full = names("--full", "--model=decoder", *flags, "--generate=4")
        self.assertEqual([n.split("/model:decoder/")[1].split("/")[:2] for n in full],
                         [["vocab:29", "d_model:24"], ["vocab:512", "d_model:768"]])
        for args, message in [(["--model=mlp", "--vocab=3"], "--vocab: sets the decoder; --model does not select it"),
                              (["--model=mlp", "--d-model=64"],
                               "--d-model: sets the transformer and the decoder; --model does not select them"),
                              (["--d-model=24", "--decoder=d_model=32"], "--d-model: --decoder=d_model gives it too"),
                              (["--model=decoder", "--heads=3"], "the decoder: heads must divide d_model"),
                              (["--weights=w.pt", "--vocab=3"], "--weights: --vocab sets the decoder"),
                              (["--weights=w.pt", "--decoder=vocab=3"], "--weights: --decoder sets the decoder"),
                              (["--vocab=8", "--blocks=3"], "--blocks: sets a family's depth, and none is selected"),
                              # in exits, the final one too: the decoder's depth is no count of blocks
                              (["--model=decoder", "--scenario=exit:5"],
                               "--scenario: exit:5 needs a model of at least 5 exits (the deepest given has 4)")]:
            with self.subTest(args=args):
                self.assert_rejected(CONDBENCH, args, message)
        listed = run(CONDBENCH, "--help").stdout
        self.assertIn("--exit-every=N[,N...]           an exit after every N-th layer (default 2)", listed)
        self.assertLess(listed.index("The transformer family"), listed.index("The decoder family (--model=decoder)"))
        self.assertIn("one iteration: one generated token; batch 1,8 (--full 1,8,32)", listed)

    def test_condbench_rejects_unknown_flags(self):
        # Google Benchmark's name space too, and in every mode: a typo is never ignored
        for args in (["--benchmark_nonsense=1"], ["--benchmark_repetiton=5", "--list"]):
            with self.subTest(args=args):
                self.assert_rejected(CONDBENCH, args, f"{args[0]}: not a flag of condbench or of Google Benchmark")

    def test_infer_rejects_each_bad_value_naming_the_flag(self):
        cases = [
            (["--thresholds=0.5,0.5"], "--thresholds"),
            (["--thresholds=0.5,0.5,1.5"], "--thresholds"),
            (["--thresholds=0.5,x,0.5"], "--thresholds"),
            ([], "--thresholds"),
            (["--thresholds=0.5,0.5,0.5", "--batch=0"], "--batch"),
            (["--thresholds=0.5,0.5,0.5", "--weights=/nonexistent.pt"], "/nonexistent.pt"),
            (["--thresholds=0.5,0.5,0.5", "--input=/nonexistent.pt"], "/nonexistent.pt"),
            (["--thresholds=0.5,0.5,0.5", "--strategy=nope"], "--strategy"),
            (["--thresholds=0.5,0.5,0.5", "--device=tpu"], "--device"),
            (["--thresholds=0.5,0.5,0.5", "--generate=3"], "--generate: the decoder's flag; with --model=decoder"),
            (["--thresholds=0.5,0.5,0.5", "--nope=3"], "unknown argument '--nope=3'"),
            (["--model=decoder", "--hidden=64"], "--hidden: not a flag of --model=decoder"),
            (["--model=decoder", "--blocks=2"], "--blocks: not a flag of --model=decoder"),
            (["--model=decoder", "--nope=3"], "unknown argument '--nope=3'"),
        ]
        for flag_args, names in cases:
            with self.subTest(flag_args=flag_args):
                self.assert_rejected(INFER, flag_args, names)


def fake_root(base, cpus, loadavg, running):
    """A /proc and /sys tree for CONDBENCH_SYSROOT: `running` runnable tasks, condbench included."""
    os.makedirs(os.path.join(base, "proc"), exist_ok=True)
    os.makedirs(os.path.join(base, "sys/devices/system/cpu/cpu0/cpufreq"), exist_ok=True)
    with open(os.path.join(base, "sys/devices/system/cpu/online"), "w") as f:
        f.write(f"0-{cpus - 1}\n")
    with open(os.path.join(base, "sys/devices/system/cpu/cpu0/cpufreq/scaling_governor"), "w") as f:
        f.write("performance\n")
    with open(os.path.join(base, "proc/loadavg"), "w") as f:
        f.write(f"{loadavg} {running}/300 4242\n")
    with open(os.path.join(base, "proc/stat"), "w") as f:
        f.write(f"cpu 1 2 3 4\nprocs_running {running}\nprocs_blocked 0\n")
    return base


TINY = ["--device=cpu", "--hidden=16", "--batch=1", "--scenario=exit:1", "--strategy=fused",
        "--benchmark_min_time=0.01", "--benchmark_repetitions=2"]


class MachineChecks(unittest.TestCase):
    """The machine check against fake /proc and /sys trees (CONDBENCH_SYSROOT)."""

    def setUp(self):
        self.dir = tempfile.TemporaryDirectory()
        self.busy = fake_root(os.path.join(self.dir.name, "busy"), 2, "6.20 5.10 4.00", 3)
        self.quiet = fake_root(os.path.join(self.dir.name, "quiet"), 2, "0.10 0.20 0.30", 1)
        self.out = os.path.join(self.dir.name, "run.json")

    def tearDown(self):
        self.dir.cleanup()

    def condbench(self, root, *args, **env):
        return subprocess.run([CONDBENCH, *args], capture_output=True, text=True, timeout=240,
                              env={**os.environ, "CONDBENCH_SYSROOT": root, **env})

    def context(self):
        with open(self.out) as f:
            return json.load(f)["context"]

    def test_require_quiet_refuses_a_busy_machine_in_one_line(self):
        result = self.condbench(self.busy, "--require-quiet", *TINY, f"--benchmark_out={self.out}")
        self.assertEqual(result.returncode, 2, result.stderr)
        lines = result.stderr.strip().splitlines()
        self.assertEqual(len(lines), 1, result.stderr)
        self.assertIn("--require-quiet", lines[0])
        self.assertIn("busy (2.0 other tasks running on 2 CPUs)", lines[0])
        self.assertEqual(result.stdout, "")
        self.assertEqual(sorted(os.listdir(self.dir.name)), ["busy", "quiet"])  # nothing written

    def test_require_quiet_refuses_a_load_average_at_half_the_cpus_after_waiting(self):
        settling = fake_root(os.path.join(self.dir.name, "settling"), 2, "1.00 0.40 0.20", 1)
        result = self.condbench(settling, "--require-quiet", "--wait-quiet=2", *TINY,
                                f"--benchmark_out={self.out}")
        self.assertEqual(result.returncode, 2, result.stderr)
        lines = result.stderr.strip().splitlines()
        self.assertEqual(len(lines), 2, result.stderr)  # the wait, then the refusal
        self.assertIn("waiting up to 2 s for a quiet machine", lines[0])
        self.assertRegex(lines[1], r"^condbench: --require-quiet: the 1-minute load average is 1\.00 on 2 CPUs, "
                                   r"not below 1\.0: .* \(after waiting [0-9]+ s\)$")
        self.assertFalse(os.path.exists(self.out))

    def test_a_wait_that_runs_out_is_a_warning_in_the_file(self):
        settling = fake_root(os.path.join(self.dir.name, "settling"), 2, "1.00 0.40 0.20", 1)
        result = self.condbench(settling, "--wait-quiet=1", *TINY, f"--benchmark_out={self.out}")
        self.assertEqual(result.returncode, 0, result.stderr)
        said = "the 1-minute load average is 1.00 on 2 CPUs, not below 1.0: the last minute's work is still in it, " \
               "after 1 s of --wait-quiet"
        self.assertIn(f"condbench: warning: {said}", result.stderr)
        self.assertEqual(self.context()["condbench_machine_warnings_start"], said)
        self.assertEqual(self.context()["condbench_quiet_wait_s"], "1")

    def test_wait_quiet_starts_the_run_once_the_load_average_settles(self):
        settling = fake_root(os.path.join(self.dir.name, "settling"), 2, "1.40 0.40 0.20", 1)
        run = subprocess.Popen([CONDBENCH, "--require-quiet", "--wait-quiet=60", *TINY, f"--benchmark_out={self.out}"],
                               stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True,
                               env={**os.environ, "CONDBENCH_SYSROOT": settling})
        try:
            waiting = run.stderr.readline()
            self.assertIn("waiting up to 60 s for a quiet machine: the 1-minute load average is 1.40", waiting)
            fake_root(settling, 2, "0.60 0.40 0.20", 1)  # the compile's minute has passed
            rest = run.stderr.read()
            self.assertEqual(run.wait(timeout=240), 0, rest)
        finally:
            run.kill()
            run.stderr.close()
        self.assertRegex(rest, r"condbench: the machine is quiet after [0-9]+ s")
        c = self.context()
        self.assertGreaterEqual(int(c["condbench_quiet_wait_s"]), 0)
        self.assertLess(int(c["condbench_quiet_wait_s"]), 60)
        self.assertEqual(c["condbench_loadavg_start"], "0.60 0.40 0.20")

    def test_busy_machine_is_warned_about_and_recorded_at_start_and_end(self):
        result = self.condbench(self.busy, *TINY, f"--benchmark_out={self.out}")
        self.assertEqual(result.returncode, 0, result.stderr)
        warnings = [l for l in result.stderr.splitlines() if l.startswith("condbench: warning:")]
        self.assertEqual(len(warnings), 2, result.stderr)
        self.assertIn("the machine is busy (2.0 other tasks running on 2 CPUs)", warnings[0])
        self.assertIn("busy at the end of the run", warnings[1])
        c = self.context()
        self.assertEqual(c["condbench_machine_busy"], "yes")
        self.assertEqual(c["condbench_machine_busy_end"], "yes")
        self.assertEqual(c["condbench_running_start"], "2.0")
        self.assertEqual(c["condbench_loadavg_start"], "6.20 5.10 4.00")
        self.assertEqual(c["condbench_loadavg_end"], "6.20 5.10 4.00")
        self.assertEqual(c["condbench_cpus"], "2")
        self.assertEqual(c["condbench_cpu_governor"], "performance")
        self.assertEqual(c["condbench_cpu_boost"], "unknown")
        self.assertEqual(c["condbench_interleaving"], "random")

    def test_quiet_machine_runs_without_warnings(self):
        result = self.condbench(self.quiet, "--require-quiet", *TINY, f"--benchmark_out={self.out}")
        self.assertEqual(result.returncode, 0, result.stderr)
        self.assertNotIn("condbench: warning:", result.stderr)
        c = self.context()
        self.assertEqual(c["condbench_machine_busy"], "no")
        self.assertEqual(c["condbench_machine_busy_end"], "no")
        self.assertEqual(c["condbench_machine_warnings_start"], "none")
        self.assertNotIn("condbench_test_slowdown", c)

    def test_in_order_opts_out_of_interleaving(self):
        result = self.condbench(self.quiet, "--in-order", *TINY, f"--benchmark_out={self.out}")
        self.assertEqual(result.returncode, 0, result.stderr)
        self.assertEqual(self.context()["condbench_interleaving"], "in order")

    def test_test_slowdown_is_checked_and_recorded(self):
        result = self.condbench(self.quiet, *TINY, CONDBENCH_TEST_SLOWDOWN="cpu/native/fused")
        self.assertEqual(result.returncode, 2)
        self.assertEqual(len(result.stderr.strip().splitlines()), 1, result.stderr)
        self.assertIn("CONDBENCH_TEST_SLOWDOWN", result.stderr)
        result = self.condbench(self.quiet, *TINY, f"--benchmark_out={self.out}",
                                CONDBENCH_TEST_SLOWDOWN="cpu/native/fused:1.2")
        self.assertEqual(result.returncode, 0, result.stderr)
        self.assertEqual(self.context()["condbench_test_slowdown"], "cpu/native/fused:1.2")

    def test_test_twin_registers_the_same_strategy_again_and_is_recorded(self):
        # condbench's own items get a twin; the peer's (python/...) are left to the peer
        twin = "cpu/native/fused,python/py_eager_if"
        result = self.condbench(self.quiet, *TINY[:-3], "--strategy=fused,fused_twin", "--benchmark_min_time=0.01",
                                "--benchmark_repetitions=2", f"--benchmark_out={self.out}", CONDBENCH_TEST_TWIN=twin)
        self.assertEqual(result.returncode, 0, result.stderr)
        self.assertEqual(self.context()["condbench_test_twin"], twin)
        with open(self.out) as f:
            names = {b["run_name"] for b in json.load(f)["benchmarks"] if b.get("run_type") == "iteration"}
        self.assertIn("early_exit/cpu/native/fused_twin/exit:1/batch:1/hidden:16/blocks:3/real_time", names)
        self.assertIn("early_exit/cpu/native/fused/exit:1/batch:1/hidden:16/blocks:3/real_time", names)
        result = self.condbench(self.quiet, "--list", CONDBENCH_TEST_TWIN="cpu/native/nothing")
        self.assertEqual(result.returncode, 2)
        self.assertEqual(result.stderr.strip(),
                         "condbench: CONDBENCH_TEST_TWIN: 'cpu/native/nothing' is not a registered device/engine/strategy "
                         "of a family's inference")


class BusyMachine(unittest.TestCase):
    """A real busy machine: a busy loop per CPU beside condbench. The run is marked busy, its report
    still gives the verdicts its intervals support, and its twin check (each cell's odd repetitions
    against its even ones, the same code interleaved in one run) claims no difference."""

    def test_a_busy_run_gives_verdicts_and_its_twin_split_claims_nothing(self):
        report_tool = os.path.join(os.path.dirname(CONDBENCH), "condbench-report")
        burners = [subprocess.Popen([sys.executable, "-c", "while True: pass"]) for _ in range(os.cpu_count() or 2)]
        try:
            import time
            time.sleep(3)  # long enough for the run queue to show them
            with tempfile.TemporaryDirectory() as d:
                out = os.path.join(d, "busy.json")
                result = run(CONDBENCH, "--device=cpu", "--strategy=fused,eager_host", "--hidden=16", "--batch=1",
                             "--scenario=exit:1,exit:4", "--benchmark_repetitions=12", "--benchmark_min_time=0.01",
                             "--benchmark_filter=^early_exit/", f"--benchmark_out={out}")
                for b in burners:
                    b.kill()
                self.assertEqual(result.returncode, 0, result.stderr)
                with open(out) as f:
                    data = json.load(f)
                self.assertEqual(data["context"]["condbench_machine_busy"], "yes")
                made = run(report_tool, "--out", os.path.join(d, "report"), out)
                self.assertEqual(made.returncode, 0, made.stderr)
                with open(os.path.join(d, "report", "report.md")) as f:
                    md = f.read()
                self.assertIn("Recorded on a busy machine", md.split("## ")[0] + md.split("## ")[1])
                # a 50x difference survives a busy machine, which marks it
                self.assertRegex(md, r"\| native/fused \| torch/eager_host \| FASTER ≥[\d.]+×[^|]*⚑ \|")
                # the twin split: each cell's odd repetitions as a strategy of their own, in the same file
                for b in data["benchmarks"]:
                    if b.get("run_type") == "iteration" and b["run_name"].startswith("early_exit/") and \
                            b.get("repetition_index", 0) % 2:
                        parts = b["run_name"].split("/")
                        parts[3] += "_odd"
                        b["name"] = b["run_name"] = "/".join(parts)
                data["benchmarks"] = [b for b in data["benchmarks"] if b.get("run_type") == "iteration"]
                twins = os.path.join(d, "twins.json")
                with open(twins, "w") as f:
                    json.dump(data, f)
                judged = run(report_tool, "--pairs", twins)
                self.assertEqual(judged.returncode, 0, judged.stderr)
                pairs = [p for p in json.loads(judged.stdout)["pairs"]
                         if p["a"]["strategy"].removesuffix("_odd") == p["b"]["strategy"].removesuffix("_odd")
                         and p["a"]["scenario"] == p["b"]["scenario"]]
                self.assertEqual(len(pairs), 4)  # two strategies, two scenarios
                self.assertEqual([p for p in pairs if p["standing"] == "faster"], [])
        finally:
            for b in burners:
                b.kill()
                b.wait()


class BenchmarkOutput(unittest.TestCase):
    @classmethod
    def setUpClass(cls):
        cls.dir = tempfile.TemporaryDirectory()
        cls.out = os.path.join(cls.dir.name, "run.json")
        result = run(CONDBENCH, "--device=cpu", "--hidden=16", "--batch=1,3", "--scenario=exit:1,exit:4,mix:uniform",
                     "--benchmark_repetitions=3", "--benchmark_min_time=0.01", f"--benchmark_out={cls.out}",
                     "--benchmark_out_format=json")
        assert result.returncode == 0, result.stderr
        with open(cls.out) as f:
            cls.data = json.load(f)
        iterations = [b for b in cls.data["benchmarks"] if b.get("run_type") == "iteration"]
        cls.runs = [b for b in iterations if b["run_name"].startswith("early_exit/") and not b.get("error_occurred")]
        cls.skipped = [b for b in iterations if b["run_name"].startswith("early_exit/") and b.get("error_occurred")]
        cls.primitives = {b["run_name"]: b for b in iterations if b["run_name"].startswith("primitive/")}

    @classmethod
    def tearDownClass(cls):
        cls.dir.cleanup()

    def test_no_temporary_file_is_left_beside_the_result(self):
        self.assertEqual(os.listdir(self.dir.name), ["run.json"])

    def test_context_has_the_required_keys(self):
        for key in REQUIRED_CONTEXT:
            self.assertIn(key, self.data["context"])
        self.assertEqual(self.data["context"]["condbench_schema"], RESULT_SCHEMA)
        # the machine as the run found it, before and after (values depend on this machine)
        for key in ["condbench_machine_busy", "condbench_machine_busy_end", "condbench_loadavg_start",
                    "condbench_loadavg_end", "condbench_cpu_governor", "condbench_cpu_boost"]:
            self.assertIn(key, self.data["context"])
        self.assertIn(self.data["context"]["condbench_machine_busy_end"], ["yes", "no"])
        self.assertEqual(self.data["context"]["condbench_interleaving"], "random")

    def test_every_repetition_says_where_it_ran_in_the_run(self):
        # Google Benchmark keeps the last call's counters of each repetition: distinct, rising with time
        sequences = [b["sequence"] for b in self.runs]
        self.assertEqual(len(set(sequences)), len(sequences))
        self.assertTrue(all(s >= 0 and s == int(s) for s in sequences))
        # interleaved: a benchmark's repetitions are not back to back. In a random order of 18 x 3
        # repetitions a benchmark's three land side by side with probability ~0.2%; in order, all do.
        # (Comparing the last first repetition with the first third one failed about 1 run in 10.)
        order = [b["run_name"] for b in sorted(self.runs, key=lambda b: b["sequence"])]
        together = sum(1 for name in set(order)
                       if max(i for i, n in enumerate(order) if n == name) -
                       min(i for i, n in enumerate(order) if n == name) == 2)
        self.assertLess(together, len(set(order)) // 2, order)

    def test_only_the_aoti_strategies_without_packages_were_skipped_with_the_reason(self):
        self.assertEqual({b["run_name"].split("/")[3] for b in self.skipped}, {"cond", "masked"})
        for b in self.skipped:
            self.assertTrue(b["run_name"].startswith("early_exit/cpu/aoti/"), b["run_name"])
            self.assertRegex(b["error_message"], r"^skipped: (no AOTInductor package|torch.cond branches on one boolean)")

    def test_every_strategy_scenario_and_batch_ran_with_its_counters(self):
        names = {b["run_name"] for b in self.runs}
        for strategy in ["cpu/torch/eager_host", "cpu/torch/masked", "cpu/native/fused"]:
            for scenario in ["exit:1", "exit:4", "mix:uniform"]:
                for batch in [1, 3]:
                    self.assertIn(f"early_exit/{strategy}/{scenario}/batch:{batch}/hidden:16/blocks:3/real_time", names)
        for b in self.runs:
            for counter in REQUIRED_COUNTERS + ["exit_1", "exit_2", "exit_3", "exit_4"]:
                self.assertIn(counter, b, b["name"])
            self.assertLessEqual(b["flops_useful"], b["flops_executed"] * (1 + 1e-12), b["name"])
            self.assertAlmostEqual(sum(b[f"exit_{k}"] for k in range(1, 5)), 1.0, places=9)

    def test_the_cpu_floors_ran_with_what_the_report_divides_by(self):
        reads = [b for name, b in self.primitives.items() if name.startswith("primitive/cpu/read_bandwidth_")]
        self.assertEqual(len(reads), 13)
        for b in reads:
            self.assertGreater(b["bytes"], 0, b["run_name"])
        self.assertGreater(self.primitives["primitive/cpu/fma_peak/real_time"]["flops"], 0)
        self.assertIn("primitive/cpu/torch_op/real_time", self.primitives)
        # every CPU strategy says what it read: the weights of the stages it ran, and the input
        for b in self.runs:
            self.assertGreater(b["bytes_read"], 0, b["name"])
            if "/masked/" in b["name"]:
                self.assertEqual(b["bytes_read"], self.masked_bytes(b["name"]), b["name"])

    @staticmethod
    def masked_bytes(name):
        # hidden 16, in_features 32, 10 classes, 3 blocks: every Linear, weights and biases, and the input rows
        batch = int(name.split("/batch:")[1].split("/")[0])
        floats = (32 * 16 + 16) + 2 * (16 * 16 + 16) + 4 * (16 * 10 + 10) + batch * 32
        return 4.0 * floats

    def test_forced_scenarios_report_where_rows_left(self):
        for b in self.runs:
            if "/exit:1/" in b["name"]:
                self.assertEqual(b["exit_1"], 1.0)
                self.assertEqual(b["exit_mean"], 1.0)
            if "/exit:4/" in b["name"]:
                self.assertEqual(b["exit_4"], 1.0)
            if "/eager_host/exit:4/" in b["name"]:
                self.assertEqual(b["host_syncs"], 3.0)
            if "/masked/" in b["name"]:
                self.assertEqual(b["host_syncs"], 0.0)

    def test_the_output_format_and_context_flags_are_honoured(self):
        # condbench writes --benchmark_out itself (from the run's record), in the format asked for
        with tempfile.TemporaryDirectory() as d:
            csv, out = os.path.join(d, "run.csv"), os.path.join(d, "run.json")
            result = run(CONDBENCH, *TINY, f"--benchmark_out={csv}", "--benchmark_out_format=csv")
            self.assertEqual(result.returncode, 0, result.stderr)
            with open(csv) as f:
                lines = f.read().splitlines()
            self.assertTrue(lines[0].startswith("name,iterations,real_time,cpu_time,time_unit"), lines[0])
            self.assertTrue(any(line.startswith('"early_exit/cpu/native/fused/exit:1/') for line in lines), lines)
            result = run(CONDBENCH, *TINY, f"--benchmark_out={out}", "--benchmark_context=team=perf,ticket=7")
            self.assertEqual(result.returncode, 0, result.stderr)
            with open(out) as f:
                context = json.load(f)["context"]
            self.assertEqual((context["team"], context["ticket"]), ("perf", "7"))
            self.assertNotIn("condbench_answer_budget", context)

    def test_aggregates_only_flags_a_filter_of_nothing_and_list_tests_false(self):
        with tempfile.TemporaryDirectory() as d:
            out, checkpoint = os.path.join(d, "run.json"), os.path.join(d, "checkpoint.json")
            # the display shows aggregates only; the files keep every repetition (the report needs them)
            result = run(CONDBENCH, *TINY, "--benchmark_display_aggregates_only=true", "--benchmark_format=json",
                         f"--benchmark_out={out}")
            self.assertEqual(result.returncode, 0, result.stderr)
            shown = {b["run_type"] for b in json.loads(result.stdout)["benchmarks"]
                     if b["run_name"].startswith("early_exit/")}
            self.assertEqual(shown, {"aggregate"})
            with open(out) as f:
                kept = [b for b in json.load(f)["benchmarks"] if b["run_name"].startswith("early_exit/")]
            self.assertEqual(len([b for b in kept if b["run_type"] == "iteration"]), 2)
            # --benchmark_report_aggregates_only: the file too
            result = run(CONDBENCH, *TINY, "--benchmark_report_aggregates_only", f"--benchmark_out={out}")
            self.assertEqual(result.returncode, 0, result.stderr)
            with open(out) as f:
                self.assertEqual({b["run_type"] for b in json.load(f)["benchmarks"]
                                  if b["run_name"].startswith("early_exit/")}, {"aggregate"})
            os.remove(out)
            # a filter that matches nothing writes nothing (no empty document over a file), says so in
            # one line and exits 2: no work is no success
            result = run(CONDBENCH, *TINY, "--benchmark_filter=^nothing$", f"--benchmark_out={out}",
                         f"--checkpoint-out={checkpoint}")
            self.assertEqual(result.returncode, 2, result.stderr)
            self.assertEqual((result.stdout, result.stderr),
                             ("", "condbench: no benchmark ran: --benchmark_filter '^nothing$' matches none "
                              "(--benchmark_list_tests lists them); nothing was written\n"))
            self.assertEqual(os.listdir(d), [])
            # as Google Benchmark reads it: from BENCHMARK_FILTER where no flag is given, and a
            # pattern its std::regex refuses (POSIX regcomp takes this one) is one line, not a run
            result = run(CONDBENCH, *TINY, env={"BENCHMARK_FILTER": "^nothing$"})
            self.assertEqual((result.returncode, result.stdout), (2, ""), result.stderr)
            self.assertIn("condbench: no benchmark ran: BENCHMARK_FILTER '^nothing$' matches none", result.stderr)
            result = run(CONDBENCH, *TINY, "--benchmark_filter=fused)", env={"BENCHMARK_FILTER": None})
            self.assertEqual((result.returncode, result.stdout), (2, ""), result.stderr)
            self.assertEqual(result.stderr, "condbench: --benchmark_filter: 'fused)' is not a regular expression "
                                            "Google Benchmark reads (Mismatched '(' and ')' in regular expression)\n")
            # an earlier run's file is left as it was, and named
            with open(out, "w") as f:
                f.write("{}")
            result = run(CONDBENCH, *TINY, "--benchmark_filter=^nothing$", f"--benchmark_out={out}")
            self.assertEqual(result.returncode, 2, result.stderr)
            self.assertIn(f"and {out} was left as it was", result.stderr)
            self.assertEqual(open(out).read(), "{}")
            os.remove(out)
            # --benchmark_list_tests=false runs, and writes its result
            result = run(CONDBENCH, *TINY, "--benchmark_list_tests=false", f"--benchmark_out={out}")
            self.assertEqual(result.returncode, 0, result.stderr)
            self.assertEqual(os.listdir(d), ["run.json"])

    def test_repetitions_come_with_aggregates(self):
        aggregates = {b["aggregate_name"] for b in self.data["benchmarks"] if b.get("run_type") == "aggregate"}
        self.assertTrue({"mean", "median", "stddev"} <= aggregates, aggregates)
        self.assertEqual(len(self.runs), 3 * 3 * 3 * 2)

    def test_context_says_how_graph_cond_builds_its_if_nodes(self):
        route = self.data["context"]["torch_conditional_capture"]
        if self.data["context"]["cuda_build"] == "yes":
            # the pinned torch 2.15 has CUDAGraph::begin_capture_to_if_node; an older one takes the runtime route
            expected = "native_api" if torch is not None and tuple(map(int, torch.__version__.split(".")[:2])) >= (2, 15) else route
            self.assertIn(route, ["native_api", "runtime_api"])
            self.assertEqual(route, expected)
        else:
            self.assertEqual(route, "none")

    def test_context_describes_each_strategy_for_the_reports_glossary(self):
        context = self.data["context"]
        self.assertIn("loop nest", context["strategy:cpu/native/fused"])
        self.assertIn("host", context["strategy:cpu/torch/eager_host"])

    def test_cuda_benchmarks_are_listed_on_any_machine(self):
        if self.data["context"]["cuda_build"] != "yes":
            self.skipTest("this build has no CUDA parts")
        result = run(CONDBENCH, "--device=cuda", "--benchmark_list_tests=true")
        self.assertEqual(result.returncode, 0, result.stderr)
        for strategy in ["native/device_flag", "native/device_flag_graph", "native/graph_cond", "native/graph_while",
                         "native/fused", "native/masked_graph_cublas", "torch/eager_host", "torch/eager_host_pinned",
                         "torch/masked", "torch/masked_graph", "torch/segmented_graph", "torch/graph_cond"]:
            self.assertIn(f"early_exit/cuda/{strategy}/exit:1/batch:1/hidden:64/blocks:3", result.stdout)
        for primitive in ["launch", "launch_sync", "graph_launch_sync", "graph_two_kernels_sync", "if_taken_sync",
                          "if_not_taken_sync", "if_else_then_sync", "if_else_else_sync", "switch_taken_sync",
                          "switch_none_sync", "torch_op", "read4_pageable_sync", "read4_pinned_sync"]:
            self.assertIn(f"primitive/cuda/{primitive}", result.stdout)

    def test_list_is_the_registry_and_the_docs_tables_match_it(self):
        result = run(CONDBENCH, "--list")
        self.assertEqual(result.returncode, 0, result.stderr)
        # a strategy's line starts at column 0 (key, then its one-line summary); what it declares, and
        # whether it can run here, follows on an indented line
        lines = result.stdout.split("\n\n")[0].splitlines()
        listed = {line.split()[0] for line in lines if not line.startswith(" ")}
        summaries = {line.split()[0]: line.split(None, 1)[1] for line in lines if not line.startswith(" ")}
        self.assertIn("cpu/native/fused", listed)
        self.assertTrue(all(len(summary) >= 20 for summary in summaries.values()), summaries)
        self.assertIn("loop nest", summaries["cpu/native/fused"])
        declared = {lines[i - 1].split()[0]: line.strip() for i, line in enumerate(lines) if line.startswith(" ")}
        self.assertEqual(declared["cpu/torch/eager_host"], "decides on the host")
        self.assertNotIn("cpu/native/fused", declared)
        if self.data["context"]["cuda_build"] == "yes":
            here = "" if self.data["context"].get("cuda_device_count", "0") != "0" else \
                "; cannot run here: no CUDA device is visible"
            self.assertEqual(declared["cuda/native/graph_while"],
                             "one launch per inference; skips blocks on the device" + here)
        # the decoder's strategies: their own block of the listing, their own table (design.md §8)
        block = next(b for b in result.stdout.split("\n\n") if b.strip().startswith("Decoder strategies"))
        listed_decoder = {line.split()[0] for line in block.strip().splitlines()[1:] if not line.startswith(" ")}
        self.assertIn("cpu/native/fused", listed_decoder)
        # and the cases the flags select that a strategy declares it cannot run, of every unit
        skipped = run(CONDBENCH, "--list", "--model=mlp,decoder", "--batch=8").stdout.split("\n\n")[-1]
        self.assertTrue(skipped.startswith("Cases the flags select that a strategy cannot run"), skipped)
        self.assertRegex(skipped, r"\n  cpu/aoti/cond at model=decoder vocab=\d+ .*, batch 8: .*batch 1 only\n")
        self.assertRegex(skipped, r"\n  cpu/aoti/cond at model=mlp .*, batch 8: .*batch 1 only\)\n")
        root = os.path.join(os.path.dirname(os.path.abspath(__file__)), "..")

        def documented(text):
            rows = [[c.strip() for c in line.split("|")[1:4]] for line in text.splitlines()
                    if re.match(r"^\| `[a-z_]+` \| (cpu|cuda)", line)]
            names = {f"{device}/{engine}/{name.strip('`')}" for name, devices, engines in rows
                     for device in devices.split(", ") for engine in engines.split(", ")}
            # a CPU-only build registers the CPU strategies only; the docs list every one
            return {k for k in names if self.data["context"]["cuda_build"] == "yes" or k.startswith("cpu/")}

        with open(os.path.join(root, "docs", "measured.md")) as f:
            self.assertEqual(documented(f.read()), listed, "docs/measured.md")
        with open(os.path.join(root, "docs", "design.md")) as f:
            families, decoder = f.read().split("\n## 8. The decoder", 1)
        self.assertEqual(documented(families), listed, "docs/design.md, §2")
        self.assertEqual(documented(decoder), listed_decoder, "docs/design.md, §8")

    def test_listing_needs_no_run(self):
        result = run(CONDBENCH, "--device=cpu", "--benchmark_list_tests=true")
        self.assertEqual(result.returncode, 0, result.stderr)
        self.assertIn("early_exit/cpu/native/fused/mix:late/batch:64/hidden:1024/blocks:3/real_time", result.stdout)
        # the CPU floors run with every CPU suite, first
        primitives = [f"primitive/cpu/{p}/real_time" for p in
                      [f"read_bandwidth_{size}" for size in ["16KiB", "64KiB", "256KiB", "1MiB", "2MiB", "4MiB",
                                                             "8MiB", "16MiB", "24MiB", "32MiB", "48MiB", "64MiB",
                                                             "256MiB"]]
                      + ["fma_peak", "torch_op"]]
        self.assertEqual(result.stdout.split()[:len(primitives)], primitives)


class Console(unittest.TestCase):
    """What a person sees: a table in 100 columns on stdout, progress on stderr when asked (or on a
    terminal), Google Benchmark's own display when another --benchmark_format is asked for."""

    BASE = ["--device=cpu", "--scenario=exit:1", "--benchmark_min_time=0.01", "--benchmark_repetitions=2"]

    def test_table_reads_in_100_columns_without_exponents(self):
        result = run(CONDBENCH, *self.BASE, "--strategy=fused,eager_host", "--hidden=1024", "--batch=64",
                     "--benchmark_filter=^early_exit/")
        self.assertEqual(result.returncode, 0, result.stderr)
        lines = result.stdout.splitlines()
        self.assertTrue(all(len(line) <= 100 for line in lines), max(lines, key=len))
        # the block's title from the model's axes; its columns the counters with a console heading
        # (include/condbench/counters.h), gpu us only where a row has it
        header = next(line for line in lines if line.startswith("cpu · hidden 1024, 3 blocks · batch 64"))
        self.assertRegex(header, r"median us +cv +syncs +launches +exit$")
        rows = {l.split()[1]: l.split() for l in lines if l.startswith("  exit:1 ")}
        self.assertEqual(set(rows), {"native/fused", "torch/eager_host"})
        for row in rows.values():
            median, cv, syncs = row[2], row[3], row[4]
            self.assertRegex(syncs, r"^[0-9]+(\.[0-9]+)?$")
            self.assertRegex(median, r"^[0-9]+(\.[0-9]+)?$")  # never 1.2e+03 or 2.9451n
            self.assertRegex(cv, r"^[0-9.]+%$")
        self.assertEqual(rows["torch/eager_host"][4], "1")  # one host sync: every row leaves at exit 1
        self.assertNotRegex(result.stdout, r"nan|e\+|e-0")
        self.assertNotIn("[1/", result.stderr)  # stderr is not a terminal here
        # the last line: what the run held at its peak (#59), well under the memory budget for this run
        peak = re.fullmatch(r"condbench: peak resident memory ([0-9.]+) (MiB|GiB) \(([0-9]+) kB, getrusage maxrss\)",
                            lines[-1])
        self.assertIsNotNone(peak, lines[-1])
        self.assertTrue(100_000 < int(peak.group(3)) < 4_000_000, peak.group(0))

    def test_a_decoders_table_reads_in_100_columns_and_says_its_unit(self):
        # the decoder's long model wraps above its columns' heads; the footer names each unit timed
        for models, unit in [("decoder", "median wall time per generated token; "),
                             ("decoder,mlp", "median wall time per inference, and per generated token for the "
                                             "decoder; ")]:
            result = run(CONDBENCH, *self.BASE, f"--model={models}", "--strategy=fused", "--batch=1", "--layers=4",
                         "--generate=2", "--benchmark_filter=^early_exit/")
            self.assertEqual(result.returncode, 0, result.stderr)
            lines = result.stdout.splitlines()
            with self.subTest(models=models):
                self.assertTrue(all(len(line) <= 100 for line in lines), max(lines, key=len))
                heads = lines.index(next(l for l in lines if l.startswith("cpu · decoder: vocab 512,")))
                self.assertRegex(lines[heads + 1], r"generate 2 · batch 1$")
                self.assertRegex(lines[heads + 2], r"^ +median us +cv +syncs")
                self.assertIn(unit, result.stdout)

    def test_a_skipped_benchmark_is_one_line_under_its_status(self):
        result = run(CONDBENCH, *self.BASE, "--strategy=cond", "--hidden=16", "--batch=2",
                     "--benchmark_filter=^early_exit/")
        self.assertEqual(result.returncode, 0, result.stderr)
        self.assertRegex(result.stdout, r"(^|\n)skipped  early_exit/cpu/aoti/cond/exit:1/batch:2/hidden:16/blocks:3: "
                                        r"torch\.cond branches on one boolean")
        self.assertNotIn("skipped: ", result.stdout)
        # said before the run too, when it is every case the flags select
        self.assertIn("condbench: every case the flags select will be skipped (cpu/aoti/cond: torch.cond", result.stderr)

    def test_progress_counts_the_repetitions_and_states_the_least_time_first(self):
        result = run(CONDBENCH, *self.BASE, "--strategy=fused,eager_host", "--hidden=16", "--batch=1",
                     "--benchmark_filter=eager_host", "--progress")
        self.assertEqual(result.returncode, 0, result.stderr)
        lines = [l for l in result.stderr.replace("\r", "\n").splitlines()
                 if not l.startswith("condbench: warning:")]  # a busy machine is warned about first
        self.assertEqual(lines[0], "condbench: 1 benchmark x 2 repetitions of at least 0.01 s each: at least 0 s")
        self.assertIn("[1/2]", result.stderr)
        self.assertIn("[2/2]", result.stderr)
        # not a terminal: a line each, as a log reads them, with no terminal's control characters
        self.assertRegex(result.stderr, r"(^|\n)\[1/2\] .*\n\[2/2\] ")
        self.assertNotIn("\r", result.stderr)
        self.assertIn("left  early_exit/cpu/torch/eager_host/exit:1", result.stderr)

    def test_progress_counts_repetitions_it_is_not_shown(self):
        result = run(CONDBENCH, *self.BASE, "--strategy=fused", "--hidden=16", "--batch=1", "--progress",
                     "--benchmark_filter=^early_exit/", "--benchmark_display_aggregates_only=true")
        self.assertEqual(result.returncode, 0, result.stderr)
        self.assertIn("[2/2]", result.stderr)
        self.assertIn("  exit:1       native/fused", result.stdout)

    def test_another_format_gets_google_benchmarks_display(self):
        result = run(CONDBENCH, *TINY, "--benchmark_format=json")
        self.assertEqual(result.returncode, 0, result.stderr)
        names = {b["name"] for b in json.loads(result.stdout)["benchmarks"]}
        self.assertIn("early_exit/cpu/native/fused/exit:1/batch:1/hidden:16/blocks:3/real_time_median", names)
        # csv: one header holding the counters of every run, the primitives' and the strategies' (Google
        # Benchmark's own CSV display aborts on a counter its first runs lacked)
        result = run(CONDBENCH, *TINY, "--benchmark_format=csv")
        self.assertEqual(result.returncode, 0, result.stderr)
        rows = list(csv.DictReader(io.StringIO(result.stdout)))
        fused = [r for r in rows if r["name"].startswith("early_exit/cpu/native/fused/exit:1/") and
                 r["name"].endswith("/real_time")]  # the repetitions, not their aggregates
        self.assertTrue(fused and any(r["name"].startswith("primitive/") for r in rows), result.stdout)
        self.assertEqual({r["exit_1"] for r in fused}, {"1"})


class NvtxRanges(unittest.TestCase):
    """The NVTX ranges scripts/profile and docs/profiling.md promise, as condbench-trace.so (--trace) records
    them: domain condbench; "benchmarks" around the run, the benchmark's name around each of its
    runs (--nvtx=run), "inference" around each timed inference (iter), and "block i" / "exit test k"
    inside the inferences of a host-driven strategy (stage)."""

    EAGER = "early_exit/cpu/torch/eager_host/exit:2/batch:1/hidden:16/blocks:3"
    FUSED = "early_exit/cpu/native/fused/exit:2/batch:1/hidden:16/blocks:3"

    def setUp(self):
        if not os.path.exists(os.path.join(os.path.dirname(CONDBENCH), "condbench-trace.so")):
            self.skipTest("this build has no NVTX, so no condbench-trace.so")

    def trace(self, *flags):
        with tempfile.TemporaryDirectory() as d:
            path = os.path.join(d, "trace.json")
            result = run(CONDBENCH, "--device=cpu", "--strategy=eager_host,fused", "--hidden=16", "--batch=1",
                         "--scenario=exit:2", "--benchmark_filter=^early_exit/", "--benchmark_min_time=0.001",
                         "--benchmark_repetitions=1", f"--trace={path}", *flags)
            self.assertEqual(result.returncode, 0, result.stderr)
            self.assertEqual(os.listdir(d), ["trace.json"])  # written whole, no temporary left
            with open(path) as f:
                trace = json.load(f)
        self.assertEqual(trace["otherData"]["dropped"], 0)
        self.assertEqual(trace["otherData"]["unmatched_pops"], 0)
        ranges = [e for e in trace["traceEvents"] if e["ph"] == "X"]
        self.assertTrue(all(r["cat"] == "condbench" for r in ranges), {r["cat"] for r in ranges})
        return ranges

    def at_depth(self, ranges, depth):
        return [r for r in ranges if r["args"]["depth"] == depth]

    def parent(self, ranges, child):
        """The range one level up that holds `child` in time, on its thread."""
        eps = 0.002  # the file's microseconds have three decimals
        holders = [r for r in self.at_depth(ranges, child["args"]["depth"] - 1) if r["tid"] == child["tid"]
                   and r["ts"] - eps <= child["ts"] and child["ts"] + child["dur"] <= r["ts"] + r["dur"] + eps]
        self.assertEqual(len(holders), 1, child)
        return holders[0]

    def test_off_records_no_range(self):
        self.assertEqual(self.trace("--nvtx=off"), [])

    def test_run_level_is_the_run_and_each_benchmark(self):
        ranges = self.trace("--nvtx=run")
        self.assertEqual([r["name"] for r in self.at_depth(ranges, 0)], ["benchmarks"])
        self.assertEqual({r["name"] for r in self.at_depth(ranges, 1)}, {self.EAGER, self.FUSED})
        self.assertEqual(max(r["args"]["depth"] for r in ranges), 1)

    def test_iter_level_adds_each_inference_inside_its_benchmark(self):
        ranges = self.trace("--nvtx=iter")
        inferences = self.at_depth(ranges, 2)
        self.assertEqual({r["name"] for r in inferences}, {"inference"})
        self.assertEqual({self.parent(ranges, r)["name"] for r in inferences}, {self.EAGER, self.FUSED})
        self.assertEqual(max(r["args"]["depth"] for r in ranges), 2)

    def test_stage_level_adds_blocks_and_exit_tests_of_host_driven_strategies(self):
        ranges = self.trace()  # --trace alone means --nvtx=stage
        stages = self.at_depth(ranges, 3)
        # exit:2 runs blocks 0 and 1 and tests exits 1 and 2 in every inference
        self.assertEqual({r["name"] for r in stages}, {"block 0", "block 1", "exit test 1", "exit test 2"})
        for stage in stages[:200]:
            inference = self.parent(ranges, stage)
            self.assertEqual(inference["name"], "inference")
            self.assertEqual(self.parent(ranges, inference)["name"], self.EAGER)
        # each of eager_host's inferences holds its four stages, in order
        first = next(r for r in self.at_depth(ranges, 2) if self.parent(ranges, r)["name"] == self.EAGER)
        inside = sorted((r for r in stages if first["ts"] <= r["ts"] <= first["ts"] + first["dur"]),
                        key=lambda r: r["ts"])
        self.assertEqual([r["name"] for r in inside], ["block 0", "exit test 1", "block 1", "exit test 2"])

    def test_spans_condbench_timed_itself_get_a_track_of_their_own(self):
        # what condbench hands the library for the GPU (CUDA events), called here as condbench does
        library = os.path.join(os.path.dirname(CONDBENCH), "condbench-trace.so")
        linked = subprocess.run(["ldd", library], capture_output=True, text=True, timeout=60).stdout
        if "libasan" in linked:
            self.skipTest("an ASan build's library cannot be loaded into an uninstrumented Python")
        with tempfile.TemporaryDirectory() as d:
            path = os.path.join(d, "trace.json")
            code = ("import ctypes, sys; lib = ctypes.CDLL(sys.argv[1]); f = lib.condbench_trace_span; "
                    "f.argtypes = [ctypes.c_char_p, ctypes.c_char_p, ctypes.c_int64, ctypes.c_int64]; "
                    "f(b'GPU (CUDA events)', b'inference', 5000, 7500); f(b'GPU (CUDA events)', b'inference', 9, 8)")
            result = subprocess.run([sys.executable, "-c", code, library], capture_output=True, text=True,
                                    env=dict(os.environ, CONDBENCH_TRACE_OUT=path), timeout=60)
            self.assertEqual(result.returncode, 0, result.stderr)
            with open(path) as f:
                events = json.load(f)["traceEvents"]
        tracks = [e for e in events if e["ph"] == "M" and e["name"] == "thread_name"]
        self.assertEqual([t["args"]["name"] for t in tracks], ["GPU (CUDA events)"])
        spans = [e for e in events if e["ph"] == "X"]
        self.assertEqual(len(spans), 1)  # the one ending before it starts is dropped
        self.assertEqual((spans[0]["name"], spans[0]["cat"], spans[0]["tid"]), ("inference", "condbench", tracks[0]["tid"]))
        self.assertAlmostEqual(spans[0]["dur"], 2.5)

    def test_trace_refuses_a_missing_folder_and_another_tool(self):
        result = run(CONDBENCH, "--device=cpu", "--trace=/nonexistent/dir/t.json")
        self.assertEqual(result.returncode, 2)
        self.assertIn("--trace", result.stderr)
        env = dict(os.environ, NVTX_INJECTION64_PATH="/opt/nsight/libToolsInjection64.so")
        result = subprocess.run([CONDBENCH, "--device=cpu", "--hidden=16", "--trace=t.json"], env=env,
                                capture_output=True, text=True, timeout=120)
        self.assertEqual(result.returncode, 2, result.stderr)
        self.assertIn("another NVTX tool is attached", result.stderr)


class Infer(unittest.TestCase):
    def test_seeded_run_agrees_and_prints_every_cpu_strategy(self):
        result = run(INFER, "--device=cpu", "--batch=5", "--thresholds=0.12,0.12,0.12")
        self.assertEqual(result.returncode, 0, result.stderr)
        out = json.loads(result.stdout)
        self.assertTrue(out["agree"])
        self.assertEqual(out["rows"], 5)
        self.assertEqual(out["model"], "model=mlp in_features=32 hidden=64 num_classes=10 blocks=3")
        self.assertEqual(sorted(f'{s["engine"]}/{s["strategy"]}' for s in out["strategies"]),
                         ["native/fused", "torch/eager_host", "torch/masked"])
        # the aoti strategies without their packages: listed with why, never run
        self.assertEqual(sorted(s["strategy"] for s in out["skipped"]), ["cpu/aoti/cond", "cpu/aoti/masked"])
        self.assertTrue(all("no AOTInductor package" in s["reason"] or "batch 1 only" in s["reason"]
                            for s in out["skipped"]), out["skipped"])
        for s in out["strategies"]:
            self.assertEqual(len(s["exit_ids"]), 5)
            self.assertEqual([len(row) for row in s["logits"]], [10] * 5)

    @unittest.skipIf(torch is None, "torch is not importable here; run under .venv/bin/python")
    def test_the_readmes_model_snippet_runs_as_written_and_agrees(self):
        root = os.path.join(os.path.dirname(os.path.abspath(__file__)), "..")
        with open(os.path.join(root, "docs", "models.md")) as f:
            section = f.read().split("## The model\n")[1].split("\n## ")[0]
        snippet = section.split("```sh\n")[1].split("```")[0]
        with tempfile.TemporaryDirectory() as d:
            # the repository's layout as the snippet expects it: .venv and build/release/condbench-infer
            os.symlink(sys.prefix, os.path.join(d, ".venv"))  # the virtual environment running this test
            os.makedirs(os.path.join(d, "build", "release"))
            os.symlink(os.path.realpath(INFER), os.path.join(d, "build", "release", "condbench-infer"))
            result = subprocess.run(["bash", "-c", snippet], cwd=d, capture_output=True, text=True, timeout=300)
        self.assertEqual(result.returncode, 0, result.stderr)
        printed, answer = result.stdout.splitlines()[0], json.loads(result.stdout.splitlines()[1])
        self.assertIn(printed, section)  # the page quotes what the module prints
        self.assertTrue(answer["agree"])
        for s in answer["strategies"]:
            self.assertEqual(s["exit_ids"], json.loads(printed), s["strategy"])

    @unittest.skipIf(torch is None, "torch is not importable here; run under .venv/bin/python")
    def test_weights_that_are_almost_right_say_how_to_fix_them(self):
        torch.manual_seed(0)
        model = PyEarlyExit(in_features=32, hidden=16, num_classes=10, blocks=3)
        sd = model.state_dict()
        renumbered = {re.sub(r"^backbone\.(\d+)\.", lambda m: f"backbone.{2 * int(m.group(1))}.", k): v
                      for k, v in sd.items()}
        with tempfile.TemporaryDirectory() as d:
            cases = []
            for name, obj, hint in [
                    ("parallel.pt", {"module." + k: v for k, v in sd.items()}, "every key starts with 'module.'"),
                    ("compiled.pt", {"_orig_mod." + k: v for k, v in sd.items()}, "every key starts with '_orig_mod.'"),
                    ("sequential.pt", renumbered, "the backbone Linears are numbered 0, 2, 4"),
                    ("whole.pt", model, "the file pickles a __main__.PyEarlyExit object, not tensors")]:
                torch.save(obj, os.path.join(d, name))
                cases.append((name, hint))
            torch.jit.save(torch.jit.script(torch.nn.Linear(2, 2)), os.path.join(d, "script.pt"))
            cases.append(("script.pt", "a TorchScript archive (torch.jit.save), not a state_dict"))
            for name, hint in cases:
                with self.subTest(file=name):
                    result = run(INFER, f"--weights={os.path.join(d, name)}", "--thresholds=0.5,0.5,0.5")
                    self.assertEqual(result.returncode, 2, result.stderr)
                    self.assertEqual(len(result.stderr.strip().splitlines()), 1, result.stderr)
                    self.assertIn(hint, result.stderr)

    @unittest.skipIf(torch is None, "torch is not importable here; run under .venv/bin/python")
    def test_weights_and_inputs_saved_by_python_give_pythons_answer(self):
        with tempfile.TemporaryDirectory() as d:
            torch.manual_seed(0)
            model = PyEarlyExit(in_features=12, hidden=24, num_classes=5, blocks=4)
            x = torch.randn(50, 12) * 3
            weights, inputs = os.path.join(d, "w.pt"), os.path.join(d, "x.pt")
            torch.save(model.state_dict(), weights)
            torch.save(x, inputs)
            with torch.no_grad():
                conf = model.confidences(x)
            # thresholds midway between two middle confidences, so rows leave at different exits
            # and no row sits on its threshold
            thresholds = [float(conf[:, k].sort().values[24:26].mean()) for k in range(4)]
            want_ids, want_logits = model.early_exit(x, thresholds)
            result = run(INFER, "--device=cpu", f"--weights={weights}", f"--input={inputs}",
                         "--thresholds=" + ",".join(repr(t) for t in thresholds))
            self.assertEqual(result.returncode, 0, result.stderr)
            out = json.loads(result.stdout)
            self.assertGreater(len(set(want_ids)), 1)
            for s in out["strategies"]:
                self.assertEqual(s["exit_ids"], want_ids, s["strategy"])
                got = torch.tensor(s["logits"])
                scale = torch.maximum(want_logits.abs(), want_logits.abs().amax(-1, keepdim=True))
                self.assertTrue(bool(((got - want_logits).abs() <= 1e-5 * scale + 1e-7).all()), s["strategy"])

    @unittest.skipIf(torch is None, "torch is not importable here; run under .venv/bin/python")
    def test_python_file_with_a_missing_key_is_named(self):
        with tempfile.TemporaryDirectory() as d:
            state = PyEarlyExit(32, 64, 10, 3).state_dict()
            del state["exit2.bias"]
            path = os.path.join(d, "w.pt")
            torch.save(state, path)
            result = run(INFER, "--device=cpu", f"--weights={path}", "--thresholds=0.5,0.5,0.5")
            self.assertEqual(result.returncode, 2)
            self.assertIn("exit2.bias", result.stderr)


class TransformerInterop(unittest.TestCase):
    """A user's early-exit encoder, built from torch.nn.TransformerEncoderLayer as they would write
    it, saved with torch.save and checked against condbench-infer (docs/models.md, "The model")."""

    @unittest.skipIf(torch is None, "torch is not importable here; run under .venv/bin/python")
    def test_a_users_encoder_runs_unchanged_and_agrees(self):
        for d_model, heads, ffn, blocks, seq, classes in [(32, 4, 64, 3, 7, 5), (24, 3, 40, 2, 1, 4)]:
            with self.subTest(d_model=d_model, heads=heads, seq=seq), tempfile.TemporaryDirectory() as d:
                torch.manual_seed(d_model)
                model = PyEarlyExitEncoder(d_model, heads, ffn, blocks, classes).eval()
                x = torch.randn(40, seq, d_model)
                weights, inputs = os.path.join(d, "w.pt"), os.path.join(d, "x.pt")
                torch.save(model.state_dict(), weights)
                torch.save(x, inputs)
                with torch.no_grad():
                    conf = model.confidences(x)
                # midway between two middle confidences: rows leave at different exits, none on a tie
                thresholds = [float(conf[:, k].sort().values[19:21].mean()) for k in range(blocks)]
                want_ids, want_logits = model.early_exit(x, thresholds)
                self.assertGreater(len(set(want_ids)), 1)
                result = run(INFER, "--device=cpu", f"--weights={weights}", f"--input={inputs}", f"--heads={heads}",
                             "--thresholds=" + ",".join(repr(t) for t in thresholds))
                self.assertEqual(result.returncode, 0, result.stderr)
                out = json.loads(result.stdout)
                self.assertIn(f"model=transformer d_model={d_model} heads={heads} ffn={ffn} seq={seq}", out["model"])
                ran = sorted(f'{s["engine"]}/{s["strategy"]}' for s in out["strategies"])
                self.assertEqual(ran, ["torch/eager_host", "torch/masked"])
                self.assertIn("cpu/native/fused", [s["strategy"] for s in out["skipped"]])
                for s in out["strategies"]:
                    self.assertEqual(s["exit_ids"], want_ids, s["strategy"])
                    got = torch.tensor(s["logits"])
                    scale = torch.maximum(want_logits.abs(), want_logits.abs().amax(-1, keepdim=True))
                    self.assertTrue(bool(((got - want_logits).abs() <= 1e-4 * scale + 1e-6).all()),
                                    f"{s['strategy']}: {(got - want_logits).abs().max()}")

    @unittest.skipIf(torch is None, "torch is not importable here; run under .venv/bin/python")
    def test_wrong_heads_or_input_shape_is_one_line(self):
        with tempfile.TemporaryDirectory() as d:
            model = PyEarlyExitEncoder(32, 4, 64, 2, 5)
            weights, inputs = os.path.join(d, "w.pt"), os.path.join(d, "x.pt")
            torch.save(model.state_dict(), weights)
            torch.save(torch.randn(3, 6, 30), inputs)
            tokens = os.path.join(d, "tokens.pt")
            torch.save(torch.randn(3, 6, 32), tokens)
            mlp = os.path.join(d, "mlp.pt")
            torch.save(PyEarlyExit(8, 16, 5, 2).state_dict(), mlp)
            for args, message in [(["--heads=5", "--batch=2"], "heads must divide d_model"),
                                  ([f"--input={inputs}"], "--input: expected a floating-point tensor [rows, 6, 32]"),
                                  ([f"--input={tokens}", "--seq=5"], "--seq=5: the input holds 6 tokens per row"),
                                  (["--hidden=64"], "--hidden: not with --weights")]:
                with self.subTest(args=args):
                    result = run(INFER, "--device=cpu", f"--weights={weights}", *args, "--thresholds=0.5,0.5")
                    self.assertEqual(result.returncode, 2, result.stderr)
                    self.assertEqual(len(result.stderr.strip().splitlines()), 1, result.stderr)
                    self.assertIn(message, result.stderr)
            # the input's tokens per row, 2-D for one row or 3-D, set the model's seq
            single = os.path.join(d, "single.pt")
            torch.save(torch.randn(9, 32), single)
            for path, rows in [(tokens, 3), (single, 1)]:
                result = run(INFER, "--device=cpu", f"--weights={weights}", f"--input={path}", "--thresholds=0.5,0.5")
                self.assertEqual(result.returncode, 0, result.stderr)
                self.assertEqual(json.loads(result.stdout)["rows"], rows)
            for args, message in [([f"--weights={mlp}", "--heads=4", "--batch=2"], "--heads: the transformer's"),
                                  (["--model=transformer", "--d-model=16384", "--ffn=65536", "--blocks=256"],
                                   "over condbench's memory budget of 8 GiB (docs/input.md): the weights")]:
                with self.subTest(args=args):
                    result = run(INFER, "--device=cpu", *args, "--thresholds=0.5,0.5")
                    self.assertEqual(result.returncode, 2, result.stderr)
                    self.assertEqual(len(result.stderr.strip().splitlines()), 1, result.stderr)
                    self.assertIn(message, result.stderr)

    def test_a_seeded_transformer_runs_and_the_runner_names_it(self):
        result = run(INFER, "--device=cpu", "--model=transformer", "--d-model=16", "--heads=2", "--ffn=24",
                     "--seq=3", "--blocks=2", "--batch=4", "--thresholds=0.3,0.3")
        self.assertEqual(result.returncode, 0, result.stderr)
        self.assertTrue(json.loads(result.stdout)["agree"])
        listed = run(CONDBENCH, "--device=cpu", "--model=transformer", "--d-model=16", "--heads=2", "--seq=3",
                     "--blocks=2", "--batch=1", "--scenario=exit:1", "--strategy=eager_host",
                     "--benchmark_list_tests=true")
        self.assertEqual(listed.returncode, 0, listed.stderr)
        self.assertEqual([n.removesuffix("/real_time") for n in listed.stdout.split() if n.startswith("early_exit/")], [
            "early_exit/cpu/torch/eager_host/exit:1/batch:1/model:transformer/d_model:16/heads:2/ffn:64/seq:3/blocks:2"])
        # the default suite holds both families; --full adds a BERT-base-sized encoder
        for args, sizes in [([], ["d_model:256/heads:4/ffn:1024/seq:32/blocks:6"]),
                            (["--full"], ["d_model:256/heads:4/ffn:1024/seq:32/blocks:6",
                                          "d_model:768/heads:12/ffn:3072/seq:128/blocks:12"])]:
            listed = run(CONDBENCH, "--device=cpu", *args, "--strategy=eager_host", "--scenario=exit:1",
                         "--benchmark_list_tests=true")
            self.assertEqual(listed.returncode, 0, listed.stderr)
            names = [n.removesuffix("/real_time") for n in listed.stdout.split() if n.startswith("early_exit/")]
            self.assertIn("early_exit/cpu/torch/eager_host/exit:1/batch:1/hidden:64/blocks:3", names)
            self.assertEqual(sorted({n.split("model:transformer/")[1] for n in names if "model:transformer" in n}),
                             sizes)
            self.assertIn("early_exit/cpu/torch/eager_host/exit:1/batch:8/model:transformer/" + sizes[0], names)
        for args, message in [(["--model=mlp", "--d-model=64"], "--d-model: sets the transformer"),
                              (["--model=rnn"], "unknown model family 'rnn'"),
                              (["--model=transformer", "--d-model=30", "--heads=4"], "heads must divide d_model")]:
            with self.subTest(args=args):
                bad = run(CONDBENCH, "--device=cpu", *args, "--benchmark_list_tests=true")
                self.assertEqual(bad.returncode, 2, bad.stderr)
                self.assertIn(message, bad.stderr)


if torch is not None:
    class EarlyExitRule(torch.nn.Module):
        """docs/design.md §1's exit rule over a subclass's block(k, h), exit{k} and final heads."""

        def heads(self, x):
            h, out = x, []
            for k in range(self.blocks):
                h = self.block(k, h)
                out.append(getattr(self, f"exit{k + 1}")(h))
            out.append(self.final(h))
            return out

        def confidences(self, x):
            return torch.stack([torch.softmax(l, -1).amax(-1) for l in self.heads(x)[:-1]], 1)

        @torch.no_grad()
        def early_exit(self, x, thresholds):
            ids, logits = [], []
            for row in x:
                heads = self.heads(row.unsqueeze(0))
                exit_id = self.blocks + 1
                for k in range(self.blocks):
                    if torch.softmax(heads[k], -1).max().item() > thresholds[k]:
                        exit_id = k + 1
                        break
                ids.append(exit_id)
                logits.append(heads[exit_id - 1][0])
            return ids, torch.stack(logits)

    class PyEarlyExit(EarlyExitRule):
        """The PyTorch module of docs/design.md §1, written independently of condbench."""

        def __init__(self, in_features, hidden, num_classes, blocks):
            super().__init__()
            self.blocks = blocks
            self.backbone = torch.nn.ModuleList(
                [torch.nn.Linear(in_features if i == 0 else hidden, hidden) for i in range(blocks)])
            for k in range(1, blocks + 1):
                setattr(self, f"exit{k}", torch.nn.Linear(hidden, num_classes))
            self.final = torch.nn.Linear(hidden, num_classes)

        def block(self, k, h):
            return torch.relu(self.backbone[k](h))

    class EncoderHead(torch.nn.Module):
        def __init__(self, d_model, num_classes):
            super().__init__()
            self.norm = torch.nn.LayerNorm(d_model)
            self.proj = torch.nn.Linear(d_model, num_classes)

        def forward(self, h):
            return self.proj(self.norm(h[:, 0, :]))

    class PyEarlyExitEncoder(EarlyExitRule):
        """The transformer family of docs/design.md §1 as a PyTorch user writes it: a ModuleList of
        nn.TransformerEncoderLayer, an exit head on token 0 after each, written independently of
        condbench."""

        def __init__(self, d_model, heads, ffn, blocks, num_classes):
            super().__init__()
            self.blocks = blocks
            self.layers = torch.nn.ModuleList([
                torch.nn.TransformerEncoderLayer(d_model, heads, ffn, dropout=0.0, activation="gelu",
                                                 batch_first=True, norm_first=True) for _ in range(blocks)])
            for k in range(1, blocks + 1):
                setattr(self, f"exit{k}", EncoderHead(d_model, num_classes))
            self.final = EncoderHead(d_model, num_classes)
            with torch.no_grad():  # norms away from 1 and 0, so a swapped or ignored one shows
                for name, p in self.named_parameters():
                    if "norm" in name:
                        p.add_(torch.randn_like(p) * 0.2)

        def block(self, k, h):
            return self.layers[k](h)


if __name__ == "__main__":
    main()
