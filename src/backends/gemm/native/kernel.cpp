// Loading and launching a native kernel: tensor maps for A and B, the persistent grid, and the
// split-K scratch in the caller's workspace.
#include "backends/gemm/native/kernel.hpp"

#include <cuda.h>

#include <cstring>
#include <mutex>

#include "backends/gemm/native/codegen.hpp"
#include "core/arith.hpp"
#include "core/log.hpp"
#include "cuda/check.hpp"
#include "cuda/driver.hpp"
#include "cuda/memory.hpp"
#include "cuda/module.hpp"
#include "gemm/sm90/params.h"

namespace gf::native {
namespace {

static_assert(sizeof(CUtensorMap) == sizeof(TmaDesc), "A tensor map travels in the kernel's parameters as a TmaDesc.");
static_assert(int(PdlTrigger::after_loads) == kPdlAfterLoads && int(PdlTrigger::at_start) == kPdlAtStart &&
                  int(PdlTrigger::at_exit) == kPdlAtExit,
              "GemmArgs's PDL trigger travels to the kernel as its value.");

// The tensor-map element type: fp8 moves as bytes.
CUtensorMapDataType map_type(DType t) {
  switch (t) {
    case DType::f16:
      return CU_TENSOR_MAP_DATA_TYPE_FLOAT16;
    case DType::bf16:
      return CU_TENSOR_MAP_DATA_TYPE_BFLOAT16;
    case DType::e4m3:
    case DType::e5m2:
      return CU_TENSOR_MAP_DATA_TYPE_UINT8;
    case DType::f32:
      break;
  }
  GF_FAIL("no tensor map for {} elements in the native kernels", to_string(t));
}

// A tensor map of `rank` (1 to 3) dimensions, its elements each a step of one, zeros past the
// edges; `what` names the operand for the alignment error.
TmaDesc encode_map(CUtensorMapDataType type, cuuint32_t rank, const void* ptr, const cuuint64_t* dims,
                   const cuuint64_t* strides, const cuuint32_t* box, CUtensorMapSwizzle swizzle,
                   CUtensorMapL2promotion promotion, const char* what) {
  GF_CHECK(reinterpret_cast<uintptr_t>(ptr) % 16 == 0, "TMA needs 16-byte aligned {}; got {}", what, ptr);
  const cuuint32_t elem_strides[3] = {1, 1, 1};
  CUtensorMap map;
  GF_CU_CHECK(cuda::driver().cuTensorMapEncodeTiled(&map, type, rank, const_cast<void*>(ptr), dims, strides, box,
                                                    elem_strides, CU_TENSOR_MAP_INTERLEAVE_NONE, swizzle, promotion,
                                                    CU_TENSOR_MAP_FLOAT_OOB_FILL_NONE));
  TmaDesc desc;
  std::memcpy(&desc, &map, sizeof desc);
  return desc;
}

// A 3-D tensor map {inner, outer, batch}, 128-byte swizzled boxes (box_inner elements of 128 bytes).
TmaDesc tensor_map(const void* ptr, DType t, int64_t inner, int64_t outer, int64_t batch, uint32_t box_inner,
                   uint32_t box_outer) {
  const uint64_t es = uint64_t(dtype_bytes(t));
  const cuuint64_t dims[3] = {cuuint64_t(inner), cuuint64_t(outer), cuuint64_t(batch)};
  const cuuint64_t strides[2] = {cuuint64_t(inner) * es, cuuint64_t(inner * outer) * es};
  const cuuint32_t box[3] = {box_inner, box_outer, 1};
  return encode_map(map_type(t), 3, ptr, dims, strides, box, CU_TENSOR_MAP_SWIZZLE_128B,
                    CU_TENSOR_MAP_L2_PROMOTION_L2_256B, "operands (A, B, and D and C with a TMA-store epilogue)");
}

// A 1-D tensor map over `count` fp32 (block scales), unswizzled boxes of `box`. A rank-1 map has
// no strides, but the driver wants the array (CUDA 13.0 answers nullptr with "invalid argument").
TmaDesc scale_map(const float* ptr, int64_t count, uint32_t box) {
  const cuuint64_t dims[1] = {cuuint64_t(count)}, strides[1] = {cuuint64_t(count) * 4};
  return encode_map(CU_TENSOR_MAP_DATA_TYPE_FLOAT32, 1, ptr, dims, strides, &box, CU_TENSOR_MAP_SWIZZLE_NONE,
                    CU_TENSOR_MAP_L2_PROMOTION_NONE, "block scales of A");
}

class NativeKernel final : public Kernel {
 public:
  // p: the problem; the kernel runs kernel_problem(c, p) (its transpose, with swap-AB).
  NativeKernel(const NativeConfig& c, const GemmProblem& problem, const std::string& cubin)
      : cfg_(c),
        problem_(problem),
        kernel_problem_(kernel_problem(c, problem)),
        module_(cubin),
        fn_(module_.function(kernel_symbol(c, problem).c_str())) {
    const GemmProblem& p = kernel_problem_;
    cuda::set_max_dynamic_smem(fn_, unsigned(c.smem_bytes(p)));
    int device = 0, sms = 0;
    GF_CUDA_CHECK(cudaGetDevice(&device));
    GF_CUDA_CHECK(cudaDeviceGetAttribute(&sms, cudaDevAttrMultiProcessorCount, device));
    tiles_m_ = ceil_div(p.m, c.bm);
    tiles_n_ = ceil_div(p.n, c.bn);
    const int64_t units = p.batch * ceil_div(tiles_m_, c.pair_m()) * ceil_div(tiles_n_, c.pair_n()) * c.split_k;
    // Persistent: as many clusters as can be resident at once (fewer than SMs / 2 for pairs
    // where GPCs have odd SM counts), none idle.
    int resident = sms / c.cluster;
    if (c.cluster > 1) resident = cuda::max_active_clusters(fn_, launch_config(unsigned(c.cluster)));
    GF_CHECK(resident > 0, "native {}: no cluster of {} fits on the device", c.name(problem), c.cluster);
    grid_ = unsigned(std::min<int64_t>(units, resident) * c.cluster);
    log().debug("native {}: {} units, {} resident clusters of {}, grid {}", c.name(problem), units, resident, c.cluster,
                grid_);
    // The workspace: a counter per tile (kept zero between launches), then the slices' partials.
    // Pairs number their tiles per pair, the spare CTA of an odd last pair among them.
    if (c.split_k > 1) {
      const int64_t padded_tiles = units / c.split_k * c.cluster;
      counters_bytes_ = (size_t(padded_tiles) * 4 + 255) / 256 * 256;
      partials_bytes_ = size_t(padded_tiles) * size_t(c.split_k) * size_t(c.bm) * size_t(c.bn) * 4;
    }
  }

  size_t workspace_bytes() const override { return counters_bytes_ + partials_bytes_; }
  size_t alignment() const override { return 16; }  // TMA

  void launch(const GemmArgs& args, cudaStream_t stream) override {
    {
      const GemmProblem& p = problem_;
      const Epilogue& e = p.epilogue;
      GF_CHECK(args.a && args.b && args.d, "native {}: A, B and D must be non-null", p.key());
      GF_CHECK(!e.has_c() || args.c, "native {}: the epilogue reads C but C is null", p.key());
      GF_CHECK(e.bias == BiasKind::none || args.bias, "native {}: the epilogue adds a bias but bias is null", p.key());
      GF_CHECK(e.scale == ScaleKind::none || (args.scale_a && args.scale_b),
               "native {}: the fp8 scales scale_a and scale_b must be non-null", p.key());
      GF_CHECK(args.workspace_bytes >= workspace_bytes(), "native {}: needs {} bytes of workspace, got {}", p.key(),
               workspace_bytes(), args.workspace_bytes);
    }
    // The kernel's operands: with swap-AB, B (and its scales) as its A, A as its B.
    const GemmProblem& p = kernel_problem_;
    const Epilogue& e = p.epilogue;
    const bool swap = cfg_.swap_ab;
    const void* a = swap ? args.b : args.a;
    const void* b = swap ? args.a : args.b;
    // Tensor maps cost a driver call each: encoded when a pointer changes, under a lock held only
    // for that (launches on other threads may change them too).
    GemmParams params;
    {
      std::lock_guard lock(maps_mu_);
      if (a != last_a_) {
        maps_.a = tensor_map(a, p.a, p.k, p.m, p.batch, uint32_t(block_k(p)), uint32_t(cfg_.bm / cfg_.pair_n()));
        last_a_ = a;
      }
      if (b != last_b_) {
        if (p.layout == Layout::nn)
          maps_.b = tensor_map(b, p.b, p.n, p.k, p.batch, 64, 64);
        else {
          // Half-height boxes when the tile's B comes in halves (a split gate, or a pair sharing B).
          uint32_t rows = uint32_t(e.gate == GateKind::split || cfg_.pair_m() > 1 ? cfg_.bn / 2 : cfg_.bn);
          maps_.b = tensor_map(b, p.b, p.k, p.n, p.batch, uint32_t(block_k(p)), rows);
        }
        last_b_ = b;
      }
      if (cfg_.store_tma() && args.d != last_d_) {
        maps_.d = tensor_map(args.d, p.out, p.out_cols(), p.m, p.batch, 64, uint32_t(cfg_.wg_rows()));
        last_d_ = args.d;
      }
      if (cfg_.store_tma() && e.has_c() && args.c != last_c_) {
        maps_.c_tile = tensor_map(args.c, p.out, p.out_cols(), p.m, p.batch, 64, uint32_t(cfg_.wg_rows()));
        last_c_ = args.c;
      }
      if (e.scale == ScaleKind::block128 && args.scale_a != last_sfa_) {
        maps_.sfa = scale_map(args.scale_a, p.scale_a_count(), uint32_t(gemm_scale_box(cfg_.bm)));
        last_sfa_ = args.scale_a;
      }
      params = maps_;
    }
    params.out = args.d;
    params.c = args.c;
    params.bias = args.bias;
    params.scale_a = swap ? args.scale_b : args.scale_a;
    params.scale_b = swap ? args.scale_a : args.scale_b;
    params.scale_d = args.scale_d;
    params.counters = static_cast<int*>(args.workspace);
    params.partials = reinterpret_cast<float*>(static_cast<char*>(args.workspace) + counters_bytes_);
    params.m = int(p.m), params.n = int(p.n), params.k = int(p.k), params.batch = int(p.batch);
    params.out_cols = int(p.out_cols());
    params.tiles_m = tiles_m_, params.tiles_n = tiles_n_;
    params.alpha = e.alpha, params.beta = e.beta;
    const unsigned pair_bytes = 2u * unsigned(dtype_bytes(p.out));
    params.pairs_aligned = p.out_cols() % 2 == 0 && reinterpret_cast<uintptr_t>(args.d) % pair_bytes == 0;
    params.pdl = args.pdl && args.pdl_prefetch;
    params.pdl_trigger = int(args.pdl_trigger);
    void* kernel_args[] = {&params};
    cuda::LaunchConfig launch = launch_config(grid_);
    launch.pdl = args.pdl;
    cuda::launch(fn_, launch, kernel_args, stream);
  }

  cuda::LaunchConfig launch_config(unsigned grid) const {
    return {.grid = {grid, 1, 1},
            .block = {unsigned(cfg_.threads()), 1, 1},
            .smem_bytes = unsigned(cfg_.smem_bytes(kernel_problem_)),
            .cluster = {unsigned(cfg_.cluster), 1, 1}};
  }

 private:
  NativeConfig cfg_;
  GemmProblem problem_, kernel_problem_;
  cuda::Module module_;
  CUfunction fn_;
  int tiles_m_ = 0, tiles_n_ = 0;
  unsigned grid_ = 0;
  size_t counters_bytes_ = 0, partials_bytes_ = 0;
  std::mutex maps_mu_;
  GemmParams maps_{};  // the tensor maps of the last pointers seen
  const void* last_a_ = nullptr;
  const void* last_b_ = nullptr;
  const void* last_d_ = nullptr;
  const void* last_c_ = nullptr;
  const float* last_sfa_ = nullptr;
};

}  // namespace

std::unique_ptr<Kernel> load_kernel(const NativeConfig& c, const GemmProblem& p, const std::string& cubin) {
  return std::make_unique<NativeKernel>(c, p, cubin);
}

}  // namespace gf::native
