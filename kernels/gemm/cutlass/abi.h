#pragma once
// The C interface of a CUTLASS unit: a shared object that nvcc builds from generated source
// (backends/gemm/cutlass/codegen.cpp over unit.cuh) and gemmforge dlopens. Plain C, compiled by
// both sides, so the host never mirrors a layout by hand. CUTLASS's own Params struct stays inside
// the shared object behind an opaque handle.
#include <stddef.h>
#include <stdint.h>

// Bumped whenever an entry point or gf_cutlass_problem changes: a unit of another ABI is refused.
#define GF_CUTLASS_ABI 3

#ifdef __cplusplus
extern "C" {
#endif

// One problem and the pointers of one launch. Matrices are dense and row-major as GemmProblem
// describes them (A: M x K; B: N x K for TN, K x N for NN; C and D: M x N), batches packed.
struct gf_cutlass_problem {
  int64_t m, n, k, batch;
  float alpha, beta;
  const void* a;
  const void* b;
  const void* c;         // null unless the unit's epilogue reads C
  const void* bias;      // null unless the unit's epilogue adds a bias (length N; M per row)
  const float* scale_a;  // fp8 units' scales (device memory): one float each, or M and N; else null
  const float* scale_b;
  void* d;
  void* workspace;  // gf_cutlass_workspace_bytes of scratch
  int device;       // the CUDA device and its SM count, for the persistent grid
  int sm_count;
  // The persistent scheduler's tile order, a run-time choice of the same kernel: raster 0 is
  // CUTLASS's heuristic, 1 along M, 2 along N; swizzle 1, 2, 4 or 8 tiles a raster group.
  int raster;
  int swizzle;
};

typedef int (*gf_cutlass_abi_fn)(void);
typedef int (*gf_cutlass_count_fn)(void);
typedef const char* (*gf_cutlass_name_fn)(int instance);
typedef size_t (*gf_cutlass_workspace_bytes_fn)(int instance, const gf_cutlass_problem* p);
// 1 when CUTLASS can run p (sizes only: p's pointers may be null), else 0 with why written.
typedef int (*gf_cutlass_can_implement_fn)(int instance, const gf_cutlass_problem* p, char* why, size_t why_len);
// Returns a handle holding CUTLASS's Params for p (workspace initialised on stream), or null with
// why (can_implement's refusal, a CUDA error) written to why[0..why_len).
typedef void* (*gf_cutlass_prepare_fn)(int instance, const gf_cutlass_problem* p, void* stream, char* why,
                                       size_t why_len);
// Enqueues the GEMM on stream; no host work beyond the launch. Returns 0, or a cudaError_t.
typedef int (*gf_cutlass_run_fn)(void* handle, void* stream);
typedef void (*gf_cutlass_release_fn)(void* handle);

#ifdef __cplusplus
}  // extern "C"
#endif
