"""tests/tools.py, which the Python suites share: main's exit codes, which ctest reads (a class whose
every test skipped is shown skipped: SKIP_RETURN_CODE), and run's environment. Usage: test_tools.py."""
import os
import sys
import tempfile
import textwrap
import unittest

from tools import SKIPPED, run

HERE = os.path.dirname(os.path.abspath(__file__))


class Main(unittest.TestCase):
    def suite(self, body):
        """The exit code of a suite of one class whose tests are `body`, run through tools.main."""
        with tempfile.TemporaryDirectory() as folder:
            path = os.path.join(folder, "suite.py")
            with open(path, "w") as f:
                f.write("import unittest\nfrom tools import main\n\n\nclass Suite(unittest.TestCase):\n" +
                        textwrap.indent(body, "    ") + "\n\nmain()\n")
            return run(sys.executable, path, timeout=120, env={"PYTHONPATH": HERE}).returncode

    def test_every_test_skipped_is_skipped_one_passing_is_a_pass_one_failing_a_failure(self):
        skip = '@unittest.skip("no tmpfs")\ndef test_{0}(self):\n    pass\n'
        self.assertEqual(self.suite(skip.format("a") + skip.format("b")), SKIPPED)
        self.assertEqual(self.suite(skip.format("a") + "def test_b(self):\n    pass\n"), 0)
        self.assertEqual(self.suite(skip.format("a") + "def test_b(self):\n    self.fail()\n"), 1)
        self.assertEqual(self.suite("def test_b(self):\n    raise RuntimeError\n"), 1)


class Run(unittest.TestCase):
    def test_env_is_added_to_this_environment_and_none_removes_a_variable(self):
        os.environ["CONDBENCH_TOOLS_TEST"] = "kept"
        show = "import os; print(os.environ.get('CONDBENCH_TOOLS_TEST'), os.environ.get('CONDBENCH_TOOLS_ADDED'))"
        self.assertEqual(run(sys.executable, "-c", show).stdout.split(), ["kept", "None"])
        self.assertEqual(run(sys.executable, "-c", show, env={"CONDBENCH_TOOLS_ADDED": "1"}).stdout.split(), ["kept", "1"])
        self.assertEqual(run(sys.executable, "-c", show, env={"CONDBENCH_TOOLS_TEST": None}).stdout.split(),
                         ["None", "None"])


if __name__ == "__main__":
    unittest.main(verbosity=2)
