"""The condbench package (python/condbench) passes mypy --strict with its configuration
(python/pyproject.toml's [tool.mypy]): every function typed and torch's own types followed, so that a
call with the wrong type (a list where a tensor of thresholds goes, a key a case does not have) fails
here rather than in a benchmark run. Runs without the C++ build; mypy is scripts/setup's, pinned.

Usage: test_types.py [CACHE]: mypy's cache in the folder CACHE (ctest gives one under the build
folder, so that a fresh build checks cold and a rebuild warm), else the configuration's."""
import importlib.util
import os
import subprocess
import sys
import unittest

ROOT = os.path.realpath(os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", ".."))
CONFIG = os.path.join(ROOT, "python", "pyproject.toml")
PACKAGE = os.path.join(ROOT, "python", "condbench")
CACHE = sys.argv[1] if len(sys.argv) > 1 and not sys.argv[1].startswith("-") else None
if CACHE:
    del sys.argv[1]


class Types(unittest.TestCase):
    def test_the_package_passes_mypy_strict(self) -> None:
        if importlib.util.find_spec("mypy") is None:
            self.fail(f"mypy is not installed for {sys.executable}: run scripts/setup")
        cache = ["--cache-dir", CACHE] if CACHE else []
        checked = subprocess.run([sys.executable, "-m", "mypy", "--strict", "--config-file", CONFIG, *cache, PACKAGE],
                                 cwd=ROOT, capture_output=True, text=True, timeout=280)
        self.assertEqual(checked.returncode, 0, f"mypy --strict:\n{checked.stdout}{checked.stderr}")


if __name__ == "__main__":
    unittest.main(verbosity=2)
