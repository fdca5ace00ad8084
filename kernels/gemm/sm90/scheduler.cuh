#pragma once
// The persistent tile scheduler: work units (an output tile, or one K-slice of it with split-K)
// numbered per cluster, in grouped raster order, each CTA taking every gridDim-th cluster unit.
#include "gemm/sm90/traits.cuh"

namespace gf {

template <class Cfg>
struct Scheduler : Traits<Cfg> {
  using T = Traits<Cfg>;
  using T::BK, T::BM, T::BN, T::kCluster, T::kPairM, T::kPairN, T::kSplitK, T::rank_m, T::rank_n;

  // The work unit's coordinates: batch, tile row and column, K-slice.
  struct Unit {
    int b, m0, n0, kb_begin, kb_end, tile, split;
  };

  // A's block scales run k-block-major ({k_blocks * M} fp32): k-block kb's scale of the unit's
  // first row. A stage's boxes start at the 16-byte boundary at or below it (params.h), so the
  // producer loads from `& ~3` and the consumers read from `& 3` into the stage.
  static __device__ __forceinline__ int first_scale(const GemmParams& p, const Unit& u, int kb) {
    return kb * p.m + u.m0;
  }

  // Work units are numbered per cluster; a cluster's CTAs take adjacent tile rows, columns or both.
  static __device__ __forceinline__ int cluster_tiles_m(const GemmParams& p) {
    return kPairM ? (p.tiles_m + 1) / 2 : p.tiles_m;
  }
  static __device__ __forceinline__ int cluster_tiles_n(const GemmParams& p) {
    return kPairN ? (p.tiles_n + 1) / 2 : p.tiles_n;
  }
  static __device__ __forceinline__ int units(const GemmParams& p) {
    return p.batch * cluster_tiles_m(p) * cluster_tiles_n(p) * kSplitK;
  }

  static __device__ __forceinline__ Unit unit_at(const GemmParams& p, int unit, int rank) {
    Unit u;
    const int split = unit % kSplitK;
    u.split = split;
    u.tile = unit / kSplitK;
    const int tiles_m = cluster_tiles_m(p), tiles_n = cluster_tiles_n(p);
    const int per_batch = tiles_m * tiles_n;
    u.b = u.tile / per_batch;
    const int t = u.tile % per_batch;
    // Grouped order: kGroup tiles along one dimension are swept together, so the operand
    // shared along the other dimension stays in L2.
    int mb, nb;
    if (!Cfg::kRasterN) {
      const int per_group = Cfg::kGroup * tiles_n, first = t / per_group * Cfg::kGroup;
      const int size = min(Cfg::kGroup, tiles_m - first);
      mb = first + t % per_group % size;
      nb = t % per_group / size;
    } else {
      const int per_group = Cfg::kGroup * tiles_m, first = t / per_group * Cfg::kGroup;
      const int size = min(Cfg::kGroup, tiles_n - first);
      nb = first + t % per_group % size;
      mb = t % per_group / size;
    }
    // A spare CTA of an odd last pair lands past M or N: it loads zeros and stores nothing.
    u.m0 = (kPairM ? mb * 2 + rank_m(rank) : mb) * BM;
    u.n0 = (kPairN ? nb * 2 + rank_n(rank) : nb) * BN;
    if (kCluster > 1) u.tile = u.tile * kCluster + rank;
    const int k_blocks = (p.k + BK - 1) / BK;
    u.kb_begin = split * k_blocks / kSplitK;
    u.kb_end = (split + 1) * k_blocks / kSplitK;
    return u;
  }
};

}  // namespace gf
