"""gemmforge's Triton compile worker: one JSON request per line, one reply per line repeating the
request's "id", on the channel the parent opened (GEMMFORGE_WORKER_FDS: the request and reply fds;
stdin and stdout when run by hand). What anything prints goes to stderr, never into a reply.

    {"op": "version"}
    {"op": "compile", "template": "mm", "dtype": "bf16", "out": "bf16", "constexprs": {...},
     "num_warps": 8, "num_stages": 3, "divisible": [0, 1, 2, 7], "path": "/dir/name.cubin", "fresh": false}

compile writes the cubin to `path` and replies with the launch metadata. It targets sm_90
explicitly, so it needs no GPU; "fresh" compiles past Triton's own cache.
"""
import ctypes
import json
import os
import signal
import sys
import tempfile
import time
import traceback

import triton
from triton import knobs
from triton.backends.compiler import GPUTarget
from triton.compiler import ASTSource

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from templates import TEMPLATES  # noqa: E402

RUNTIME_ARGS = ["a", "b", "d", "c", "bias", "M", "N", "K", "OUT_COLS", "alpha", "beta", "scale_a", "scale_b"]
TYPES = {"bf16": "*bf16", "f16": "*fp16", "f32": "*fp32", "e4m3": "*fp8e4nv", "e5m2": "*fp8e5"}


def compile_request(req):
    start = time.time()
    fn = TEMPLATES[req["template"]]
    a, out = TYPES[req["dtype"]], TYPES[req["out"]]
    signature = {"a": a, "b": a, "d": out, "c": out, "bias": out, "M": "i32", "N": "i32", "K": "i32",
                 "OUT_COLS": "i32", "alpha": "fp32", "beta": "fp32", "scale_a": "*fp32", "scale_b": "*fp32"}
    constexprs = dict(req["constexprs"])
    for name in constexprs:
        signature[name] = "constexpr"
    # 16-byte divisibility of pointers and sizes lets Triton vectorize; the launcher checks it.
    attrs = {(i,): [["tt.divisibility", 16]] for i in req.get("divisible", [])}
    src = ASTSource(fn=fn, signature=signature, constexprs=constexprs, attrs=attrs)
    options = {"num_warps": req["num_warps"], "num_stages": req["num_stages"]}
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
            "triton_version": triton.__version__, "args": RUNTIME_ARGS + ["global_scratch", "profile_scratch"],
            "seconds": time.time() - start}


def channel():
    fds = os.environ.get("GEMMFORGE_WORKER_FDS")
    if not fds:
        return sys.stdin, sys.stdout
    request_fd, reply_fd = (int(f) for f in fds.split(","))
    return os.fdopen(request_fd, "r"), os.fdopen(reply_fd, "w")


def die_with_parent():
    """When gemmforge started this worker, the parent's death arrives as SIGTERM and takes the
    worker's process group (ptxas included) with it."""
    if not os.environ.get("GEMMFORGE_WORKER_FDS"):
        return
    signal.signal(signal.SIGTERM, lambda *_: os.killpg(0, signal.SIGKILL))
    PR_SET_PDEATHSIG = 1
    ctypes.CDLL(None, use_errno=True).prctl(PR_SET_PDEATHSIG, signal.SIGTERM)


def main():
    die_with_parent()
    requests, replies = channel()
    for line in requests:
        req = {}
        try:
            req = json.loads(line)
            if req["op"] == "quit":
                break
            if req["op"] == "version":
                reply = {"ok": True, "triton_version": triton.__version__, "python": sys.version.split()[0]}
            elif req["op"] == "compile":
                reply = compile_request(req)
            else:
                reply = {"ok": False, "error": f"unknown op {req['op']}"}
        except Exception as e:  # a template that fails to compile is a failed candidate, not a dead worker
            reply = {"ok": False, "error": f"{type(e).__name__}: {e}", "trace": traceback.format_exc()[-3000:]}
        reply["id"] = req.get("id")
        replies.write(json.dumps(reply) + "\n")
        replies.flush()


if __name__ == "__main__":
    main()
