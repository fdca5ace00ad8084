"""Builds one gemmforge CuTe DSL GEMM into a self-contained shared object for the C++ backend.

cute.compile runs on symbolic M, N, K and leading dimensions (so one binary serves every shape),
for sm_90a, without a GPU; the C shim below gives the DSL's host launcher the fixed ABI the C++
side loads (export.py links them).
"""
import time

import cuda.bindings.driver as cuda

import cutlass
import cutlass.cute as cute
from cutlass.cute.runtime import make_fake_tensor

from export import DTYPES, check_pin, compile_and_link
from gemm_sm90 import Epilogue, Sm90Gemm, Tiling

ABI = 3  # of the shim below (after export.SHIM_PREAMBLE); the C++ side checks gf_cute_abi()

SHIM = r"""
typedef struct {
  const void *a, *b, *c, *bias;
  const float *scale_a, *scale_b;
  void *d;
  float *partials; /* split-K's workspace: fp32 sums of whole tiles, then a counter a tile */
  int32_t *counters;
  int64_t m, n, k, lda, ldb, ldc, ldd, bias_len, scale_a_len, scale_b_len, partials_len, counters_len;
  float alpha, beta;
  int32_t max_clusters; /* clusters resident at once: the persistent schedule's grid */
} gf_cute_gemm_args;

/* A is M x K (row stride lda), B is N x K (row stride ldb) for "tn" or K x N (column stride ldb)
   for "nn": the DSL's tensors carry the extents and the one non-unit stride each. D has D_COLS
   columns: N, or N / 2 behind a SwiGLU gate; C (read for the residual, else the kernel's
   coordinates) spans M x N. */
int gf_cute_gemm(const gf_cute_gemm_args *x, cudaStream_t stream) {
  gf_cute_Tensor_a_t a = {(void *)x->a, {(int32_t)x->m, (int32_t)x->k}, {x->lda}};
  gf_cute_Tensor_b_t b = {(void *)x->b, {(int32_t)x->n, (int32_t)x->k}, {x->ldb}};
  gf_cute_Tensor_d_t d = {x->d, {(int32_t)x->m, (int32_t)(D_COLS)}, {x->ldd}};
  gf_cute_Tensor_c_t c = {(void *)x->c, {(int32_t)x->m, (int32_t)x->n}, {x->ldc}};
  gf_cute_Tensor_bias_t bias = {(void *)x->bias, {(int32_t)x->bias_len}};
  gf_cute_Tensor_scale_a_t scale_a = {(void *)x->scale_a, {(int32_t)x->scale_a_len}};
  gf_cute_Tensor_scale_b_t scale_b = {(void *)x->scale_b, {(int32_t)x->scale_b_len}};
  gf_cute_Tensor_partials_t partials = {(void *)x->partials, {(int32_t)x->partials_len}};
  gf_cute_Tensor_counters_t counters = {(void *)x->counters, {(int32_t)x->counters_len}};
  return cute_dsl_gf_cute_wrapper(&module, &a, &b, &d, &c, &bias, &scale_a, &scale_b, &partials, &counters,
                                  x->alpha, x->beta, x->max_clusters, stream);
}
"""


def fake_operands(dtype: str, dtype_b: str, out: str, layout: str, gated: bool, d_m_major: bool):
    """Symbolic tensors of the kernel's signature: extents and leading dimensions are runtime
    values; contiguous dimensions and pointers are 16-byte aligned (the C++ side checks). A gated
    D has N / 2 columns, an extent of its own."""
    ab, bb, d_type = DTYPES[dtype], DTYPES[dtype_b], DTYPES[out]
    per16 = 16 * 8 // ab.width  # elements in 16 bytes
    d_per16 = 16 * 8 // d_type.width
    k = cute.sym_int32(divisibility=per16)
    # D's contiguous extent holds whole 16-byte vectors: N of a row-major D (twice that, gated),
    # M' (the problem's N) of swap-AB's M-major D^T.
    m = cute.sym_int32(divisibility=d_per16) if d_m_major else cute.sym_int32()
    n = cute.sym_int32() if d_m_major else cute.sym_int32(divisibility=d_per16 * (2 if gated else 1))
    n_out = cute.sym_int32(divisibility=d_per16) if gated else n

    def ld(dt):
        return cute.sym_int64(divisibility=16 * 8 // dt.width)

    a = make_fake_tensor(ab, (m, k), (ld(ab), 1), assumed_align=16)
    b = make_fake_tensor(bb, (n, k), (ld(bb), 1) if layout == "tn" else (1, ld(bb)), assumed_align=16)
    def out_stride():  # D's and C's: row-major, or M-major (swap-AB's D^T)
        return (1, ld(d_type)) if d_m_major else (ld(d_type), 1)

    d = make_fake_tensor(d_type, (m, n_out), out_stride(), assumed_align=16)
    c = make_fake_tensor(d_type, (m, n), out_stride(), assumed_align=16)
    bias = make_fake_tensor(d_type, (cute.sym_int32(),), (1,), assumed_align=16)
    # fp8 scales, fp32: one each (tensor) or M and N (rowcol); 4-byte aligned.
    scale_a = make_fake_tensor(cutlass.Float32, (cute.sym_int32(),), (1,), assumed_align=4)
    scale_b = make_fake_tensor(cutlass.Float32, (cute.sym_int32(),), (1,), assumed_align=4)
    partials = make_fake_tensor(cutlass.Float32, (cute.sym_int32(),), (1,), assumed_align=16)
    counters = make_fake_tensor(cutlass.Int32, (cute.sym_int32(),), (1,), assumed_align=4)
    return a, b, d, c, bias, scale_a, scale_b, partials, counters


def compile_request(req):
    start = time.time()
    check_pin()
    tiling = Tiling(req["tile_m"], req["tile_n"], req["cluster_m"], req["cluster_n"], req.get("stages", 0),
                    bool(req.get("persistent", False)), int(req.get("split_k", 1)), bool(req.get("pingpong", False)))
    epilogue = Epilogue(req.get("act", "none"), req.get("bias", "none"), bool(req.get("residual", False)),
                        req.get("scale", "none"), req.get("gate", "none"))
    gemm = Sm90Gemm(tiling, epilogue)
    operands = fake_operands(req["dtype"], req.get("dtype_b", req["dtype"]), req["out"], req["layout"],
                             epilogue.gate != "none", bool(req.get("swap_ab", False)))
    args = (*operands, cutlass.Float32(1.0), cutlass.Float32(0.0), cutlass.Int32(1), cuda.CUstream(0))
    shim = SHIM.replace("D_COLS", "x->n" if epilogue.gate == "none" else "x->n / 2")
    compiled_at, ptxas = compile_and_link(gemm, args, shim, ABI, req["path"])
    return {"ok": True, "abi": ABI, "threads": gemm.threads, **ptxas,
            "stages": gemm.stages, "compile_seconds": compiled_at - start, "seconds": time.time() - start}
