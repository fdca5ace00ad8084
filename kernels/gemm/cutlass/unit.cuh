#pragma once
// gemmforge's instantiation template for CUTLASS 3.x SM90 GEMMs: one kernel per Instance, built by
// CUTLASS's CollectiveBuilders and run through GemmUniversalAdapter. A generated unit
// (backends/gemm/cutlass/codegen.cpp) names 1-8 Instances of one dtype, layout and epilogue and
// exports them through Unit<...> as the C entry points of abi.h. Compiled by nvcc only (never by
// NVRTC): it includes CUTLASS's headers from the nvidia-cutlass package.
#include <cuda_runtime.h>

#include <cstdio>
#include <new>

#include "cute/tensor.hpp"
#include "cutlass/cutlass.h"
#include "cutlass/detail/blockwise_scale_layout.hpp"
#include "cutlass/epilogue/collective/collective_builder.hpp"
#include "cutlass/epilogue/thread/activation.h"
#include "cutlass/gemm/collective/collective_builder.hpp"
#include "cutlass/gemm/device/gemm_universal_adapter.h"
#include "cutlass/gemm/kernel/gemm_universal.hpp"
#include "cutlass/gemm/kernel/tile_scheduler.hpp"
#include "gemm/cutlass/abi.h"

namespace gf_cutlass {

using namespace cute;

// The kernel schedules a candidate names: its mainloop (and the mainloop that applies fp8 block
// scales), its epilogue and its tile scheduler.
struct Cooperative {
  using Mainloop = cutlass::gemm::KernelTmaWarpSpecializedCooperative;
  using BlockScaledMainloop = cutlass::gemm::KernelTmaWarpSpecializedCooperativeFP8Blockwise;
  using Epilogue = cutlass::epilogue::TmaWarpSpecializedCooperative;
  using Scheduler = cutlass::gemm::PersistentScheduler;
};
struct Pingpong {
  using Mainloop = cutlass::gemm::KernelTmaWarpSpecializedPingpong;
  using BlockScaledMainloop = cutlass::gemm::KernelTmaWarpSpecializedPingpongFP8Blockwise;
  using Epilogue = cutlass::epilogue::TmaWarpSpecialized;
  using Scheduler = cutlass::gemm::PersistentScheduler;
};
struct StreamK {  // cooperative warps over stream-K work units (partial tiles fixed up in workspace)
  using Mainloop = cutlass::gemm::KernelTmaWarpSpecializedCooperative;
  using BlockScaledMainloop = void;  // not offered with block scales
  using Epilogue = cutlass::epilogue::TmaWarpSpecializedCooperative;
  using Scheduler = cutlass::gemm::StreamKScheduler;
};

// fp8 dequantisation scales (gemmforge's ScaleKind): none, one float each for A and B, one per
// row of A and per column of B, or per 1x128 group of A and 128x128 block of B (applied in the
// mainloop, to each k-block's partial sums).
enum Scale { kNoScale, kTensorScale, kRowwiseScale, kBlockScale };

// The bias the epilogue adds (gemmforge's BiasKind): none, one per column of D (N), one per row (M).
enum BiasKind { kNoBias, kColBias, kRowBias };

// The blockwise mainloop's scale layouts: A's (kb, m) at kb*M + m, as gemmforge's (GemmArgs); B's
// N-major, (nb, kb) at kb*ceil(N/128) + nb, the only major it takes on sm90 (K-major B scales fail
// its static assertions), where gemmforge's are K-major: each launch transposes them first.
using BlockScales =
    cutlass::detail::Sm90BlockwiseScaleConfig<1, 128, 128, cute::GMMA::Major::MN, cute::GMMA::Major::MN>;

// 128-element blocks covering an extent of x.
inline int blocks128(int64_t x) { return int((x + 127) / 128); }

// B's block scales from gemmforge's (nb, kb) at nb*kbs + kb to (nb, kb) at kb*nbs + nb.
__global__ void transpose_block_scales(const float* in, float* out, int nbs, int kbs) {
  for (int i = blockIdx.x * blockDim.x + threadIdx.x; i < nbs * kbs; i += gridDim.x * blockDim.x)
    out[(i % kbs) * nbs + i / kbs] = in[i];
}

// The epilogue's fusion operation: D = act(alpha * acc + beta * C [+ bias per column or row]);
// with per-tensor fp8 scales alpha is multiplied by scale_a * scale_b, read from device memory (a
// null bias pointer reads as zeros). ElementC is void when the epilogue reads no C (the kernel then
// loads none).
template <class TileShape, class ElementD, class ElementC, int kBias, int kScale, template <class> class Act>
struct Fusion {
  using Op = cute::conditional_t<
      kBias == kRowBias, cutlass::epilogue::fusion::LinCombPerRowBiasEltAct<Act, ElementD, float, ElementD, ElementC, float>,
      cutlass::epilogue::fusion::LinCombPerColBiasEltAct<Act, ElementD, float, ElementD, ElementC, float>>;
};
template <class TileShape, class ElementD, class ElementC, int kBias, template <class> class Act>
struct Fusion<TileShape, ElementD, ElementC, kBias, kTensorScale, Act> {
  using Op = cute::conditional_t<
      kBias == kRowBias,
      cutlass::epilogue::fusion::ScaledLinCombPerRowBiasEltAct<Act, ElementD, float, ElementD, ElementC, float>,
      cutlass::epilogue::fusion::ScaledLinCombPerColBiasEltAct<Act, ElementD, float, ElementD, ElementC, float>>;
};
template <class TileShape, class ElementD, class ElementC, template <class> class Act>
struct Fusion<TileShape, ElementD, ElementC, kNoBias, kNoScale, Act> {
  using Op = cutlass::epilogue::fusion::LinCombEltAct<Act, ElementD, float, ElementC, float>;
};
template <class TileShape, class ElementD, class ElementC>
struct Fusion<TileShape, ElementD, ElementC, kNoBias, kNoScale, cutlass::epilogue::thread::Identity> {
  using Op = cutlass::epilogue::fusion::LinearCombination<ElementD, float, ElementC, float>;
};
// Rowwise scales have no stock operation: a visitor tree, D = act(alpha * (scale_a[m] *
// (scale_b[n] * acc)) + bias[n] (or bias[m])) (no C; a null bias reads as zeros). Its arguments
// nest as the tree does: a node's children in order, then the node's own.
template <class TileShape, class ElementD, class ElementC, int kBias, template <class> class Act>
struct Fusion<TileShape, ElementD, ElementC, kBias, kRowwiseScale, Act> {
  static constexpr auto kRound = cutlass::FloatRoundStyle::round_to_nearest;
  template <template <class> class Fn, class Out = float>
  using Compute = cutlass::epilogue::fusion::Sm90Compute<Fn, Out, float, kRound>;
  using PerRow = cutlass::epilogue::fusion::Sm90ColBroadcast<0, TileShape, float, float>;   // scale_a: M
  using PerCol = cutlass::epilogue::fusion::Sm90RowBroadcast<0, TileShape, float, float>;   // scale_b: N
  using Bias = cute::conditional_t<kBias == kRowBias,
                                   cutlass::epilogue::fusion::Sm90ColBroadcast<0, TileShape, ElementD, float>,  // M
                                   cutlass::epilogue::fusion::Sm90RowBroadcast<0, TileShape, ElementD, float>>; // N
  using Alpha = cutlass::epilogue::fusion::Sm90ScalarBroadcast<float>;
  using Acc = cutlass::epilogue::fusion::Sm90AccFetch;
  using ColScaled = cutlass::epilogue::fusion::Sm90EVT<Compute<cutlass::multiplies>, PerCol, Acc>;
  using Scaled = cutlass::epilogue::fusion::Sm90EVT<Compute<cutlass::multiplies>, PerRow, ColScaled>;
  using Biased = cutlass::epilogue::fusion::Sm90EVT<Compute<cutlass::homogeneous_multiply_add>, Alpha, Scaled, Bias>;
  using Op = cutlass::epilogue::fusion::Sm90EVT<Compute<Act, ElementD>, Biased>;

  static typename Op::Arguments arguments(const gf_cutlass_problem& p) {
    const auto* bias = static_cast<const ElementD*>(p.bias);
    return {{{{p.alpha}}, {{p.scale_a}, {{p.scale_b}, {}, {}}, {}}, {bias}, {}}, {}};
  }
};

// The stride of a dense (x, y, batch) tensor whose stride type makes one of x, y unit-stride.
template <class Stride>
Stride packed_stride(int64_t x, int64_t y) {
  Stride s{};
  if constexpr (cute::is_static<cute::remove_cvref_t<decltype(get<1>(s))>>::value)
    get<0>(s) = y;  // y is the contiguous mode
  else
    get<1>(s) = x;
  get<2>(s) = x * y;
  return s;
}

// What prepare returns: CUTLASS's Params for one problem and pointer set, behind the C ABI.
struct HandleBase {
  virtual ~HandleBase() = default;
  virtual int run(cudaStream_t stream) = 0;  // 0 or a cudaError_t
};

template <int kM, int kN, int kK, int kClusterM, int kClusterN, class Schedule, class ElementA, class ElementB,
          class LayoutB, class ElementD, class ElementC, int kBias, int kScale, template <class> class Act>
struct Instance {
  using TileShape = Shape<Int<kM>, Int<kN>, Int<kK>>;
  using ClusterShape = Shape<Int<kClusterM>, Int<kClusterN>, _1>;
  using LayoutA = cutlass::layout::RowMajor;
  using LayoutD = cutlass::layout::RowMajor;
  // 16-byte accesses (what TMA needs); C shares D's alignment, also when there is none.
  static constexpr int kAlignA = 128 / cutlass::sizeof_bits<ElementA>::value;
  static constexpr int kAlignB = 128 / cutlass::sizeof_bits<ElementB>::value;
  static constexpr int kAlignD = 128 / cutlass::sizeof_bits<ElementD>::value;
  // Block scales are the mainloop's: its A and B layouts carry the scale layouts, and the epilogue
  // is the unscaled one.
  static constexpr bool kBlock = kScale == kBlockScale;
  using MainloopLayoutA =
      cute::conditional_t<kBlock, cute::tuple<LayoutA, decltype(BlockScales::deduce_layoutSFA())>, LayoutA>;
  using MainloopLayoutB =
      cute::conditional_t<kBlock, cute::tuple<LayoutB, decltype(BlockScales::deduce_layoutSFB())>, LayoutB>;
  using MainloopSchedule =
      cute::conditional_t<kBlock, typename Schedule::BlockScaledMainloop, typename Schedule::Mainloop>;
  using FusionT = Fusion<TileShape, ElementD, ElementC, kBias, kBlock ? int(kNoScale) : kScale, Act>;
  using FusionOp = typename FusionT::Op;

  using CollectiveEpilogue = typename cutlass::epilogue::collective::CollectiveBuilder<
      cutlass::arch::Sm90, cutlass::arch::OpClassTensorOp, TileShape, ClusterShape,
      cutlass::epilogue::collective::EpilogueTileAuto, float, float, ElementC, LayoutD, kAlignD, ElementD, LayoutD,
      kAlignD, typename Schedule::Epilogue, FusionOp>::CollectiveOp;
  // The mainloop takes the stages that fit beside the epilogue's shared memory.
  using CollectiveMainloop = typename cutlass::gemm::collective::CollectiveBuilder<
      cutlass::arch::Sm90, cutlass::arch::OpClassTensorOp, ElementA, MainloopLayoutA, kAlignA, ElementB,
      MainloopLayoutB, kAlignB, float, TileShape, ClusterShape,
      cutlass::gemm::collective::StageCountAutoCarveout<static_cast<int>(
          sizeof(typename CollectiveEpilogue::SharedStorage))>,
      MainloopSchedule>::CollectiveOp;
  using GemmKernel = cutlass::gemm::kernel::GemmUniversal<Shape<int, int, int, int>, CollectiveMainloop,
                                                          CollectiveEpilogue, typename Schedule::Scheduler>;
  using Gemm = cutlass::gemm::device::GemmUniversalAdapter<GemmKernel>;
  using Arguments = typename Gemm::Arguments;

  static Arguments arguments(const gf_cutlass_problem& p) {
    using StrideA = typename GemmKernel::StrideA;
    using StrideB = typename GemmKernel::StrideB;
    using StrideC = typename GemmKernel::StrideC;
    using StrideD = typename GemmKernel::StrideD;
    const int m = int(p.m), n = int(p.n), k = int(p.k), l = int(p.batch);
    cutlass::KernelHardwareInfo hw;
    hw.device_id = p.device;
    hw.sm_count = p.sm_count;
    const auto* a = static_cast<const ElementA*>(p.a);
    const auto* b = static_cast<const ElementB*>(p.b);
    typename CollectiveMainloop::Arguments mainloop;
    if constexpr (kBlock)  // B's scales as transposed into the workspace's head (Handle::run)
      mainloop = {a,
                  packed_stride<StrideA>(m, k),
                  b,
                  packed_stride<StrideB>(n, k),
                  p.scale_a,
                  BlockScales::tile_atom_to_shape_SFA(make_shape(m, n, k, l)),
                  static_cast<const float*>(p.workspace),
                  BlockScales::tile_atom_to_shape_SFB(make_shape(m, n, k, l))};
    else
      mainloop = {a, packed_stride<StrideA>(m, k), b, packed_stride<StrideB>(n, k)};
    Arguments args{cutlass::gemm::GemmUniversalMode::kGemm,
                   {m, n, k, l},
                   mainloop,
                   {{},
                    static_cast<const CElement*>(p.c),
                    packed_stride<StrideC>(m, n),
                    static_cast<ElementD*>(p.d),
                    packed_stride<StrideD>(m, n)},
                   hw};
    using Raster = cutlass::gemm::kernel::detail::RasterOrderOptions;
    args.scheduler.raster_order = p.raster == 1 ? Raster::AlongM : p.raster == 2 ? Raster::AlongN : Raster::Heuristic;
    args.scheduler.max_swizzle_size = p.swizzle > 0 ? p.swizzle : 1;
    if constexpr (kScale == kRowwiseScale) {
      args.epilogue.thread = FusionT::arguments(p);
    } else {
      args.epilogue.thread.alpha = p.alpha;
      args.epilogue.thread.beta = p.beta;
      if constexpr (kBias != kNoBias || kScale == kTensorScale)
        args.epilogue.thread.bias_ptr = static_cast<const ElementD*>(p.bias);
      if constexpr (kScale == kTensorScale) {
        args.epilogue.thread.scale_a_ptr = p.scale_a;
        args.epilogue.thread.scale_b_ptr = p.scale_b;
      }
    }
    return args;
  }

  // Block scales: B's transposed scales at the workspace's head, CUTLASS's workspace after them.
  static size_t scale_bytes(const gf_cutlass_problem& p) {
    return kBlock ? (size_t(blocks128(p.n)) * size_t(blocks128(p.k)) * 4 + 255) / 256 * 256 : 0;
  }
  static size_t workspace_bytes(const gf_cutlass_problem& p) {
    return scale_bytes(p) + Gemm::get_workspace_size(arguments(p));
  }

  // The adapter (CUTLASS's Params) and the arguments, which stream-K needs again at each launch.
  struct Handle final : HandleBase {
    Gemm gemm;
    Arguments args;
    void* workspace = nullptr;       // CUTLASS's
    const float* scale_b = nullptr;  // block scales: gemmforge's, transposed to the workspace's head
    float* scales = nullptr;
    int nbs = 0, kbs = 0;

    int run(cudaStream_t stream) override {
      if constexpr (kBlock) {
        transpose_block_scales<<<(nbs * kbs + 255) / 256, 256, 0, stream>>>(scale_b, scales, nbs, kbs);
        if (const cudaError_t e = cudaGetLastError(); e != cudaSuccess) return int(e);
      }
      // Stream-K counts arrivals per tile in the workspace and never resets them: zero them again
      // (a memset on the stream, so the launch still captures into a graph).
      if constexpr (cute::is_same_v<typename Schedule::Scheduler, cutlass::gemm::StreamKScheduler>) {
        if (GemmKernel::initialize_workspace(args, workspace, stream) != cutlass::Status::kSuccess)
          return int(cudaErrorUnknown);
      }
      if (gemm.run(stream) == cutlass::Status::kSuccess) return 0;
      const cudaError_t e = cudaGetLastError();
      return int(e != cudaSuccess ? e : cudaErrorLaunchFailure);
    }
  };

  // "" when CUTLASS can run p (its can_implement, which looks at sizes only), else why not.
  static bool can_implement(const gf_cutlass_problem& p, char* why, size_t why_len) {
    const cutlass::Status s = Gemm::can_implement(arguments(p));
    if (s == cutlass::Status::kSuccess) return true;
    std::snprintf(why, why_len, "CUTLASS's can_implement refuses %lldx%lldx%lld (%s: sizes or alignment)",
                  (long long)p.m, (long long)p.n, (long long)p.k, cutlassGetStatusString(s));
    return false;
  }

  // The Params (and the workspace initialised on stream); null and why when CUTLASS declines.
  static void* prepare(const gf_cutlass_problem& p, cudaStream_t stream, char* why, size_t why_len) {
    Handle* h = new (std::nothrow) Handle;
    if (!h) {
      std::snprintf(why, why_len, "out of host memory");
      return nullptr;
    }
    h->args = arguments(p);
    h->workspace = p.workspace ? static_cast<char*>(p.workspace) + scale_bytes(p) : nullptr;
    h->scale_b = p.scale_b;
    h->scales = static_cast<float*>(p.workspace);
    h->nbs = blocks128(p.n), h->kbs = blocks128(p.k);
    const cutlass::Status s = h->gemm.initialize(h->args, h->workspace, stream);
    if (s != cutlass::Status::kSuccess) {
      const cudaError_t e = cudaGetLastError();
      std::snprintf(why, why_len, "CUTLASS cannot run %lldx%lldx%lld: %s%s%s", (long long)p.m, (long long)p.n,
                    (long long)p.k, cutlassGetStatusString(s), e != cudaSuccess ? ": " : "",
                    e != cudaSuccess ? cudaGetErrorString(e) : "");
      delete h;
      return nullptr;
    }
    return static_cast<HandleBase*>(h);
  }

 private:
  using CElement = cute::conditional_t<cute::is_void_v<ElementC>, ElementD, ElementC>;
};

// A type as a value (std::type_identity is C++20; units are C++17, as CUTLASS is).
template <class T>
struct Tag {
  using type = T;
};

// The unit's instances, indexed as the generated names list them.
template <class... Instances>
struct Unit {
  static constexpr int count = int(sizeof...(Instances));

  // fn(Tag<Instance>{}) for the i-th instance; R{} when there is none.
  template <class R, class Fn>
  static R dispatch(int i, Fn&& fn) {
    R out{};
    int at = 0;
    ((at++ == i ? (void)(out = fn(Tag<Instances>{})) : (void)0), ...);
    return out;
  }
};

}  // namespace gf_cutlass
