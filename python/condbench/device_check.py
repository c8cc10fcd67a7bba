"""What scripts/device-check and scripts/device-prepare read in Python, as commands (no torch
needed: the prepare step runs before any environment, the GPU machine installs nothing):

    python -m condbench.device_check trace FILE           condbench --trace's Chrome trace: its host
                                                          inference ranges and GPU spans in one line;
                                                          exit 1 when either is missing
    python -m condbench.device_check compile-times FOLDER a compiled model file's per-package compile
                                                          times, from its manifest.json
    python -m condbench.device_check kernels FILE [--top N]
                                                          condbench --kernel-trace's Chrome trace as a
                                                          table: each GPU kernel (or, without any, each
                                                          ATen operator) by total time, its calls and
                                                          mean
    python -m condbench.device_check unpack-wheel WHL DIR what a build needs of a torch wheel (its
                                                          headers, CMake config and libraries) into DIR
"""
import argparse
import json
import sys
import zipfile
from typing import Any, Sequence

from .model_source import ProtocolError, read_manifest
from .rules import GPU_TRACK  # the --trace file's track of GPU spans, as C++ names it (nvtx::kGpuTrack)

WHEEL_PARTS = ("torch/include/", "torch/share/cmake/", "torch/lib/")
# One event of a Chrome trace as JSON gives it (its fields are the tracer's: ph, tid, name, dur, ...)
TraceEvent = dict[str, Any]


def trace_summary(path: str) -> tuple[list[TraceEvent], list[TraceEvent]]:
    """(host inference ranges, GPU spans) of a condbench --trace file."""
    with open(path, encoding="utf-8") as f:
        events: list[TraceEvent] = json.load(f)["traceEvents"]
    gpu = {e["tid"] for e in events if e.get("ph") == "M" and e.get("args", {}).get("name") == GPU_TRACK}
    spans = [e for e in events if e.get("ph") == "X" and e["tid"] in gpu]
    host = [e for e in events if e.get("ph") == "X" and e["tid"] not in gpu and e.get("name") == "inference"]
    return host, spans


GPU_CATEGORIES = ("kernel", "gpu_memcpy", "gpu_memset")  # what Kineto records on the GPU's timeline


def kernel_table(path: str, top: int = 25) -> list[str]:
    """The lines of a kernel table: name, calls, total and mean µs and share of the GPU's time, the
    largest total first; a trace without GPU events tables its host operators (cpu_op) instead."""
    with open(path, encoding="utf-8") as f:
        events = [e for e in json.load(f)["traceEvents"] if e.get("ph") == "X"]
    gpu = [e for e in events if e.get("cat") in GPU_CATEGORIES]
    chosen, what = (gpu, "GPU kernels and copies") if gpu else \
        ([e for e in events if e.get("cat") == "cpu_op"], "host operators (no GPU events in this trace)")
    totals: dict[str, tuple[int, float]] = {}
    for e in chosen:
        calls, us = totals.get(e["name"], (0, 0.0))
        totals[e["name"]] = (calls + 1, us + float(e.get("dur", 0)))
    whole = sum(us for _, us in totals.values()) or 1.0
    lines = [f"{what}: {len(chosen)} events, {whole:.0f} us in all",
             f"{'total us':>10} {'share':>6} {'calls':>7} {'mean us':>9}  name"]
    for name, (calls, us) in sorted(totals.items(), key=lambda item: -item[1][1])[:top]:
        lines.append(f"{us:10.1f} {100 * us / whole:5.1f}% {calls:7d} {us / calls:9.2f}  {name[:120]}")
    return lines


def compile_times(folder: str) -> str:
    """"model file compile: stage0.pt2 41.2 s, ..." from a compiled folder's manifest.json."""
    compile_s = read_manifest(folder).compile_s
    return "model file compile: " + ", ".join(f"{k} {v:.1f} s" for k, v in compile_s.items())


def unpack_wheel(wheel: str, destination: str) -> int:
    """Extracts the parts of a torch wheel a build needs; returns how many files."""
    count = 0
    with zipfile.ZipFile(wheel) as z:
        for name in z.namelist():
            if name.startswith(WHEEL_PARTS):
                z.extract(name, destination)
                count += 1
    return count


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m condbench.device_check", description=__doc__,
                                     formatter_class=argparse.RawDescriptionHelpFormatter)
    sub = parser.add_subparsers(dest="command", required=True)
    sub.add_parser("trace").add_argument("file")
    sub.add_parser("compile-times").add_argument("folder")
    kernels = sub.add_parser("kernels")
    kernels.add_argument("file")
    kernels.add_argument("--top", type=int, default=25)
    wheel = sub.add_parser("unpack-wheel")
    wheel.add_argument("wheel")
    wheel.add_argument("destination")
    args = parser.parse_args(argv)
    try:
        if args.command == "trace":
            host, spans = trace_summary(args.file)
            print(f"trace: {len(host)} host inference ranges, {len(spans)} GPU spans, durations (us): "
                  + " ".join(f"{e['dur']:.1f}" for e in spans[:16]))
            return 0 if spans and host else 1
        if args.command == "kernels":
            print("\n".join(kernel_table(args.file, args.top)))
            return 0
        if args.command == "compile-times":
            print(compile_times(args.folder))
            return 0
        if unpack_wheel(args.wheel, args.destination) == 0:
            print(f"device_check: {args.wheel} holds none of {', '.join(WHEEL_PARTS)}", file=sys.stderr)
            return 1
        return 0
    except (OSError, ValueError, KeyError, TypeError, zipfile.BadZipFile, ProtocolError) as e:
        print(f"device_check: {args.command}: {type(e).__name__}: {e}", file=sys.stderr)
        return 2


if __name__ == "__main__":
    sys.exit(main())
