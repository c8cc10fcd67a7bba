"""condbench's benchmark names in Python, as include/condbench/result_format.h defines them: labels,
then key:value axes, e.g. early_exit/cpu/python/py_if/exit:2/batch:1/hidden:64/blocks:3. Used by
the peer (bench/python/peer.py) to build names. They are read in one place, condbench's own
BenchmarkId::read (condbench-report and its --table read the peer's files too)."""


def build(labels, axes):
    """labels: [str]; axes: [(key, value)] in order."""
    return "/".join(list(labels) + [f"{k}:{v}" for k, v in axes])
