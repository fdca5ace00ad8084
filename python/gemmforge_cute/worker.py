"""gemmforge's CuTe DSL compile worker (the request loop is python/worker_loop.py):

    {"op": "version"}
    {"op": "compile", "dtype": "e4m3", "dtype_b": "e4m3", "out": "bf16", "layout": "tn", "tile_m": 128,
     "tile_n": 256, "cluster_m": 2, "cluster_n": 1, "stages": 0, "persistent": true, "split_k": 1, "act": "gelu",
     "bias": "col", "residual": false, "scale": "rowcol", "path": "/dir/name.so"}
    {"op": "compile_rowop", "kind": "rmsnorm", "in": "bf16", "out": "bf16", "residual": true,
     "valid_len": false, "threads": 256, "rows_per_cta": 1, "vec": 8, "iters": 4, "cluster": 1,
     "path": "/dir/name.so"}

Each compile writes a shared object (build.py for GEMMs, build_rowop.py for row ops) to `path`; it
needs no GPU. `cute.compile` is not thread-safe: parallel compiles are parallel workers.
"""
import os
import sys

# ptxas's report (registers, spills, notes) from the DSL's own ptxas run, in a remark file
# (export.compile_and_link); read when the DSL is imported, so set before.
os.environ["CUTE_DSL_COMPILER_OPT"] = (os.environ.get("CUTE_DSL_COMPILER_OPT", "") + " diagnostic=ptx").strip()

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
sys.path.insert(0, os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
from export import dsl_version  # noqa: E402
from worker_loop import serve  # noqa: E402


def compile_gemm(req):
    from build import compile_request
    return compile_request(req)


def compile_rowop(req):
    from build_rowop import compile_rowop_request
    return compile_rowop_request(req)


if __name__ == "__main__":
    serve({"version": lambda req: {"ok": True, "dsl_version": dsl_version(), "python": sys.version.split()[0]},
           "compile": compile_gemm, "compile_rowop": compile_rowop})
