"""python/condbench/model_file.py, the protocol for a model of your own (docs/your-model.md): the examples
check with exact FLOPs and bytes, and every kind of bad model file is one line naming the file and
the part, exit code 2. Needs torch (run under .venv/bin/python); skips without it. The command runs
in this process (main(), its output captured) but for one case run as a user runs it: importing
torch once, not once per case."""
import atexit
import contextlib
import io
import json
import os
import re
import shutil
import signal
import subprocess
import sys
import tempfile
import textwrap
import time
import unittest

ROOT = os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "..")
MODEL_FILE = [sys.executable, "-m", "condbench.model_file"]  # the package: installed, or python/ on PYTHONPATH
try:
    import torch
except ImportError:
    torch = None

# A valid model file's parts, for the bad cases to break one at a time.
HEADER = """
import torch
from torch import nn
"""
GOOD = HEADER + """
class M(nn.Module):
    def __init__(self):
        super().__init__()
        self.stages = nn.ModuleList([nn.Linear(4, 8), nn.Linear(8, 8)])
        self.exits = nn.ModuleList([nn.Linear(8, 3), nn.Linear(8, 3)])
        self.final = nn.Linear(8, 3)

def model():
    torch.manual_seed(0)
    return M()

def example_input(batch):
    return torch.randn(batch, 4)
"""



class Result:
    def __init__(self, returncode, stdout, stderr):
        self.returncode, self.stdout, self.stderr = returncode, stdout, stderr


def check_command(command, path, *extra):
    """model_file.py COMMAND PATH EXTRA..., in this process."""
    from condbench import model_file
    out, err = io.StringIO(), io.StringIO()
    with contextlib.redirect_stdout(out), contextlib.redirect_stderr(err):
        code = model_file.main([command, path, *extra])
    return Result(code, out.getvalue(), err.getvalue())


def check(path, *extra):
    return check_command("check", path, *extra)


@unittest.skipIf(torch is None, "torch is not importable here; run under .venv/bin/python")
class ModelFile(unittest.TestCase):
    def setUp(self):
        self.dir = tempfile.TemporaryDirectory()

    def tearDown(self):
        self.dir.cleanup()

    def write(self, name, text):
        path = os.path.join(self.dir.name, name)
        with open(path, "w") as f:
            f.write(textwrap.dedent(text))
        return path

    def test_the_mlp_example_has_the_builtin_familys_costs(self):
        # as a user runs it
        result = subprocess.run([*MODEL_FILE, "check", os.path.join(ROOT, "examples", "models", "mlp.py")],
                                capture_output=True, text=True, timeout=300)
        self.assertEqual(result.returncode, 0, result.stderr)
        m = json.loads(result.stdout)
        self.assertEqual((m["stages"], m["classes"], m["confidence"]), (3, 10, "max softmax"))
        self.assertEqual([p["name"] for p in m["parts"]],
                         ["stages[0]", "exits[0]", "stages[1]", "exits[1]", "stages[2]", "exits[2]", "final"])
        # src/families/mlp.cpp's block_flops and block_bytes: 2 in out, and 4 bytes per weight and bias
        flops = {p["name"]: p["flops_per_row"] for p in m["parts"]}
        size = {p["name"]: p["bytes"] for p in m["parts"]}
        self.assertEqual((flops["stages[0]"], flops["stages[1]"], flops["exits[0]"]), (2 * 32 * 64, 2 * 64 * 64, 2 * 64 * 10))
        self.assertEqual((size["stages[0]"], size["final"]), (4 * (32 * 64 + 64), 4 * (64 * 10 + 10)))
        self.assertEqual(m["parts"][0]["input"], ["rows", 32])

    def test_the_cnn_example_checks_with_its_shapes(self):
        result = check(os.path.join(ROOT, "examples", "models", "cnn.py"))
        self.assertEqual(result.returncode, 0, result.stderr)
        m = json.loads(result.stdout)
        stage0 = m["parts"][0]
        self.assertEqual((stage0["input"], stage0["output"]), (["rows", 3, 32, 32], ["rows", 16, 16, 16]))
        self.assertEqual(stage0["flops_per_row"], 2 * 3 * 9 * 16 * 32 * 32)  # one 3x3 convolution, 32x32 out
        self.assertEqual(m["parts"][-1]["output"], ["rows", 10])

    def test_a_confidence_of_its_own_and_weights_from_a_file(self):
        path = self.write("own.py", GOOD.replace("        self.final = nn.Linear(8, 3)", """        self.final = nn.Linear(8, 3)

    def confidence(self, logits):
        return torch.sigmoid(logits.max(-1).values)"""))
        weights = os.path.join(self.dir.name, "w.pt")
        torch.save({k: torch.zeros_like(v) for k, v in self.load(path).state_dict().items()}, weights)
        result = check(path, "--weights", weights)
        self.assertEqual(result.returncode, 0, result.stderr)
        m = json.loads(result.stdout)
        self.assertEqual(m["confidence"], "confidence()")
        self.assertNotEqual(m["digest"], json.loads(check(path).stdout)["digest"])  # the weights are in it

    def load(self, path):
        from condbench import model_file
        return model_file.ModelFile(path).module

    def test_each_kind_of_bad_model_file_is_one_line_naming_the_part(self):
        cases = [
            ("syntax.py", "def model(:\n", "does not load (SyntaxError"),
            ("raises.py", "raise SystemExit(3)\n", "does not load (SystemExit: 3)"),
            ("nofactory.py", HEADER + "x = 1\n", "defines no model()"),
            ("noinput.py", GOOD.replace("def example_input(batch)", "def other(batch)"), "defines no example_input()"),
            ("notmodule.py", GOOD.replace("    return M()", "    return 3"), "model(): returned a int, not an nn.Module"),
            ("unseeded.py", GOOD.replace("    torch.manual_seed(0)\n", ""),
             "model(): makes other weights on each call (stages.0.weight); seed it"),
            ("nostages.py", GOOD.replace("self.stages =", "self.blocks ="), "model().stages: missing or not an nn.ModuleList"),
            ("fewexits.py", GOOD.replace("[nn.Linear(8, 3), nn.Linear(8, 3)]", "[nn.Linear(8, 3)]"),
             "model().exits: 1 heads for 2 stages"),
            ("nofinal.py", GOOD.replace("self.final = nn.Linear(8, 3)", "self.final = 3"), "model().final: missing"),
            ("badinput.py", GOOD.replace("torch.randn(batch, 4)", "torch.zeros(batch, 4, dtype=torch.bool)"),
             "example_input(2): returned [2, 4] torch.bool, not a float or integer tensor [2, ...]"),
            ("misfit.py", GOOD.replace("nn.Linear(8, 8)])", "nn.Linear(5, 8)])"),
             "stages[1] on the output of stages[0] [2, 8]: failed (RuntimeError"),
            ("headshape.py", GOOD.replace("nn.ModuleList([nn.Linear(8, 3), nn.Linear(8, 3)])",
                                          "nn.ModuleList([nn.Linear(8, 3), nn.Identity()])"),
             "exits[1]: 8 classes where the heads before it have 3"),
            ("head3d.py", GOOD.replace("nn.ModuleList([nn.Linear(8, 3), nn.Linear(8, 3)])",
                                       "nn.ModuleList([nn.Linear(8, 3), nn.Unflatten(1, (2, 4))])"),
             "exits[1]: returned [2, 2, 4], not logits [rows, classes]"),
            ("rows.py", GOOD.replace("self.final = nn.Linear(8, 3)", "self.final = Sum()").replace(
                "class M(", "class Sum(nn.Module):\n    def forward(self, h):\n        return h.sum(0)\n\nclass M("),
             "final: returned [8] for 2 rows; it must keep the rows in dimension 0"),
            ("datadep.py", GOOD.replace("class M(", """class Branchy(nn.Module):
    def __init__(self):
        super().__init__()
        self.a, self.b = nn.Linear(8, 8), nn.Linear(8, 8)

    def forward(self, h):
        return self.a(h) if h.sum() > 0 else self.b(h)

class M(""").replace("nn.ModuleList([nn.Linear(4, 8), nn.Linear(8, 8)])",
                     "nn.ModuleList([nn.Linear(4, 8), Branchy()])"),
             "stages[1]: torch.export cannot trace it ("),
            ("nan.py", GOOD.replace("self.final = nn.Linear(8, 3)", "self.final = nn.Sequential(nn.Linear(8, 3), nn.Softplus(), nn.Tanh(), nn.Identity())").replace(
                "def model():", "class NaN(nn.Module):\n    def forward(self, h):\n        return h * float('nan')\n\ndef model():").replace(
                "nn.Tanh(), nn.Identity())", "nn.Tanh(), NaN())"),
             "final: returned NaN or infinite values on the output of stages[1] (example_input(2)); every part must give "
             "finite values"),
            ("random.py", GOOD.replace("self.final = nn.Linear(8, 3)", "self.final = Noisy()").replace(
                "class M(", "class Noisy(nn.Module):\n    def forward(self, h):\n        return h[:, :3] + torch.rand(h.shape[0], 3)\n\nclass M("),
             "final: gave other values for the same input on a second call: its forward is not deterministic"),
            ("score.py", GOOD.replace("        self.final = nn.Linear(8, 3)\n", """        self.final = nn.Linear(8, 3)

    def confidence(self, logits):
        return 1 + torch.softmax(logits, -1).amax(-1)  # above 1 whatever the input
"""), "confidence(): scores outside (0, 1] for exits[0]'s logits"),
        ]
        for name, text, message in cases:
            with self.subTest(name):
                path = self.write(name, text)
                result = check(path)
                self.assertEqual(result.returncode, 2, result.stdout + result.stderr)
                lines = result.stderr.strip().splitlines()
                self.assertEqual(len(lines), 1, result.stderr)
                self.assertIn(f"model_file: {path}: ", lines[0])
                self.assertIn(message, lines[0])
                self.assertEqual(result.stdout, "")

    def assertKeptFolder(self, said, text):
        """text says `said`, then where Inductor kept the failed compile's folder, which is there."""
        kept = re.search(re.escape(f"{said} (its Inductor folder is kept: ") + r"([^)]+)\)\)$", text)
        self.assertTrue(kept, text)
        self.assertTrue(os.path.isdir(kept[1]), kept[1])
        shutil.rmtree(kept[1])

    def test_compile_makes_each_part_a_checked_package_once_and_whole(self):
        from condbench import model_file, model_source
        # the file notes each time it is loaded (run), where the test asks it to; its seed is $SEED's
        seeded = GOOD.replace("torch.manual_seed(0)", "torch.manual_seed(int(os.environ.get('SEED', '0')))")
        path = self.write("good.py", "import os\n" + seeded + "if os.environ.get('RUNS'):\n"
                                     "    with open(os.environ['RUNS'], 'a') as f:\n        f.write('ran\\n')\n")
        cache = os.path.join(self.dir.name, "cache")
        result = check_command("compile", path, "--cache", cache, "--jobs", "2")  # the parts side by side
        self.assertEqual(result.returncode, 0, result.stderr)
        folder = result.stdout.strip()
        self.assertEqual(os.path.dirname(folder), os.path.join(cache, "models"))
        self.assertEqual(sorted(os.listdir(folder)), ["cond.pt2", "exit0.pt2", "exit1.pt2", "final.pt2", "manifest.json",
                                                      "masked.pt2", "reference.pt", "stage0.pt2", "stage1.pt2"])
        with open(os.path.join(folder, "manifest.json")) as f:
            m = json.load(f)
        self.assertEqual(m["torch"], torch.__version__.split("+")[0])  # as LibTorch's TORCH_VERSION says it
        self.assertEqual((m["format"], m["reference"], m["confidence_package"]), (7, "reference.pt", None))
        self.assertEqual(m["input"], {"dtype": "float32", "inputs": [{"row": ["rows", 4], "below": None}],
                                      "pool": None})
        self.assertEqual(m["whole_model"], {"cond": {"package": "cond.pt2"}, "masked": {"package": "masked.pt2"}})
        self.assertEqual(sorted(m["compile_s"]), sorted(p for p in os.listdir(folder) if p.endswith(".pt2")))
        self.assertTrue(all(s > 0 for s in m["compile_s"].values()), m["compile_s"])
        # every file of the folder, and nothing the module read beside the file (it reads nothing)
        self.assertEqual(sorted(m["files"]), sorted(p for p in os.listdir(folder) if p != "manifest.json"))
        self.assertEqual(m["reads"], [])
        # the module's own forward on 64 rows of example_input, every head, every exit's score
        ref = torch.load(os.path.join(folder, "reference.pt"))
        module = model_file.ModelFile(path).module
        x = ref["input"]
        self.assertEqual(tuple(x.shape), (64, 4))
        h0 = module.stages[0](x)
        self.assertTrue(torch.allclose(ref["logits.0"], module.exits[0](h0)))
        self.assertTrue(torch.allclose(ref["confidence.0"], torch.softmax(module.exits[0](h0), -1).amax(-1)))
        self.assertTrue(torch.allclose(ref["logits.2"], module.final(module.stages[1](h0))))
        # the whole-model packages run the module's early exit: (exit id int32, logits)
        masked = torch._inductor.aoti_load_package(os.path.join(folder, "masked.pt2"))
        thresholds = torch.tensor([0.0, 2.0])  # every row leaves at the first exit
        ids, logits = masked(ref["input"][:5], thresholds)
        self.assertEqual(ids.tolist(), [1] * 5)
        self.assertTrue(torch.allclose(logits, ref["logits.0"][:5], rtol=1e-4, atol=1e-5))
        self.assertEqual([p["package"] for p in m["parts"]],
                         ["stage0.pt2", "exit0.pt2", "stage1.pt2", "exit1.pt2", "final.pt2"])
        # a package runs any batch and agrees with the module's part
        part = torch._inductor.aoti_load_package(os.path.join(folder, "stage1.pt2"))
        x = torch.randn(5, 8)
        self.assertTrue(torch.allclose(part(x), module.stages[1](x), rtol=1e-4, atol=1e-5))
        self.assertEqual(m["state_dict"], model_source.state_digest(module))
        # the same file, weights and torch again: the folder as it is, nothing compiled; the file is
        # loaded once, for the digest of the weights model() makes
        stamp = os.path.getmtime(os.path.join(folder, "stage0.pt2"))
        runs = os.path.join(self.dir.name, "runs")
        os.environ["RUNS"] = runs
        try:
            again = check_command("compile", path, "--cache", cache)
        finally:
            del os.environ["RUNS"]
        self.assertEqual((again.returncode, again.stdout.strip(), again.stderr), (0, folder, ""))
        self.assertEqual(os.path.getmtime(os.path.join(folder, "stage0.pt2")), stamp)
        with open(runs) as f:
            self.assertEqual(f.read(), "ran\n")
        # the same bytes, but model() makes other weights (here from $SEED; a download, a file it
        # does not read itself): compiled again, said why, and the peer refuses the folder meanwhile
        os.environ["SEED"] = "1"
        try:
            with self.assertRaisesRegex(model_file.ProtocolError, f"{path}: model\\(\\) makes other weights than it "
                                        f"did when it was compiled into {folder}: compile it again"):
                model_source.load_compiled(folder)
            again = check_command("compile", path, "--cache", cache, "--jobs", "2")
            fresh = model_file.ModelFile(path).module
        finally:
            del os.environ["SEED"]
        self.assertEqual((again.returncode, again.stdout.strip()), (0, folder), again.stderr)
        self.assertIn(f"model_file: {path}: compiling it again: {folder}: model() makes other weights than it was "
                      "compiled with\n", again.stderr)
        self.assertNotEqual(os.path.getmtime(os.path.join(folder, "stage0.pt2")), stamp)
        with open(os.path.join(folder, "manifest.json")) as f:
            self.assertEqual(json.load(f)["state_dict"], model_source.state_digest(fresh))
        part = torch._inductor.aoti_load_package(os.path.join(folder, "stage0.pt2"))
        x = torch.randn(3, 4)
        self.assertTrue(torch.allclose(part(x), fresh.stages[0](x), rtol=1e-4, atol=1e-5))
        self.assertFalse(torch.allclose(part(x), module.stages[0](x), rtol=1e-2, atol=1e-3))
        # a compile that fails half way leaves nothing behind, and says which part
        other = self.write("other.py", GOOD.replace("nn.Linear(8, 3)])", "nn.Linear(8, 3), ])"))
        real = torch._inductor.aoti_compile_and_package
        calls = []

        def failing(program, package_path):
            calls.append(package_path)
            if len(calls) == 2:
                raise RuntimeError("inductor broke")
            return real(program, package_path=package_path)

        torch._inductor.aoti_compile_and_package = failing
        try:
            result = check_command("compile", other, "--cache", cache, "--jobs", "1")  # compiled here, patched
        finally:
            torch._inductor.aoti_compile_and_package = real
        self.assertEqual(result.returncode, 2)
        self.assertKeptFolder(f"{other}: exits[0]: AOTInductor cannot compile the part (RuntimeError: inductor broke",
                              result.stderr)
        self.assertEqual(os.listdir(os.path.join(cache, "models")), [os.path.basename(folder)])
        # a whole-model module that does not compile or export: the manifest says why, no package
        from condbench import inductor

        def failing_cond(program, package_path):
            raise RuntimeError("no cond today")

        torch._inductor.aoti_compile_and_package = failing_cond
        try:
            path_cond = os.path.join(self.dir.name, "cond.pt2")
            made = inductor.build("program", path_cond, lambda package: None, "cond module")
            self.assertEqual(list(made), ["unavailable"])
            self.assertKeptFolder("AOTInductor cannot compile the cond module (RuntimeError: no cond today",
                                  made["unavailable"])
        finally:
            torch._inductor.aoti_compile_and_package = real
        self.assertFalse(os.path.exists(path_cond))
        self.assertEqual(inductor.build("torch.export cannot trace it", path_cond, None, "cond module"),
                         {"unavailable": "torch.export cannot trace it"})

    def test_a_folder_is_compiled_again_when_what_the_module_read_changed_or_it_is_damaged(self):
        from condbench import model_compile, model_file, model_source
        # a model file that imports a module from beside it and loads its weights from there
        self.write("helper.py", "SCALE = 1.0\n")
        path = self.write("uses_helper.py", HEADER + """
import os
import re
import sys
sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import helper

class M(nn.Module):
    def __init__(self):
        super().__init__()
        self.stages = nn.ModuleList([nn.Linear(4, 4)])
        self.exits = nn.ModuleList([nn.Linear(4, 3)])
        self.final = nn.Linear(4, 3)

def model():
    m = M()
    m.load_state_dict(torch.load(os.path.join(os.path.dirname(os.path.abspath(__file__)), "w.pt")))
    with torch.no_grad():
        m.final.weight.mul_(helper.SCALE)
    return m

def example_input(batch):
    return torch.ones(batch, 4)
""")
        torch.manual_seed(0)
        weights = os.path.join(self.dir.name, "w.pt")
        torch.save({f"{part}.{k}": v for part, module in [("stages.0", torch.nn.Linear(4, 4)),
                                                          ("exits.0", torch.nn.Linear(4, 3)),
                                                          ("final", torch.nn.Linear(4, 3))]
                    for k, v in module.state_dict().items()}, weights)
        helper = os.path.realpath(os.path.join(self.dir.name, "helper.py"))
        # what the module read while it loaded: recorded in a fresh interpreter, as model_file.py runs
        listed = subprocess.run([sys.executable, "-c", "import json, sys; from condbench import model_file; "
                                 "print(json.dumps(model_file.ModelFile(sys.argv[1]).reads))", path], capture_output=True, text=True, timeout=120)
        self.assertEqual(listed.returncode, 0, listed.stderr)
        self.assertEqual(json.loads(listed.stdout), sorted([helper, os.path.realpath(weights)]))
        cache = os.path.join(self.dir.name, "cache")
        state = model_file.ModelFile(path).state

        def folder_as_compiled(reads=True):
            """A compiled folder as compile leaves it, its packages stood in for by one file."""
            folder = os.path.join(cache, "models", f"{model_source.digest(path, None, 'cpu')}-cpu")
            os.makedirs(folder, exist_ok=True)
            with open(os.path.join(folder, "stage0.pt2"), "wb") as f:
                f.write(b"a package")
            m = {"files": {"stage0.pt2": model_source.file_digest(os.path.join(folder, "stage0.pt2"))},
                 "source": os.path.realpath(path), "weights": None, "digest": model_source.digest(path, None, "cpu"),
                 "classes": 3,
                 "device": "cpu", "state_dict": state}
            if reads:
                m["reads"] = [{"path": p, "sha256": model_source.file_digest(p)} for p in json.loads(listed.stdout)]
            with open(os.path.join(folder, "manifest.json"), "w") as f:
                json.dump(m, f)
            return folder

        def found(given=path, reads=None):
            err = io.StringIO()
            with contextlib.redirect_stderr(err):
                return model_compile.compiled_folder(given, None, "cpu", cache, state, reads), err.getvalue()

        folder = folder_as_compiled()
        self.assertEqual(found(), (folder, ""))
        # the module it imports changed: compiled again, the stale folder gone; the peer refuses it too
        self.write("helper.py", "SCALE = 2.0\n")
        with self.assertRaisesRegex(model_file.ProtocolError, f"{helper}, which it reads, changed since it was "
                                                              f"compiled into {folder}: compile it again"):
            model_source.load_compiled(folder)
        self.assertEqual(found(), (None, f"model_file: {path}: compiling it again: {folder}: {helper}, which the "
                                         "module read, changed since it was compiled\n"))
        self.assertFalse(os.path.exists(folder))
        # a package damaged, or missing
        folder = folder_as_compiled()
        with open(os.path.join(folder, "stage0.pt2"), "ab") as f:
            f.write(b"!")
        self.assertEqual(found()[0], None)
        self.assertFalse(os.path.exists(folder))
        folder = folder_as_compiled()
        os.remove(os.path.join(folder, "stage0.pt2"))
        self.assertIn("stage0.pt2 is missing or not as compiled", found()[1])
        # made before the manifest recorded what the module read, or the digest of its weights
        folder = folder_as_compiled(reads=False)
        self.assertIn("an older model_file.py made it", found()[1])
        self.assertFalse(os.path.exists(folder))
        folder = folder_as_compiled()
        with open(os.path.join(folder, "manifest.json")) as f:
            m = json.load(f)
        del m["state_dict"]
        with open(os.path.join(folder, "manifest.json"), "w") as f:
            json.dump(m, f)
        self.assertIn("an older model_file.py made it, without a digest of model()'s weights", found()[1])
        self.assertFalse(os.path.exists(folder))
        # a damaged manifest (cut short, or not an object): compiled again, never a traceback
        for damage in ('{"files": {', "[1, 2]"):
            folder = folder_as_compiled()
            with open(os.path.join(folder, "manifest.json"), "w") as f:
                f.write(damage)
            self.assertEqual(found(), (None, f"model_file: {path}: compiling it again: {folder}: its manifest.json is "
                                             "unreadable\n"))
            self.assertFalse(os.path.exists(folder))

    def test_a_folder_serves_only_the_file_and_the_reads_it_was_compiled_from(self):
        # #59 item 2: the same model.py in two experiment folders, each importing its own layers.py;
        # item 12: a folder reached through another path is served as it is, never rewritten
        from condbench import model_compile, model_file, model_source
        folders = []
        for name, width in (("exp1", 4), ("exp2", 6)):
            os.makedirs(os.path.join(self.dir.name, name))
            self.write(f"{name}/layers.py", f"WIDTH = {width}\n")
            folders.append(self.write(f"{name}/model.py", HEADER + """
import os
import sys
sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import layers

class M(nn.Module):
    def __init__(self):
        super().__init__()
        self.stages = nn.ModuleList([nn.Linear(4, layers.WIDTH)])
        self.exits = nn.ModuleList([nn.Linear(layers.WIDTH, 3)])
        self.final = nn.Linear(layers.WIDTH, 3)

def model():
    torch.manual_seed(0)
    return M()

def example_input(batch):
    return torch.ones(batch, 4)
"""))
        first, second = folders
        with open(first, "rb") as a, open(second, "rb") as b:
            self.assertEqual(a.read(), b.read())  # one file's bytes, two places
        self.assertNotEqual(model_source.digest(first, None, "cpu"), model_source.digest(second, None, "cpu"))
        cache = os.path.join(self.dir.name, "cache")
        loaded = model_file.ModelFile(first)
        folder = os.path.join(cache, "models", f"{model_source.digest(first, None, 'cpu')}-cpu")
        os.makedirs(folder)
        with open(os.path.join(folder, "stage0.pt2"), "wb") as f:
            f.write(b"a package")
        layers = os.path.realpath(os.path.join(os.path.dirname(first), "layers.py"))
        m = {"files": {"stage0.pt2": model_source.file_digest(os.path.join(folder, "stage0.pt2"))},
             "source": os.path.realpath(first), "weights": None, "state_dict": loaded.state,
             "reads": model_compile.read_now([layers]), "device": "cpu", "classes": 2,
             "digest": model_source.digest(first, None, "cpu")}
        with open(os.path.join(folder, "manifest.json"), "w") as f:
            json.dump(m, f)
        with open(os.path.join(folder, "manifest.json"), "rb") as f:
            as_written = f.read()

        def found(given, reads):
            err = io.StringIO()
            with contextlib.redirect_stderr(err):
                return model_compile.compiled_folder(given, None, "cpu", cache, loaded.state, reads), err.getvalue()

        self.assertEqual(loaded.reads, [layers])
        self.assertEqual(found(first, loaded.reads), (folder, ""))
        # reached through a link to its folder: the same real path, the same folder, the manifest untouched
        link = os.path.join(self.dir.name, "linked")
        os.symlink(os.path.dirname(first), link)
        self.assertEqual(found(os.path.join(link, "model.py"), loaded.reads), (folder, ""))
        with open(os.path.join(folder, "manifest.json"), "rb") as f:
            self.assertEqual(f.read(), as_written)
        # the copy beside another layers.py: another folder (none yet), not this one
        self.assertEqual(found(second, model_file.ModelFile(second).reads)[0], None)
        self.assertTrue(os.path.exists(folder))
        # this file, but a load that read other files than the folder records: compiled again
        self.assertEqual(found(first, [layers, os.path.realpath(os.path.join(os.path.dirname(second), "layers.py"))]),
                         (None, f"model_file: {first}: compiling it again: {folder}: the module read other files when "
                                "it was compiled than it reads now\n"))
        self.assertFalse(os.path.exists(folder))
        # a FIFO for its manifest: refused at once (a reader would wait for a writer), compiled again
        os.makedirs(folder)
        os.mkfifo(os.path.join(folder, "manifest.json"))
        self.assertEqual(found(first, loaded.reads)[0], None)
        self.assertFalse(os.path.exists(folder))

    def test_the_answer_is_the_folder_alone_whatever_the_module_prints_or_wherever_it_goes(self):
        # #59 items 3 and 7: a module that prints a path when it loads and another at exit, and whose
        # model() changes the working folder; the file and the cache given as relative paths. The
        # folder is a stand-in found in the cache, so nothing is compiled.
        from condbench import model_compile, model_file, model_source
        chatty = ("import atexit\nimport os\n"
                  "print('/printed/when/it/loads')\n"
                  "atexit.register(print, '/printed/at/exit/models/0123456789abcdef-cpu')\n" +
                  GOOD.replace("def model():\n", "def model():\n    os.chdir('/')\n"))
        path = self.write("chatty.py", chatty)
        cache = os.path.join(self.dir.name, "cache")
        here = os.getcwd()
        try:
            with contextlib.redirect_stdout(io.StringIO()):
                loaded = model_file.ModelFile(path)
                state = loaded.state
        finally:
            os.chdir(here)
            atexit.unregister(print)  # the module's, registered in this process too
        folder = os.path.join(cache, "models", f"{model_source.digest(path, None, 'cpu')}-cpu")
        os.makedirs(folder)
        with open(os.path.join(folder, "stage0.pt2"), "wb") as f:
            f.write(b"a package")
        with open(os.path.join(folder, "manifest.json"), "w") as f:
            json.dump({"files": {"stage0.pt2": model_source.file_digest(os.path.join(folder, "stage0.pt2"))},
                       "source": os.path.realpath(path), "weights": None, "state_dict": state,
                       "reads": model_compile.read_now(loaded.reads), "device": "cpu", "classes": 2,
                       "digest": model_source.digest(path, None, "cpu")}, f)
        result = subprocess.run(MODEL_FILE + ["compile", "chatty.py", "--cache", "cache", "--jobs", "1"],
                                cwd=self.dir.name, capture_output=True, text=True, timeout=300)
        self.assertEqual(result.returncode, 0, result.stderr)
        self.assertEqual(result.stdout, folder + "\n")  # the answer alone, on the answer's channel
        self.assertIn("/printed/when/it/loads", result.stderr)  # the module's own prints: on stderr
        self.assertIn("/printed/at/exit/models/0123456789abcdef-cpu", result.stderr)
        # condbench's own descriptor, when it gives one: the answer there, stdout empty
        read, write = os.pipe()
        result = subprocess.run(MODEL_FILE + ["compile", "chatty.py", "--cache", "cache", "--answer-fd", str(write)],
                                cwd=self.dir.name, capture_output=True, text=True, timeout=300, pass_fds=(write,))
        os.close(write)
        with os.fdopen(read) as answer:
            self.assertEqual((result.returncode, result.stdout, answer.read()), (0, "", folder + "\n"), result.stderr)

    def test_the_weights_digest_is_of_every_name_dtype_shape_and_value(self):
        from condbench import model_source
        torch.manual_seed(0)
        module = torch.nn.Sequential(torch.nn.Linear(3, 2), torch.nn.BatchNorm1d(2))
        first = model_source.state_digest(module)
        self.assertRegex(first, "^[0-9a-f]{16}$")
        self.assertEqual(model_source.state_digest(module), first)  # the same weights: the same digest
        digests = {first}
        with torch.no_grad():
            module[0].weight[1, 2] += 1e-6  # one value
        digests.add(model_source.state_digest(module))
        module[1].num_batches_tracked += 1  # a buffer
        digests.add(model_source.state_digest(module))
        digests.add(model_source.state_digest(module.to(torch.bfloat16)))  # a dtype (and bfloat16 hashes)
        renamed = torch.nn.Module()
        renamed.add_module("first", module[0])
        renamed.add_module("second", module[1])
        digests.add(model_source.state_digest(renamed))  # the names
        self.assertEqual(len(digests), 5)
        flat = torch.nn.Module()
        flat.register_buffer("w", torch.zeros(6))
        shaped = torch.nn.Module()
        shaped.register_buffer("w", torch.zeros(2, 3))
        self.assertNotEqual(model_source.state_digest(flat), model_source.state_digest(shaped))  # the shapes

    def test_condbenchs_limits_given_as_flags_refuse_a_model_before_it_is_compiled(self):
        path = self.write("good.py", GOOD)  # 2 stages; rows of 4, 8 and 3 values
        for flags, message in [(["--max-stages", "1"], "model().stages: 2 stages, more than the 1 condbench reads"),
                               (["--max-row-values", "6"], "stages[0]: its output row holds 8 values, more than "
                                                           "the 6 condbench can run (a smaller input or a narrower part)"),
                               (["--max-classes", "2"], "the heads give 3 classes, more than the 2 condbench reads")]:
            for command in ("check", "compile"):
                with self.subTest(flags=flags, command=command):
                    result = check_command(command, path, *flags, "--cache", os.path.join(self.dir.name, "cache"))
                    self.assertEqual(result.returncode, 2, result.stdout + result.stderr)
                    self.assertEqual(result.stderr, f"model_file: {path}: {message}\n")
                    self.assertFalse(os.path.exists(os.path.join(self.dir.name, "cache", "models")))
        self.assertEqual(check(path, "--max-stages", "2", "--max-row-values", "8", "--max-classes", "3").returncode, 0)
        # run by hand, without the flags: the most condbench reads of a folder (C++'s, from rules.json)
        from condbench.rules import MODEL_FILE_LIMITS
        deep = self.write("deep.py", GOOD.replace("nn.ModuleList([nn.Linear(4, 8), nn.Linear(8, 8)])",
                                                  "nn.ModuleList([nn.Linear(4, 8)] + [nn.Linear(8, 8)] * 256)")
                                         .replace("nn.ModuleList([nn.Linear(8, 3), nn.Linear(8, 3)])",
                                                  "nn.ModuleList([nn.Linear(8, 3)] * 257)"))
        result = check(deep)
        self.assertEqual((result.returncode, result.stderr), (2, f"model_file: {deep}: model().stages: 257 stages, "
                                                                 f"more than the {MODEL_FILE_LIMITS['max_stages']} "
                                                                 "condbench reads\n"))
        self.assertEqual(MODEL_FILE_LIMITS["max_stages"], 256)

    def test_a_stopped_compile_cleans_up_and_a_killed_ones_folder_goes_next_time(self):
        from condbench import model_compile
        # SIGTERM (condbench at --compile-timeout, or stopped) exits through the finally blocks that
        # remove a half-built folder: exit status 128 + 15, not death by the signal
        path = self.write("sleepy.py", GOOD.replace("    return torch.randn(batch, 4)",
                                                    "    import time; time.sleep(300)"))
        child = subprocess.Popen([sys.executable, "-m", "condbench.model_file", "check", path],
                                 stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
        time.sleep(3)  # loading torch and the file; then it sleeps in example_input()
        child.send_signal(signal.SIGTERM)
        self.assertEqual(child.wait(timeout=60), 128 + signal.SIGTERM)
        # a compile killed outright (SIGKILL) leaves NAME.tmp-PID: removed once its process is gone
        models = os.path.join(self.dir.name, "models")
        dead, alive = (os.path.join(models, f"0123456789abcdef-cpu.tmp-{pid}") for pid in (999999999, os.getpid()))
        for folder in (dead, alive, os.path.join(models, "0123456789abcdef-cpu")):
            os.makedirs(folder)
        model_compile.remove_abandoned(models)
        self.assertEqual(sorted(os.listdir(models)), ["0123456789abcdef-cpu", os.path.basename(alive)])

    def test_bad_weights_and_a_missing_file_are_named(self):
        path = self.write("good.py", GOOD)
        wrong = os.path.join(self.dir.name, "wrong.pt")
        torch.save({"stages.0.weight": torch.zeros(8, 4)}, wrong)
        garbage = self.write("garbage.pt", "not a torch file")
        for weights, message in ((wrong, "does not fit model() (RuntimeError: Error(s) in loading state_dict"),
                                 (garbage, "not a state_dict torch.load reads")):
            result = check(path, "--weights", weights)
            self.assertEqual(result.returncode, 2, result.stderr)
            self.assertIn(f"{path}: --weights {weights}: {message}", result.stderr)
        result = check(os.path.join(self.dir.name, "absent.py"))
        self.assertEqual(result.returncode, 2)
        self.assertIn("absent.py: no such file", result.stderr)
        result = check_command("compile", path, "--jobs", "0")
        self.assertEqual((result.returncode, result.stderr.strip()), (2, "model_file: --jobs 0: not in 1..64"))

    def test_a_package_the_workers_cannot_compile_is_left_to_the_caller(self):
        # compile_side_by_side is best effort: what cannot be saved for a worker is not compiled, and
        # nothing of it is left in the folder (inductor.build then compiles it itself, naming the error)
        from condbench import inductor
        folder = os.path.join(self.dir.name, "workers")
        os.makedirs(folder)
        jobs = [(os.path.join(folder, "a.pt2"), "not a program", None), (os.path.join(folder, "b.pt2"), object(), None)]
        self.assertEqual(inductor.compile_side_by_side(jobs, 2), {})
        self.assertEqual(os.listdir(folder), [])


class Hashing(unittest.TestCase):
    """The digests of a model file's weights and of the files its module read: in chunks, never the
    whole file in memory (a gigabyte of weights is read a megabyte at a time). No torch needed."""

    def test_a_file_is_hashed_a_megabyte_at_a_time_to_the_digest_of_its_bytes(self):
        import hashlib

        from condbench import model_source
        with tempfile.TemporaryDirectory() as d:
            path = os.path.join(d, "w.pt")
            data = os.urandom(3 * (1 << 20) + 5)
            with open(path, "wb") as f:
                f.write(data)
            reads = []

            class Recorded(io.FileIO):
                def read(self, size=-1):
                    reads.append(size)
                    return super().read(size)

            real = model_source.open_regular
            model_source.open_regular = lambda name: Recorded(name, "r")  # the module's opener, for this test
            try:
                got = model_source.file_digest(path)
            finally:
                model_source.open_regular = real
            self.assertEqual(got, hashlib.sha256(data).hexdigest())
            self.assertEqual(reads, [1 << 20] * 5)  # 4 chunks with bytes, then the empty read that ends it


if __name__ == "__main__":
    unittest.main(verbosity=2)
