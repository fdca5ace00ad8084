#!/usr/bin/env python3
"""bf16 -> e4m3 quantization with each scaling (per tensor, a given per-tensor scale, delayed
scaling's cast by a given scale that also finds x's amax, per row, 1x128 groups, 128x128 blocks):
gemmforge's op beside torch eager and torch.compile of the same computation, against a copy of the
same bytes, in one run.

Runs on the GPU machine (the package on PYTHONPATH):  python3 bench/quantize_vs_torch.py [--json out.json]
Bandwidth counts x read once and q and the scales written once (bytes / time); each is timed as a
CUDA graph's replay after an L2 flush, so the host's call costs are not in it. The copy beside each
shape moves as many bytes (half read, half written), timed the same way: a ~10 us kernel pays
fixed costs a 2 GiB copy does not.
"""
import argparse
import json

import torch

import gemmforge.torch  # noqa: F401  (registers torch.ops.gemmforge)
from common import bench_us, graphed_us

SHAPES = [(4096, 4096), (4096, 14336), (16384, 4096), (8192, 28672)]
# static: a given per-tensor scale; delayed: the same cast, x's amax (the next step's scale) found on the way
SCALINGS = ("tensor", "static", "delayed", "row", "1x128", "128x128")
FP8 = torch.float8_e4m3fn
FMAX = torch.finfo(FP8).max
STATIC_SCALE = None  # set in main(): a calibrated scale, as serving stacks keep for activations


def torch_quantize(x, scaling):
    """The reference computation in plain torch (scales as gemmforge lays them out)."""
    a = x.float()
    rows, cols = a.shape
    if scaling == "static":
        return (a / STATIC_SCALE).clamp(-FMAX, FMAX).to(FP8), STATIC_SCALE
    if scaling == "delayed":
        return (a / STATIC_SCALE).clamp(-FMAX, FMAX).to(FP8), a.abs().amax()
    if scaling == "tensor":
        amax = a.abs().amax()
        scale = torch.where(amax > 0, amax / FMAX, 1.0)
        return (a / scale).clamp(-FMAX, FMAX).to(FP8), scale
    if scaling == "row":
        amax = a.abs().amax(dim=1, keepdim=True)
        scale = torch.where(amax > 0, amax / FMAX, 1.0)
        return (a / scale).clamp(-FMAX, FMAX).to(FP8), scale
    if scaling == "1x128":
        g = a.view(rows, cols // 128, 128)
        amax = g.abs().amax(dim=2, keepdim=True)
        scale = torch.where(amax > 0, amax / FMAX, 1.0)
        return (g / scale).clamp(-FMAX, FMAX).to(FP8).view(rows, cols), scale.view(rows, -1)
    b = a.view(rows // 128, 128, cols // 128, 128)
    amax = b.abs().amax(dim=(1, 3), keepdim=True)
    scale = torch.where(amax > 0, amax / FMAX, 1.0)
    return (b / scale).clamp(-FMAX, FMAX).to(FP8).view(rows, cols), scale.view(rows // 128, cols // 128)


def gemmforge_static(x, scaling, fp8):
    """quantize_fp8_static in quantize_fp8's form: (q, scale)."""
    return torch.ops.gemmforge.quantize_fp8_static(x, STATIC_SCALE, fp8), STATIC_SCALE


def gemmforge_delayed(x, scaling, fp8):
    """quantize_fp8_delayed in quantize_fp8's form: (q, amax)."""
    return torch.ops.gemmforge.quantize_fp8_delayed(x, STATIC_SCALE, fp8)


OPS = {"static": gemmforge_static, "delayed": gemmforge_delayed}


def copy_tbps():
    src = torch.empty(1 << 31, dtype=torch.uint8, device="cuda")
    dst = torch.empty_like(src)
    return 2 * src.numel() / (bench_us(dst.copy_, src) * 1e-6) / 1e12


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--json")
    ap.add_argument("--scalings", default=",".join(SCALINGS), help="comma-separated, of " + ", ".join(SCALINGS))
    ap.add_argument("--no-torch", action="store_true", help="gemmforge and the copy alone (A/B turns)")
    args = ap.parse_args()
    scalings = args.scalings.split(",")
    bad = [s for s in scalings if s not in SCALINGS]
    if bad:
        ap.error(f"unknown scaling {', '.join(bad)} (of {', '.join(SCALINGS)})")
    global STATIC_SCALE
    STATIC_SCALE = torch.tensor(4.0 / FMAX, device="cuda")
    copy = copy_tbps()
    # One compiled graph per scaling and shape: the default cache of 8 graphs per function made the
    # later shapes fall back to eager (the 2026-12-03 runs read eager's speed there).
    torch._dynamo.config.cache_size_limit = 64
    compiled = torch.compile(torch_quantize, dynamic=False)
    rows = []
    for r, c in SHAPES:
        x = torch.randn(r, c, device="cuda", dtype=torch.bfloat16)
        for scaling in scalings:
            op = OPS.get(scaling, torch.ops.gemmforge.quantize_fp8)
            q, s = op(x, scaling, FP8)
            want_q, _ = torch_quantize(x, scaling)
            agree = (q.float() == want_q.float()).float().mean().item()
            nbytes = x.numel() * 2 + q.numel() + s.numel() * 4
            tb = lambda us: nbytes / (us * 1e-6) / 1e12
            # The copy's half rounded up to 64 KiB: torch copied the per-tensor scalings' sizes (a
            # few bytes past a round number) 30-45% slower, which flattered the op beside them.
            half = -(-nbytes // 2 // 65536) * 65536
            src = torch.empty(half, dtype=torch.uint8, device="cuda")
            dst = torch.empty_like(src)
            row = {"scaling": scaling, "shape": f"{r}x{c}", "agree": agree,
                   "copy_same_bytes": 2 * half / (graphed_us(dst.copy_, src) * 1e-6) / 1e12,
                   "gemmforge": tb(graphed_us(op, x, scaling, FP8)),
                   "eager": None if args.no_torch else tb(graphed_us(torch_quantize, x, scaling)),
                   "compile": None if args.no_torch else tb(graphed_us(compiled, x, scaling))}
            rows.append(row)
        del x
    print(f"copy bandwidth {copy:.2f} TB/s (torch copy_ of 2 GiB, same run)")
    print(f"{'scaling':8} {'rows x cols':13} {'eager':>7} {'compile':>8} {'gemmforge':>10} {'copy':>6} "
          f"{'% copy':>7} {'q agrees':>9}")
    for row in rows:
        torch_cols = "      -        -" if args.no_torch else f"{row['eager']:7.2f} {row['compile']:8.2f}"
        print(f"{row['scaling']:8} {row['shape']:13} {torch_cols} "
              f"{row['gemmforge']:10.2f} {row['copy_same_bytes']:6.2f} "
              f"{100 * row['gemmforge'] / row['copy_same_bytes']:7.1f} {row['agree']:9.4f}")
    if args.json:
        json.dump({"copy_tbps": copy, "rows": rows}, open(args.json, "w"), indent=2)


if __name__ == "__main__":
    main()
