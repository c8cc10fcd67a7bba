#!/usr/bin/env python3
"""Inductor's torch.cond reads a channels_last buffer as NCHW: a reproducer.

One Conv2d, then one torch.cond whose two branches read the convolution's output. Inductor's
layout optimization (on by default; on the CPU it is chosen for any graph with a convolution when
oneDNN is there) stores the convolution's output channels_last, and the lowering of torch.cond
(Switch.create in torch/_inductor/ir.py) hands that buffer to the branch subgraphs without the
strides they were traced with: a branch reads the NHWC bytes as if they were NCHW. AOTInductor and
torch.compile with cpp_wrapper=True return wrong numbers without a word; torch.compile's Python
wrapper stops at its assert_size_stride check.

This script prints the installed torch's version, the largest difference from eager of: the
exported program, AOTInductor, torch.compile (default and cpp_wrapper=True), and each compiled route
again with layout_optimization=False (the workaround); then the proof of the cause: the wrong output
against the branch applied to the convolution's NHWC bytes read as NCHW. Its last line is one of

  verdict: present (torch X)   the bug is in this torch
  verdict: fixed (torch X)     every compiled route agrees with eager
  verdict: other (torch X)     a compiled route is wrong in another way (read the lines above)

and it exits 0 in every case: it reports a fact about the torch in use, it does not test condbench.

  python3 cond_channels_last.py [--device cpu|cuda] [--json FILE]

Self-contained (torch only), so it can be pasted into an upstream issue as it is.
"""
import argparse
import contextlib
import io
import json
import logging
import os
import sys
import tempfile

import torch
from torch import nn


class ConvThenCond(nn.Module):
    """The smallest module that shows it: a convolution, then a torch.cond on its output."""

    def __init__(self):
        super().__init__()
        self.conv = nn.Conv2d(3, 8, kernel_size=3, padding=1)

    def forward(self, x, threshold):
        h = self.conv(x)
        # Both branches read h element by element in its logical (NCHW) order: flatten does.
        return torch.cond(h.mean() > threshold, lambda h: h.flatten(1) * 2.0, lambda h: h.flatten(1) - 1.0, (h,))


def quiet(fn, *args, **kwargs):
    """fn's result, or the exception it raised; Inductor's own logging kept off the console."""
    with contextlib.redirect_stdout(io.StringIO()), contextlib.redirect_stderr(io.StringIO()):
        try:
            return fn(*args, **kwargs)
        except Exception as e:  # noqa: BLE001 -- a route that fails is a result too
            return e


def first_line(e):
    return f"{type(e).__name__}: {(str(e).strip().splitlines() or [''])[0][:160]}"


def aot_inductor(program, folder, name, options):
    path = os.path.join(folder, f"{name}.pt2")
    torch._inductor.aoti_compile_and_package(program, package_path=path, inductor_configs=options)
    return torch._inductor.aoti_load_package(path)


def main():
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--device", default="cpu", choices=["cpu", "cuda"])
    parser.add_argument("--json", help="also write the results to this file")
    args = parser.parse_args()
    if args.device == "cuda" and not torch.cuda.is_available():
        sys.exit("cond_channels_last: --device=cuda: no CUDA device here")
    logging.getLogger("torch").setLevel(logging.CRITICAL)
    torch.manual_seed(0)
    model = ConvThenCond().to(args.device).eval()
    for p in model.parameters():
        p.requires_grad_(False)  # torch.export of torch.cond: frozen parameters
    x = torch.randn(2, 3, 8, 8, device=args.device)
    threshold = torch.tensor(-100.0, device=args.device)  # the true branch: h.flatten(1) * 2
    with torch.no_grad():
        eager = model(x, threshold)
        h = model.conv(x)
        # The proof of the cause: h stored channels_last (NHWC), its bytes read back as NCHW.
        nhwc_bytes_as_nchw = h.permute(0, 2, 3, 1).contiguous().view(h.shape)
        misread = nhwc_bytes_as_nchw.flatten(1) * 2.0
    version = torch.__version__
    print(f"torch {version}, device {args.device}, oneDNN (mkldnn) {torch.backends.mkldnn.is_available()}")
    print(f"eager torch.cond against the module without cond: "
          f"{(eager - h.flatten(1) * 2.0).abs().max().item():.3g}")

    program = quiet(torch.export.export, model, (x, threshold))
    routes = {}
    with tempfile.TemporaryDirectory() as folder:
        if isinstance(program, Exception):
            routes["torch.export"] = program
        else:
            routes["torch.export (the exported program, eager)"] = quiet(lambda: program.module()(x, threshold))
            routes["AOTInductor"] = quiet(lambda: aot_inductor(program, folder, "default", {})(x, threshold))
            routes["AOTInductor, layout_optimization=False"] = quiet(
                lambda: aot_inductor(program, folder, "workaround", {"layout_optimization": False})(x, threshold))
        for label, options in (("torch.compile", {}), ("torch.compile, cpp_wrapper=True", {"cpp_wrapper": True}),
                               ("torch.compile, layout_optimization=False", {"layout_optimization": False}),
                               ("torch.compile, cpp_wrapper=True, layout_optimization=False",
                                {"cpp_wrapper": True, "layout_optimization": False})):
            torch._dynamo.reset()
            routes[label] = quiet(lambda: torch.compile(model, options=options)(x, threshold))

    results = {"torch": version, "device": args.device, "routes": {}}
    wrong_default, wrong_workaround, misread_matches = [], [], []
    for label, out in routes.items():
        if isinstance(out, Exception):
            text = f"raises {first_line(out)}"
            results["routes"][label] = {"error": first_line(out)}
            (wrong_workaround if "layout_optimization" in label else wrong_default).append(label)
        else:
            out = out[0] if isinstance(out, (tuple, list)) else out
            diff = (out - eager).abs().max().item()
            as_misread = (out - misread).abs().max().item()
            text = f"max |difference from eager| {diff:.3g}" + \
                   (f"; from the NHWC bytes read as NCHW {as_misread:.3g}" if diff > 1e-4 else "")
            results["routes"][label] = {"max_abs_difference": diff, "from_nhwc_read_as_nchw": as_misread}
            if diff > 1e-4:
                (wrong_workaround if "layout_optimization" in label else wrong_default).append(label)
                if as_misread < 1e-5:
                    misread_matches.append(label)
        print(f"  {label:<60} {text}")
    if not wrong_default and not wrong_workaround:
        verdict = "fixed"
    elif wrong_default and not wrong_workaround and misread_matches:
        verdict = "present"
    else:
        verdict = "other"
    results["verdict"] = verdict
    if misread_matches:
        print(f"cause: {', '.join(misread_matches)} return the convolution's NHWC bytes read as NCHW (to 1e-5)")
    print(f"verdict: {verdict} (torch {version})")
    if args.json:
        with open(args.json, "w") as f:
            json.dump(results, f, indent=1)


if __name__ == "__main__":
    main()
