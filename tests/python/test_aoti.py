"""condbench.inductor, the one path from a module to a package (export, compile, check) that the
built-in families' and decoders' packages (condbench.aoti, whose command is tested last) and a model
file's take: each check refuses a package that computes something else, and build keeps a package
only when its check passes, with the fallback options where the first ones fail it. Runs without the C++ build; nothing here runs Inductor (its compile is
what the aoti_packages and model_file ctests run). Usage: test_aoti.py."""
import os
import tempfile
import unittest

try:
    import torch
except ImportError:  # the package's readers without torch are tested elsewhere
    torch = None


def verdict(check, package):
    """What build's check says of `package` (anything callable as the module is), run here."""
    from condbench import inductor

    return check.judge(inductor.outputs(package, check.calls))


@unittest.skipIf(torch is None, "no torch here: scripts/setup's .venv has it")
class Checks(unittest.TestCase):
    """The checks build runs on a package, given the module itself (which passes) and a module that
    is off by a little (which must not): a package is anything callable as the module is."""

    def test_a_whole_model_module_is_checked_on_rows_that_leave_at_every_exit(self):
        from condbench import inductor
        from condbench.families import build_model
        from condbench.deployed import DeployedCond, DeployedMasked

        torch.manual_seed(0)
        model = build_model({"family": "mlp", "in_features": 6, "hidden": 16, "num_classes": 4, "blocks": 3}).eval()
        x = torch.randn(inductor.CHECK_ROWS, 6)
        programs = inductor.whole_model_programs(model, x, "random example")
        self.assertEqual(set(programs), {"cond", "masked"})
        for module, deployed in (("cond", DeployedCond(model)), ("masked", DeployedMasked(model))):
            program, check = programs[module]
            with self.subTest(module=module):
                self.assertIsNone(verdict(check, deployed))
                # the exported program itself is the module
                self.assertIsNone(verdict(check, program.module()))

                def off_by_one_exit(x, thresholds, deployed=deployed):
                    ids, logits = deployed(x, thresholds)
                    return ids + 1, logits

                def off_logits(x, thresholds, deployed=deployed):
                    ids, logits = deployed(x, thresholds)
                    return ids, logits * (1 + 1e-2)

                for wrong in (off_by_one_exit, off_logits):
                    why = verdict(check, wrong)
                    self.assertIsNotNone(why, wrong.__name__)
                    self.assertTrue(why.startswith("differs from the module on random example row"), why)

    def test_the_check_rows_reach_every_exit(self):
        # thresholds halfway between each exit's middle scores: some rows leave at each exit, and some
        # go on to the final head, so a package wrong at any one exit is seen
        from condbench import inductor
        from condbench.families import build_model
        from condbench.deployed import masked_forward

        torch.manual_seed(1)
        model = build_model({"family": "mlp", "in_features": 5, "hidden": 12, "num_classes": 3, "blocks": 2}).eval()
        x = torch.randn(inductor.CHECK_ROWS, 5)
        seen = []

        def recording(x, thresholds):
            logits, ids = masked_forward(model, x, thresholds)
            seen.extend(int(i) for i in ids.reshape(-1))
            return ids.to(torch.int32), logits

        self.assertIsNone(verdict(inductor.whole_model_programs(model, x)["masked"][1], recording))
        self.assertEqual(set(seen), {1, 2, 3})

    def test_a_decoder_step_is_checked_on_every_output(self):
        from condbench import deployed, inductor

        torch.manual_seed(0)
        config = {"vocab": 11, "d_model": 8, "heads": 2, "layers": 4, "ffn": 16, "context": 6, "exit_every": 2}
        for module in ("cond", "masked"):
            with self.subTest(module=module):
                step = deployed.DecodeStep.of(config, module, "cpu")
                program, check = inductor.step_program(step)
                self.assertIsNone(verdict(check, step))
                self.assertIsNone(verdict(check, program.module()))

                def other_token(*inputs):
                    token, *rest = step(*inputs)
                    return (token + 1) % config["vocab"], *rest

                def other_cache(*inputs):
                    *head, keys, values = step(*inputs)
                    return (*head, keys, values + 1e-2)

                for wrong in (other_token, other_cache):
                    why = verdict(check, wrong)
                    self.assertIsNotNone(why, wrong.__name__)
                    self.assertIn("differs from the step on a token at position", why)

    def test_close_holds_floats_to_cpps_compile_tolerance_and_the_rest_to_equality(self):
        from condbench import inductor, rules

        tol = rules.COMPILE_CHECK
        want = torch.tensor([[1.0, -2.0]])
        self.assertTrue(inductor.close(want * (1 + 0.5 * tol["relative_tolerance"]), want))
        self.assertFalse(inductor.close(want * (1 + 3 * tol["relative_tolerance"]) + tol["absolute_tolerance"], want))
        self.assertFalse(inductor.close(torch.ones(1, 3), torch.ones(1, 2)))
        self.assertTrue(inductor.close(torch.tensor([2], dtype=torch.int64), torch.tensor([2], dtype=torch.int32)))
        self.assertFalse(inductor.close(torch.tensor([3]), torch.tensor([2])))


@unittest.skipIf(torch is None, "no torch here: scripts/setup's .venv has it")
class Build(unittest.TestCase):
    """build with Inductor replaced by a stand-in: a "package" is a file naming the options it was
    compiled with, which the check reads back."""

    def setUp(self):
        self.dir = tempfile.TemporaryDirectory()
        self.path = os.path.join(self.dir.name, "cond.pt2")
        self.compiles = []
        torch_inductor = torch._inductor
        self.real = torch_inductor.aoti_compile_and_package, torch_inductor.aoti_load_package

        def compile_(program, package_path, inductor_configs=None):
            self.compiles.append(inductor_configs)
            with open(package_path, "w") as f:
                f.write(repr(sorted((inductor_configs or {}).items())))

        def load(path):
            with open(path) as f:
                options = f.read()
            return lambda: options  # the stand-in package's output: the options it was compiled with

        torch_inductor.aoti_compile_and_package, torch_inductor.aoti_load_package = compile_, load

    def tearDown(self):
        torch._inductor.aoti_compile_and_package, torch._inductor.aoti_load_package = self.real
        self.dir.cleanup()

    def test_a_package_whose_check_passes_is_kept(self):
        from condbench import inductor

        built = inductor.build("program", self.path, passes(), "cond module", {"a": 1})
        self.assertEqual(set(built), {"package", "compile_s"})
        self.assertEqual(built["package"], "cond.pt2")
        self.assertEqual(self.compiles, [{"a": 1}])
        self.assertTrue(os.path.isfile(self.path))
        # a package already there (compile_side_by_side's) is checked, not compiled again
        self.assertEqual(inductor.build("program", self.path, passes(), "cond module")["package"], "cond.pt2")
        self.assertEqual(len(self.compiles), 1)

    def test_a_package_whose_check_fails_is_removed_or_compiled_again_with_the_fallback(self):
        from condbench import inductor

        wrong_without_the_workaround = inductor.Check([()], lambda outs: None if "layout_optimization" in outs[0] else
                                                  "differs from the module on example_input row 4")

        built = inductor.build("program", self.path, wrong_without_the_workaround, "cond module")
        self.assertEqual(built, {"unavailable": "the compiled cond module differs from the module on example_input row 4"})
        self.assertFalse(os.path.exists(self.path))
        built = inductor.build("program", self.path, wrong_without_the_workaround, "cond module",
                           fallback={"layout_optimization": False})
        self.assertEqual((built["package"], built["workaround"], built["default"]),
                         ("cond.pt2", "layout_optimization=False",
                          "the compiled cond module differs from the module on example_input row 4"))
        self.assertEqual(self.compiles[-2:], [None, {"layout_optimization": False}])
        built = inductor.build("program", self.path + "2", inductor.Check([()], lambda outs: "differs"), "cond module",
                           fallback={"layout_optimization": False})
        self.assertEqual(built, {"unavailable": "the compiled cond module differs, and with layout_optimization=False "
                                                "too"})
        self.assertFalse(os.path.exists(self.path + "2"))

    def test_each_compile_has_an_inductor_cache_folder_of_its_own(self):
        """AOTInductor packs a package from <cache>/<digest of the graph's code>/, rewriting the files
        there in place: two compiles of one code at once (identical blocks in two workers, two
        processes compiling one model file) packed each other's half-written files, an empty
        metadata JSON in CI. Each compile's folder is new, empty, no other's, and gone after it."""
        from torch._inductor.runtime.cache_dir_utils import cache_dir

        from condbench import inductor

        shared, folders = cache_dir(), []
        real_compile = torch._inductor.aoti_compile_and_package

        def compile_(program, package_path, inductor_configs=None):
            folders.append((cache_dir(), os.listdir(cache_dir())))
            with open(os.path.join(cache_dir(), "metadata.json"), "w"):  # what Inductor leaves there
                pass
            real_compile(program, package_path, inductor_configs)

        torch._inductor.aoti_compile_and_package = compile_
        for k in range(2):
            inductor.compile_program("program", f"{self.path}{k}")
        self.assertEqual(len(folders), 2)
        self.assertNotEqual(folders[0][0], folders[1][0])
        for folder, contents in folders:
            self.assertNotEqual(folder, shared)
            self.assertEqual(contents, [])
            self.assertFalse(os.path.exists(folder))
        self.assertEqual(cache_dir(), shared)  # Inductor's own folder again after the compile

    def test_a_check_that_raises_is_a_refusal_in_one_line(self):
        from condbench import inductor

        def raises(outs):
            raise RuntimeError("shape mismatch\nand more")

        self.assertEqual(inductor.build("program", self.path, inductor.Check([()], raises), "part"),
                         {"unavailable": "AOTInductor cannot compile the part (RuntimeError: shape mismatch)"})
        self.assertFalse(os.path.exists(self.path))


def passes():
    from condbench import inductor

    return inductor.Check([()], lambda outs: None)


@unittest.skipIf(torch is None, "no torch here: scripts/setup's .venv has it")
class CheckApart(unittest.TestCase):
    """A CUDA package is loaded and run in a process of its own (condbench.package_run), so that a
    loader that crashes (as one did on an H200, in the process that had compiled it) ends that process,
    not the compile: here a real CPU package takes that path (CONDBENCH_AOTI_CHECK_APART), and a file
    that is no package ends its process in one line of the refusal. One small Inductor compile."""

    def test_a_package_checked_apart_gives_its_outputs_and_a_broken_one_a_refusal(self):
        from condbench import inductor

        torch.manual_seed(0)
        module = torch.nn.Linear(4, 3).eval()
        x = torch.randn(2, 4)
        with tempfile.TemporaryDirectory() as d:
            path = os.path.join(d, "linear.pt2")
            inductor.compile_program(inductor.export(module, (x,)), path)
            want = module(x).detach()
            seen = []

            def judge(outs):
                seen.extend(outs)
                return None if inductor.close(outs[0], want) else "differs"

            os.environ[inductor.CHECK_APART_ENV] = "1"
            try:
                self.assertIsNone(inductor.check_package(path, inductor.Check([(x,)], judge)))
                broken = os.path.join(d, "broken.pt2")
                with open(broken, "w") as f:
                    f.write("not a package")
                built = inductor.build("program", broken, inductor.Check([(x,)], judge), "part")
            finally:
                del os.environ[inductor.CHECK_APART_ENV]
            self.assertEqual(len(seen), 1)
            self.assertTrue(torch.allclose(seen[0], want))
            self.assertRegex(built["unavailable"], r"^AOTInductor cannot compile the part \(RuntimeError: loading and "
                                                   r"running it in a process of its own ended with exit 1: .+\)$")
            self.assertEqual(len(built["unavailable"].splitlines()), 1)
            self.assertFalse(os.path.exists(broken))


@unittest.skipIf(torch is None, "no torch here: scripts/setup's .venv has it")
class BuiltInRoute(unittest.TestCase):
    """python -m condbench.aoti's main in this process, Inductor replaced by a stand-in whose package
    is the exported program itself (right) or a string (which no check accepts): a package is kept
    with its record only when checked, and a refusal is one line that leaves nothing in the cache."""

    CONFIG = "mlp:in_features=5,hidden=8,num_classes=3,blocks=2"

    def setUp(self):
        self.dir = tempfile.TemporaryDirectory()
        self.programs = {}
        torch_inductor = torch._inductor
        self.real = torch_inductor.aoti_compile_and_package, torch_inductor.aoti_load_package
        self.right = True

        def compile_(program, package_path, inductor_configs=None):
            self.programs[package_path] = program
            with open(package_path, "w") as f:
                f.write("package")

        def load(path):
            program = self.programs[path]
            return program.module() if self.right else "not a module"

        torch_inductor.aoti_compile_and_package, torch_inductor.aoti_load_package = compile_, load

    def tearDown(self):
        torch._inductor.aoti_compile_and_package, torch._inductor.aoti_load_package = self.real
        self.dir.cleanup()

    def main(self, *args):
        import contextlib
        import io
        import sys

        from condbench import aoti

        argv, sys.argv = sys.argv, ["aoti", f"--cache={self.dir.name}", f"--config={self.CONFIG}", "--jobs=1", *args]
        out, err = io.StringIO(), io.StringIO()
        try:
            with contextlib.redirect_stdout(out), contextlib.redirect_stderr(err):
                aoti.main()
            code = 0
        except SystemExit as e:
            code = e.code
        finally:
            sys.argv = argv
        return code, out.getvalue(), err.getvalue()

    def files(self):
        return sorted(os.path.relpath(os.path.join(d, f), self.dir.name)
                      for d, _, names in os.walk(self.dir.name) for f in names)

    def test_a_checked_package_is_kept_with_its_record_and_then_found_cached(self):
        import json

        code, out, err = self.main()
        self.assertEqual(code, 0, err)
        folder = f"torch-{torch.__version__.split('+')[0]}/cpu/mlp-in_features5-hidden8-c3-b2"
        self.assertEqual(self.files(), [f"{folder}/{m}.{e}" for m in ("cond", "masked") for e in ("json", "pt2")])
        with open(os.path.join(self.dir.name, folder, "cond.json")) as f:
            record = json.load(f)
        self.assertEqual((record["module"], record["options"]), ("cond", "default but always_keep_tensor_constants=True"))
        self.assertIn("checked", record)
        self.assertIn(", checked -> ", out)
        code, out, _ = self.main()
        self.assertEqual((code, out.count(": cached (compiled in ")), (0, 2))

    def test_a_package_its_check_refuses_is_one_line_and_leaves_nothing(self):
        self.right = False
        code, _, err = self.main()
        self.assertEqual(code, 2)
        self.assertEqual(len(err.strip().splitlines()), 1, err)
        self.assertRegex(err, r"^aoti: cpu mlp-in_features5-hidden8-c3-b2 cond: AOTInductor cannot compile the cond "
                              r"module \(TypeError: ")
        self.assertEqual(self.files(), [])


if __name__ == "__main__":
    unittest.main()
