"""Builds one gemmforge CuTe DSL row op (softmax or RMSNorm, rowops.py) into a self-contained shared
object for the C++ backend, as build.py does for GEMMs.

cute.compile runs on symbolic rows, cols and row stride (one binary serves every shape within the
config's capacity, cols <= RowConfig.max_cols), for sm_90a, without a GPU; the C shim below gives
the DSL's host launcher (which computes the grid: RowConfig.grid) the fixed ABI the C++ side loads.
"""
import time

import cuda.bindings.driver as cuda

import cutlass
import cutlass.cute as cute
from cutlass.cute.runtime import make_fake_tensor

import export
from export import DTYPES
from rowop_config import RowConfig
from rowops import RowOp

ABI = 1  # of the shim below (after export.SHIM_PREAMBLE); the C++ side checks gf_cute_abi()

SHIM = r"""
typedef struct {
  const void *x; void *y; const void *weight; const void *residual; void *residual_out; const int32_t *valid_len;
  int64_t rows, cols, ld;   /* ld: row stride in elements of x, y, residual, residual_out */
  int64_t weight_len, valid_len_len;  /* extents of weight and valid_len as passed (1 for stand-ins) */
  float scale, eps;
} gf_cute_rowop_args;

/* The 2-D tensors carry their extents and their one non-unit stride (the row stride). */
int gf_cute_rowop(const gf_cute_rowop_args *a, cudaStream_t stream) {
  gf_cute_Tensor_x_t x = {(void *)a->x, {(int32_t)a->rows, (int32_t)a->cols}, {a->ld}};
  gf_cute_Tensor_y_t y = {a->y, {(int32_t)a->rows, (int32_t)a->cols}, {a->ld}};
  gf_cute_Tensor_weight_t weight = {(void *)a->weight, {(int32_t)a->weight_len}};
  gf_cute_Tensor_residual_t residual = {(void *)a->residual, {(int32_t)a->rows, (int32_t)a->cols}, {a->ld}};
  gf_cute_Tensor_residual_out_t residual_out = {a->residual_out, {(int32_t)a->rows, (int32_t)a->cols}, {a->ld}};
  gf_cute_Tensor_valid_len_t valid_len = {(void *)a->valid_len, {(int32_t)a->valid_len_len}};
  return cute_dsl_gf_cute_wrapper(&module, &x, &y, &weight, &residual, &residual_out, &valid_len, a->scale, a->eps,
                                  stream);
}
"""


def fake_operands(cfg: RowConfig, in_type, out_type):
    """Symbolic tensors of the kernel's signature: rows, cols and the row stride are runtime values
    (cols and the stride multiples of vec); pointers 16-byte aligned (valid_len's 4)."""
    rows, cols = cute.sym_int32(), cute.sym_int32(divisibility=cfg.vec)

    def matrix(dtype):
        return make_fake_tensor(dtype, (rows, cols), (cute.sym_int64(divisibility=cfg.vec), 1), assumed_align=16)

    x, y = matrix(in_type), matrix(out_type)
    residual, residual_out = matrix(in_type), matrix(in_type)
    weight = make_fake_tensor(in_type, (cute.sym_int32(),), (1,), assumed_align=16)
    valid_len = make_fake_tensor(cutlass.Int32, (cute.sym_int32(),), (1,), assumed_align=4)
    return x, y, weight, residual, residual_out, valid_len


def config_of(req) -> RowConfig:
    return RowConfig(kind=req["kind"], threads=int(req["threads"]), rows_per_cta=int(req.get("rows_per_cta", 1)),
                     vec=int(req["vec"]), iters=int(req["iters"]), cluster=int(req.get("cluster", 1)),
                     residual=bool(req.get("residual", False)), valid_len=bool(req.get("valid_len", False)))


def compile_rowop_request(req):
    start = time.time()
    export.check_pin()
    cfg = config_of(req)
    in_type, out_type = DTYPES[req["in"]], DTYPES[req["out"]]
    op = RowOp(cfg, in_type, out_type)
    operands = fake_operands(cfg, in_type, out_type)
    args = (*operands, cutlass.Float32(1.0), cutlass.Float32(1e-6), cuda.CUstream(0))
    compiled_at, ptxas = export.compile_and_link(op, args, SHIM, ABI, req["path"])
    return {"ok": True, "abi": ABI, **ptxas, "threads": cfg.threads, "max_cols": cfg.max_cols,
            "smem_bytes": cfg.smem_bytes(),
            "grid_rule": f"ceil(rows / {cfg.rows_per_cta}) * {cfg.cluster} CTAs, clusters of {cfg.cluster}",
            "compile_seconds": compiled_at - start, "seconds": time.time() - start}
