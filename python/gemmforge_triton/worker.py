"""gemmforge's Triton compile worker (the request loop is python/worker_loop.py):

    {"op": "version"}
    {"op": "compile", "template": "mm", "dtype": "bf16", "out": "bf16", "constexprs": {...},
     "num_warps": 8, "num_stages": 3, "divisible": [0, 1, 2, 7], "path": "/dir/name.cubin", "fresh": false}
    {"op": "compile_rowop", "template": "softmax", "in": "bf16", "out": "f32", "constexprs": {...},
     "num_warps": 4, "path": "/dir/name.cubin", "fresh": false}

Each compile writes the cubin to `path` and replies with the launch metadata. It targets sm_90
explicitly, so it needs no GPU; "fresh" compiles past Triton's own cache.
"""
import os
import re
import subprocess
import sys
import tempfile
import time

# Triton 3.9 warns once per process that its FP-fusion default will change; keep today's default.
os.environ.setdefault("TRITON_DEFAULT_FP_FUSION", "1")

import triton  # noqa: E402
from triton import knobs  # noqa: E402
from triton.backends.compiler import GPUTarget  # noqa: E402
from triton.compiler import ASTSource  # noqa: E402

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
sys.path.insert(0, os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
from rowops import ROWOPS  # noqa: E402
from templates import TEMPLATES  # noqa: E402
from worker_loop import serve  # noqa: E402

RUNTIME_ARGS = ["a", "b", "d", "c", "bias", "M", "N", "K", "OUT_COLS", "alpha", "beta", "scale_a", "scale_b"]
ROWOP_ARGS = ["x", "y", "weight", "residual", "residual_out", "valid_len", "ROWS", "COLS", "scale", "eps"]
TYPES = {"bf16": "*bf16", "f16": "*fp16", "f32": "*fp32", "e4m3": "*fp8e4nv", "e5m2": "*fp8e5"}


def compile_request(req):
    a, b, out = TYPES[req["dtype"]], TYPES[req.get("dtype_b", req["dtype"])], TYPES[req["out"]]
    signature = {"a": a, "b": b, "d": out, "c": out, "bias": out, "M": "i32", "N": "i32", "K": "i32",
                 "OUT_COLS": "i32", "alpha": "fp32", "beta": "fp32", "scale_a": "*fp32", "scale_b": "*fp32"}
    return compile_kernel(req, TEMPLATES[req["template"]], signature, RUNTIME_ARGS)


def compile_rowop_request(req):
    x, y = TYPES[req["in"]], TYPES[req["out"]]
    signature = {"x": x, "y": y, "weight": x, "residual": x, "residual_out": x, "valid_len": "*i32", "ROWS": "i32",
                 "COLS": "i32", "scale": "fp32", "eps": "fp32"}
    return compile_kernel(req, ROWOPS[req["template"]], signature, ROWOP_ARGS)


CUOBJDUMP = os.path.join(os.path.dirname(triton.__file__), "backends", "nvidia", "bin", "cuobjdump")


def resource_usage(cubin_path):
    """Registers a thread and local memory bytes (a Triton kernel holds no local arrays: its local
    bytes are spills) from the cuobjdump that Triton's wheel carries; {} where it has none."""
    if not os.access(CUOBJDUMP, os.X_OK):
        return {}
    out = subprocess.run([CUOBJDUMP, "-res-usage", cubin_path], capture_output=True, text=True).stdout
    m = re.search(r"REG:(\d+) .*LOCAL:(\d+)", out)
    return {"registers": int(m.group(1)), "spill_bytes": int(m.group(2))} if m else {}


def compile_kernel(req, fn, signature, runtime_args):
    """Compiles fn for sm_90 with req's constexprs and options, writes the cubin to req["path"] and
    returns the launch metadata."""
    start = time.time()
    constexprs = dict(req["constexprs"])
    for name in constexprs:
        signature[name] = "constexpr"
    # 16-byte divisibility of pointers and sizes lets Triton vectorize; the launcher checks it.
    attrs = {(i,): [["tt.divisibility", 16]] for i in req.get("divisible", [])}
    src = ASTSource(fn=fn, signature=signature, constexprs=constexprs, attrs=attrs)
    options = {"num_warps": req["num_warps"], "num_stages": req.get("num_stages", 1)}
    if req.get("fresh"):
        # A cold compile (gemmforge's --no-cache) must not be served by Triton's own cache either.
        with tempfile.TemporaryDirectory() as cache_dir, knobs.cache.scope():
            knobs.cache.dir = cache_dir
            kernel = triton.compile(src, target=GPUTarget("cuda", 90, 32), options=options)
    else:
        kernel = triton.compile(src, target=GPUTarget("cuda", 90, 32), options=options)
    tmp = req["path"] + f".{os.getpid()}.tmp"
    with open(tmp, "wb") as f:
        f.write(kernel.asm["cubin"])
    os.replace(tmp, req["path"])
    md = kernel.metadata
    return {"ok": True, "name": md.name, "num_warps": md.num_warps, "num_ctas": md.num_ctas, "shared": md.shared,
            "global_scratch_size": md.global_scratch_size, "global_scratch_align": md.global_scratch_align,
            "profile_scratch_size": md.profile_scratch_size, "profile_scratch_align": md.profile_scratch_align,
            "launch_cooperative_grid": bool(md.launch_cooperative_grid), "launch_pdl": bool(md.launch_pdl),
            "triton_version": triton.__version__, "args": runtime_args + ["global_scratch", "profile_scratch"],
            **resource_usage(req["path"]), "seconds": time.time() - start}


def main():
    serve({"version": lambda req: {"ok": True, "triton_version": triton.__version__, "python": sys.version.split()[0]},
           "compile": compile_request, "compile_rowop": compile_rowop_request})


if __name__ == "__main__":
    main()
