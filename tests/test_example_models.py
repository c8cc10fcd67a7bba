"""The Hugging Face examples under examples/models/, built from transformers' own layers: bert.py (a
DeeBERT-style classifier taking token ids and an attention mask) and vit.py (an early-exit ViT on
images). Each is compiled, then every strategy condbench-infer runs is checked row by row against
the module's own forward, computed here, at batch 1 and 8 with rows leaving at every exit (for the
BERT, on ids and masks whose padding matters). Bad inputs (float ids, ids
out of range, a tuple of the wrong arity, a mask whose rows differ from the ids') are one line and
exit 2 before anything is compiled.

The peer's eager variants run on the same packed rows and must agree with the module too.

Usage: test_example_models.py CONDBENCH CONDBENCH_INFER CACHE (CACHE: compiled packages, kept)."""
import json
import os
import sys
import tempfile
import textwrap
import unittest

CONDBENCH, INFER, CACHE = sys.argv[1:4]
del sys.argv[1:4]
# One thread in every process this starts: ctest runs these classes side by side on a 2-core machine,
# where two processes spinning two OpenMP threads each slow each other several fold
os.environ["OMP_NUM_THREADS"] = "1"
ROOT = os.path.join(os.path.dirname(os.path.abspath(__file__)), "..")
EXAMPLES = os.path.join(ROOT, "examples", "models")
EXAMPLE = os.path.join(EXAMPLES, "bert.py")
from tools import PYTHON, main, module_forward, run  # noqa: E402  (tests/tools.py: the tests' shared helpers)

try:
    import torch
    import transformers  # noqa: F401  (the example's; scripts/setup installs it)
except ImportError:
    torch = None


def compiled(cls, example):
    """Compiles examples/models/EXAMPLE into the kept cache; sets cls.dir, folder, manifest, module and
    the example's own rows (example_input(24))."""
    cls.dir = tempfile.TemporaryDirectory()
    path = os.path.join(EXAMPLES, example)
    result = run(PYTHON, "-m", "condbench.model_file", "compile", path, "--cache", CACHE, timeout=900)
    if result.returncode != 0:
        raise AssertionError(result.stderr)
    cls.folder = result.stdout.strip()
    with open(os.path.join(cls.folder, "manifest.json")) as f:
        cls.manifest = json.load(f)
    import runpy
    namespace = runpy.run_path(path)
    cls.module = namespace["model"]().eval()
    return namespace["example_input"](24)


def thresholds_for(scores, quantiles):
    """Thresholds between neighbouring scores: some rows leave at each exit, some reach the final head."""
    out = []
    for k, q in enumerate(quantiles):
        s = scores[:, k].sort().values
        i = int(q * (len(s) - 1))
        out.append(float((s[i] + s[i + 1]) / 2))
    return out


def peer_agrees(case):
    """The peer's eager variants on condbench's exported rows of case.folder: each checked against
    the module (nothing refused) and timed in every scenario. Returns the exported pool."""
    workload = tempfile.mkdtemp(dir=case.dir.name)
    result = run(CONDBENCH, f"--export-workload={workload}", f"--model-file={case.folder}",
                 "--scenario=exit:1,exit:4,mix:uniform")
    case.assertEqual(result.returncode, 0, result.stderr)
    (tag,) = [d for d in os.listdir(workload) if os.path.isdir(os.path.join(workload, d))]
    out = os.path.join(workload, "peer.json")
    result = run(PYTHON, "-m", "condbench.peer", "--workload", workload, "--out", out, "--repetitions", "1",
                 "--min-time", "0.001", "--variants", "py_eager_if,py_masked,py_cond")
    case.assertEqual(result.returncode, 0, result.stderr)
    with open(out) as f:
        data = json.load(f)
    timed = {tuple(b["name"].split("/")[3:5]) for b in data["benchmarks"] if b.get("run_type") == "iteration"}
    case.assertEqual(timed, {(v, s) for v in ("py_eager_if", "py_masked", "py_cond")
                             for s in ("exit:1", "exit:4", "mix:uniform")})
    case.assertNotIn(" not run (", data["context"].get("condbench_peer_notes", ""))
    return torch.load(os.path.join(workload, tag, "pool.pt"))


@unittest.skipIf(torch is None, "torch or transformers is not importable here; run under .venv/bin/python")
class VitModelFile(unittest.TestCase):
    @classmethod
    def setUpClass(cls):
        cls.x = compiled(cls, "vit.py")
        _, _, scores = module_forward(cls.module, cls.x, [2.0, 2.0, 2.0])
        cls.thresholds = thresholds_for(scores, (0.75, 0.6, 0.5))

    @classmethod
    def tearDownClass(cls):
        cls.dir.cleanup()

    def test_every_strategy_agrees_with_the_module_at_batch_1_and_8(self):
        self.assertEqual(self.manifest["input"]["dtype"], "float32")
        self.assertEqual(self.manifest["whole_model"], {"cond": {"package": "cond.pt2"},
                                                        "masked": {"package": "masked.pt2"}})
        ids, logits, _ = module_forward(self.module, self.x, self.thresholds)
        self.assertEqual(set(ids), {1, 2, 3, 4}, "the thresholds should send rows to every exit")
        path = os.path.join(self.dir.name, "x.pt")
        for rows in [list(range(8)), list(range(8, 16))] + [[ids.index(k)] for k in (1, 2, 3, 4)]:
            torch.save(self.x[rows], path)
            result = run(INFER, "--device=cpu", f"--model-file={self.folder}", f"--input={path}",
                         "--thresholds=" + ",".join(repr(t) for t in self.thresholds))
            with self.subTest(rows=rows):
                self.assertEqual(result.returncode, 0, result.stderr)
                out = json.loads(result.stdout)
                ran = {f'{s["engine"]}/{s["strategy"]}' for s in out["strategies"]}
                self.assertTrue({"torch/eager_host", "torch/masked", "aoti/masked"} <= ran, ran)
                if len(rows) == 1:
                    self.assertIn("aoti/cond", ran)
                for s in out["strategies"]:
                    self.assertEqual(s["exit_ids"], [ids[r] for r in rows], s["strategy"])
                    torch.testing.assert_close(torch.tensor(s["logits"]), logits[rows], rtol=1e-4, atol=1e-5)

    def test_the_peer_runs_the_module_on_condbenchs_rows_and_every_variant_agrees(self):
        pool = peer_agrees(self)
        self.assertEqual((pool.dtype, tuple(pool.shape)), (torch.float32, (1024, 3, 32, 32)))


@unittest.skipIf(torch is None, "torch or transformers is not importable here; run under .venv/bin/python")
class TokenModelFile(unittest.TestCase):
    @classmethod
    def setUpClass(cls):
        cls.ids, cls.mask = compiled(cls, "bert.py")
        _, _, scores = module_forward(cls.module, (cls.ids, cls.mask), [2.0, 2.0, 2.0])
        cls.thresholds = thresholds_for(scores, (0.75, 0.6, 0.5))

    @classmethod
    def tearDownClass(cls):
        cls.dir.cleanup()

    def infer(self, packed, *flags):
        path = os.path.join(self.dir.name, "x.pt")
        torch.save(packed, path)
        return run(INFER, "--device=cpu", f"--model-file={self.folder}", f"--input={path}",
                   "--thresholds=" + ",".join(repr(t) for t in self.thresholds), *flags)

    def test_the_manifest_says_what_the_input_is(self):
        self.assertEqual(self.manifest["input"], {
            "dtype": "int64", "pool": "pool.pt",
            "inputs": [{"row": ["rows", 16], "below": 1000}, {"row": ["rows", 16], "below": 2}]})
        self.assertEqual(self.manifest["parts"][0]["input"], ["rows", 32])  # ids and mask, packed

    def test_every_strategy_agrees_with_the_module_at_batch_1_and_8(self):
        ids, logits, _ = module_forward(self.module, (self.ids, self.mask), self.thresholds)
        self.assertEqual(set(ids), {1, 2, 3, 4}, "the thresholds should send rows to every exit")
        batches = [list(range(8)), list(range(8, 16)), list(range(16, 24))]
        batches += [[ids.index(k)] for k in (1, 2, 3, 4)]  # batch 1: a row leaving at each exit
        for rows in batches:
            packed = torch.cat([self.ids[rows], self.mask[rows]], 1)
            result = self.infer(packed)
            with self.subTest(rows=rows):
                self.assertEqual(result.returncode, 0, result.stderr)
                out = json.loads(result.stdout)
                ran = {f'{s["engine"]}/{s["strategy"]}' for s in out["strategies"]}
                self.assertTrue({"torch/eager_host", "torch/masked", "aoti/masked"} <= ran, ran)
                if len(rows) == 1:
                    self.assertIn("aoti/cond", ran)
                for s in out["strategies"]:
                    self.assertEqual(s["exit_ids"], [ids[r] for r in rows], s["strategy"])
                    torch.testing.assert_close(torch.tensor(s["logits"]), logits[rows], rtol=1e-4, atol=1e-5)

    def test_the_peer_runs_the_module_on_condbenchs_rows_and_every_variant_agrees(self):
        pool = peer_agrees(self)
        self.assertEqual((pool.dtype, tuple(pool.shape)), (torch.int64, (1024, 32)))  # the model's own rows

    def test_each_input_may_be_a_file_of_its_own(self):
        # --input=ids.pt,mask.pt: packed here as condbench carries them, the same answer as packed rows
        ids_path, mask_path = (os.path.join(self.dir.name, n) for n in ("ids.pt", "mask.pt"))
        torch.save(self.ids[:4], ids_path)
        torch.save(self.mask[:4], mask_path)
        thresholds = "--thresholds=" + ",".join(repr(t) for t in self.thresholds)
        apart = run(INFER, "--device=cpu", f"--model-file={self.folder}", f"--input={ids_path},{mask_path}",
                    thresholds, "--strategy=masked")
        packed = self.infer(torch.cat([self.ids[:4], self.mask[:4]], 1), "--strategy=masked")
        self.assertEqual(apart.returncode, 0, apart.stderr)
        self.assertEqual(json.loads(apart.stdout)["strategies"], json.loads(packed.stdout)["strategies"])
        short = os.path.join(self.dir.name, "short.pt")
        torch.save(self.mask[:2], short)
        for files, said in [(ids_path, "expected an integer tensor of token ids [rows, 32], got Long [4, 16]"),
                            (f"{ids_path},{mask_path},{short}", "3 files for a model of 2 inputs"),
                            (f"{ids_path},{short}", "--input: file 2 has 2 rows, file 1 4")]:
            with self.subTest(files=files):
                result = run(INFER, "--device=cpu", f"--model-file={self.folder}", f"--input={files}", thresholds)
                self.assertEqual(result.returncode, 2, result.stderr)
                self.assertIn(said, result.stderr)

    def test_the_mask_matters(self):
        # the same ids with the padding unmasked: another answer, so the mask reached the layers
        ids, logits, _ = module_forward(self.module, (self.ids, self.mask), [2.0, 2.0, 2.0])
        padded = [r for r in range(24) if int(self.mask[r].sum()) < 16][:4]
        unmasked = torch.cat([self.ids[padded], torch.ones_like(self.mask[padded])], 1)
        result = self.infer(unmasked, "--strategy=masked")
        self.assertEqual(result.returncode, 0, result.stderr)
        got = torch.tensor(json.loads(result.stdout)["strategies"][0]["logits"])
        self.assertFalse(torch.allclose(got, logits[padded], atol=1e-3))

    def test_an_id_out_of_range_or_float_ids_are_one_line(self):
        packed = torch.cat([self.ids[:2], self.mask[:2]], 1)
        packed[1, 3] = 1000
        result = self.infer(packed)
        self.assertEqual(result.returncode, 2, result.stderr)
        self.assertEqual(result.stderr.strip().splitlines(),
                         ["condbench-infer: --input: row 1, input 0, position 3: 1000 is not in [0, 1000) (an id past "
                          "the embedding's table: docs/your-model.md, \"Token ids\")"])
        result = self.infer(torch.cat([self.ids[:2], self.mask[:2]], 1).float())
        self.assertEqual(result.returncode, 2, result.stderr)
        self.assertIn("--input: expected an integer tensor of token ids [rows, 32], got Float [2, 32]", result.stderr)


BAD = {
    "float ids": ("return ids.float(), mask.float()", "input 0 is torch.float32, but stages[0] reads an nn.Embedding: "
                  "token ids are an integer tensor"),
    "ids out of range": ("return ids + 1000 * mask, mask", "not in [0, 1000) (the rows of the embedding that reads it)"),
    "the wrong arity": ("return ids, mask, mask", "stages[0] on the input [2, 48]: failed"),
    "rows that differ": ("return ids, mask[:1]", "input 1 [1, 16] torch.int64, not a float or integer tensor [2, ...]"),
}


@unittest.skipIf(torch is None, "torch or transformers is not importable here; run under .venv/bin/python")
class BadTokenInputs(unittest.TestCase):
    def test_each_is_one_line_and_exit_2_before_any_compile(self):
        with open(EXAMPLE) as f:
            source = f.read()
        with tempfile.TemporaryDirectory() as d:
            for name, (returned, said) in BAD.items():
                with self.subTest(name):
                    path = os.path.join(d, "bad.py")
                    with open(path, "w") as f:
                        f.write(source.replace("return ids * mask, mask  # padding is id 0, masked out",
                                               "ids = ids * mask\n    " + returned))
                    result = run(PYTHON, "-m", "condbench.model_file", "compile", path, "--cache",
                                 os.path.join(d, "cache"))
                    self.assertEqual(result.returncode, 2, result.stderr)
                    lines = result.stderr.strip().splitlines()
                    self.assertEqual(len(lines), 1, result.stderr)
                    self.assertIn(said, lines[0])
                    self.assertFalse(os.path.exists(os.path.join(d, "cache", "models")), "nothing compiled")


if __name__ == "__main__":
    main()
