#!/usr/bin/env python3
"""fp8 GEMMs (e4m3, bf16 out) with per-tensor, rowwise and 1x128 / 128x128 block scales: gemmforge's
scaled_mm op, tuned over its backends, beside torch._scaled_mm with fast accumulation off and on
(block scales where this torch takes them), in one run.

Runs on the GPU machine (the package on PYTHONPATH):
    python3 bench/scaled_mm_vs_torch.py [--model llama3-8b] [--tokens 16,128,4096] [--scalings tensor,rowwise,block]
                                        [--backends cublaslt,native,triton] [--json out.json]
Each call is captured in a CUDA graph and timed as the graph's replay after an L2 flush, so the
host's call costs are in neither side. gemmforge's result is checked against torch's (fast
accumulation off) before timing.
"""
import argparse
import json
import math

import torch

import gemmforge
import gemmforge.torch  # noqa: F401  (registers torch.ops.gemmforge)
from common import graphed_us

FP8 = torch.float8_e4m3fn
KINDS = {"tensor": "tensor", "rowwise": "rowcol", "block": "block128"}  # gemmforge's name of each scaling


def operands(m, n, k, scaling):
    """a (M x K) and b (K x N, column-major: a weight's transpose) in e4m3 from data in [-1, 1),
    and their scales: one float each, one per row of a and per column of b, or (block) one per 1x128
    group of a, M-major (M x K/128, stride (1, M)), and one per 128x128 block of b (K/128 x N/128,
    its transpose contiguous), as torch lays them out."""
    a = (torch.rand(m, k, device="cuda") * 2 - 1).to(FP8)
    b = (torch.rand(n, k, device="cuda") * 2 - 1).to(FP8).t()
    if scaling == "tensor":
        sa, sb = torch.tensor(0.5, device="cuda"), torch.tensor(0.25, device="cuda")
    elif scaling == "rowwise":
        sa = torch.rand(m, 1, device="cuda") + 0.5
        sb = torch.rand(1, n, device="cuda") + 0.5
    else:
        kb, nb = -(-k // 128), -(-n // 128)
        sa = (torch.rand(kb, m, device="cuda") + 0.5).t()
        sb = (torch.rand(nb, kb, device="cuda") + 0.5).t()
    return a, b, sa, sb


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--model", default="llama3-8b", help="a shipped model: its layer's GEMMs (not the head)")
    ap.add_argument("--tokens", default="16,128,4096")
    ap.add_argument("--scalings", default="tensor,rowwise,block")
    ap.add_argument("--backends", default="cublaslt,native,triton", help="gemmforge's backends to tune over")
    ap.add_argument("--json")
    args = ap.parse_args()
    tokens = [int(t) for t in args.tokens.split(",")]
    backends = args.backends.split(",")
    gemms = [(g.name, g.problem.m, g.problem.n, g.problem.k)
             for g in gemmforge.model_problems(args.model, tokens=tokens) if g.name != "lm_head"]

    rows = []
    for scaling in args.scalings.split(","):
        specs = [f"{m}x{n}x{k}:e4m3->bf16:scale={KINDS[scaling]}" for _, m, n, k in gemms]
        # Tuned first (into the DB the op's runtime reads), in the order given.
        decisions = gemmforge.tune(specs, backends=backends, search="fast", progress=False)
        for (name, m, n, k), decision in zip(gemms, decisions):
            a, b, sa, sb = operands(m, n, k, scaling)
            row = {"model": args.model, "gemm": name, "m": m, "n": n, "k": k, "scaling": scaling,
                   "gemmforge_pick": f'{decision["backend"]}:{decision["candidate"]}'}

            def torch_mm(fast):
                return torch._scaled_mm(a, b, sa, sb, out_dtype=torch.bfloat16, use_fast_accum=fast)

            def ours():
                return torch.ops.gemmforge.scaled_mm(a, b, sa, sb, None, torch.bfloat16)

            got = ours().float()
            try:
                ref = torch_mm(False).float()
                row["rel_diff"] = float((got - ref).norm() / ref.norm().clamp_min(1e-30))
            except Exception:  # noqa: BLE001  (timed below, where the error is kept)
                row["rel_diff"] = None
            for key, fn in (("torch_us", lambda: torch_mm(False)), ("torch_fast_accum_us", lambda: torch_mm(True)),
                            ("gemmforge_us", ours)):
                try:
                    row[key] = graphed_us(fn)
                except Exception as e:  # noqa: BLE001  (a mode this torch lacks, or a failure: kept, not fatal)
                    row[key] = None
                    row[key.replace("_us", "_error")] = str(e).splitlines()[0][:200]
            rows.append(row)
            torch_times = [t for t in (row["torch_us"], row["torch_fast_accum_us"]) if t]
            speed = min(torch_times) / row["gemmforge_us"] if torch_times and row["gemmforge_us"] else math.nan
            print(f'{scaling:8} {name:8} M={m:<5} torch {row["torch_us"] or math.nan:8.1f} us  fast-accum '
                  f'{row["torch_fast_accum_us"] or math.nan:8.1f}  gemmforge {row["gemmforge_us"] or math.nan:8.1f} '
                  f'({speed:.3f}x the faster torch)  rel diff {row["rel_diff"] or math.nan:.1e}  '
                  f'{row["gemmforge_pick"]}', flush=True)
    if args.json:
        with open(args.json, "w") as f:
            json.dump({"torch": torch.__version__, "device": torch.cuda.get_device_name(), "rows": rows}, f, indent=1)


if __name__ == "__main__":
    main()
