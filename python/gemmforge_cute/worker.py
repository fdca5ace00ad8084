"""gemmforge's CuTe DSL compile worker (the request loop is python/worker_loop.py):

    {"op": "version"}
    {"op": "compile", "dtype": "e4m3", "dtype_b": "e4m3", "out": "bf16", "layout": "tn", "tile_m": 128,
     "tile_n": 256, "cluster_m": 2, "cluster_n": 1, "stages": 0, "persistent": true, "split_k": 1, "act": "gelu",
     "bias": "col", "residual": false, "scale": "rowcol", "path": "/dir/name.so"}

compile writes a shared object (build.py) to `path`; it needs no GPU. `cute.compile` is not
thread-safe: parallel compiles are parallel workers.
"""
import os
import sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
sys.path.insert(0, os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
from build import ABI, compile_request, dsl_version  # noqa: E402
from worker_loop import serve  # noqa: E402

if __name__ == "__main__":
    serve({"version": lambda req: {"ok": True, "dsl_version": dsl_version(), "abi": ABI,
                                   "python": sys.version.split()[0]},
           "compile": compile_request})
