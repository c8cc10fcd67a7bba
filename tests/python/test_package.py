"""The condbench Python package (python/condbench) as a user and the tools reach it: installed
editable into the checkout's .venv by scripts/setup, run as modules, found by no path tricks. Runs
without the C++ build. Usage: test_package.py."""
import ast
import contextlib
import io
import json
import re
import os
import subprocess
import sys
import tempfile
import unittest

ROOT = os.path.realpath(os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", ".."))
VENV_PYTHON = os.path.join(ROOT, ".venv", "bin", "python")
ENTRY_POINTS = ["aoti", "decoder", "device_check", "load_experiment", "model_file", "peer"]  # python -m condbench.NAME


def without_pythonpath():
    return {k: v for k, v in os.environ.items() if k not in ("PYTHONPATH", "PYTHONSAFEPATH")}


PACKAGE = os.path.join(ROOT, "python", "condbench")
# The modules that time what a PyTorch user writes, and those that compile what condbench deploys:
# neither side imports the other (condbench.deployed and condbench.model_source sit below both).
PEER = ("peer", "rounds", "peer_result", "answer_budget", "variants", "decoder_peer", "workload")
COMPILER = ("inductor", "aoti", "model_compile", "model_file", "package_run", "load_experiment")
# The one AOTInductor path and what takes it without the built-in families' packages (condbench.aoti).
PATH_TAKERS = ("inductor", "model_compile", "model_file", "package_run", "load_experiment")


def imports_of(name):
    """The package's modules that module `name` imports, at its top or inside a function."""
    with open(os.path.join(PACKAGE, name + ".py")) as f:
        tree = ast.parse(f.read())
    found = set()
    for node in ast.walk(tree):
        if isinstance(node, ast.ImportFrom):
            if node.level == 1 or node.module == "condbench":  # from . import x / from .x import y
                found.update([node.module.split(".")[0]] if node.level == 1 and node.module
                             else [a.name for a in node.names])
            elif node.module and node.module.startswith("condbench."):
                found.add(node.module.split(".")[1])
        elif isinstance(node, ast.Import):
            found.update(a.name.split(".")[1] for a in node.names if a.name.startswith("condbench."))
    return found


def reached(name):
    """Every module of the package that importing `name` can import, through any chain."""
    seen, todo = set(), [name]
    while todo:
        for m in imports_of(todo.pop()) - seen:
            seen.add(m)
            todo.append(m)
    return seen


class Layers(unittest.TestCase):
    def test_the_peer_imports_nothing_of_the_compiler(self):
        for name in PEER:
            with self.subTest(module=name):
                self.assertEqual(reached(name) & set(COMPILER), set())

    def test_the_compiler_imports_nothing_of_the_peer(self):
        for name in COMPILER:
            with self.subTest(module=name):
                self.assertEqual(reached(name) & set(PEER), set())

    def test_the_path_does_not_import_the_built_in_route(self):
        for name in PATH_TAKERS:
            with self.subTest(module=name):
                self.assertNotIn("aoti", reached(name))

    def test_imports_inside_functions_and_through_chains_are_seen(self):
        self.assertIn("model_source", imports_of("peer"))  # load_model_file's, inside the function
        self.assertNotIn("deployed", imports_of("package_run"))
        self.assertIn("deployed", reached("package_run"))  # through condbench.inductor's functions
        self.assertIn("rules", reached("peer"))


class Package(unittest.TestCase):
    @unittest.skipUnless(os.path.exists(VENV_PYTHON), "no .venv (scripts/setup makes it)")
    def test_the_venv_imports_this_checkouts_package(self):
        # no PYTHONPATH, from another folder: what scripts/setup's editable install gives
        found = subprocess.run([VENV_PYTHON, "-c", "import condbench; print(condbench.__file__)"], cwd="/",
                               env=without_pythonpath(), capture_output=True, text=True, timeout=60)
        self.assertEqual(found.returncode, 0, found.stderr)
        self.assertEqual(os.path.realpath(found.stdout.strip()), os.path.join(ROOT, "python", "condbench", "__init__.py"))

    def test_every_entry_point_answers_help(self):
        for name in ENTRY_POINTS:
            with self.subTest(module=name):
                result = subprocess.run([sys.executable, "-m", f"condbench.{name}", "--help"], cwd="/",
                                        capture_output=True, text=True, timeout=120)
                if "No module named 'torch'" in result.stderr:
                    self.skipTest("this python has no torch (scripts/setup's .venv has)")
                self.assertEqual(result.returncode, 0, result.stderr)
                # one usage, by the name a user types (argparse's own above a hand-written one was two)
                self.assertEqual(result.stdout.count("usage:"), 1, result.stdout)
                self.assertIn(f"usage: python -m condbench.{name} ", result.stdout)

    def test_no_code_edits_sys_path(self):
        # the package is imported as a package; scripts import what sits beside them. A model file
        # in a test's string is the user's code, not ours: only code is looked at.
        edits = []
        for top in ("python", "scripts", "tests", "examples"):
            for folder, _, files in os.walk(os.path.join(ROOT, top)):
                for name in files:
                    path = os.path.join(folder, name)
                    with open(path, "rb") as f:
                        head = f.read(64)
                    if not (name.endswith(".py") or head.startswith(b"#!/usr/bin/env python")):
                        continue
                    with open(path, encoding="utf-8") as f:
                        tree = ast.parse(f.read(), path)
                    for node in ast.walk(tree):
                        if isinstance(node, ast.Attribute) and node.attr in ("insert", "append") and \
                                ast.unparse(node.value) == "sys.path":
                            edits.append(f"{os.path.relpath(path, ROOT)}:{node.lineno}")
        self.assertEqual(edits, [])


def package_trees():
    """(path relative to the root, AST) of every module of the package but condbench.rules."""
    folder = os.path.join(ROOT, "python", "condbench")
    for name in sorted(os.listdir(folder)):
        if name.endswith(".py") and name != "rules.py":
            with open(os.path.join(folder, name), encoding="utf-8") as f:
                yield f"python/condbench/{name}", ast.parse(f.read(), name)


class Rules(unittest.TestCase):
    """The rules C++ owns reach the package as data (rules.json, checked against C++ by the unit test
    Rules.ThePythonPackageHoldsWhatCppSays): condbench.rules applies them, and no other module
    types an exit test or a tolerance."""

    def test_the_exit_test_is_the_comparison_rules_json_states(self):
        try:
            import torch
            from condbench import rules
        except ImportError as e:
            self.skipTest(f"no torch here ({e}): scripts/setup's .venv has it")
        stated = rules.RULES["exit_rule"]["fires_when"]
        at_threshold = stated == "score >= threshold"
        self.assertIn(stated, ("score > threshold", "score >= threshold"))
        for score, threshold, fires in ((0.25, 0.5, False), (0.5, 0.5, at_threshold), (0.75, 0.5, True)):
            with self.subTest(score=score, threshold=threshold):
                self.assertIs(bool(rules.exit_fires(score, threshold)), fires)
                self.assertIs(bool(rules.exit_fires(torch.tensor(score), torch.tensor(threshold))), fires)
        logits = torch.tensor([[2.0, 0.0, -1.0], [0.0, 0.0, 0.0]])
        torch.testing.assert_close(rules.max_softmax(logits), torch.softmax(logits.double(), -1).max(-1).values.float())
        for name in ("AGREEMENT", "MODEL_FILE_AGREEMENT", "COMPILE_CHECK"):
            self.assertGreater(getattr(rules, name)["tie_margin"], 0)

    def test_logits_agree_as_cpp_judges_its_examples(self):
        try:
            from condbench import rules
        except ImportError as e:
            self.skipTest(f"no torch here ({e}): scripts/setup's .venv has it")
        examples = rules.RULES["agreement_examples"]
        # the examples reach both ways: some agree, some do not, one only by the row's own scale
        self.assertEqual({e["agree"] for e in examples}, {True, False})
        for i, example in enumerate(examples):
            with self.subTest(example=i, expected=example["expected"], logits=example["logits"]):
                self.assertIs(rules.logits_agree(example["logits"], example["expected"],
                                                 rules.AGREEMENT["relative_tolerance"]), example["agree"])

    def test_a_configs_folder_is_named_as_cpp_names_it(self):
        try:
            from condbench import aoti, rules
        except ImportError as e:
            self.skipTest(f"no torch here ({e}): scripts/setup's .venv has it")
        tags = rules.RULES["config_tags"]
        self.assertLessEqual({"mlp", "transformer", "decoder"}, {t["family"] for t in tags})
        for example in tags:
            with self.subTest(tag=example["tag"]):
                config = {"family": example["family"], **{key: value for key, value in example["sizes"]}}
                self.assertEqual(aoti.config_key(config), example["tag"])
                # and as a --config names it, read in C++'s order (config_sizes), to the same folder
                text = f"{example['family']}:" + ",".join(f"{key}={value}" for key, value in example["sizes"])
                self.assertEqual(aoti.config_key(aoti.parse_config(text)), example["tag"])

    def test_a_config_is_read_in_cpps_order_within_cpps_limits(self):
        # every size C++ has, in its order, each 1..its most: another order would name another folder
        # than condbench reads, a size C++ refuses a package no run could use
        from condbench import aoti, rules

        self.assertEqual(set(rules.RULES["config_sizes"]), {"mlp", "transformer", "decoder"})
        sizes = {size["size"]: size["most"] for size in rules.RULES["config_sizes"]["transformer"]}
        in_order = "transformer:d_model=32,heads=4,ffn=48,seq=6,num_classes=5,blocks=3"
        self.assertEqual(aoti.config_key(aoti.parse_config(in_order)), "transformer-d_model32-heads4-ffn48-seq6-c5-b3")
        for text in ("transformer:heads=4,d_model=32,ffn=48,seq=6,num_classes=5,blocks=3",
                     f"transformer:d_model={sizes['d_model'] + 1},heads=1,ffn=48,seq=6,num_classes=5,blocks=3",
                     "transformer:d_model=32,heads=4,ffn=48,seq=6,num_classes=5,blocks=0",
                     "transformer:d_model=32,heads=4,ffn=48,seq=6,num_classes=5"):
            said = io.StringIO()
            with self.subTest(text=text), self.assertRaises(SystemExit) as stopped, contextlib.redirect_stderr(said):
                aoti.parse_config(text)
            self.assertEqual(stopped.exception.code, 2)
            self.assertTrue(said.getvalue().startswith(f"aoti: --config {text!r}: "), said.getvalue())
            self.assertEqual(len(said.getvalue().splitlines()), 1)

    def test_a_configs_sizes_relate_as_cpp_relates_them(self):
        # C++'s relations (rules.json's config_relations), said as C++ says them (SizeRelation::violation;
        # test_config.cpp's SizeRelations holds C++ to the same words)
        from condbench import aoti, rules

        self.assertEqual({(r["size"], r["must"], r["other"]) for r in rules.CONFIG_RELATIONS["decoder"]},
                         {("heads", "divide", "d_model"), ("exit_every", "be below", "layers")})
        decoder = "decoder:vocab=16,d_model=32,heads={},layers=4,ffn=48,context=8,exit_every={}"
        self.assertEqual(aoti.parse_config(decoder.format(4, 3))["exit_every"], 3)
        for text, said in [
                ("transformer:d_model=32,heads=5,ffn=48,seq=6,num_classes=5,blocks=3",
                 "heads must divide d_model (each head a slice of the width), got heads=5 d_model=32"),
                (decoder.format(5, 2), "heads must divide d_model (each head a slice of the width), got heads=5 d_model=32"),
                (decoder.format(4, 4), "exit_every must be below layers (an exit before the last layer), got exit_every=4 "
                                       "layers=4")]:
            err = io.StringIO()
            with self.subTest(text=text), self.assertRaises(SystemExit), contextlib.redirect_stderr(err):
                aoti.parse_config(text)
            self.assertEqual(err.getvalue(), f"aoti: --config {text!r}: {said}\n")
        self.assertIsNone(rules.broken_relation("mlp", {"in_features": 3, "hidden": 7}))

    def test_a_saved_decoder_has_cpps_default_sizes(self):
        # python -m condbench.decoder save: the decoder condbench runs by default (rules.json's defaults)
        try:
            import torch
            from condbench import rules
        except ImportError as e:
            self.skipTest(f"no torch here ({e}): scripts/setup's .venv has it")
        defaults = {size["size"]: size["default"] for size in rules.RULES["config_sizes"]["decoder"]}
        with tempfile.TemporaryDirectory() as folder:
            path = os.path.join(folder, "w.pt")
            saved = subprocess.run([sys.executable, "-m", "condbench.decoder", "save", path, "--layers", "4"],
                                   capture_output=True, text=True, timeout=120)
            self.assertEqual(saved.returncode, 0, saved.stderr)
            state = torch.load(path)
        self.assertEqual(tuple(state["embed.weight"].shape), (defaults["vocab"], defaults["d_model"]))
        self.assertEqual(tuple(state["pos.weight"].shape), (defaults["context"], defaults["d_model"]))
        self.assertEqual(tuple(state["layers.0.fc1.weight"].shape), (defaults["ffn"], defaults["d_model"]))
        self.assertEqual(len({key.split(".")[1] for key in state if key.startswith("layers.")}), 4)

    def test_no_other_module_compares_with_a_threshold(self):
        # an exit test typed beside rules.exit_fires: a comparison one of whose sides names a threshold
        # (a distance to a threshold against the tie margin, which is data, is another rule)
        found = []
        for path, tree in package_trees():
            for node in ast.walk(tree):
                text = ast.unparse(node) if isinstance(node, ast.Compare) else ""
                if text and any(isinstance(op, (ast.Gt, ast.GtE, ast.Lt, ast.LtE)) for op in node.ops) and \
                        any(word in text for word in ("threshold", "limits")) and \
                        not any(word in text for word in ("margin", "tolerance")):
                    found.append(f"{path}:{node.lineno}: {ast.unparse(node)}")
        self.assertEqual(found, [])

    def test_no_other_module_types_a_tolerance(self):
        # the tolerances and tie margins are 1e-3 .. 1e-5 in C++: no such literal in a module, and no
        # rtol= or atol= given a number
        found = []
        for path, tree in package_trees():
            for node in ast.walk(tree):
                if isinstance(node, ast.Constant) and isinstance(node.value, float) and 1e-6 < node.value < 1e-2:
                    found.append(f"{path}:{node.lineno}: {node.value}")
                if isinstance(node, ast.keyword) and node.arg in ("rtol", "atol") and isinstance(node.value, ast.Constant):
                    found.append(f"{path}:{node.lineno}: {node.arg}={node.value.value}")
        self.assertEqual(found, [])

    def test_every_exported_batch_is_cpps_batch_limit(self):
        # a package takes any batch condbench runs (C++'s kMaxBatch, rules.json's max_batch): one
        # dimension of rows, made by condbench.inductor from the rule, and no other
        made = []
        for path, tree in package_trees():
            for node in ast.walk(tree):
                if isinstance(node, ast.Call) and ast.unparse(node.func).endswith("Dim"):
                    made.append((path, ast.unparse(node)))
        self.assertEqual(made, [("python/condbench/inductor.py", "torch.export.Dim('rows', min=1, max=MAX_BATCH)")])


def one_line_exit_2(test, call):
    """What call() said on stderr, having exited with code 2 and said one line."""
    said = io.StringIO()
    with test.assertRaises(SystemExit) as stopped, contextlib.redirect_stderr(said):
        call()
    test.assertEqual(stopped.exception.code, 2, said.getvalue())
    test.assertEqual(len(said.getvalue().splitlines()), 1, said.getvalue())
    return said.getvalue()


class Bounded(unittest.TestCase):
    """#59: the Python routes apply C++'s limits, relations and memory budget (rules.json) before they
    make anything; a bad value is one line and exit code 2, never a traceback; decoder save writes
    whole or not at all."""

    def setUp(self):
        try:
            import torch  # noqa: F401
        except ImportError as e:
            self.skipTest(f"no torch here ({e}): scripts/setup's .venv has it")
        self.dir = tempfile.TemporaryDirectory()
        self.addCleanup(self.dir.cleanup)

    def test_decoder_save_refuses_what_condbench_refuses(self):
        from unittest import mock

        from condbench import decoder
        path = os.path.join(self.dir.name, "w.pt")
        for args, said in [(["--layers", "1"], "exit_every must be below layers (an exit before the last layer), got "
                                               "exit_every=2 layers=1"),
                           (["--vocab", "300000"], "vocab must be in 1..262144, got 300000"),
                           (["--d-model", "0"], "d_model must be in 1..16384, got 0"),
                           (["--heads", "3"], "heads must divide d_model"),
                           (["--d-model", "x"], "argument --d-model: invalid int value: 'x'"),
                           (["--seed", "-1"], "--seed -1: not in 0..2^63-1"),
                           (["--d-model", "16384", "--vocab", "200000"],
                            "asks for 57.4 GiB, over condbench's memory budget of 8 GiB (docs/input.md): the weights")]:
            with self.subTest(args=args), mock.patch.object(sys, "argv", ["decoder", "save", path, *args]):
                self.assertIn(said, one_line_exit_2(self, decoder.main))
        self.assertEqual(os.listdir(self.dir.name), [])

    def test_decoder_save_never_replaces_what_is_not_a_regular_file(self):
        from unittest import mock

        from condbench import decoder
        precious = os.path.join(self.dir.name, "precious.pt")
        with open(precious, "wb") as f:
            f.write(b"precious")
        link, fifo = os.path.join(self.dir.name, "link.pt"), os.path.join(self.dir.name, "fifo.pt")
        os.symlink(precious, link)
        os.mkfifo(fifo)
        for path, said in [(link, "is a symbolic link, which it never replaces"),
                           (fifo, "is a FIFO, which it never replaces"),
                           (self.dir.name, "is a folder, which it never replaces")]:
            with self.subTest(path=path), mock.patch.object(sys, "argv", ["decoder", "save", path, "--layers", "4"]):
                self.assertIn(said, one_line_exit_2(self, decoder.main))
        with open(precious, "rb") as f:
            self.assertEqual(f.read(), b"precious")

    def test_decoder_save_over_the_budget_allocates_nothing(self):
        # under 6 GiB of address space: before #59 it asked torch for 57 GiB and died of a traceback
        saved = subprocess.run(["/bin/sh", "-c", f'ulimit -v {6 << 20} && exec "$@"', "limited", sys.executable, "-m",
                                "condbench.decoder", "save", os.path.join(self.dir.name, "w.pt"), "--d-model", "16384",
                                "--vocab", "200000"], capture_output=True, text=True, timeout=120)
        self.assertEqual(saved.returncode, 2, saved.stderr)
        self.assertIn("over condbench's memory budget", saved.stderr)
        self.assertEqual(len(saved.stderr.splitlines()), 1, saved.stderr)

    def test_decoder_save_leaves_the_old_file_whole_when_the_write_fails(self):
        path = os.path.join(self.dir.name, "w.pt")
        with open(path, "wb") as f:
            f.write(b"the weights that were there")
        # a file-size limit of 64 KiB: the new weights (some MB) cannot be written
        saved = subprocess.run(["/bin/sh", "-c", 'ulimit -f 128 && exec "$@"', "limited", sys.executable, "-m",
                                "condbench.decoder", "save", path, "--layers", "4"],
                               capture_output=True, text=True, timeout=120)
        self.assertEqual(saved.returncode, 2, saved.stderr)
        self.assertEqual(saved.stderr, f"decoder save: cannot write '{path}' (File too large); the file that was there "
                                       "is as it was\n")
        with open(path, "rb") as f:
            self.assertEqual(f.read(), b"the weights that were there")
        self.assertEqual(os.listdir(self.dir.name), ["w.pt"])

    def test_aoti_config_over_the_budget_is_refused_before_it_is_made(self):
        from condbench import aoti
        text = "decoder:vocab=512,d_model=1024,heads=4,layers=256,ffn=1024,context=16384,exit_every=2"
        said = one_line_exit_2(self, lambda: aoti.parse_config(text))
        self.assertIn(f"aoti: --config {text!r}: asks for ", said)
        self.assertIn("over condbench's memory budget of 8 GiB (docs/input.md): the key/value cache 1 rows x 256 layers "
                      "x 16384 context x 1024 d_model x 4 floats = 64 GiB", said)
        # the same sizes in a workload.json given to --workload
        model = os.path.join(self.dir.name, "decoder-x")
        os.makedirs(model)
        sizes = {key: int(value) for key, value in (item.split("=") for item in text.partition(":")[2].split(","))}
        with open(os.path.join(model, "workload.json"), "w") as f:
            json.dump({"config": {"family": "decoder", **sizes}}, f)
        said = one_line_exit_2(self, lambda: aoti.workload_configs(self.dir.name))
        self.assertIn(f"aoti: {model}/workload.json: asks for ", said)
        self.assertIn("the key/value cache 1 rows x 256 layers", said)

    def test_the_peer_refuses_a_workload_it_cannot_run_in_one_line(self):
        from condbench import peer
        root = self.dir.name
        model = os.path.join(root, "decoder-x")
        os.makedirs(model)
        meta = {"config": {"family": "decoder", "vocab": 512, "d_model": 1024, "heads": 4, "layers": 256, "ffn": 1024,
                           "context": 16384, "exit_every": 2, "prompt": 16, "generate": 32},
                "name_axes": [], "thresholds": {}, "agreement": {}}
        for name in ("prompts.pt", "weights.pt"):
            with open(os.path.join(model, name), "wb") as f:
                f.write(b"x")
        workload = os.path.join(model, "workload.json")
        for text, said in [(json.dumps(meta)[:40], "not a workload condbench --export-workload wrote (JSONDecodeError"),
                           (json.dumps({**meta, "config": {**meta["config"], "vocab": 10 ** 6}}),
                            "vocab must be in 1..262144, got 1000000"),
                           (json.dumps({**meta, "config": {**meta["config"], "heads": 3}}), "heads must divide d_model"),
                           (json.dumps(meta), "asks for 70.1 GiB, over condbench's memory budget of 8 GiB "
                                              "(docs/input.md): the key/value cache 1 rows x 256 layers x 16384 context "
                                              "x 1024 d_model x 4 floats = 64 GiB")]:
            with open(workload, "w") as f:
                f.write(text)
            with self.subTest(said=said):
                self.assertIn(f"peer: {workload}: {said}", one_line_exit_2(self, lambda: peer.load_workloads(root)))
        # a FIFO for a file it reads: refused, not waited on
        os.remove(workload)
        os.mkfifo(workload)
        self.assertIn("not a regular file (a FIFO)", one_line_exit_2(self, lambda: peer.load_workloads(root)))

    def test_the_peers_counters_weigh_its_walk_as_condbench_weighs_the_twins(self):
        import dataclasses

        from condbench.peer_result import counters_of
        from condbench.variants import Case
        walk = Case("c", loop=lambda n: 0.0, exits=(1, 2, 2, 4), blocks=3, host_syncs=lambda e: min(e, 3),
                    iterations=6)
        # an inference case: its timed iterations, the walk once and then its first two again
        self.assertEqual(counters_of(walk), {"host_syncs": 11 / 6, "exit_mean": 12 / 6, "exit_1": 2 / 6,
                                             "exit_2": 3 / 6, "exit_3": 0.0, "exit_4": 1 / 6})
        # a token case: every token of its sequences once, whatever the iterations
        for iterations in (2, 6):
            tokens = dataclasses.replace(walk, iterations=iterations, whole_walk=True)
            self.assertEqual(counters_of(tokens), {"host_syncs": 8 / 4, "exit_mean": 9 / 4, "exit_1": 1 / 4,
                                                   "exit_2": 2 / 4, "exit_3": 0.0, "exit_4": 1 / 4})

    def test_a_workload_is_read_once_into_a_frozen_typed_record(self):
        import dataclasses

        from condbench import workload
        model = os.path.join(self.dir.name, "mlp-x")
        os.makedirs(model)
        for name in ("pool.pt", "weights.pt"):
            with open(os.path.join(model, name), "wb") as f:
                f.write(b"x")
        meta = {"config": {"family": "mlp", "in_features": 32, "hidden": 64, "num_classes": 10, "blocks": 3},
                "name_axes": [["hidden", "64"], ["blocks", "3"]], "thresholds": {"exit:1": [0, 1.0, 1]},
                "walk": {"exit:1": [3, 1]}, "pool_rows": 4}
        with open(os.path.join(model, "workload.json"), "w") as f:
            json.dump(meta, f)
        [w] = workload.load(self.dir.name)
        self.assertEqual([one.directory for one in workload.load(model)], [w.directory])  # the folder printed
        from condbench import aoti  # the compiler reads the same folders (regular_file.workload_folders)
        self.assertEqual(aoti.workload_configs(model), aoti.workload_configs(self.dir.name))
        self.assertEqual(len(aoti.workload_configs(model)), 1)
        self.assertEqual((w.family, w.decodes, w.model_file, w.agreement), ("mlp", False, None, None))
        self.assertEqual(w.name_axes, (("hidden", "64"), ("blocks", "3")))
        self.assertEqual(w.thresholds, {"exit:1": (0.0, 1.0, 1.0)})
        self.assertTrue(all(isinstance(t, float) for t in w.thresholds["exit:1"]))
        self.assertEqual(w.walk, {"exit:1": (3, 1)})
        self.assertEqual(w.files(), ("pool.pt", "workload.json", "weights.pt"))
        with self.assertRaises(dataclasses.FrozenInstanceError):
            w.model_file = "elsewhere"  # type: ignore[misc]
        # scenarios as the model can run them: exit:K of its exits, a threshold per exit before the
        # last, in [0, 1], a walk inside the pool; and names of words and values
        for change, said in [({"thresholds": {"exit:5": [0, 1, 1]}, "walk": {"exit:5": [1]}}, "scenario 'exit:5'"),
                             ({"thresholds": {"exit:1": [0, 1]}}, "are not one in [0, 1] per exit before the last"),
                             ({"thresholds": {"exit:1": [float("nan"), 1, 1]}}, "are not one in [0, 1]"),
                             ({"walk": {"exit:1": [4]}}, "its walk is empty or leaves the input pool of 4 rows"),
                             ({"walk": {"exit:1": []}}, "its walk is empty"),
                             ({"name_axes": [["hidden", "64/batch:9"]]}, "name axis 'hidden':'64/batch:9'")]:
            with self.subTest(said=said):
                with open(os.path.join(model, "workload.json"), "w") as f:
                    json.dump({**meta, **change}, f)
                with self.assertRaisesRegex(workload.WorkloadError, re.escape(said)):
                    workload.load(self.dir.name)
        # a value of the wrong kind is the one line of a file condbench did not write
        with open(os.path.join(model, "workload.json"), "w") as f:
            json.dump({**meta, "walk": {"exit:1": ["three"]}}, f)
        with self.assertRaisesRegex(workload.WorkloadError, "not a workload condbench --export-workload wrote "
                                                            r"\(ValueError: invalid literal for int"):
            workload.load(self.dir.name)
        # an empty model file folder never passes for a built-in family whose sizes went unchecked
        with open(os.path.join(model, "workload.json"), "w") as f:
            json.dump({**meta, "model_file": "", "agreement": {}, "config": {**meta["config"], "hidden": 10 ** 9}}, f)
        with self.assertRaisesRegex(workload.WorkloadError, "model_file is '', not a compiled folder's path"):
            workload.load(self.dir.name)

    def test_a_package_is_made_again_when_the_path_it_took_changes(self):
        # source_digest covers condbench.aoti's own code and condbench.inductor's, which compiles and
        # checks: a changed check is a package made by other code
        import shutil
        from unittest import mock

        from condbench import aoti
        config = aoti.parse_config("mlp:in_features=4,hidden=8,num_classes=3,blocks=2")
        with tempfile.TemporaryDirectory() as copy:
            for name in os.listdir(PACKAGE):
                if name.endswith((".py", ".json")):
                    shutil.copy(os.path.join(PACKAGE, name), copy)
            with mock.patch.object(aoti, "HERE", copy):
                before = aoti.source_digest(config)
                self.assertEqual(before, aoti.source_digest(config))
                for name in ("inductor.py", "aoti.py", "deployed.py", "rules.json"):
                    with self.subTest(changed=name), open(os.path.join(copy, name), "a") as f:
                        f.write("\n")
                    self.assertNotEqual(aoti.source_digest(config), before)
                    before = aoti.source_digest(config)

    def test_a_relative_cache_folder_is_made_absolute_at_once(self):
        # a model() that changes the working folder changes nothing of where condbench's cache is
        from unittest import mock

        from condbench import inductor
        with mock.patch.dict(os.environ, {"CONDBENCH_AOTI_DIR": "relative/cache"}):
            self.assertEqual(inductor.cache_root(), os.path.join(os.getcwd(), "relative", "cache"))


if __name__ == "__main__":
    unittest.main(verbosity=2)
