#!/usr/bin/env python3
"""gemmforge's Triton backend beside torch.compile(mode="max-autotune") restricted to its Triton
templates, on the llama3-8b GEMMs at M = 4096 and 16, in one run on the GPU machine.

    python3 bench/triton_vs_inductor.py [--gemmforge build/gemmforge] [--json out.json]

Both sides are timed the same way: CUDA events, L2 flushed before each launch, median.
"""
import argparse
import json
import subprocess
import tempfile

import torch

from common import bench_us
import torch._inductor.config as inductor_config

SHAPES = {"qkv": (6144, 4096), "o": (4096, 4096), "gate_up": (28672, 4096), "down": (4096, 14336),
          "lm_head": (128256, 4096)}



def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--gemmforge", default="build/gemmforge")
    ap.add_argument("--tokens", default="16,4096")
    ap.add_argument("--json")
    args = ap.parse_args()
    tokens = [int(t) for t in args.tokens.split(",")]

    with tempfile.NamedTemporaryFile(suffix=".json") as f:
        subprocess.run([args.gemmforge, "bench", "--model", "llama3-8b", "--tokens", args.tokens, "-b", "triton",
                        "-s", "default", "--json", f.name], check=True)
        ours = {r["problem"]: r for r in json.load(open(f.name)) if r["backend"] == "triton"}

    inductor_config.max_autotune_gemm_backends = "TRITON"
    inductor_config.max_autotune = True
    rows = []
    for m in tokens:
        for name, (n, k) in SHAPES.items():
            x = torch.randn(m, k, device="cuda", dtype=torch.bfloat16)
            w = torch.randn(n, k, device="cuda", dtype=torch.bfloat16)
            torch._dynamo.reset()
            compiled = torch.compile(lambda a, b: a @ b.t(), mode="max-autotune-no-cudagraphs")
            inductor_us = bench_us(compiled, x, w)
            key = f"{m}x{n}x{k}:bf16"
            gf_us = ours.get(key, {}).get("us")
            rows.append({"gemm": name, "m": m, "key": key, "inductor_us": inductor_us, "gemmforge_triton_us": gf_us,
                         "ratio": inductor_us / gf_us if gf_us else None,
                         "gemmforge_candidate": ours.get(key, {}).get("candidate")})
            del x, w
    print(f"{'gemm':8} {'M':>5} {'inductor us':>12} {'gemmforge us':>13} {'inductor/gf':>12}")
    for r in rows:
        print(f"{r['gemm']:8} {r['m']:5} {r['inductor_us']:12.1f} {r['gemmforge_triton_us'] or 0:13.1f} {r['ratio'] or 0:12.3f}")
    if args.json:
        json.dump(rows, open(args.json, "w"), indent=2)


if __name__ == "__main__":
    main()
