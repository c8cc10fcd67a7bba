"""The condbench Python package (python/condbench) as a user and the tools reach it: installed
editable into the checkout's .venv by scripts/setup, run as modules, found by no path tricks. Runs
without the C++ build. Usage: test_package.py."""
import ast
import os
import subprocess
import sys
import unittest

ROOT = os.path.realpath(os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", ".."))
VENV_PYTHON = os.path.join(ROOT, ".venv", "bin", "python")
ENTRY_POINTS = ["aoti", "decoder", "model_file", "peer"]  # python -m condbench.NAME


def without_pythonpath():
    return {k: v for k, v in os.environ.items() if k not in ("PYTHONPATH", "PYTHONSAFEPATH")}


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
                self.assertIn("usage", result.stdout.lower())

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


if __name__ == "__main__":
    unittest.main(verbosity=2)
