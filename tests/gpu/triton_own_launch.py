#!/usr/bin/env python3
"""Launches one of gemmforge's Triton templates through Triton's own launcher (torch tensors),
on inputs gemmforge wrote to files, and writes the output: the GPU test compares it with
gemmforge's launch of the same template.

    triton_own_launch.py REQUEST.json   (template, constexprs, num_warps, num_stages, sizes, file names)
"""
import json
import os
import sys

import torch
import triton

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "..", "python", "gemmforge_triton"))
from templates import TEMPLATES  # noqa: E402

DTYPES = {"bf16": torch.bfloat16, "f16": torch.float16, "f32": torch.float32}


def main():
    req = json.load(open(sys.argv[1]))
    m, n, k, out_cols = req["M"], req["N"], req["K"], req["OUT_COLS"]
    t_in, t_out = DTYPES[req["dtype"]], DTYPES[req["out"]]
    load = lambda path, count, dt: torch.frombuffer(bytearray(open(path, "rb").read()), dtype=dt)[:count].cuda()
    a = load(req["a"], m * k, t_in)
    b = load(req["b"], n * k, t_in)
    bias = load(req["bias"], n, t_out) if req.get("bias") else None
    d = torch.empty(m * out_cols, dtype=t_out, device="cuda")
    ce = req["constexprs"]
    kernel = TEMPLATES[req["template"]]
    if req["template"] == "mm":
        grid = (triton.cdiv(m, ce["BLOCK_M"]) * triton.cdiv(n, ce["BLOCK_N"]),)
    else:
        triton.set_allocator(lambda size, align, stream: torch.empty(size, dtype=torch.int8, device="cuda"))
        grid = (min(ce["NUM_SMS"], triton.cdiv(m, ce["BLOCK_M"]) * triton.cdiv(n, ce["BLOCK_N"])),)
    kernel[grid](a, b, d, None, bias, m, n, k, out_cols, req["alpha"], req["beta"], None, None, **ce,
                 num_warps=req["num_warps"], num_stages=req["num_stages"])
    torch.cuda.synchronize()
    open(req["d"], "wb").write(d.cpu().view(torch.uint8).numpy().tobytes())


if __name__ == "__main__":
    main()
