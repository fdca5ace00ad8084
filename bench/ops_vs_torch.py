#!/usr/bin/env python3
"""Softmax and RMSNorm, bf16: gemmforge bench-ops beside torch eager and torch.compile, in one run.

Runs on the GPU machine:  python3 bench/ops_vs_torch.py [--gemmforge build/gemmforge] [--json out.json]
Bandwidth counts each input read once and each output written once (bytes / time), like
gemmforge's own figure; the copy bandwidth comes from gemmforge's run.
"""
import argparse
import json
import subprocess
import tempfile

import torch

from common import bench_us

SHAPES = [(262144, 1024), (65536, 4096), (16384, 16384), (4096, 65536), (1024, 262144)]



def rmsnorm(x, w, eps=1e-5):
    xf = x.float()
    return (xf * torch.rsqrt(xf.pow(2).mean(-1, keepdim=True) + eps) * w.float()).to(x.dtype)


def softmax(x):
    return torch.softmax(x, dim=-1)


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--gemmforge", default="build/gemmforge")
    ap.add_argument("--json")
    args = ap.parse_args()

    with tempfile.NamedTemporaryFile(suffix=".json") as f:
        subprocess.run([args.gemmforge, "bench-ops", "--json", f.name], check=True)
        gf = json.load(open(f.name))
    copy = gf["copy_tbps"]
    gf_tbps = {r["op"]: r["tbps"] for r in gf["ops"]}

    rows = []
    compiled = {"softmax": torch.compile(softmax), "rmsnorm": torch.compile(rmsnorm)}
    for op in ("softmax", "rmsnorm"):
        for r, c in SHAPES:
            x = torch.randn(r, c, device="cuda", dtype=torch.bfloat16)
            w = torch.rand(c, device="cuda", dtype=torch.bfloat16) + 0.5
            nbytes = 2 * x.numel() * 2 + (c * 2 if op == "rmsnorm" else 0)
            call = (x,) if op == "softmax" else (x, w)
            eager = softmax if op == "softmax" else rmsnorm
            tb = lambda us: nbytes / (us * 1e-6) / 1e12
            row = {"op": op, "shape": f"{r}x{c}", "eager": tb(bench_us(eager, *call)),
                   "compile": tb(bench_us(compiled[op], *call)), "gemmforge": gf_tbps.get(f"{op}:{r}x{c}:bf16")}
            rows.append(row)
            del x, w
    print(f"copy bandwidth {copy:.2f} TB/s (gemmforge's measurement, same run)")
    print(f"{'op':8} {'rows x cols':14} {'eager':>7} {'compile':>8} {'gemmforge':>10} {'% copy':>7}")
    for row in rows:
        g = row["gemmforge"] or 0.0
        print(f"{row['op']:8} {row['shape']:14} {row['eager']:7.2f} {row['compile']:8.2f} {g:10.2f} {100 * g / copy:7.1f}")
    if args.json:
        json.dump({"copy_tbps": copy, "rows": rows, "gemmforge": gf["ops"]}, open(args.json, "w"), indent=2)


if __name__ == "__main__":
    main()
