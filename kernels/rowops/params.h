#pragma once
// What the host and the row-op kernels share, compiled by both: the kernels' parameters and the
// size of a persistent (bulk) CTA's shared memory. Plain C++.
namespace gf {

struct RowParams {
  const void* x;
  void* y;
  const void* weight;    // norms: kCols elements, x's dtype
  const void* bias;      // LayerNorm: kCols elements, x's dtype
  const void* residual;  // RMSNorm with kResidual: added to x first
  void* residual_out;    // ... and the sum written here (x's dtype)
  const int* valid_len;  // softmax with kValidLen: elements at or past valid_len[row] are masked (output 0)
  long long rows;
  long long hand_back_from;  // bulk kernels: the rows from here on hand their L2 lines back (see bulk.cuh)
  float scale;               // softmax: x * scale
  float eps;                 // norms
};

// Bytes a bulk copy moves at most.
inline constexpr int kRowBulkChunk = 16384;

// Dynamic shared memory of a persistent (bulk) CTA, in this order: `stages` stages of stage_bytes
// (a part of x, then of the residual), the affine parameters (the norms' weight and LayerNorm's
// bias over the part), then an mbarrier for each stage and one for the affine parameters.
constexpr long long rowop_smem_bytes(int stages, long long stage_bytes, long long affine_bytes) {
  return stages * stage_bytes + affine_bytes + (stages + 1) * 8;
}

}  // namespace gf
