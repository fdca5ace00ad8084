// The native backend's cost model: modelled microseconds, to rank the legal configs before
// anything is compiled. Two regimes: at M > kSmallM the tensor cores and L2 bound each wave; at
// smaller M the weights stream from DRAM and each unit's k-blocks arrive a round trip per trip of
// `stages` of them. Its constants were fitted to exhaustive searches of llama3's GEMMs on an H200
// (docs/journal/native-notes.md); tests/data/fitted-races.json, docs/data/search and
// docs/data/fp8/block-race-halves.json hold the races the unit tests judge its fast lists by.
#include <algorithm>
#include <cmath>

#include "backends/gemm/native/space.hpp"
#include "core/arith.hpp"

namespace gf::native {
namespace {

// The model's constants, one a line with its reason.
struct Model {
  // Peak dense 16-bit tensor-core rate of one SM (H100/H200 SXM: ~989 TFLOP/s over 132 SMs).
  static constexpr double kPeakPerSm = 989e12 / 132;
  // DRAM an H200 achieves for a GEMM's operands (its device-to-device copy moves 4.3 TB/s r+w).
  static constexpr double kDramBytesPerSecond = 3.3e12;
  // L2 to the SMs, all SMs together (H100/H200, an estimate).
  static constexpr double kL2BytesPerSecond = 11e12;
  // A launch and its first wave's start.
  static constexpr double kLaunchUs = 3.0;
  // Problems with at most this many rows stream their weights (the small-M regime).
  static constexpr int64_t kSmallM = 256;
  // A tile's operand intensity BM*BN/(BM+BN) at which it reaches half the peak: the shared-memory
  // operand traffic per flop falls as the tile grows.
  static constexpr double kHalfPeakIntensity = 12.0;
  // A lone consumer warpgroup's share of the peak (no second one to hide its waits).
  static constexpr double kOneConsumerShare = 0.9;
  // fp8 runs the tensor cores at twice the 16-bit rate.
  static constexpr double kFp8Speedup = 2.0;
  // Promotion waits for each k-block's wgmma before adding it up: the share of the peak left.
  // Measured at 4096^3 with 128x128 tiles: 0.92 (rowwise scales), 0.82 (block scales, whose
  // factors it loads and multiplies too).
  static constexpr double kPromoteShare = 0.85;
  // Promotion ahead overlaps it with the next k-block's wgmma, a k-block's wgmma kept in flight
  // across it: 1.10-1.13x the plain promotion's speed at 128x128 cooperative, 1.02-1.22 at the
  // other tiles but 256x64 (0.92-0.98), ping-pong 1.16-1.25 (H100 block races at 4096^3 and
  // 4096x28672x4096, 2026-12-06, docs/data/fp8/race-inflight-ahead-h100-*.json).
  static constexpr double kAheadGain = 1.12;
  // Promotion by column halves (in the short lists at 192 wide, where ahead does not fit): 1.035 and
  // 1.054 the plain promotion's speed at 128x192 with the TMA store (block scales at
  // 4096x28672x4096 and 4096^3; 0.96-1.02 with other stores and pairs), 1.01-1.06 at 64x192
  // ping-pong (2026-12-06).
  static constexpr double kHalvesGain = 1.04;

  // Small M. Each k-block waits about a DRAM round trip under load, `stages` of them in flight:
  // ~1 us in the full races of llama3-8b o and down at 128 tokens and o at 16 (2484 kernels; the
  // first fit's 2 us ranked split 2-3 tiles ahead of the winners by 4-6%: whole-K 64x64 for o,
  // 128x64 split 2 for down).
  static constexpr double kRoundTripS = 1e-6;
  // A split-K slice past the first: its partials' round trip and the last slice's reduction.
  static constexpr double kSliceS = 1.5e-6;
  // A unit's trips take kNarrowBase + kNarrowPer64 * 64 / BN round trips: narrow B boxes stream
  // somewhat worse (the same races).
  static constexpr double kNarrowBase = 0.9, kNarrowPer64 = 0.1;
  // A grid of one wave that leaves SMs idle streams slower than its trips alone say: at llama3-8b
  // down at 16 tokens swap-AB's 128x16 tiles split 2 (64 CTAs) ran 6% behind 64x16 ones (128 CTAs,
  // the same trips). The unit's stream takes 1 + kIdleSmCost * (its idle SMs' share) as long;
  // 0.1-0.5 rank the six fitted races alike (2026-12-06). (A bound on an SM's bytes a trip fitted
  // them too, but a 256x16 kernel drew 117 GB/s an SM, and at 120 the bound still dropped the
  // whole-K 256x16 tiles the bench's tune picked for gate_up and lm_head at 16 tokens.)
  static constexpr double kIdleSmCost = 0.2;
  // A ping-pong kernel whose CTAs get one unit each runs it on one consumer, and pays for the turns:
  // 0-6% behind the one-consumer cooperative kernel of the same tile and split without clusters, in
  // the full bf16 races of llama3-8b o and down at 16 tokens (2026-12-06). A tie-breaker: in fp8 at
  // split 3 and more ping-pong ran ahead (H100).
  static constexpr double kLonePingPong = 1.02;
  // Storing a tile's fp32-wide rows from registers, per SM; the TMA store leaves sooner.
  static constexpr double kSmallEpilogueBytesPerSecond = 100e9, kSmallTmaStoreGain = 4.0;
  // A pair along M with a single M-tile leaves its partner idle.
  static constexpr double kIdlePartner = 1.5;
  // Pairs rank just behind single CTAs of the same tile: the fit found no consistent gain at small M.
  static constexpr double kUnprovenPair = 1.02;
  // Swap-AB stores D transposed, an element at a time (a warp's store covers 16-byte pieces of 8
  // rows): its epilogue bytes cost this many times a row store's (predicted, not fitted).
  static constexpr double kTransposedStoreCost = 2.0;

  // Large M. Filling the pipeline at the start of each unit, per stage.
  static constexpr double kStageFillS = 0.15e-6;
  // Storing the tile from registers stalls the tensor cores unless the other consumer is in its
  // mainloop meanwhile (ping-pong); staging and TMA stores cost the consumers a tenth of that
  // (they measured 5-7% faster at M = 8192).
  static constexpr double kEpilogueBytesPerSecond = 40e9, kTmaStoreGain = 10.0;
  // A C input's boxes that land while the tensor cores wait: each SM's share of DRAM.
  static constexpr double kCBytesPerSecondPerSm = 25e9;
  // Under the power limit, operands moved through L2 cost clock: relative time per operand byte
  // a flop. Pairs fetch their shared operand once for both CTAs and so rank ~1% ahead of single
  // CTAs of the same tile, larger tiles ahead of smaller ones.
  static constexpr double kL2PowerCost = 4.0;
  // Split-K's reduction at large M.
  static constexpr double kSplitKUs = 2.0;
};

// Tensor-core time of a tile over k columns.
double unit_compute_s(const NativeConfig& c, const GemmProblem& p, double k) {
  const double intensity = double(c.bm) * c.bn / (c.bm + c.bn);
  const double efficiency = intensity / (intensity + Model::kHalfPeakIntensity) *
                            (c.consumers == 2 ? 1.0 : Model::kOneConsumerShare) *
                            (c.promote ? Model::kPromoteShare : 1.0) * (c.promote_ahead ? Model::kAheadGain : 1.0) *
                            (c.halves ? Model::kHalvesGain : 1.0);
  const double peak = Model::kPeakPerSm * (is_fp8(p.a) ? Model::kFp8Speedup : 1.0);
  return 2.0 * c.bm * c.bn * k / (peak * efficiency);
}

// Small M: the weights stream from DRAM, shared by few tiles, and the tensor cores mostly wait.
// Per unit: each k-block waits about a round trip, `stages` of them in flight, narrow B boxes
// streaming worse, and slower where a one-wave grid leaves SMs idle; each wave past the first
// costs a whole unit. The pipeline overlaps the loads
// with the tensor-core work only once it is full: the first trip's loads (or the last trip's work)
// are exposed, the smaller of the two over the number of trips (with K = 1000 and 8 stages, two
// trips, that is most of it: there the time follows the tile's area). The grid cannot beat DRAM
// either; the two bounds blend (as a 2-norm) since neither is reached alone.
// With swap-AB the weights are the kernel's A, in boxes of bm rows, and its tiles cover the
// transposed problem. A ping-pong kernel with one unit a CTA pays for the turns its lone consumer
// takes.
double estimate_streaming_us(const NativeConfig& c, const GemmProblem& p, const DeviceInfo& d) {
  const int sms = std::max(d.sm_count, 1);
  const GemmProblem q = kernel_problem(c, p);
  const int64_t m_tiles = ceil_div(q.m, c.bm);
  const int64_t units = q.batch * m_tiles * ceil_div(q.n, c.bn) * c.split_k;
  const int64_t waves = (units + sms - 1) / sms;
  const double k_blocks = std::ceil(double(p.k) / c.split_k / block_k(p));
  const int weight_rows = c.swap_ab ? c.bm : c.bn;
  const double narrow = Model::kNarrowBase + Model::kNarrowPer64 * 64.0 / weight_rows;
  const double trips = std::ceil(k_blocks / c.stages);
  const double idle_slowdown = 1.0 + Model::kIdleSmCost * (1.0 - std::min<double>(units, sms) / sms);
  const double unit_stream_s = trips * Model::kRoundTripS * narrow * idle_slowdown;
  const double unit_compute = unit_compute_s(c, p, k_blocks * block_k(p));
  const double grid_s = waves * (std::max(unit_compute, unit_stream_s) + std::min(unit_compute, unit_stream_s) / trips);
  const double partial_bytes = c.split_k > 1 ? 2.0 * units * c.bm * c.bn * 4 : 0.0;
  const double dram_s = (p.min_bytes() + partial_bytes) / Model::kDramBytesPerSecond;
  // The tile's elements of D: the problem's few rows of it, bn columns (swap-AB: bm of them).
  const double elements = c.swap_ab ? std::min<double>(c.bn, p.m) * c.bm : std::min<double>(c.bm, p.m) * c.bn;
  const double epilogue_s = elements * 4 / Model::kSmallEpilogueBytesPerSecond *
                            (c.swap_ab ? Model::kTransposedStoreCost : 1.0) /
                            (c.store_tma() ? Model::kSmallTmaStoreGain : 1.0);
  const double idle_partner = c.pair_m() > 1 && m_tiles < 2 ? Model::kIdlePartner : 1.0;
  const double unproven = c.cluster > 1 ? Model::kUnprovenPair : 1.0;
  const double lone_pingpong = c.pingpong && units <= sms ? Model::kLonePingPong : 1.0;
  return idle_partner * unproven * lone_pingpong *
         (Model::kLaunchUs + 1e6 * (std::hypot(grid_s, dram_s) + epilogue_s + (c.split_k - 1) * Model::kSliceS));
}

}  // namespace

double estimate_us(const NativeConfig& c, const GemmProblem& p, const DeviceInfo& d) {
  if (p.m <= Model::kSmallM) return estimate_streaming_us(c, p, d);
  if (c.swap_ab) {  // the large-M model, of the kernel's own problem
    NativeConfig plain = c;
    plain.swap_ab = false;
    return estimate_us(plain, kernel_problem(c, p), d);
  }
  const int sms = std::max(d.sm_count, 1);
  const int64_t tiles = p.batch * ceil_div(p.m, c.bm) * ceil_div(p.n, c.bn);
  const int64_t units = tiles * c.split_k;
  const int64_t waves = (units + sms - 1) / sms;
  const double k_unit = std::ceil(double(p.k) / c.split_k / block_k(p)) * block_k(p);
  // Each SM streams its units' operands; DRAM bounds the whole grid.
  const double unit_bytes = (double(c.bm) / c.pair_n() + double(c.bn) / c.pair_m()) * k_unit * dtype_bytes(p.a);
  // Operands come mostly from L2 at large M (many tiles share them).
  const double unit_s = std::max(unit_compute_s(c, p, k_unit), unit_bytes / (Model::kL2BytesPerSecond / sms));
  const double partial_bytes = c.split_k > 1 ? 2.0 * units * c.bm * c.bn * 4 : 0.0;
  const double dram_s = (p.min_bytes() + partial_bytes) / Model::kDramBytesPerSecond;
  const double fill_s = c.stages * Model::kStageFillS;
  double epilogue_s = c.pingpong ? 0.0
                                 : double(c.bm) * c.bn * 4 / Model::kEpilogueBytesPerSecond /
                                       (c.store_tma() ? Model::kTmaStoreGain : 1.0);
  // A C input arrives in the staging boxes: the first store_boxes of them during the mainloop,
  // the rest while the tensor cores wait.
  if (p.epilogue.has_c() && c.store_tma()) {
    const int out_boxes = tile_out_boxes(c.bn, p);
    epilogue_s += double(out_boxes - c.store_boxes) / out_boxes * c.bm * tile_out_cols(c.bn, p) * 2 /
                  Model::kCBytesPerSecondPerSm;
  }
  // Ping-pong runs one consumer's tile at a time: each tile has the SM's tensor cores alone.
  const int64_t pp_waves = c.pingpong ? (units + 2 * sms - 1) / (2 * sms) * 2 : waves;
  const double power = 1.0 + Model::kL2PowerCost * unit_bytes / (2.0 * c.bm * c.bn * k_unit);
  return power * (Model::kLaunchUs + 1e6 * std::max(pp_waves * (unit_s + fill_s + epilogue_s), dram_s) +
                  (c.split_k > 1 ? Model::kSplitKUs : 0.0));
}

}  // namespace gf::native
