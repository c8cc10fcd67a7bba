"""A convolutional model file on every route condbench times (docs/upstream-cond-layout.md): Inductor's
lowering of torch.cond misreads channels_last buffers, so on a model with convolutions the default
AOTInductor compile of the nested torch.cond gives other results than the module. Whatever the
installed torch does, every aoti strategy condbench-infer runs and every variant the peer times
agrees with the module's own forward, computed here; the default forms it refuses are named with
the reason, and the workaround forms run in their place. The reproducer in python/upstream/
runs too: its verdict on the installed torch is printed, not asserted (a fact about torch).

Usage: test_conv_model_file.py CONDBENCH CONDBENCH_INFER CACHE (CACHE: compiled packages, kept)."""
import json
import os
import sys
import tempfile
import textwrap
import unittest

CONDBENCH, INFER, CACHE = sys.argv[1:4]
del sys.argv[1:4]
ROOT = os.path.join(os.path.dirname(os.path.abspath(__file__)), "..")
from tools import PYTHON, kept_source, module_forward, run  # noqa: E402  (tests/tools.py: the tests' shared helpers)

try:
    import torch
except ImportError:
    torch = None

# Not the example: a convolution before the first exit, then a residual stage with BatchNorm whose
# statistics are its own (as a trained model's are), heads that pool, 5 classes, 3 x 8 x 8 images.
RESIDUAL = '''
import torch
from torch import nn


class Residual(nn.Module):
    def __init__(self, c):
        super().__init__()
        self.body = nn.Sequential(nn.Conv2d(c, c, 3, padding=1), nn.BatchNorm2d(c), nn.ReLU(),
                                  nn.Conv2d(c, c, 3, padding=1), nn.BatchNorm2d(c))

    def forward(self, x):
        return torch.relu(x + self.body(x))


def head(c, classes):
    return nn.Sequential(nn.AdaptiveAvgPool2d(1), nn.Flatten(), nn.Linear(c, classes))


class ResidualCNN(nn.Module):
    def __init__(self):
        super().__init__()
        self.stages = nn.ModuleList([nn.Sequential(nn.Conv2d(3, 8, 3, padding=1), nn.ReLU()), Residual(8)])
        self.exits = nn.ModuleList([head(8, 5), head(8, 5)])
        self.final = nn.Sequential(nn.Flatten(), nn.Linear(8 * 8 * 8, 5))


def model():
    torch.manual_seed(5)
    m = ResidualCNN()
    with torch.no_grad():
        for b in m.modules():
            if isinstance(b, nn.BatchNorm2d):
                b.running_mean.uniform_(-0.2, 0.2)
                b.running_var.uniform_(0.5, 1.5)
    return m.eval()


def example_input(batch):
    return torch.randn(batch, 3, 8, 8, generator=torch.Generator().manual_seed(6))
'''


@unittest.skipIf(torch is None, "torch is not importable here; run under .venv/bin/python")
class ConvolutionalModelFile(unittest.TestCase):
    @classmethod
    def setUpClass(cls):
        cls.dir = tempfile.TemporaryDirectory()
        cls.path = kept_source(CACHE, "residual_cnn.py", textwrap.dedent(RESIDUAL))
        result = run(PYTHON, "-m", "condbench.model_file", "compile", cls.path,
                     "--cache", CACHE)
        if result.returncode != 0:
            raise AssertionError(result.stderr)
        cls.folder = result.stdout.strip()
        with open(os.path.join(cls.folder, "manifest.json")) as f:
            cls.manifest = json.load(f)
        import runpy
        cls.module = runpy.run_path(cls.path)["model"]()
        x = torch.randn(30, 3, 8, 8, generator=torch.Generator().manual_seed(7))
        _, _, scores = module_forward(cls.module, x, [2.0, 2.0])
        # thresholds between neighbouring scores near the 40th and 50th percentiles: rows at every exit
        cls.thresholds = []
        for k, q in enumerate((0.6, 0.5)):
            s = scores[:, k].sort().values
            i = int(q * (len(s) - 1))
            cls.thresholds.append(float((s[i] + s[i + 1]) / 2))
        cls.x = x

    @classmethod
    def tearDownClass(cls):
        cls.dir.cleanup()

    def infer(self, x):
        path = os.path.join(self.dir.name, "x.pt")
        torch.save(x, path)
        result = run(INFER, "--device=cpu", f"--model-file={self.folder}", f"--input={path}",
                     "--thresholds=" + ",".join(repr(t) for t in self.thresholds))
        self.assertIn(result.returncode, (0, 1), result.stderr)
        return result, json.loads(result.stdout)

    def test_every_aoti_route_condbench_runs_agrees_with_the_module(self):
        cond = self.manifest["whole_model"]["cond"]
        print(f"\nresidual_cnn.py: whole_model.cond = {json.dumps(cond)}")
        if "workaround" in cond:  # the default compile was refused, the workaround's form is what runs
            self.assertIn("differs from the module", cond["default"])
            self.assertEqual(cond["workaround"], "layout_optimization=False")
        ids, logits, _ = module_forward(self.module, self.x, self.thresholds)
        self.assertGreaterEqual(len(set(ids)), 3, "the thresholds should send rows to every exit")
        result, out = self.infer(self.x)
        self.assertEqual(result.returncode, 0, result.stderr)
        ran = {f'{s["engine"]}/{s["strategy"]}' for s in out["strategies"]}
        self.assertIn("aoti/masked", ran)
        for s in out["strategies"]:
            with self.subTest(strategy=s["strategy"]):
                self.assertEqual(s["exit_ids"], ids)
                torch.testing.assert_close(torch.tensor(s["logits"]), logits, rtol=1e-4, atol=1e-5)
        # the nested torch.cond, one row at a time, on a row leaving at each exit: the module's answer,
        # or (where neither compile agreed with the module) skipped with the reason
        for r in (ids.index(1), ids.index(2), ids.index(3)):
            with self.subTest(row=r):
                result, out = self.infer(self.x[r:r + 1])
                self.assertEqual(result.returncode, 0, result.stderr)
                got = [s for s in out["strategies"] if s["engine"] == "aoti" and s["strategy"] == "cond"]
                if "package" in cond:
                    self.assertEqual(got[0]["exit_ids"], [ids[r]])
                    torch.testing.assert_close(torch.tensor(got[0]["logits"][0]), logits[r], rtol=1e-4, atol=1e-5)
                else:
                    skipped = {s["strategy"]: s["reason"] for s in out["skipped"]}
                    self.assertEqual(skipped["cpu/aoti/cond"], cond["unavailable"][:300])

    def test_the_peer_times_only_what_agrees_and_names_what_it_refused(self):
        workload = tempfile.mkdtemp(dir=self.dir.name)
        result = run(CONDBENCH, f"--export-workload={workload}", f"--model-file={self.folder}",
                     "--scenario=exit:1,exit:3,mix:uniform")
        self.assertEqual(result.returncode, 0, result.stderr)
        out = os.path.join(workload, "peer.json")
        result = run(PYTHON, "-m", "condbench.peer", "--workload", workload, "--out", out,
                     "--repetitions", "1", "--min-time", "0.001", "--variants", "py_cond,py_cond_compile")
        self.assertEqual(result.returncode, 0, result.stderr)
        print(f"\npeer: {result.stdout.strip().splitlines()[-3:]}")
        with open(out) as f:
            data = json.load(f)
        timed = {tuple(b["name"].split("/")[3:5]) for b in data["benchmarks"] if b.get("run_type") == "iteration"}
        notes = data["context"].get("condbench_peer_notes", "").splitlines()
        # "py_cond_compile: mix:uniform on residual_cnn.py not run (...)": the (variant, scenario) refused
        refused = {tuple(n.split(" on ")[0].split(": ")) for n in notes if " not run (" in n}
        self.assertIn(("py_cond", "exit:1"), timed)  # eager torch.cond agrees with the module
        self.assertFalse(refused & timed, f"timed although refused: {refused & timed}")
        cond_compile_refused = {scenario for variant, scenario in refused if variant == "py_cond_compile"}
        if cond_compile_refused:  # the default torch.compile form disagreed: its workaround checked and timed
            self.assertIn("py_cond_compile: py_cond_compile_layout_off runs in its place "
                          "(docs/upstream-cond-layout.md)", notes)
            for scenario in cond_compile_refused:
                self.assertTrue(("py_cond_compile_layout_off", scenario) in timed or
                                ("py_cond_compile_layout_off", scenario) in refused, (scenario, notes))
        # A row that leaves at the first exit never reaches a branch's misread operand: right either way.
        self.assertIn(("py_cond_compile", "exit:1"), timed)

    def test_the_reproducer_says_whether_the_installed_torch_has_the_bug(self):
        facts = os.path.join(self.dir.name, "reproducer.json")
        result = run(PYTHON, os.path.join(ROOT, "python", "upstream", "cond_channels_last.py"),
                     "--json", facts)
        self.assertEqual(result.returncode, 0, result.stderr)
        print("\n" + result.stdout.strip())
        verdict = result.stdout.strip().splitlines()[-1]
        self.assertRegex(verdict, r"^verdict: (present|fixed|other) \(torch ")
        with open(facts) as f:
            self.assertIn(json.load(f)["verdict"], ("present", "fixed", "other"))


if __name__ == "__main__":
    unittest.main(verbosity=2)
