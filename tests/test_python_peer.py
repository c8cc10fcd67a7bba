"""The Python peer against condbench: for the same weights, inputs and thresholds (the
files condbench --export-workload writes), every Python variant gives condbench-infer's exit ids
and logits (1e-5 relative); the peer's JSON is Google Benchmark JSON that condbench-report reads
beside condbench's. Usage: test_python_peer.py CONDBENCH CONDBENCH_INFER CONDBENCH_REPORT
(the condbench package importable: scripts/setup installs it, CTest puts python/ on PYTHONPATH)."""
import json
import os
import re
import shutil
import subprocess
import sys
import tempfile
import unittest

# The schema the C++ side writes (include/condbench/result_format.h), read from the source of truth.
with open(os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "include", "condbench", "result_format.h")) as f:
    RESULT_SCHEMA = re.search(r'kResultSchema = "([^"]+)"', f.read()).group(1)

CONDBENCH, INFER, REPORT = sys.argv[1:4]
del sys.argv[1:4]
PEER = [sys.executable, "-m", "condbench.peer"]

try:
    import torch
    from condbench.families import EarlyExitMLP, load_model
    from condbench.variants import ExportableCond, NestedCond, should_exit, variants
except ImportError as e:  # the peer needs the torch scripts/setup installs
    torch = None
    IMPORT_ERROR = str(e)


def agree_with_condbench_infer(test, runnable, rows, inputs, infer_args, rtol):
    """Every variant on every row, for each of the workload's scenarios, gives condbench-infer's exit
    ids and its logits within rtol of the row's largest; returns the exit ids seen."""
    exits_seen = set()
    for scenario, values in test.meta["thresholds"].items():
        result = subprocess.run([INFER, "--device=cpu", f"--weights={test.dir}/weights.pt", f"--input={inputs}",
                                 *infer_args, "--thresholds=" + ",".join(repr(v) for v in values)],
                                capture_output=True, text=True, timeout=120)
        test.assertEqual(result.returncode, 0, result.stderr)
        reference = json.loads(result.stdout)["strategies"][0]
        exits_seen.update(reference["exit_ids"])
        want_logits = torch.tensor(reference["logits"])
        scale = want_logits.abs().amax(-1, keepdim=True)
        for name, fn, _, tensor_thresholds in runnable:
            thresholds = torch.tensor(values) if tensor_thresholds else values
            for r in range(rows.shape[0]):
                with test.subTest(scenario=scenario, variant=name, row=r):
                    logits, exit_id = fn(rows[r:r + 1], thresholds)
                    test.assertEqual(int(exit_id), reference["exit_ids"][r])
                    diff = (logits[0] - want_logits[r]).abs().max().item()
                    test.assertLessEqual(diff, rtol * scale[r].item())
    return exits_seen


@unittest.skipIf(torch is None, "torch is not importable here; run under .venv/bin/python")
class PythonPeer(unittest.TestCase):
    @classmethod
    def setUpClass(cls):
        cls.tmp = tempfile.TemporaryDirectory()
        root = cls.tmp.name
        result = subprocess.run([CONDBENCH, "--device=cpu", "--hidden=24", "--blocks=3", "--batch=1",
                                 "--scenario=exit:1,exit:4,mix:early,mix:uniform,mix:late",
                                 f"--export-workload={root}/workload"], capture_output=True, text=True, timeout=300)
        assert result.returncode == 0, result.stderr
        cls.dir = os.path.join(root, "workload", "mlp-in_features32-hidden24-c10-b3")  # ModelConfig::tag
        cls.meta = json.load(open(os.path.join(cls.dir, "workload.json")))
        torch.set_num_threads(1)

    @classmethod
    def tearDownClass(cls):
        cls.tmp.cleanup()

    def test_exported_state_dict_loads_into_the_pytorch_module(self):
        state = torch.load(os.path.join(self.dir, "weights.pt"))
        self.assertEqual(list(state)[:2], ["backbone.0.weight", "backbone.0.bias"])
        self.assertEqual(tuple(state["exit2.weight"].shape), (10, 24))
        load_model(os.path.join(self.dir, "weights.pt"), self.meta["config"], "cpu")  # strict
        # the family and every size of its descriptor, and the axes the results' names carry
        self.assertEqual(self.meta["config"], {"family": "mlp", "in_features": 32, "hidden": 24, "num_classes": 10,
                                               "blocks": 3})
        self.assertEqual(self.meta["name_axes"], [["hidden", "24"], ["blocks", "3"]])
        # the peer walks the rows in condbench's order: a small model's walk, the whole pool per scenario
        for scenario in ["mix:early", "exit:1"]:
            self.assertEqual(sorted(self.meta["walk"][scenario]), list(range(self.meta["pool_rows"])))
        self.assertEqual(self.meta["walk"]["exit:1"][:3], [0, 1, 2])

    def test_every_variant_matches_condbench_infer(self):
        model = load_model(os.path.join(self.dir, "weights.pt"), self.meta["config"], "cpu")
        pool = torch.load(os.path.join(self.dir, "pool.pt"))
        rows = pool[:24].contiguous()
        inputs = os.path.join(self.tmp.name, "rows.pt")
        torch.save(rows, inputs)
        runnable, _ = variants(model, "cpu")
        self.assertEqual([name for name, *_ in runnable],
                         ["py_eager_if", "py_cond", "py_cond_compile", "py_masked", "py_masked_compile",
                          "py_blocks_compile", "ort_if"])
        agree_with_condbench_infer(self, runnable, rows, inputs, [], 1e-5)

    def test_the_graph_and_reduce_overhead_variants_match_condbench_infer(self):
        # torch.compile(mode="reduce-overhead") compiles on a CPU what the default mode does (no CUDA
        # graphs there): the _ro variants run on a CPU only when named, and are checked like the others;
        # py_masked_cudagraph is torch.cuda.graph's, CUDA only.
        model = load_model(os.path.join(self.dir, "weights.pt"), self.meta["config"], "cpu")
        rows = torch.load(os.path.join(self.dir, "pool.pt"))[:8].contiguous()
        inputs = os.path.join(self.tmp.name, "ro-rows.pt")
        torch.save(rows, inputs)
        named = ("py_masked_compile_ro", "py_cond_compile_ro", "py_eager_if_compile_ro", "py_masked_cudagraph")
        runnable, skipped = variants(model, "cpu", named=named)
        self.assertEqual([name for name, *_ in runnable], list(named[:3]))
        self.assertEqual(skipped, [("py_masked_cudagraph", "CUDA only")])
        self.assertEqual(agree_with_condbench_infer(self, runnable, rows, inputs, [], 1e-5), {1, 2, 3, 4})
        # the peer runs one when named, and its notes say what cudagraph trees made of it
        out = os.path.join(self.tmp.name, "peer-ro.json")
        result = subprocess.run([*PEER, "--workload", os.path.join(self.tmp.name, "workload"), "--out", out,
                                 "--variants=py_masked_compile_ro", "--scenarios=exit:1", "--repetitions=2",
                                 "--min-time=0.01", "--threads=1"], capture_output=True, text=True, timeout=300)
        self.assertEqual(result.returncode, 0, result.stderr)
        with open(out) as f:
            data = json.load(f)
        self.assertIn("early_exit/cpu/python/py_masked_compile_ro/exit:1/batch:1/hidden:24/blocks:3",
                      {b["run_name"] for b in data["benchmarks"]})
        self.assertEqual(data["context"]["condbench_peer_notes"],
                         "py_masked_compile_ro: no CUDA graphs on the CPU (reduce-overhead compiles what the default "
                         "mode does)")

    def test_the_questions_code_fails_as_the_readme_says_and_the_peers_module_works(self):
        """docs/peer.md, "The question's code, made to work": if PyTorch changes what it accepts,
        this fails and the page must change with it."""
        torch.manual_seed(0)
        model = EarlyExitMLP(in_features=8, hidden=16, num_classes=4, blocks=2).eval()
        x, thresholds = torch.randn(1, 8), torch.tensor([0.2, 0.2])

        def question(branch_result):
            # forward_early_exit as asked: each branch returns {"logits", "exit_id": a Python int}
            def stage(k, h):
                h = torch.relu(model.backbone[k](h))
                logits = model.head(k)(h)

                def done(h, logits):
                    return branch_result(logits, k + 1)

                def go(h, logits):
                    if k + 1 < model.blocks:
                        return stage(k + 1, h)
                    return branch_result(model.final(h).clone(), model.blocks + 1)
                return torch.cond(should_exit(logits, thresholds[k]), done, go, (h, logits))
            return stage(0, x)

        with self.assertRaisesRegex(Exception, "unsupported branch return type"):
            question(lambda logits, exit_id: {"logits": logits.clone(), "exit_id": exit_id})
        with self.assertRaisesRegex(Exception, "aliasing"):  # a branch returning its input as is
            question(lambda logits, exit_id: (logits, torch.tensor(exit_id)))
        # tensors only, no input returned as is: what the peer's NestedCond does
        logits, exit_id = question(lambda logits, exit_id: (logits.clone(), torch.tensor(exit_id)))
        want_logits, want_id = NestedCond(model)(x, thresholds)
        self.assertEqual(int(exit_id), int(want_id))
        self.assertTrue(torch.equal(logits, want_logits))

        # torch.export: not with torch.cond under @torch.no_grad()...
        with self.assertRaisesRegex(AttributeError, "true_graph_0"):
            torch.export.export(NestedCond(model), (x, thresholds))
        # ...but without it, the parameters frozen instead
        for p in model.parameters():
            p.requires_grad_(False)
        exported = torch.export.export(ExportableCond(model), (x, thresholds)).module()
        for t in ([0.2, 0.2], [0.99, 0.2], [0.99, 0.99]):
            got, want = exported(x, torch.tensor(t)), NestedCond(model)(x, torch.tensor(t))
            self.assertEqual(int(got[1]), int(want[1]), t)
            self.assertTrue(torch.allclose(got[0], want[0]), t)

    def test_peer_writes_benchmark_json_the_report_reads(self):
        out = os.path.join(self.tmp.name, "peer.json")
        result = subprocess.run([*PEER, "--workload",
                                 os.path.join(self.tmp.name, "workload"), "--out", out,
                                 "--variants=py_eager_if,py_masked,py_cond_cudagraph,py_eager_if_twin",
                                 "--scenarios=exit:1,exit:4", "--repetitions=2", "--min-time=0.01", "--threads=1"],
                                capture_output=True, text=True, timeout=300,
                                env={**os.environ, "CONDBENCH_TEST_TWIN": "cpu/native/fused,python/py_eager_if"})
        self.assertEqual(result.returncode, 0, result.stderr)
        self.assertIn("py_cond_cudagraph: skipped (CUDA only)", result.stdout)
        data = json.load(open(out))
        self.assertEqual(data["context"]["condbench_schema"], RESULT_SCHEMA)
        self.assertEqual(data["context"]["condbench_per_token"], "decoder")  # as condbench writes it
        self.assertEqual(data["context"]["torch_version"], torch.__version__)
        # Interleaved in rounds: each round runs every case once, the rounds one after the other, and
        # every repetition says where it ran.
        self.assertEqual(data["context"]["condbench_interleaving"], "rounds")
        iterations = [b for b in data["benchmarks"] if b["run_type"] == "iteration"]
        cases = {b["run_name"] for b in iterations}
        self.assertEqual(len(cases), 6)  # py_eager_if, its twin and py_masked at exit:1 and exit:4
        self.assertEqual(sorted(b["sequence"] for b in iterations), list(range(2 * len(cases))))
        for r in (0, 1):
            in_round = [b for b in iterations if b["round"] == r]
            self.assertEqual({b["run_name"] for b in in_round}, cases)
            self.assertEqual(sorted(b["sequence"] for b in in_round), list(range(r * 6, r * 6 + 6)))
        # CONDBENCH_TEST_TWIN: the same variant under a second name, recorded; condbench's items ignored
        self.assertIn("early_exit/cpu/python/py_eager_if_twin/exit:1/batch:1/hidden:24/blocks:3", cases)
        self.assertEqual(data["context"]["condbench_test_twin"], "cpu/native/fused,python/py_eager_if")
        # its peak resident memory, under condbench's key and in its words (#59)
        self.assertRegex(data["context"]["condbench_peak_resident_memory"],
                         r"^[0-9.]+ (MiB|GiB) \([0-9]+ kB, getrusage maxrss\)$")
        runs = {b["run_name"]: b for b in iterations}
        eager4 = runs["early_exit/cpu/python/py_eager_if/exit:4/batch:1/hidden:24/blocks:3"]
        self.assertEqual(eager4["host_syncs"], 3.0)
        self.assertEqual(eager4["exit_4"], 1.0)
        self.assertEqual(runs["early_exit/cpu/python/py_masked/exit:1/batch:1/hidden:24/blocks:3"]["host_syncs"], 0.0)
        report = os.path.join(self.tmp.name, "report")
        result = subprocess.run([REPORT, "--out", report, out], capture_output=True, text=True, timeout=120)
        self.assertEqual(result.returncode, 0, result.stderr)
        md = open(os.path.join(report, "report.md")).read()
        self.assertIn("python/py_eager_if", md)
        # the report opens with the answer, made from the peer's figures; its glossary says what each is
        headings = [line for line in md.splitlines() if line.startswith("## ")]
        self.assertEqual(headings[0], "## The answer: what to write for an early exit")
        answer = md.split("## The answer")[1].split("\n## ")[0]
        self.assertIn("| python/py_eager_if | ", answer)
        self.assertRegex(answer, r"\| fastest with PyTorch \| python/py_eager_if(_twin)? vs python/py_eager_if(_twin)?: "
                                 r"[^|]+\|")
        self.assertIn("What one exit test's round trip to the host costs is unmeasured here", answer)
        self.assertIn("a Python if on each exit's confidence", md)


    def test_the_peer_and_condbench_in_lockstep_are_judged_as_one_run(self):
        # condbench.lockstep: condbench's rounds and the peer's in turns; both files name the lockstep,
        # and a pair across them is judged with no drift allowance, as cells of one interleaved run
        ours, theirs = os.path.join(self.tmp.name, "ls-ours.json"), os.path.join(self.tmp.name, "ls-peer.json")
        result = subprocess.run([sys.executable, "-m", "condbench.lockstep", "--", CONDBENCH, "--device=cpu",
                                 "--hidden=24", "--blocks=3", "--batch=1", "--scenario=exit:1", "--strategy=fused",
                                 "--benchmark_filter=^early_exit/cpu/native/", "--rounds", "--benchmark_repetitions=5",
                                 "--benchmark_min_time=0.01", f"--benchmark_out={ours}", "::", *PEER, "--workload",
                                 os.path.join(self.tmp.name, "workload"), "--out", theirs, "--variants=py_eager_if",
                                 "--scenarios=exit:1", "--repetitions=5", "--min-time=0.01", "--threads=1"],
                                capture_output=True, text=True, timeout=300)
        self.assertEqual(result.returncode, 0, result.stderr)
        contexts = []
        for name in (ours, theirs):
            with open(name) as f:
                contexts.append(json.load(f)["context"])
        self.assertEqual(contexts[0]["condbench_lockstep"], contexts[1]["condbench_lockstep"])
        self.assertEqual([c["condbench_interleaving"] for c in contexts], ["rounds", "rounds"])
        explained = subprocess.run([REPORT, "--explain", "py_eager_if vs fused at exit:1", ours, theirs],
                                   capture_output=True, text=True, timeout=60)
        self.assertEqual(explained.returncode, 0, explained.stderr)
        self.assertIn("is at least", explained.stdout)
        self.assertNotIn("allowing", explained.stdout)  # no allowance for drift between them

    def test_the_peers_output_follows_condbenchs_output_policy(self):
        precious = os.path.join(self.tmp.name, "precious.json")
        with open(precious, "w") as f:
            f.write("precious")
        link, fifo = os.path.join(self.tmp.name, "link.json"), os.path.join(self.tmp.name, "fifo.json")
        os.symlink(precious, link)
        os.mkfifo(fifo)
        workload = os.path.join(self.tmp.name, "workload")
        for out, why in [(link, "is a symbolic link"), (fifo, "is a FIFO"), (self.tmp.name, "is a folder"),
                         (os.path.join(self.tmp.name, "no", "x.json"), "does not exist"),
                         (os.path.join(self.dir, "weights.pt"), "is the input of --workload"),
                         (precious, "is the input of --against")]:
            with self.subTest(out=out):
                result = subprocess.run([*PEER, "--workload", workload,
                                         "--out", out, "--against", precious], capture_output=True, text=True,
                                        timeout=120)
                self.assertEqual(result.returncode, 2, result.stderr)
                self.assertEqual(len(result.stderr.strip().splitlines()), 1, result.stderr)
                self.assertIn(why, result.stderr)
        with open(precious) as f:
            self.assertEqual(f.read(), "precious")
        self.assertEqual(os.readlink(link), precious)
        os.remove(link)
        os.remove(fifo)

    def test_bad_flags_and_files_are_one_line_and_exit_2_before_anything_is_written(self):
        workload, out = os.path.join(self.tmp.name, "workload"), os.path.join(self.tmp.name, "bad.json")
        flags = ["--device", "cpu", "--repetitions", "1", "--min-time", "0.01"]
        for args, said in [(["--repetitions", "99999999999"], "--repetitions: 99999999999 is out of range"),
                           (["--min-time", "nan"], "--min-time: nan is not a number of seconds"),
                           (["--threads", "-1"], "--threads: -1 is out of range"),
                           (["--variants", "nope"], "--variants: unknown variant 'nope'"),
                           (["--variants="], "--variants: needs a value"),
                           (["--variants", "py_eager_if,"], "has an empty item"),
                           (["--scenarios", "exit:1,exit:1"], "'exit:1' is given twice"),
                           (["--scenarios", "exit:9"], "--scenarios: 'exit:9' was not exported"),
                           (["--out", out], "--out: given twice"),
                           (["--variants", "py_masked_static_ro"], "nothing ran: ")]:
            with self.subTest(args=args):
                kept = [text for flag, value in zip(flags[::2], flags[1::2]) if flag != args[0] for text in (flag, value)]
                result = subprocess.run([*PEER, "--workload", workload, "--out", out, *kept, *args],
                                        capture_output=True, text=True, timeout=120)
                self.assertEqual(result.returncode, 2, result.stderr)
                self.assertEqual(len(result.stderr.strip().splitlines()), 1, result.stderr)
                self.assertIn(said, result.stderr)
                self.assertFalse(os.path.exists(out))
        # a workload's tensors that are not what condbench wrote: one line naming the folder
        with tempfile.TemporaryDirectory() as d:
            bad = os.path.join(d, os.path.basename(self.dir))
            shutil.copytree(self.dir, bad)
            pool = torch.load(os.path.join(self.dir, "pool.pt"))
            for name, tensor, said in [("pool.pt", pool.long(), "pool.pt is int64 [1024, 32], not float32"),
                                       ("pool.pt", pool * float("nan"), "pool.pt holds values that are not finite"),
                                       ("weights.pt", [1, 2], "Expected state_dict to be dict-like")]:
                with self.subTest(said=said):
                    torch.save(tensor, os.path.join(bad, name))
                    result = subprocess.run([*PEER, "--workload", d, "--out", out, *flags,
                                             "--variants", "py_eager_if"], capture_output=True, text=True, timeout=120)
                    self.assertEqual((result.returncode, len(result.stderr.strip().splitlines())), (2, 1),
                                     result.stderr)
                    self.assertIn(f"peer: --workload: {bad}: ", result.stderr)
                    self.assertIn(said, result.stderr)
                    shutil.copy(os.path.join(self.dir, name), os.path.join(bad, name))

    def test_an_answer_budget_adds_rounds_until_the_answer_is_decided(self):
        # py_eager_if and py_masked, about 5x apart: 3 repetitions are too few for an interval; one look's
        # rounds double both to 6, where the answer's one comparison is decided.
        out = os.path.join(self.tmp.name, "peer-budget.json")
        peer = [*PEER, "--workload", os.path.join(self.tmp.name, "workload"),
                "--out", out, "--variants=py_eager_if,py_masked", "--scenarios=exit:1", "--repetitions=3",
                "--min-time=0.005", "--threads=1", "--answer-budget=120"]
        result = subprocess.run(peer, capture_output=True, text=True, timeout=300)
        self.assertEqual(result.returncode, 2, result.stderr)
        self.assertEqual(result.stderr.strip(), "peer: --answer-budget needs --report-tool (condbench-report judges "
                                                "the answer)")
        result = subprocess.run(peer + ["--report-tool", REPORT], capture_output=True, text=True, timeout=300)
        self.assertEqual(result.returncode, 0, result.stderr)
        data = json.load(open(out))
        spent = data["context"]["condbench_answer_budget"]
        self.assertRegex(spent, r"^3 rounds over 2 cells in [0-9.e-]+ s, 2 looks \(verdicts at 99\.7%\): "
                                r"1 comparisons undecided before, 0 after$")
        self.assertEqual(data["context"]["condbench_answer_looks"], "3")
        self.assertIn(f"peer: answer budget: {spent}", result.stdout)
        iterations = [b for b in data["benchmarks"] if b["run_type"] == "iteration"]
        self.assertEqual(sorted(b["sequence"] for b in iterations), list(range(12)))
        for r in range(6):
            self.assertEqual(len([b for b in iterations if b["round"] == r]), 2)
        for name in {b["run_name"] for b in iterations}:
            reps = [b for b in iterations if b["run_name"] == name]
            self.assertEqual([b["repetition_index"] for b in reps], list(range(6)))
            [median] = [b for b in data["benchmarks"] if b["run_name"] == name and b.get("aggregate_name") == "median"]
            self.assertEqual(median["repetitions"], 6)
        self.assertEqual(os.listdir(self.tmp.name).count("peer-budget.json"), 1)
        self.assertFalse([f for f in os.listdir(self.tmp.name) if "undecided" in f or ".tmp." in f])


@unittest.skipIf(torch is None, "torch is not importable here; run under .venv/bin/python")
class PythonPeerTransformer(unittest.TestCase):
    """The same for the transformer family: condbench's exported encoder loads into the peer's
    nn.TransformerEncoderLayer model, and every variant agrees with condbench-infer."""

    @classmethod
    def setUpClass(cls):
        cls.tmp = tempfile.TemporaryDirectory()
        root = cls.tmp.name
        result = subprocess.run([CONDBENCH, "--device=cpu", "--model=transformer", "--d-model=16", "--heads=2",
                                 "--ffn=24", "--seq=4", "--blocks=2", "--batch=1",
                                 "--scenario=exit:1,exit:3,mix:uniform", f"--export-workload={root}/workload"],
                                capture_output=True, text=True, timeout=300)
        assert result.returncode == 0, result.stderr
        cls.dir = os.path.join(root, "workload", "transformer-d_model16-heads2-ffn24-seq4-c10-b2")
        with open(os.path.join(cls.dir, "workload.json")) as f:
            cls.meta = json.load(f)
        torch.set_num_threads(1)

    @classmethod
    def tearDownClass(cls):
        cls.tmp.cleanup()

    def test_every_variant_matches_condbench_infer(self):
        self.assertEqual(self.meta["config"], {"family": "transformer", "d_model": 16, "heads": 2, "ffn": 24,
                                               "seq": 4, "num_classes": 10, "blocks": 2})
        self.assertEqual(self.meta["name_axes"], [["model", "transformer"], ["d_model", "16"], ["heads", "2"],
                                                  ["ffn", "24"], ["seq", "4"], ["blocks", "2"]])
        model = load_model(os.path.join(self.dir, "weights.pt"), self.meta["config"], "cpu")  # strict
        self.assertIsInstance(model.layers[0], torch.nn.TransformerEncoderLayer)
        pool = torch.load(os.path.join(self.dir, "pool.pt"))
        self.assertEqual(tuple(pool.shape[1:]), (4, 16))
        rows = pool[:12].contiguous()
        inputs = os.path.join(self.tmp.name, "rows.pt")
        torch.save(rows, inputs)
        runnable, skipped = variants(model, "cpu")
        names = [name for name, *_ in runnable]
        for name in ["py_eager_if", "py_cond", "py_cond_compile", "py_masked", "py_masked_compile",
                     "py_blocks_compile"]:
            self.assertIn(name, names)
        exits_seen = agree_with_condbench_infer(self, runnable, rows, inputs, ["--heads=2"], 1e-4)
        self.assertEqual(exits_seen, {1, 2, 3})  # the forced scenarios and the mix reach every exit

    def test_a_long_walk_comes_cut_to_what_condbench_walks(self):
        # the default transformer: a pass over its pool would take long, so condbench walks the 64-row
        # prefix at batch 1 (walked_batches), and the workload gives the peer that prefix, no more
        out = os.path.join(self.tmp.name, "default")
        result = subprocess.run([CONDBENCH, "--device=cpu", "--model=transformer", "--batch=1",
                                 "--scenario=exit:1,mix:uniform", f"--export-workload={out}"],
                                capture_output=True, text=True, timeout=300)
        self.assertEqual(result.returncode, 0, result.stderr)
        (folder,) = os.listdir(out)
        with open(os.path.join(out, folder, "workload.json")) as f:
            meta = json.load(f)
        self.assertGreater(meta["pool_rows"], 64)
        for scenario in ["exit:1", "mix:uniform"]:
            self.assertEqual(len(meta["walk"][scenario]), 64, scenario)
            self.assertEqual(len(set(meta["walk"][scenario])), 64, scenario)

    def test_aoti_compile_puts_packages_where_condbench_looks(self):
        # the sizes in the family's order (ModelConfig::tag), not the exported object's sorted keys
        from condbench.aoti import workload_configs
        self.assertEqual(self.meta["tag"], os.path.basename(self.dir))
        self.assertEqual([key for _, key in workload_configs(os.path.join(self.tmp.name, "workload"))],
                         ["transformer-d_model16-heads2-ffn24-seq4-c10-b2"])

    def test_peer_names_the_transformer_as_condbench_does(self):
        out = os.path.join(self.tmp.name, "peer.json")
        result = subprocess.run([*PEER, "--workload",
                                 os.path.join(self.tmp.name, "workload"), "--out", out, "--variants=py_eager_if",
                                 "--scenarios=exit:1", "--repetitions=2", "--min-time=0.01", "--threads=1"],
                                capture_output=True, text=True, timeout=300)
        self.assertEqual(result.returncode, 0, result.stderr)
        with open(out) as f:
            names = {b.get("run_name", b["name"]) for b in json.load(f)["benchmarks"]}
        self.assertIn("early_exit/cpu/python/py_eager_if/exit:1/batch:1/model:transformer/d_model:16/heads:2/ffn:24/"
                      "seq:4/blocks:2", names)


@unittest.skipIf(torch is None, "torch is not importable here; run under .venv/bin/python")
class PythonPeerDecoder(unittest.TestCase):
    """The decoder (docs/design.md §8): condbench's exported decoder loads into the documented
    PyTorch module (python/condbench/decoder.py), and the peer's decode loops, each checked against the
    module's cache-free decoding before it is timed, are named and counted as condbench's cases."""

    SIZES = "vocab=37,d_model=24,heads=2,layers=4,ffn=40,context=24,prompt=5,generate=6"

    @classmethod
    def setUpClass(cls):
        cls.tmp = tempfile.TemporaryDirectory()
        root = cls.tmp.name
        result = subprocess.run([CONDBENCH, "--device=cpu", "--model=decoder", f"--decoder={cls.SIZES}", "--batch=1",
                                 "--scenario=exit:1,exit:2,mix:uniform", f"--export-workload={root}/workload"],
                                capture_output=True, text=True, timeout=300)
        assert result.returncode == 0, result.stderr
        cls.dir = os.path.join(root, "workload", "decoder-vocab37-d_model24-heads2-layers4-ffn40-context24-exit_every2-"
                                                 "prompt5-generate6")
        with open(os.path.join(cls.dir, "workload.json")) as f:
            cls.meta = json.load(f)

    @classmethod
    def tearDownClass(cls):
        cls.tmp.cleanup()

    def test_the_export_loads_into_the_documented_module(self):
        from condbench import decoder
        config = self.meta["config"]
        self.assertEqual((config["family"], config["num_exits"]), ("decoder", 2))
        model = decoder.Decoder(config["vocab"], config["d_model"], config["layers"], config["ffn"], config["context"])
        model.load_state_dict(torch.load(os.path.join(self.dir, "weights.pt")))  # strict: every key, every shape
        prompts = torch.load(os.path.join(self.dir, "prompts.pt"))
        self.assertEqual((prompts.dtype, tuple(prompts.shape)), (torch.int64, (4, 5)))
        self.assertEqual(set(self.meta["thresholds"]), {"exit:1", "exit:2", "mix:uniform"})

    def test_a_near_tie_may_go_either_way_and_nothing_else(self):
        from condbench.decoder_peer import near_tie
        margin = self.meta["agreement"]["tie_margin"]  # condbench's, carried by the workload
        self.assertGreater(margin, 0)
        logits = torch.tensor([[2.0, 2.0 - 0.5 * margin * 2.0, 0.0, -1.0]])
        self.assertTrue(near_tie(0, 1, 1, 0, 1, logits, [[0.5]], [0.3], margin))   # the runner-up, a hair below
        self.assertFalse(near_tie(0, 2, 1, 0, 1, logits, [[0.5]], [0.3], margin))  # a token far below the top
        self.assertTrue(near_tie(0, 0, 1, 0, 2, logits, [[0.5]], [0.5 - margin / 2], margin))  # left at a hair
        self.assertFalse(near_tie(0, 0, 1, 0, 2, logits, [[0.5]], [0.4], margin))  # left where it should not

    def test_aoti_compile_finds_the_decoder_under_condbenchs_name(self):
        from condbench.aoti import config_key, workload_configs
        found = workload_configs(os.path.join(self.tmp.name, "workload"))
        step = "decoder-vocab37-d_model24-heads2-layers4-ffn40-context24-exit_every2"  # no prompt, no generate
        self.assertEqual([key for _, key in found], [step])
        self.assertEqual(config_key(found[0][0]), step)  # --config names it the same

    def test_the_static_cache_loop_runs_checked_when_named(self):
        # Hugging Face's static cache under reduce-overhead: CUDA's by default, on a CPU when named;
        # checked against the module's decoding on every sequence like the others
        out = os.path.join(self.tmp.name, "peer-static.json")
        result = subprocess.run([*PEER, "--workload", os.path.join(self.tmp.name, "workload"), "--out", out,
                                 "--variants=py_masked_static_ro", "--scenarios=exit:1,mix:uniform", "--repetitions=2",
                                 "--min-time=0.01", "--threads=1"], capture_output=True, text=True, timeout=300)
        self.assertEqual(result.returncode, 0, result.stderr)
        self.assertNotIn("not run", result.stdout)
        with open(out) as f:
            data = json.load(f)
        runs = {b["run_name"]: b for b in data["benchmarks"] if b["run_type"] == "iteration"}
        self.assertEqual(len(runs), 2)
        first = next(b for name, b in runs.items() if "/py_masked_static_ro/exit:1/" in name)
        self.assertEqual((first["host_syncs"], first["exit_1"]), (0.0, 1.0))

    def test_the_decode_loops_run_checked_and_named_as_condbenchs(self):
        out = os.path.join(self.tmp.name, "peer.json")
        result = subprocess.run([*PEER, "--workload",
                                 os.path.join(self.tmp.name, "workload"), "--out", out,
                                 "--repetitions=2", "--min-time=0.01", "--threads=1"],
                                capture_output=True, text=True, timeout=300)
        self.assertEqual(result.returncode, 0, result.stderr)
        self.assertNotIn("not run", result.stdout)  # both loops agree with the module on every sequence
        with open(out) as f:
            data = json.load(f)
        runs = {b["run_name"]: b for b in data["benchmarks"] if b["run_type"] == "iteration"}
        axes = "batch:1/model:decoder/vocab:37/d_model:24/heads:2/layers:4/ffn:40/context:24/exit_every:2/prompt:5/" \
               "generate:6/blocks:1"
        loops = ["py_eager_if", "py_masked", "py_cond", "py_cond_compile", "py_masked_compile"]
        self.assertEqual(set(runs), {f"early_exit/cpu/python/{loop}/{scenario}/{axes}" for loop in loops
                                     for scenario in ["exit:1", "exit:2", "mix:uniform"]})
        for loop in loops:  # the host reads one decision per exit reached where it decides
            host = loop in ("py_eager_if", "py_cond", "py_cond_compile")
            final, first = runs[f"early_exit/cpu/python/{loop}/exit:2/{axes}"], \
                runs[f"early_exit/cpu/python/{loop}/exit:1/{axes}"]
            self.assertEqual((final["host_syncs"], final["exit_2"]), (1.0 if host else 0.0, 1.0), loop)
            self.assertEqual((first["host_syncs"], first["exit_1"]), (1.0 if host else 0.0, 1.0), loop)
            mix = runs[f"early_exit/cpu/python/{loop}/mix:uniform/{axes}"]
            self.assertAlmostEqual(mix["exit_1"] + mix["exit_2"], 1.0, loop)
            self.assertIn(f"strategy:cpu/python/{loop} per token", data["context"])
        report = os.path.join(self.tmp.name, "report")
        result = subprocess.run([REPORT, "--out", report, out], capture_output=True, text=True, timeout=120)
        self.assertEqual(result.returncode, 0, result.stderr)
        with open(os.path.join(report, "report.md")) as f:
            answer = f.read().split("## The answer")[1].split("\n## ")[0]
        self.assertIn("| python/py_eager_if | ", answer)
        self.assertIn("| Python if vs masking (py_eager_if vs py_masked) | ", answer)
        self.assertIn("| Python if vs nested torch.cond (py_eager_if vs py_cond) | ", answer)


class ScenarioGrammar(unittest.TestCase):
    """The peer's check of a workload's scenario names answers as C++'s Scenario::parse, the owner
    of the grammar (condbench --scenario reads with it), on the same names."""

    def test_the_peer_reads_a_scenario_as_condbench_does(self):
        from condbench.workload import is_scenario
        for name in ["exit:1", "exit:4", "exit:01", "exit:0", "exit:-1", "exit:+1", "exit:x", "exit:", "exit:1.5",
                     "exit: 1", "exit:²", "mix:early", "mix:uniform", "mix:late", "mix:weird", "mix:", "late",
                     "EXIT:1", "exit:1/x", "mix:early "]:
            with self.subTest(name=name):
                cpp = subprocess.run([CONDBENCH, "--device=cpu", "--hidden=16", "--strategy=fused",
                                      f"--scenario={name}", "--benchmark_list_tests"],
                                     capture_output=True, text=True, timeout=60)
                self.assertEqual(is_scenario(name), cpp.returncode == 0, cpp.stderr)


class AotiCompileCommandLine(unittest.TestCase):
    """python/condbench/aoti.py refuses what it cannot compile in one line, exit code 2, before
    touching the cache: a malformed --config before importing torch, a family's own refusal (an
    unknown family or size, heads not dividing d_model) from the family's module."""

    def test_bad_arguments_are_one_line_and_exit_2(self):
        with tempfile.TemporaryDirectory() as cache:
            for args, names in [(["--config=mlp:in_features=32,hidden=64,num_classes=10"], "--config"),
                                (["--config=mlp:in_features=32,hidden=64,num_classes=10,blocks=0"], "--config"),
                                (["--config=a,b,c,d"], "--config"), (["--config=32,64,10,3"], "--config"),
                                (["--config=rnn:width=4,num_classes=2,blocks=1"], "unknown model family 'rnn'"),
                                (["--config=mlp:hidden=4,depth=2,num_classes=2,blocks=1"], "--config"),
                                (["--config=transformer:d_model=30,heads=4,ffn=8,seq=2,num_classes=2,blocks=1"],
                                 "--config"),
                                (["--config=mlp:in_features=1,hidden=2,num_classes=3,blocks=4", "--modules=cond,x"],
                                 "--modules"),
                                (["--config=decoder:vocab=8,d_model=30,heads=4,layers=4,ffn=8,context=8,exit_every=2"],
                                 "heads must divide d_model"),
                                (["--config=decoder:vocab=8,d_model=8,heads=2,layers=4,ffn=8,context=8,exit_every=2,"
                                  "prompt=2"], "--config"),  # a step does not depend on the prompt
                                ([f"--workload={cache}/none"], "no exported workload")]:
                result = subprocess.run([sys.executable, "-m", "condbench.aoti", f"--cache={cache}", *args], capture_output=True,
                                        text=True, timeout=120)
                self.assertEqual(result.returncode, 2, f"{args}: {result.stderr}")
                self.assertEqual(len(result.stderr.strip().splitlines()), 1, f"{args}: {result.stderr}")
                self.assertIn(names, result.stderr)
            self.assertEqual(os.listdir(cache), [])


if __name__ == "__main__":
    unittest.main(verbosity=2)
