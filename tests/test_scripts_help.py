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

    def test_run_gives_a_reference_run_its_wait_once_whichever_way_flags_are_written(self):
        def dry(*flags):
            result = subprocess.run(["bash", os.path.join(ROOT, "scripts", "run"), "--dry-run", *flags],
                                    capture_output=True, text=True, timeout=60)
            self.assertEqual(result.returncode, 0, result.stderr)
            return result.stdout.splitlines()[-1].split()  # condbench's run command

        self.assertIn("--wait-quiet=600", dry("--require-quiet"))
        self.assertNotIn("--wait-quiet=600", dry("--require-quiet", "--wait-quiet=30"))
        run = dry("--require-quiet", "--wait-quiet", "30", "--answer-budget", "60")
        self.assertNotIn("--wait-quiet=600", run)
        self.assertNotIn("--answer-budget=120", run)  # no default budget beside the given one
        self.assertEqual(run[run.index("--answer-budget") + 1], "60")
        self.assertNotIn("--wait-quiet=600", dry())  # only a reference run waits


if __name__ == "__main__":
    unittest.main(verbosity=2)
