"""Every tool in scripts/ answers --help and -h with its usage, exit code 0, at once, and without
side effects (no setup, no build, no file written)."""
import os
import subprocess
import sys
import unittest

ROOT = os.path.join(os.path.dirname(os.path.abspath(__file__)), "..")
SCRIPTS = ["aa-check", "build", "device-check", "device-compile", "device-prepare", "drift_allowance.py", "fuzz", "interval_widths.py",
           "profile", "readme.py", "run", "run_history.py", "setup", "test", "tidy"]


def repo_state():
    """What git sees as changed or new in the checkout (ignored build outputs excluded)."""
    result = subprocess.run(["git", "-C", ROOT, "status", "--porcelain", "--untracked-files=all"],
                            capture_output=True, text=True, timeout=60)
    return result.stdout if result.returncode == 0 else None


class ScriptsHelp(unittest.TestCase):
    def test_every_script_answers_help_without_side_effects(self):
        self.assertEqual(sorted(SCRIPTS), sorted(f for f in os.listdir(os.path.join(ROOT, "scripts"))
                                                 if not f.startswith(".") and f != "__pycache__"))
        before = repo_state()
        for script in SCRIPTS:
            path = os.path.join(ROOT, "scripts", script)
            command = [sys.executable, path] if script.endswith(".py") else ["bash", path]
            for flag in ["--help", "-h"]:
                with self.subTest(script=script, flag=flag):
                    result = subprocess.run(command + [flag], capture_output=True, text=True, timeout=60)
                    self.assertEqual(result.returncode, 0, result.stderr)
                    self.assertGreater(len(result.stdout.splitlines()), 1, result.stdout)
                    self.assertNotIn("setup: ready", result.stdout + result.stderr)  # nothing installed or built
        if before is not None:
            self.assertEqual(repo_state(), before)


if __name__ == "__main__":
    unittest.main(verbosity=2)
