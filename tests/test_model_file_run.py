"""A model file run by condbench (docs/your-model.md): the folder python/condbench/model_file.py compile
makes, read by condbench-infer and condbench. Every strategy that runs a model file agrees with the
module's own forward, computed here in Python; the question's MLP as a model file agrees with the
built-in mlp family on the same weights; a strategy that disagrees with the module is stopped with
the row named; a folder that cannot be used is one line naming it and the part, exit code 2.

Usage: test_model_file_run.py CONDBENCH CONDBENCH_INFER CONDBENCH_REPORT CACHE, CACHE a folder kept
between runs (the compiled packages: about a minute and a half per model the first time)."""
import glob
import json
import os
import re
import shutil
import subprocess
import sys
import tempfile
import textwrap
import unittest

CONDBENCH, INFER, REPORT, CACHE = sys.argv[1:5]
del sys.argv[1:5]
ROOT = os.path.join(os.path.dirname(os.path.abspath(__file__)), "..")
from tools import kept_source, main, module_forward, run  # noqa: E402  (tests/tools.py: the tests' shared helpers)

try:
    import torch
except ImportError:
    torch = None

# A model no test of condbench's knew: its own layer types (a 1-D convolution, GELU, LayerNorm, a
# gated residual), a [rows, 4, 16] input, two stages, heads that pool, and a confidence() of its own:
# the margin between the two most likely classes.
FRESH = '''
import torch
from torch import nn


class Gate(nn.Module):
    def __init__(self, channels):
        super().__init__()
        self.conv = nn.Conv1d(channels, 2 * channels, 3, padding=1)
        self.norm = nn.LayerNorm(16)

    def forward(self, x):
        a, b = self.conv(x).chunk(2, dim=1)
        return self.norm(x + a * torch.sigmoid(b))


class Head(nn.Module):
    def __init__(self, channels, classes):
        super().__init__()
        self.proj = nn.Linear(channels, classes)

    def forward(self, x):
        return self.proj(nn.functional.gelu(x.amax(-1))) * 4


class Fresh(nn.Module):
    def __init__(self):
        super().__init__()
        self.stages = nn.ModuleList([Gate(4), Gate(4)])
        self.exits = nn.ModuleList([Head(4, 6), Head(4, 6)])
        self.final = nn.Sequential(nn.Flatten(), nn.Linear(64, 6))

    def confidence(self, logits):
        top = torch.softmax(logits, -1).topk(2, dim=-1).values
        return top[:, 0] - top[:, 1]


def model():
    torch.manual_seed(3)
    return Fresh()


def example_input(batch):
    return torch.randn(batch, 4, 16, generator=torch.Generator().manual_seed(4))
'''


def compile_model(path):
    result = run(os.path.join(ROOT, ".venv", "bin", "python"), "-m", "condbench.model_file", "compile", path, "--cache", CACHE)
    if result.returncode != 0:
        raise AssertionError(result.stderr)
    return result.stdout.strip()


def apart_thresholds(scores, quantiles):
    """A threshold per exit between two neighbouring scores near each quantile: no row is near one."""
    out = []
    for k, q in enumerate(quantiles):
        s = scores[:, k].sort().values
        i = int(q * (len(s) - 1))
        out.append(float((s[i] + s[i + 1]) / 2))
    return out


@unittest.skipIf(torch is None, "torch is not importable here; run under .venv/bin/python")
class ModelFileRun(unittest.TestCase):
    @classmethod
    def setUpClass(cls):
        from condbench import model_file
        cls.dir = tempfile.TemporaryDirectory()
        cls.fresh_path = kept_source(CACHE, "fresh.py", textwrap.dedent(FRESH))
        cls.mlp_path = os.path.join(ROOT, "examples", "models", "mlp.py")
        cls.fresh = compile_model(cls.fresh_path)
        cls.mlp = compile_model(cls.mlp_path)
        cls.fresh_module = model_file.ModelFile(cls.fresh_path).module
        cls.mlp_module = model_file.ModelFile(cls.mlp_path).module
        # the MLP's weights under the built-in family's names, as the example saves them
        cls.mlp_weights = os.path.join(cls.dir.name, "mlp_builtin.pt")
        subprocess.run([sys.executable, cls.mlp_path, cls.mlp_weights], check=True, timeout=120)

    @classmethod
    def tearDownClass(cls):
        cls.dir.cleanup()

    def save_input(self, x, name="x.pt"):
        path = os.path.join(self.dir.name, name)
        torch.save(x, path)
        return path

    def edited_copy(self, name, change):
        """A copy of the MLP example's folder, `change(folder, manifest)` applied; the manifest
        written back unless `change` returns False (it wrote it itself)."""
        folder = os.path.join(self.dir.name, name)
        shutil.rmtree(folder, ignore_errors=True)
        shutil.copytree(self.mlp, folder)
        path = os.path.join(folder, "manifest.json")
        with open(path) as f:
            m = json.load(f)
        if change(folder, m) is not False:
            with open(path, "w") as f:
                json.dump(m, f)
        return folder

    def infer(self, *args):
        result = run(INFER, "--device=cpu", *args)
        return result, (json.loads(result.stdout) if result.returncode in (0, 1) and result.stdout else None)

    def test_a_fresh_model_agrees_with_its_module_for_every_strategy(self):
        x = torch.randn(40, 4, 16, generator=torch.Generator().manual_seed(9))
        rule = self.fresh_module.confidence
        _, _, scores = module_forward(self.fresh_module, x, [2.0, 2.0], rule)
        thresholds = apart_thresholds(scores, [0.6, 0.5])
        ids, logits, _ = module_forward(self.fresh_module, x, thresholds, rule)
        self.assertGreaterEqual(len(set(ids)), 3, "the thresholds should send rows to every exit")
        result, out = self.infer(f"--model-file={self.fresh}", f"--input={self.save_input(x)}",
                                 "--thresholds=" + ",".join(repr(t) for t in thresholds))
        self.assertEqual(result.returncode, 0, result.stderr)
        self.assertEqual(out["model"], "model=fresh.py num_classes=6 blocks=2")
        ran = [f'{s["engine"]}/{s["strategy"]}' for s in out["strategies"]]
        self.assertLessEqual({"torch/eager_host", "torch/masked", "aoti/masked"}, set(ran))
        for s in out["strategies"]:
            with self.subTest(strategy=s["strategy"]):
                self.assertEqual(s["exit_ids"], ids)
                torch.testing.assert_close(torch.tensor(s["logits"]), logits, rtol=1e-4, atol=1e-5)
        skipped = {s["strategy"]: s["reason"] for s in out["skipped"]}
        self.assertIn("Linear + ReLU blocks, not those of fresh.py", skipped["cpu/native/fused"])
        self.assertIn("batch 1 only", skipped["cpu/aoti/cond"])
        # one row at a time, the nested torch.cond generated from the stages runs too
        for r in (int(ids.index(1)), int(ids.index(2)), int(ids.index(3))):
            result, out = self.infer(f"--model-file={self.fresh}", f"--input={self.save_input(x[r:r + 1], 'row.pt')}",
                                     "--thresholds=" + ",".join(repr(t) for t in thresholds))
            self.assertEqual(result.returncode, 0, result.stderr)
            cond = next(s for s in out["strategies"] if s["engine"] == "aoti" and s["strategy"] == "cond")
            self.assertEqual(cond["exit_ids"], [ids[r]])
            torch.testing.assert_close(torch.tensor(cond["logits"][0]), logits[r], rtol=1e-4, atol=1e-5)

    def test_the_counters_use_each_parts_own_costs(self):
        # the fresh model's final head (Linear 64 -> 6) costs more than its exit heads (Linear 4 -> 6)
        out, temp = os.path.join(self.dir.name, "fresh.json"), os.path.join(self.dir.name, "tmp")
        os.mkdir(temp)
        result = run(CONDBENCH, f"--model-file={self.fresh}", "--device=cpu", "--strategy=eager_host",
                     "--scenario=exit:1,exit:3", "--batch=1", "--benchmark_min_time=0.01s", f"--benchmark_out={out}",
                     env={"TMPDIR": temp})
        self.assertEqual(result.returncode, 0, result.stderr)
        # the folders AOTInductor extracted its parts' packages into went at exit (aoti_loader.h)
        self.assertEqual(os.listdir(temp), [])
        with open(os.path.join(self.fresh, "manifest.json")) as f:
            parts = json.load(f)["parts"]
        self.assertGreater(parts[4]["flops_per_row"], parts[1]["flops_per_row"])
        with open(out) as f:
            rows = {b["run_name"].split("/")[4]: b for b in json.load(f)["benchmarks"]
                    if "/eager_host/" in b["name"] and b.get("run_type") == "iteration"}
        for scenario, reached in (("exit:1", parts[:2]), ("exit:3", parts)):
            with self.subTest(scenario=scenario):
                self.assertEqual(rows[scenario]["flops_executed"], sum(p["flops_per_row"] for p in reached))
                self.assertEqual(rows[scenario]["flops_useful"], sum(p["flops_per_row"] for p in reached))

    def test_the_mlp_as_a_model_file_agrees_with_the_builtin_family_on_its_weights(self):
        x = torch.randn(64, 32, generator=torch.Generator().manual_seed(5))
        with torch.no_grad():
            probs = lambda logits: torch.softmax(logits, -1).amax(-1)  # noqa: E731
            _, _, scores = module_forward(self.mlp_module, x, [2.0] * 3, probs)
        thresholds = ",".join(repr(t) for t in apart_thresholds(scores, [0.7, 0.6, 0.5]))
        path = self.save_input(x, "mlp_x.pt")
        result, as_file = self.infer(f"--model-file={self.mlp}", f"--input={path}", f"--thresholds={thresholds}")
        self.assertEqual(result.returncode, 0, result.stderr)
        result, builtin = self.infer(f"--weights={self.mlp_weights}", f"--input={path}", f"--thresholds={thresholds}")
        self.assertEqual(result.returncode, 0, result.stderr)
        reference = {s["strategy"]: s for s in builtin["strategies"] if s["engine"] == "torch"}
        self.assertGreaterEqual(len(set(reference["eager_host"]["exit_ids"])), 3)
        for s in as_file["strategies"]:
            with self.subTest(strategy=s["strategy"]):
                self.assertEqual(s["exit_ids"], reference[s["strategy"]]["exit_ids"])
                torch.testing.assert_close(torch.tensor(s["logits"]), torch.tensor(reference[s["strategy"]]["logits"]),
                                           rtol=1e-4, atol=1e-5)

    def test_a_run_times_the_model_file_beside_the_builtin_family_and_the_report_reads_both(self):
        out = os.path.join(self.dir.name, "run.json")
        result = run(CONDBENCH, f"--model-file={self.mlp}", f"--weights={self.mlp_weights}", "--device=cpu",
                     "--strategy=eager_host,masked,cond", "--scenario=exit:2,mix:uniform", "--batch=1",
                     "--benchmark_min_time=0.01s", "--benchmark_repetitions=2", f"--benchmark_out={out}")
        self.assertEqual(result.returncode, 0, result.stderr)
        with open(out) as f:
            data = json.load(f)
        self.assertIn("mlp.py, digest ", data["context"]["model_file"])
        names = {b["run_name"].removesuffix("/real_time") for b in data["benchmarks"]
                 if b["name"].startswith("early_exit/")}
        for strategy in ("torch/eager_host", "torch/masked", "aoti/cond", "aoti/masked"):
            self.assertIn(f"early_exit/cpu/{strategy}/exit:2/batch:1/model:mlp.py/blocks:3", names)
            self.assertIn(f"early_exit/cpu/{strategy}/exit:2/batch:1/hidden:64/blocks:3", names)
        # the built-in family's aoti packages may be absent from this cache; the model file's are its own
        errors = [b["name"] for b in data["benchmarks"] if b.get("error_occurred") and "hidden:64" not in b["name"]]
        self.assertEqual(errors, [])
        self.assertIn("compiled with the model file", data["context"][
            "build:cpu/aoti/cond model=mlp.py num_classes=10 blocks=3"])
        # the model file's counters come from its manifest: exit:2 runs two stages and two heads
        with open(os.path.join(self.mlp, "manifest.json")) as f:
            manifest = json.load(f)
        flops = sum(p["flops_per_row"] for p in manifest["parts"][:4])
        row = next(b for b in data["benchmarks"]
                   if b["run_name"] == "early_exit/cpu/torch/eager_host/exit:2/batch:1/model:mlp.py/blocks:3/real_time")
        self.assertEqual(row["flops_executed"], flops)
        self.assertEqual(row["host_syncs"], 2)
        table = run(REPORT, "--table", out)
        self.assertEqual(table.returncode, 0, table.stderr)
        self.assertIn("mlp.py", table.stdout)

    def test_a_strategy_that_disagrees_with_the_module_is_stopped_naming_the_row(self):
        folder = os.path.join(self.dir.name, "tampered")
        shutil.rmtree(folder, ignore_errors=True)
        shutil.copytree(self.mlp, folder)
        ref = torch.load(os.path.join(folder, "reference.pt"))
        ref["confidence.0"][7] = 1.0  # the module "says" row 7 leaves at the first exit; the packages disagree
        torch.save(ref, os.path.join(folder, "reference.pt"))
        result, out = self.infer(f"--model-file={folder}", "--batch=4", "--thresholds=0.9,0.9,0.9")
        self.assertEqual(result.returncode, 1, result.stderr)
        self.assertIn("cpu/torch/eager_host: differs from the module's own forward on reference row 7: exit 4, "
                      "the module's 1", result.stderr)
        self.assertFalse(out["agree"])
        # in a run: every row leaves at the first exit, where the module's logits of row 7 now differ
        ref["logits.0"][7] += 1.0
        torch.save(ref, os.path.join(folder, "reference.pt"))
        out_path = os.path.join(self.dir.name, "tampered.json")
        result = run(CONDBENCH, f"--model-file={folder}", "--device=cpu", "--strategy=masked", "--scenario=exit:1",
                     "--batch=1", "--benchmark_min_time=0.01s", f"--benchmark_out={out_path}")
        with open(out_path) as f:
            rows = [b for b in json.load(f)["benchmarks"] if b["name"].startswith("early_exit/cpu/torch/masked/")]
        self.assertTrue(rows and all(b.get("error_occurred") for b in rows), result.stdout)
        self.assertIn("differs from the module's own forward on reference row 7: its logits at exit 1 are off",
                      rows[0]["error_message"])
        # the rest ran and was written, but a run with a failed benchmark is no success: exit 1, the first named
        self.assertEqual(result.returncode, 1, result.stderr)
        self.assertRegex(result.stderr, rf"condbench: --model-file: {re.escape(folder)}: compiled \d+ (s|min|h|days) ago\n")
        self.assertRegex(result.stderr, r"condbench: \d+ benchmarks? failed; the first: early_exit/cpu/(torch|aoti)/masked/\S+: "
                                        r"error: differs from the module's own forward on reference row 7")

    def peer(self, folder, variants, *flags):
        """condbench's exported workload of the model file, then the peer on it: (peer's result, its JSON)."""
        workload = tempfile.mkdtemp(dir=self.dir.name)
        result = run(CONDBENCH, f"--export-workload={workload}", f"--model-file={folder}", *flags)
        self.assertEqual(result.returncode, 0, result.stderr)
        self.exported = workload
        out = os.path.join(workload, "peer.json")
        result = run(os.path.join(ROOT, ".venv", "bin", "python"), "-m", "condbench.peer",
                     "--workload", workload, "--out", out, "--repetitions", "1", "--min-time", "0.001",
                     "--variants", variants)
        data = None
        if result.returncode == 0:
            with open(out) as f:
                data = json.load(f)
        return result, data

    def test_the_peer_runs_the_module_itself_checked_against_its_forward(self):
        result, data = self.peer(self.fresh, "py_eager_if,py_cond,py_masked", "--scenario=mix:uniform,exit:2")
        self.assertEqual(result.returncode, 0, result.stderr)
        # the rule the peer checks the variants by is condbench's (ModelFileAgreement), carried as data
        (meta_path,) = glob.glob(os.path.join(self.exported, "*", "workload.json"))
        with open(meta_path) as f:
            self.assertEqual(json.load(f)["agreement"],
                             {"absolute_tolerance": 1e-4, "relative_tolerance": 1e-3, "tie_margin": 1e-4})
        names = {b["name"] for b in data["benchmarks"] if b.get("run_type") == "iteration"}
        for variant in ("py_eager_if", "py_cond", "py_masked"):
            self.assertIn(f"early_exit/cpu/python/{variant}/mix:uniform/batch:1/model:fresh.py/blocks:2", names)
        # a variant that differs from the module is not timed, and the note names the row
        folder = os.path.join(self.dir.name, "peer_tampered")
        shutil.rmtree(folder, ignore_errors=True)
        shutil.copytree(self.fresh, folder)
        ref = torch.load(os.path.join(folder, "reference.pt"))
        ref["logits.0"][3] += 1.0  # where every row leaves at the first exit, row 3's logits now differ
        torch.save(ref, os.path.join(folder, "reference.pt"))
        result, data = self.peer(folder, "py_eager_if", "--scenario=exit:1")
        # (it was all that was asked: nothing ran, which is one line, exit 1 as a failed benchmark's, and no file)
        self.assertEqual(result.returncode, 1, result.stderr)
        self.assertEqual(result.stderr, "peer: nothing ran: py_eager_if: exit:1 on fresh.py not run (differs from the "
                                        "module's own forward on reference row 3: its logits at exit 1)\n")
        self.assertFalse(os.path.exists(os.path.join(self.exported, "peer.json")))
        # a model file changed since it was compiled: one line, exit 2
        changed = os.path.join(self.dir.name, "changed.py")
        with open(changed, "w") as f:
            f.write(textwrap.dedent(FRESH).replace("manual_seed(3)", "manual_seed(4)"))
        with open(os.path.join(folder, "manifest.json")) as f:
            m = json.load(f)
        m["source"] = changed
        with open(os.path.join(folder, "manifest.json"), "w") as f:
            json.dump(m, f)
        result, _ = self.peer(folder, "py_eager_if", "--scenario=exit:1")
        self.assertEqual(result.returncode, 2)
        self.assertEqual(result.stderr.strip().splitlines()[-1],
                         f"peer: model file: {changed}: changed since it was compiled into {folder} (or its weights "
                         "did): compile it again (scripts/run --model-file does)")

    def test_no_output_overwrites_the_model_files_inputs_or_its_folder(self):
        # the compiled folder's own files, the Python file and the weights: one line, exit 2, unchanged
        reference = os.path.join(self.fresh, "reference.pt")
        before = open(reference, "rb").read()
        cache = {"CONDBENCH_AOTI_DIR": CACHE}
        for flags in ([f"--model-file={self.fresh}", f"--benchmark_out={reference}"],
                      [f"--model-file={self.fresh}", f"--checkpoint-out={os.path.join(self.fresh, 'manifest.json')}"],
                      [f"--model-file={self.fresh}", f"--trace={os.path.join(self.fresh, 'new.json')}"],
                      [f"--model-file={self.fresh_path}", f"--benchmark_out={self.fresh_path}"]):
            with self.subTest(flags=flags):
                result = run(CONDBENCH, "--device=cpu", "--strategy=eager_host", "--scenario=exit:1", *flags, env=cache)
                self.assertEqual(result.returncode, 2, result.stderr)
                lines = result.stderr.strip().splitlines()
                self.assertTrue(lines and ("an output never overwrites an input" in lines[-1] or
                                           "which condbench reads; write elsewhere" in lines[-1]), result.stderr)
        self.assertEqual(open(reference, "rb").read(), before)
        self.assertFalse(os.path.exists(os.path.join(self.fresh, "new.json")))
        self.assertIn("def model()", open(self.fresh_path).read())
        # checked before the compile, which would run the user's code (here: leave a mark) for minutes
        marked, mark = os.path.join(self.dir.name, "marked.py"), os.path.join(self.dir.name, "ran")
        with open(marked, "w") as f:
            f.write(f"open({mark!r}, 'w').close()\n")
        with open(os.path.join(self.dir.name, "w.pt"), "wb") as f:
            f.write(b"weights")
        for flags in ([f"--model-file={marked}", f"--benchmark_out={marked}"],
                      [f"--model-file={marked}", f"--model-weights={self.dir.name}/w.pt",
                       f"--checkpoint-out={self.dir.name}/w.pt"]):
            with self.subTest(flags=flags):
                result = run(CONDBENCH, "--device=cpu", *flags, env=cache)
                self.assertEqual(result.returncode, 2, result.stderr)
                self.assertIn("an output never overwrites an input", result.stderr)
                self.assertFalse(os.path.exists(mark), "the model file ran before its outputs were checked")
        self.assertEqual(open(os.path.join(self.dir.name, "w.pt"), "rb").read(), b"weights")
        # a file the module read while it loaded (a module it imports, weights model() loads), as the
        # folder's manifest lists it
        helper = os.path.join(self.dir.name, "helper.py")
        with open(helper, "w") as f:
            f.write("SCALE = 1.0\n")

        def reads_helper(folder, m):
            m["reads"] = [{"path": helper, "sha256": "0" * 64}]

        folder = self.edited_copy("reads_helper", reads_helper)
        result = run(CONDBENCH, "--device=cpu", "--strategy=eager_host", "--scenario=exit:1", f"--model-file={folder}",
                     f"--benchmark_out={helper}", env=cache)
        self.assertEqual(result.returncode, 2, result.stderr)
        self.assertEqual(result.stderr.count("\n"), 1, result.stderr)
        self.assertIn(f"'{helper}' is the input of --model-file (a file its module reads); an output never overwrites "
                      "an input", result.stderr)
        self.assertEqual(open(helper).read(), "SCALE = 1.0\n")
        # the peer on a model file's workload: its --out neither the module's file nor inside the folder
        workload = tempfile.mkdtemp(dir=self.dir.name)
        exported = run(CONDBENCH, f"--export-workload={workload}", f"--model-file={folder}", "--scenario=exit:1")
        self.assertEqual(exported.returncode, 0, exported.stderr)
        for out, said in ((helper, f"--out: '{helper}' is the input of --workload (its model file's module); an output "
                                   "never overwrites an input"),
                          (os.path.join(folder, "peer.json"), f"--out: '{folder}/peer.json' lies inside '{folder}', the "
                                                              "folder of --workload (its model file's folder)")):
            with self.subTest(out=out):
                result = run(os.path.join(ROOT, ".venv", "bin", "python"), "-m", "condbench.peer", "--workload",
                             workload, "--out", out, "--repetitions", "1", "--variants", "py_eager_if")
                self.assertEqual((result.returncode, result.stderr.count("\n")), (2, 1), result.stderr)
                self.assertIn(said, result.stderr)
        self.assertEqual(open(helper).read(), "SCALE = 1.0\n")
        self.assertFalse(os.path.exists(os.path.join(folder, "peer.json")))

    def test_a_whole_model_module_that_could_not_be_made_is_skipped_with_the_reason(self):
        def no_cond(folder, m):
            m["whole_model"]["cond"] = {"unavailable": "torch.export cannot trace the model's cond module (because)"}
            os.remove(os.path.join(folder, "cond.pt2"))

        folder = self.edited_copy("no_cond", no_cond)
        result, out = self.infer(f"--model-file={folder}", "--batch=1", "--thresholds=0.5,0.5,0.5")
        self.assertEqual(result.returncode, 0, result.stderr)
        skipped = {s["strategy"]: s["reason"] for s in out["skipped"]}
        self.assertEqual(skipped["cpu/aoti/cond"], "torch.export cannot trace the model's cond module (because)")
        self.assertIn("aoti/masked", {f'{s["engine"]}/{s["strategy"]}' for s in out["strategies"]})

    def test_the_tools_compile_the_python_file_themselves(self):
        # --model-file=FILE.py: compiled by model_file.py into the cache (here the tests'), then
        # read as its folder: the same results as the folder given, the same digest.
        cache = {"CONDBENCH_AOTI_DIR": CACHE}
        x = self.save_input(torch.randn(12, 4, 16, generator=torch.Generator().manual_seed(5)), "py.pt")
        args = ("--device=cpu", f"--input={x}", "--thresholds=0.3,0.3", "--strategy=eager_host,masked")
        from_py = run(INFER, f"--model-file={self.fresh_path}", *args, env=cache)
        from_folder = run(INFER, f"--model-file={self.fresh}", *args)
        self.assertEqual(from_py.returncode, 0, from_py.stderr)
        self.assertEqual(json.loads(from_py.stdout), json.loads(from_folder.stdout))
        # which folder each used, and how old it is
        self.assertRegex(from_py.stderr, rf"condbench-infer: --model-file: {re.escape(self.fresh_path)}: the folder "
                                         rf"{re.escape(CACHE)}/models/[0-9a-f]+-cpu, compiled \d+ (s|min|h|days) ago\n")
        self.assertRegex(from_folder.stderr, rf"condbench-infer: --model-file: {re.escape(self.fresh)}: compiled \d+ "
                                             r"(s|min|h|days) ago\n")
        out = os.path.join(self.dir.name, "from_py.json")
        result = run(CONDBENCH, "--device=cpu", f"--model-file={self.fresh_path}", "--strategy=eager_host", "--batch=1",
                     "--scenario=exit:1", "--benchmark_min_time=0.001", f"--benchmark_out={out}", env=cache)
        self.assertEqual(result.returncode, 0, result.stderr)
        with open(out) as f:
            context = json.load(f)["context"]
        with open(os.path.join(self.fresh, "manifest.json")) as f:
            self.assertIn(f'digest {json.load(f)["digest"]}', context["model_file"])
        # what model_file.py refuses is its one line, naming the file and the part; exit 2
        bad = os.path.join(self.dir.name, "bad.py")
        with open(bad, "w") as f:
            f.write("import torch\ndef model():\n    return torch.nn.Linear(2, 2)\ndef example_input(b):\n"
                    "    return torch.zeros(b, 2)\n")
        fifo = os.path.join(self.dir.name, "fifo.py")
        if not os.path.exists(fifo):
            os.mkfifo(fifo)
        link = os.path.join(self.dir.name, "link.py")  # said as what it leads to
        if not os.path.lexists(link):
            os.symlink(fifo, link)
        not_weights = os.path.join(self.dir.name, "not_weights.pt")
        with open(not_weights, "w") as f:
            f.write("not a state_dict")
        cases = [((f"--model-file={bad}",), f"--model-file: {bad}: model().stages: missing or not an nn.ModuleList"),
                 ((f"--model-file={self.fresh_path}", f"--model-weights={not_weights}"),
                  f"--model-file: {self.fresh_path}: --weights {not_weights}: not a state_dict torch.load reads"),
                 ((f"--model-file={self.dir.name}/absent.py",), f"--model-file: {self.dir.name}/absent.py: no such file"),
                 ((f"--model-file={fifo}",), f"--model-file: {fifo}: not a regular file (a FIFO)"),
                 ((f"--model-file={link}",), f"--model-file: {link}: not a regular file (a FIFO)"),
                 ((f"--model-file={self.fresh}", f"--model-weights={not_weights}"),
                  "--model-weights: only with --model-file=FILE.py (a compiled folder's weights are in its packages)"),
                 ((f"--model-weights={not_weights}",), "--model-weights: only with --model-file=FILE.py")]
        for tool in (INFER, CONDBENCH):
            for flags, message in cases:
                with self.subTest(tool=os.path.basename(tool), flags=flags):
                    thresholds = ("--thresholds=0.5,0.5",) if tool == INFER else ()
                    result = run(tool, *flags, "--device=cpu", *thresholds, env=cache)
                    self.assertEqual(result.returncode, 2, result.stderr)
                    lines = result.stderr.strip().splitlines()
                    self.assertEqual(len(lines), 1, result.stderr)
                    self.assertTrue(lines[0].startswith(f"{os.path.basename(tool)}: {message}"), lines[0])
        # --weights beside a model file is a built-in family's state_dict: its error says which flag is the file's
        result = run(CONDBENCH, f"--model-file={self.fresh_path}", f"--weights={not_weights}", "--device=cpu", env=cache)
        self.assertEqual(result.returncode, 2, result.stderr)
        self.assertTrue(result.stderr.strip().endswith("a model file's own are --model-weights)"), result.stderr)

    def test_a_folder_compiled_for_the_other_device_is_skipped_there_with_the_reason(self):
        # What a folder compiled for CUDA (model_file.py compile --device cuda, on a GPU machine)
        # does on a CPU run: its manifest says cuda, and no CPU strategy loads its packages.
        folder = self.edited_copy("for_cuda", lambda folder, m: m.update(device="cuda"))
        why = "the model file is compiled for CUDA (scripts/run --device=cpu --model-file=FILE.py compiles it for the CPU)"
        result, _ = self.infer(f"--model-file={folder}", "--strategy=eager_host", "--thresholds=0.5,0.5,0.5")
        self.assertEqual(result.returncode, 2, result.stderr)
        self.assertEqual(result.stderr.strip(),
                         f"condbench-infer: no strategy selected can run this: cpu/torch/eager_host: {why}")
        out = os.path.join(self.dir.name, "for_cuda.json")
        result = run(CONDBENCH, "--device=cpu", f"--model-file={folder}", "--strategy=eager_host,cond", "--batch=1",
                     "--scenario=exit:1", "--benchmark_min_time=0.001", f"--benchmark_out={out}")
        self.assertEqual(result.returncode, 0, result.stderr)
        with open(out) as f:
            doc = json.load(f)
        rows = [b for b in doc["benchmarks"] if b["name"].startswith("early_exit/")]
        self.assertEqual({b["name"].split("/")[3] for b in rows}, {"eager_host", "cond"})
        for b in rows:
            self.assertEqual(b["error_message"], f"skipped: {why}", b["name"])
        self.assertIn("compiled for CUDA by torch", doc["context"]["model_file"])
        # Compiling for CUDA needs the GPU, on the machine that runs it.
        if not torch.cuda.is_available():
            result = run(sys.executable, "-m", "condbench.model_file", "compile",
                         self.fresh_path, "--device", "cuda", "--cache", os.path.join(self.dir.name, "no-gpu"))
            self.assertEqual(result.returncode, 2, result.stderr)
            self.assertEqual(result.stderr.strip(), f"model_file: {self.fresh_path}: --device cuda: no CUDA device "
                             "here (a model file is compiled for CUDA on the machine with the GPU)")
            self.assertFalse(os.path.exists(os.path.join(self.dir.name, "no-gpu", "models")))

    def test_a_folder_whose_rows_no_run_can_pool_is_refused_before_the_run(self):
        # rows condbench-infer reads (at most 2^22 values) but a run cannot pool (2^28 floats over at
        # least 1024 rows): one line before anything runs, not every benchmark's error
        def wide(folder, m):
            m["parts"][0]["input"] = m["input"]["inputs"][0]["row"] = ["rows", (1 << 18) + 1]

        folder = self.edited_copy("wide", wide)
        result = run(CONDBENCH, "--device=cpu", f"--model-file={folder}", "--strategy=eager_host", "--scenario=exit:1")
        self.assertEqual(result.returncode, 2, result.stderr)
        self.assertEqual(result.stderr, f"condbench: --model-file: model file {folder}: stages[0]: its input row holds "
                                        "262145 values, more than the 262144 a run can hold in its pool of inputs\n")

    def test_a_folder_that_cannot_be_used_is_one_line_naming_it_and_the_part(self):
        def other_torch(folder, m):
            m["torch"] = "2.9.0"

        def package_elsewhere(folder, m):
            m["parts"][1]["package"] = "../../elsewhere.pt2"

        def missing_package(folder, m):
            os.remove(os.path.join(folder, "exit1.pt2"))

        def stage_misfit(folder, m):
            m["parts"][2]["input"] = ["rows", 65]

        def not_logits(folder, m):
            m["parts"][3]["output"] = ["rows", 10, 2]

        def huge_row(folder, m):
            m["parts"][0]["input"] = ["rows", 1 << 20, 1 << 20]

        def no_reference(folder, m):
            os.remove(os.path.join(folder, "reference.pt"))

        def old_format(folder, m):
            m["format"] = 1

        def other_device(folder, m):
            m["device"] = "tpu"

        def not_json(folder, m):
            with open(os.path.join(folder, "manifest.json"), "w") as f:
                f.write("{ not json")
            return False

        def whole_model_elsewhere(folder, m):
            m["whole_model"]["masked"] = {"package": "/etc/masked.pt2"}

        def linked_package(folder, m):
            os.remove(os.path.join(folder, "exit1.pt2"))
            os.symlink(os.path.join(folder, "stage0.pt2"), os.path.join(folder, "exit1.pt2"))

        def score_out_of_range(folder, m):
            ref = torch.load(os.path.join(folder, "reference.pt"))
            ref["confidence.1"][0] = 2.0
            torch.save(ref, os.path.join(folder, "reference.pt"))

        def swapped_package(folder, m):  # a stage's package where an exit's should be
            shutil.copyfile(os.path.join(folder, "stage1.pt2"), os.path.join(folder, "exit1.pt2"))

        def other_models_package(folder, m):
            shutil.copyfile(os.path.join(self.fresh, "stage0.pt2"), os.path.join(folder, "stage0.pt2"))

        def corrupt_package(folder, m):
            with open(os.path.join(folder, "stage0.pt2"), "wb") as f:
                f.write(b"PK\x03\x04 not a package")

        cases = [
            (other_torch, "compiled by torch 2.9.0, this LibTorch is"),
            (package_elsewhere, "manifest.json: parts[1].package: '../../elsewhere.pt2', expected 'exit0.pt2'"),
            (missing_package, "exits[1]: its package exit1.pt2 is missing"),
            (stage_misfit, "parts[2].input: stages[1] takes [rows, 65] where the stage before gives [rows, 64]"),
            (not_logits, "parts[3].output: exits[1] gives [rows, 10, 2], not logits [rows, 10]"),
            (huge_row, "parts[0].input: more than 4194304 per row"),
            (no_reference, "reference.pt"),
            (old_format, "manifest.json: format: made by another condbench (format 1"),
            (other_device, "manifest.json: device: 'tpu', not \"cpu\" or \"cuda\""),
            (not_json, "manifest.json: not a JSON object"),
            (whole_model_elsewhere, "manifest.json: whole_model.masked.package: not \"masked.pt2\""),
            (linked_package, "exits[1]: its package exit1.pt2 is missing (or a link)"),
            (score_out_of_range, "reference.pt: exit 2's scores are not all in (0, 1]"),
            (corrupt_package, "stages[0]: cannot load stage0.pt2"),
            (swapped_package, "exits[1] (exit1.pt2) gives [64, 64] on the reference rows where the module gave "
                              "[64, 10]: not the package compiled for this manifest; compile the model file again"),
            (other_models_package, "stages[0] (stage0.pt2) does not run on the reference rows ("),
        ]
        for change, message in cases:
            with self.subTest(case=change.__name__):
                folder = self.edited_copy(change.__name__, change)
                result = run(INFER, f"--model-file={folder}", "--batch=2", "--thresholds=0.5,0.5,0.5")
                self.assertEqual(result.returncode, 2, result.stderr)
                lines = result.stderr.strip().splitlines()
                self.assertEqual(len(lines), 1, result.stderr)
                self.assertIn(folder, lines[0])
                self.assertIn(message, lines[0])
                if change in (swapped_package, other_models_package):  # found by running them: condbench too
                    result = run(CONDBENCH, f"--model-file={folder}", "--device=cpu", "--strategy=eager_host",
                                 "--scenario=exit:1", "--batch=1", "--benchmark_min_time=0.01s")
                    self.assertEqual(result.returncode, 2, result.stdout + result.stderr)
                    self.assertEqual(len(result.stderr.strip().splitlines()), 1, result.stderr)
                    self.assertIn(message, result.stderr)
        # no folder at all
        for given, message in [(os.path.join(self.dir.name, "absent"), "no manifest.json")]:
            for tool in (INFER, CONDBENCH):
                with self.subTest(tool=os.path.basename(tool), given=given):
                    thresholds = ("--thresholds=0.5,0.5,0.5",) if tool == INFER else ()  # condbench-infer's flag
                    result = run(tool, f"--model-file={given}", *thresholds)
                    self.assertEqual(result.returncode, 2, result.stderr)
                    self.assertEqual(len(result.stderr.strip().splitlines()), 1, result.stderr)
                    self.assertIn(message, result.stderr)
        result = run(INFER, "--model-file=", "--thresholds=0.5")
        self.assertEqual((result.returncode, result.stderr.strip()), (2, "condbench-infer: --model-file: needs a value (--model-file=...)"))
        # not with the flags that say another model
        result = run(INFER, f"--model-file={self.mlp}", "--blocks=2", "--thresholds=0.5,0.5")
        self.assertEqual(result.returncode, 2)
        self.assertIn("--blocks: not with --model-file", result.stderr)
        result = run(CONDBENCH, f"--model-file={self.mlp}", "--blocks=2")
        self.assertEqual(result.returncode, 2)
        self.assertIn("--blocks: a model file's depth is its module's stages", result.stderr)
        # refused before its compile: the module's code never runs for a run that cannot start
        marker, noisy = os.path.join(self.dir.name, "ran"), os.path.join(self.dir.name, "noisy.py")
        with open(noisy, "w") as f:
            f.write(f"open({marker!r}, 'w').close()\n")
        result = run(CONDBENCH, f"--model-file={noisy}", "--blocks=2")
        self.assertEqual((result.returncode, result.stderr.strip()),
                         (2, "condbench: --blocks: a model file's depth is its module's stages; drop --blocks"))
        self.assertFalse(os.path.exists(marker))



WIDE_SCORES = '''
import torch
from torch import nn


class WideScores(nn.Module):
    def __init__(self):
        super().__init__()
        self.stages = nn.ModuleList([nn.Linear(4, 4, bias=False)])
        self.exits = nn.ModuleList([nn.Linear(4, 3, bias=False)])
        self.final = nn.Linear(4, 3, bias=False)

    def confidence(self, logits):
        # in (0, 1] on its own rows (zeros: every logit 0), above 1 on any other
        moved = (logits.abs().amax(-1) > 1e-3).float()
        return torch.softmax(logits, -1).amax(-1) + 0.9 * moved


def model():
    torch.manual_seed(1)
    return WideScores()


def example_input(batch):
    return torch.zeros(batch, 4)
'''


class PoolScores(unittest.TestCase):
    """A confidence() in range on the model file's own rows, where model_file.py checks it, and out of
    range on condbench's input pool, where the thresholds are calibrated: refused before the run."""

    def test_a_score_outside_the_range_on_the_pool_is_one_line_before_the_run(self):
        with tempfile.TemporaryDirectory() as d:
            path = os.path.join(d, "wide_scores.py")
            with open(path, "w") as f:
                f.write(WIDE_SCORES)
            folder = compile_model(path)
            out = os.path.join(d, "out.json")
            result = run(CONDBENCH, f"--model-file={folder}", "--device=cpu", "--strategy=eager_host",
                         "--scenario=exit:2", "--batch=1", "--benchmark_min_time=0.01s", f"--benchmark_out={out}")
            self.assertEqual(result.returncode, 2, result.stdout + result.stderr)
            lines = result.stderr.strip().splitlines()
            self.assertEqual(len(lines), 1, result.stderr)
            self.assertRegex(lines[0], r"^condbench: model=wide_scores\.py .*: its exit score at exit 1 on row \d+ of "
                             r"condbench's input pool is 1\.\d+, outside \(0, 1\]")
            self.assertFalse(os.path.exists(out))
            self.assertNotIn("early_exit/", result.stdout)
            # condbench-infer on rows of its own (#59 item 11): the same check, not rows sent out at threshold 1
            result = run(INFER, f"--model-file={folder}", "--device=cpu", "--strategy=eager_host", "--batch=3",
                         "--thresholds=1")
            self.assertEqual(result.returncode, 2, result.stdout + result.stderr)
            self.assertRegex(result.stderr, r"^condbench-infer: model=wide_scores\.py .*: its exit score at exit 1 on "
                             r"row 0 of the rows given \(--input or --batch\) is 1\.\d+, outside \(0, 1\]")
            self.assertEqual(len(result.stderr.strip().splitlines()), 1, result.stderr)


    def test_a_row_no_run_can_pool_is_refused_before_it_is_compiled(self):
        # condbench's pool (1024 rows at least, 2^28 values at most) holds rows of 2^18 values; the
        # limit reaches model_file.py as a flag, so nothing is compiled for a run that cannot be
        wide = 2 ** 18 + 1
        with tempfile.TemporaryDirectory() as d:
            path = os.path.join(d, "wide_row.py")
            with open(path, "w") as f:
                f.write(WIDE_SCORES.replace("nn.Linear(4, 4, bias=False)", f"nn.Linear({wide}, 4, bias=False)")
                        .replace("torch.zeros(batch, 4)", f"torch.zeros(batch, {wide})"))
            result = run(CONDBENCH, f"--model-file={path}", "--device=cpu", "--strategy=eager_host",
                         "--scenario=exit:1", "--batch=1", "--compile-timeout=120")
            self.assertEqual(result.returncode, 2, result.stdout + result.stderr)
            self.assertEqual(result.stderr.strip().splitlines(),
                             [f"condbench: --model-file: {path}: stages[0]: its input row holds {wide} values, more than "
                              f"the {2 ** 18} condbench can run (a smaller input or a narrower part)"])


if __name__ == "__main__":
    main()
