"""Runs an AOTInductor package on saved calls in a process of its own: condbench.inductor checks a CUDA
package this way, so that a loader that crashes ends this process and not the compile.

usage: python -X faulthandler -m condbench.package_run PACKAGE CALLS OUTPUTS
  CALLS    a torch.save'd list of calls, each a tuple of the package's inputs
  OUTPUTS  written with torch.save: the package's outputs, one per call
"""
import sys

from . import inductor


def main(argv: list[str]) -> int:
    if len(argv) != 3:
        print(__doc__.strip().splitlines()[-3], file=sys.stderr)
        return 2
    import torch

    package_path, calls_path, outputs_path = argv
    calls = torch.load(calls_path)
    torch.save(inductor.outputs(inductor.load(package_path), calls), outputs_path)
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
