"""condbench's benchmark names in Python, as include/condbench/result_format.h defines them: labels,
then key:value axes, e.g. early_exit/cpu/python/py_if/exit:2/batch:1/hidden:64/blocks:3. Used by
the peer (bench/python/peer.py) to build names, and by the maintainers' statistics scripts
(scripts/drift_allowance.py, scripts/interval_widths.py) to read them: the Python twin of
BenchmarkId::read, which condbench's own readers (the console, condbench-report) go through. An axis
a reader does not know is kept, never dropped."""


def build(labels, axes):
    """labels: [str]; axes: [(key, value)] in order."""
    return "/".join(list(labels) + [f"{k}:{v}" for k, v in axes])


def parse(name):
    """(labels, axes) of a name, or None when it is not labels and key:value axes."""
    labels, axes = [], []
    for part in name.split("/"):
        key, colon, value = part.partition(":")
        if not part or (colon and (not key or not value or ":" in value)):
            return None
        if colon:
            axes.append((key, value))
        else:
            labels.append(part)
    return labels, axes


def scenario(axes):
    """The scenario axis, "exit:2" or "mix:early", or None."""
    return next((f"{k}:{v}" for k, v in axes if k in ("exit", "mix")), None)


def without_scenario(name):
    """The name with its scenario axis left out: what the scenarios of one configuration share, or
    None for a name that is not labels and axes."""
    parsed = parse(name)
    if parsed is None:
        return None
    labels, axes = parsed
    return build(labels, [(k, v) for k, v in axes if k not in ("exit", "mix")])
