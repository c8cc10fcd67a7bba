"""condbench's benchmark names as the peer (condbench.peer) writes them, in the grammar
include/condbench/result_format.h defines: labels, then key:value axes, e.g.
early_exit/cpu/python/py_if/exit:2/batch:1/hidden:64/blocks:3. Only written here: every name is
read by C++ (BenchmarkId::read), and the scripts that need names read condbench-report's JSON."""
from typing import Iterable


def build(labels: Iterable[str], axes: Iterable[tuple[str, object]]) -> str:
    """labels: [str]; axes: [(key, value)] in order."""
    return "/".join(list(labels) + [f"{k}:{v}" for k, v in axes])
