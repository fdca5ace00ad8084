#pragma once
// The Hopper GEMM's shape, derived once from the instantiation's Cfg (see codegen): tile, pipeline,
// schedule, cluster, epilogue; the checks on it; the named barriers; and the output type's
// conversions. Every part of the kernel (scheduler, producer, mma, epilogues, split-K) reads it.
#include "epilogue/activation.cuh"
#include "gemm/sm90/params.h"
#include "gemmforge/codes.hpp"
#include "ptx/convert.cuh"
#include "ptx/sync.cuh"

namespace gf {

// Named barriers (0 is __syncthreads). Each is used by 128 threads of one consumer or by the
// consumers together, never by the producer.
enum GemmBarrier : u32 {
  kBarTile = 1,     // the consumers sharing a tile (cooperative); in ping-pong 1 + consumer, its own
  kBarTurn = 3,     // ping-pong: 3 + consumer hands the mainloop's turn to that consumer
  kBarStaging = 5,  // 5 + consumer: a consumer's warps around its staging buffer
};

template <class Cfg>
struct Traits {
  // A k-block is one 128-byte swizzle row of each operand: 64 16-bit or 128 fp8 elements.
  static constexpr bool kFp8 = Cfg::kIn == DType::e4m3 || Cfg::kIn == DType::e5m2;
  static constexpr int BM = Cfg::kBlockM, BN = Cfg::kBlockN, BK = kGemmRowBytes / (kFp8 ? 1 : 2);
  // fp8 scales (ScaleKind); with kPromote each k-block's wgmma results are added to fp32
  // accumulators of their own (the fp8 wgmma accumulator keeps fewer bits), times the block
  // scales where there are some.
  static constexpr ScaleKind kScale = Cfg::kScale;
  static constexpr bool kPromote = Cfg::kPromote;
  // Promotion ahead: a third set of accumulators, so the next k-block's wgmma run while this one's
  // products are added up.
  static constexpr bool kPromoteAhead = Cfg::kPromoteAhead;
  // Promotion by column halves: each k-block's wgmma in two groups, the tile's left and right
  // halves, each half's products promoted while the other half's wgmma run.
  static constexpr bool kPromoteHalves = Cfg::kPromoteHalves;
  static constexpr int kStages = Cfg::kStages, kConsumers = Cfg::kConsumers, kSplitK = Cfg::kSplitK;
  static constexpr bool kPingpong = Cfg::kPingpong;
  static constexpr int kWgRows = kPingpong ? BM : BM / kConsumers;  // rows of the tile per consumer
  static constexpr int kStageReaders = kPingpong ? 1 : kConsumers;  // consumers that read each stage
  // Clusters: a pair along M (sharing B), a pair along N (sharing A), or a 2x2 quad, where each
  // CTA shares A with its neighbour along N and B with its neighbour along M. Rank r of a quad
  // sits at (r % 2, r / 2) along (M, N).
  static constexpr int kCluster = Cfg::kCluster;
  static constexpr bool kQuad = kCluster == 4;
  static constexpr bool kPairM = kQuad || (kCluster == 2 && Cfg::kClusterAlongM);   // tiles along M share B
  static constexpr bool kPairN = kQuad || (kCluster == 2 && !Cfg::kClusterAlongM);  // tiles along N share A
  static constexpr int kMmaM = kWgRows / 64;                                        // m64 wgmma tiles per consumer
  static constexpr int kAcc = BN / 2;  // f32 accumulators per thread per m64 tile
  static constexpr u32 kStageA = BM * kGemmRowBytes, kStageB = BN * kGemmRowBytes;
  // Block scales: each stage also holds A's scales of the tile's rows for its k-block (TMA; the
  // layout in params.h), read by every warp; so each warp, not its warpgroup's leader, releases a
  // stage.
  static constexpr u32 kStageScales = gemm_stage_scale_bytes(kScale == ScaleKind::block128 ? BM : 0);
  static constexpr int kReleasesPerReader = kStageScales ? 4 : 1;
  static constexpr int kThreads = 128 * (1 + kConsumers);
  static_assert(kWgRows == 64 || kWgRows == 128, "Each consumer warpgroup owns 64 or 128 rows.");
  static_assert(!kPingpong || kConsumers == 2, "Ping-pong alternates two consumers.");
  static_assert(kCluster == 1 || kCluster == 2 || kCluster == 4, "Clusters are pairs or 2x2 quads.");
  static_assert(!kPairM || !Cfg::kNN || BN % 128 == 0, "Sharing N-major B splits it into whole 64-column boxes.");
  static_assert(BN % 16 == 0 && BN >= 16 && BN <= 256, "wgmma takes N in [16, 256], a multiple of 16 here.");
  static_assert(!Cfg::kNN || BN % 64 == 0, "N-major B is loaded in 64-column boxes.");
  static_assert(Cfg::kGate != GateKind::split || BN % 32 == 0, "A split gate needs whole 8-column groups per half.");
  // Swap-AB (NativeConfig::swap_ab): the kernel's D is the problem's D transposed, stored so.
  static constexpr bool kSwapAB = Cfg::kSwapAB;
  static_assert(!kPromoteAhead || kPromote, "Promotion ahead is a way of promoting.");
  static_assert(!kPromoteHalves || (kPromote && !kPromoteAhead && BN % 32 == 0),
                "Promotion by halves promotes, not ahead, in halves of a multiple of 16 columns.");
  static_assert(kMmaM * kAcc *
                        (kPromoteAhead ? 3
                         : kPromote    ? 2
                                       : 1) <=
                    (kConsumers == 2 ? 192 : 128),
                "More accumulators per thread would spill.");
  static_assert(!kFp8 || !Cfg::kNN, "fp8 wgmma reads both operands K-major.");
  static_assert(kScale != ScaleKind::block128 ||
                    (kPromote && (128 % BN == 0 || BN == 192) && Cfg::kGate != GateKind::split),
                "Block scales are applied per k-block on promotion, one or (192 wide) two B blocks per tile.");

  // The epilogue computes a transcendental an element (SwiGLU's gate, GELU, SiLU).
  static constexpr bool kTranscendental = Cfg::kGate != GateKind::none || is_transcendental(Cfg::kAct);

  // The TMA-store epilogue stages kStoreBoxes 64-column boxes of a consumer's rows of D at a time:
  // fewer than the tile's kOutBoxes leaves shared memory for a deeper pipeline.
  static constexpr int kOutN = Cfg::kGate == GateKind::none ? BN : BN / 2;  // D columns of a tile
  static constexpr int kOutBoxes = (kOutN + 63) / 64;                       // 64-column boxes covering them
  static constexpr int kStoreBoxes = Cfg::kStoreBoxes;
  static constexpr bool kStoreTma = kStoreBoxes > 0;
  static_assert(!kStoreTma || (Cfg::kOut != DType::f32 && kOutN >= 64 && kOutBoxes % kStoreBoxes == 0 &&
                               (kOutN % 64 == 0 || Cfg::kGate == GateKind::none)),
                "The TMA-store epilogue stages 16-bit tiles in 64-column boxes (whole ones when gated).");
  static constexpr u32 kBoxBytes = kWgRows * 128;  // one consumer's rows of one box
  static constexpr u32 kStaging = gemm_staging_bytes(kConsumers, kWgRows, kStoreBoxes);
  static constexpr bool kLoadC = kStoreTma && Cfg::kHasC;
  // The first boxes of C load while the mainloop runs; not with split-K, where a slice may not
  // reach the epilogue.
  static constexpr bool kPrefetchC = kLoadC && kSplitK == 1;

  // A CTA's place in its cluster along M and along N (0 or 1), from its rank.
  static __device__ __forceinline__ int rank_m(int rank) { return kPairM ? rank % 2 : 0; }
  static __device__ __forceinline__ int rank_n(int rank) { return kPairN ? (kQuad ? rank / 2 : rank) : 0; }
  // The CTAs a half of A (of B) is multicast to: this CTA and its neighbour along N (along M).
  static __device__ __forceinline__ u16 a_peers(int rank) { return kQuad ? u16(0x5 << rank_m(rank)) : u16(0x3); }
  static __device__ __forceinline__ u16 b_peers(int rank) { return kQuad ? u16(0x3 << 2 * rank_n(rank)) : u16(0x3); }
  // The CTAs whose producers fill a CTA's stages (it among them), each waiting on its consumers.
  static constexpr int kFillers = kQuad ? 3 : kCluster;

  // Which kWgRows-row part of the tile a consumer owns: its own in the cooperative schedule, the
  // whole tile (part 0) in ping-pong.
  static __device__ __forceinline__ int part(int consumer) { return kPingpong ? 0 : consumer; }

  // The accumulator layout of wgmma m64nN: thread t of warp w holds rows 16w + t/4 (+8) of each
  // m64 part, at acc[4i + {0,1}] (row) and acc[4i + {2,3}] (row + 8), columns 8i + 2(t%4) (+1).
  // The GEMM row of this thread's accumulators of m64 part mm, half 0 or 1, in work unit u.
  template <class Unit>
  static __device__ __forceinline__ int row_of(const Unit& u, int consumer, int mm, int half) {
    const int lane = threadIdx.x % 32, warp = threadIdx.x % 128 / 32;
    return u.m0 + part(consumer) * kWgRows + mm * 64 + warp * 16 + lane / 4 + half * 8;
  }

  // The row bias at this thread's accumulator rows (0 past M, and 0 without one), read before the
  // main loop by both epilogues: after it, where the operands' stream had evicted the bias from L2,
  // each tile waited on a trip to DRAM (swap-AB's decode kernels take a problem's column bias as
  // their row bias).
  template <class Unit>
  static __device__ __forceinline__ void load_row_bias(const GemmParams& p, const Unit& u, int consumer,
                                                       float (&rows)[kMmaM][2]) {
#pragma unroll
    for (int mm = 0; mm < kMmaM; ++mm)
#pragma unroll
      for (int half = 0; half < 2; ++half) {
        const int row = row_of(u, consumer, mm, half);
        rows[mm][half] = Cfg::kBias == BiasKind::row && row < p.m
                             ? to_float(static_cast<const typename Traits::Epi*>(p.bias)[row])
                             : 0.0f;
      }
  }

  // Consumers that share a tile synchronise on a named barrier of their own.
  static __device__ __forceinline__ void tile_barrier(int consumer) {
    if (kPingpong)
      ptx::named_barrier(kBarTile + consumer, 128);
    else
      ptx::named_barrier(kBarTile, 128 * kConsumers);
  }

  // D's elements: float, 16-bit bf16/f16 or 8-bit fp8 kept as raw bits. C and the bias share D's
  // dtype, except that they are bf16 when D is fp8 (GemmProblem::epilogue_dtype).
  static constexpr bool kFp8Out = Cfg::kOut == DType::e4m3 || Cfg::kOut == DType::e5m2;
  static constexpr DType kEpiDType = kFp8Out ? DType::bf16 : Cfg::kOut;
  using Out = typename Select<Cfg::kOut == DType::f32, float, typename Select<kFp8Out, u8, u16>::type>::type;
  using Epi = typename Select<kEpiDType == DType::f32, float, u16>::type;
  static_assert(!kFp8Out || (!kStoreTma && Cfg::kGate == GateKind::none), "An fp8 D is stored from registers.");
  static_assert(!kSwapAB || (!kStoreTma && Cfg::kGate == GateKind::none && !Cfg::kNN),
                "Swap-AB stores D transposed from registers, element by element, in layout tn.");

  static __device__ __forceinline__ float to_float(float v) { return v; }
  static __device__ __forceinline__ float to_float(u16 v) {
    return kEpiDType == DType::bf16 ? ptx::bf16_to_float(v) : ptx::f16_to_float(v);
  }

  // Per-tensor and per-row/column scales take alpha into their factors (Scales::dequantize): one
  // multiply an element fewer in the epilogue, which then multiplies by a constant 1.
  static constexpr bool kAlphaInScales = kScale == ScaleKind::tensor || kScale == ScaleKind::rowcol;
  static __device__ __forceinline__ float alpha(const GemmParams& p) { return kAlphaInScales ? 1.0f : p.alpha; }

  static __device__ __forceinline__ float activate(float x) { return epi::activate<true>(x, Cfg::kAct); }
  // SwiGLU on two elements. One reciprocal for both trades a special-function result for 1.5
  // instructions of the FMA pipe an element: that pays where the epilogue runs alone
  // (cooperative), not beside the other consumer's wgmma (ping-pong), which each FMA-pipe
  // instruction of the epilogue slows while special-function ones come nearly free (native-notes v30).
  static __device__ __forceinline__ void swiglu2(const float g[2], const float up[2], float out[2]) {
    if constexpr (kPingpong) {
      for (int e = 0; e < 2; ++e) out[e] = epi::swiglu<true>(g[e], up[e]);
    } else {
      epi::swiglu2_fast(g, up, out);
    }
  }

  // Two values in the 16-bit output type, the first in the low half.
  static __device__ __forceinline__ u32 pack2(float v0, float v1) {
    return Cfg::kOut == DType::bf16 ? ptx::pack_bf16x2(v0, v1) : ptx::pack_f16x2(v0, v1);
  }
};

}  // namespace gf
