"""What the Python tests share: running a tool, and a model file's early-exit answer computed from
the module itself (no code of condbench's), the reference the model-file tests check against."""
import os
import subprocess
import tempfile

ROOT = os.path.join(os.path.dirname(os.path.abspath(__file__)), "..")
PYTHON = os.path.join(ROOT, ".venv", "bin", "python")  # scripts/setup's environment


def run(*args, timeout=600, env=None, **kwargs):
    """The command's CompletedProcess, its output as text; `env` is added to this environment (a
    variable given None is removed)."""
    if env is not None:
        env = {key: value for key, value in {**os.environ, **env}.items() if value is not None}
    return subprocess.run(list(args), capture_output=True, text=True, timeout=timeout, env=env, **kwargs)


def kept_source(cache, name, text):
    """`text` as the model file `name` in `cache`'s sources/ folder, where it stays: a compiled folder
    is keyed by the file's path and content, so the next run and the ASan stage find it compiled
    (a temporary path compiled it again: a minute or more a model). Written only when it differs."""
    folder = os.path.join(cache, "sources")
    os.makedirs(folder, exist_ok=True)
    path = os.path.join(folder, name)
    if os.path.isfile(path):
        with open(path) as f:
            if f.read() == text:
                return path
    fd, temp = tempfile.mkstemp(dir=folder, suffix=".tmp")  # whole or not at all, whoever else writes it
    with os.fdopen(fd, "w") as f:
        f.write(text)
    os.replace(temp, path)
    return path


def max_softmax(logits):
    import torch
    return torch.softmax(logits, -1).amax(-1)


def module_forward(module, x, thresholds, confidence=max_softmax):
    """The early-exit answer of a stages-and-exits module (docs/your-model.md): (exit ids 1.., the
    logits each row leaves with, the scores [rows, stages]). A row leaves at the first exit whose
    score is above its threshold, else at the final head. `x` may be a tuple (token ids and a mask):
    the first stage takes them all."""
    import torch
    inputs = x if isinstance(x, tuple) else (x,)
    with torch.no_grad():
        h, scores, heads = None, [], []
        for k, stage in enumerate(module.stages):
            h = stage(*inputs) if k == 0 else stage(h)
            heads.append(module.exits[k](h))
            scores.append(confidence(heads[-1]))
        heads.append(module.final(h))
    ids, logits = [], []
    for r in range(inputs[0].shape[0]):
        k = next((k for k in range(len(scores)) if scores[k][r] > thresholds[k]), len(scores))
        ids.append(k + 1)
        logits.append(heads[k][r])
    return ids, torch.stack(logits), torch.stack(scores, 1)


SKIPPED = 77  # the exit code of a suite whose every test skipped: ctest's SKIP_RETURN_CODE for it


def main():
    """unittest.main for a suite ctest runs one class at a time (tests/CMakeLists.txt's
    condbench_python_classes): exit code 1 when a test failed, SKIPPED when every test that ran was
    skipped (FullDisk without a tmpfs it may mount), so that ctest shows it skipped, not passed."""
    import sys
    import unittest

    result = unittest.main(verbosity=2, exit=False).result
    if not result.wasSuccessful():
        sys.exit(1)
    sys.exit(SKIPPED if result.testsRun and len(result.skipped) == result.testsRun else 0)
