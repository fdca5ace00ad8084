#include "backends/gemm/native/space.hpp"

#include <fmt/format.h>

#include <algorithm>
#include <cmath>
#include <functional>
#include <optional>
#include <tuple>

#include "core/arith.hpp"
#include "core/ranking.hpp"

namespace gf::native {
std::string NativeConfig::name(const GemmProblem& p) const {
  std::string epi;
  for (char ch : p.epilogue.is_identity() ? std::string("plain") : p.epilogue.to_string())
    if (ch != '=') epi += ch == '+' ? '_' : ch;
  const std::string in =
      p.b == p.a ? std::string(to_string(p.a)) : fmt::format("{}x{}", to_string(p.a), to_string(p.b));
  return fmt::format("sm90_{}_{}_{}_{}x{}x{}_{}_s{}_c{}_k{}_x{}{}_g{}{}_{}", in, to_string(p.out), to_string(p.layout),
                     bm, bn, block_k(p), pingpong ? "pp" : "co", stages, consumers, split_k, cluster,
                     cluster == 2 ? (cluster_m ? "m" : "n") : "", group, raster_n ? "n" : "m", epi) +
         (store_tma() ? fmt::format("_tma{}", store_boxes) : "") + (promote ? "_promote" : "") +
         (promote_ahead ? "_ahead" : "") + (halves ? "_halves" : "") + (swap_ab ? "_swap" : "");
}

nlohmann::json NativeConfig::to_json() const {
  nlohmann::json j = {{"bm", bm},
                      {"bn", bn},
                      {"stages", stages},
                      {"consumers", consumers},
                      {"pingpong", pingpong},
                      {"split_k", split_k},
                      {"cluster", cluster},
                      {"cluster_m", cluster_m},
                      {"group", group},
                      {"raster_n", raster_n},
                      {"store_boxes", store_boxes},
                      {"promote", promote},
                      {"swap_ab", swap_ab}};
  // Absent when false: stored decisions of before keep their keys.
  if (promote_ahead) j["promote_ahead"] = true;
  if (halves) j["halves"] = true;
  return j;
}

NativeConfig NativeConfig::from_json(const nlohmann::json& j) {
  NativeConfig c;
  c.bm = j.at("bm");
  c.bn = j.at("bn");
  c.stages = j.at("stages");
  c.consumers = j.at("consumers");
  c.pingpong = j.at("pingpong");
  c.split_k = j.at("split_k");
  c.cluster = j.at("cluster");
  c.cluster_m = j.value("cluster_m", false);
  c.store_boxes = j.value("store_boxes", 0);
  c.promote = j.value("promote", false);
  c.promote_ahead = j.value("promote_ahead", false);
  c.halves = j.value("halves", false);
  c.swap_ab = j.value("swap_ab", false);
  c.group = j.at("group");
  c.raster_n = j.at("raster_n");
  return c;
}

GemmProblem kernel_problem(const NativeConfig& c, const GemmProblem& p) {
  if (!c.swap_ab) return p;
  GemmProblem t = p;
  std::swap(t.m, t.n);
  std::swap(t.a, t.b);
  if (p.epilogue.bias == BiasKind::col) t.epilogue.bias = BiasKind::row;
  if (p.epilogue.bias == BiasKind::row) t.epilogue.bias = BiasKind::col;
  return t;
}

std::string unsupported_reason(const GemmProblem& p) {
  const int64_t es = dtype_bytes(p.a), row_bytes = p.k * es;
  if (row_bytes % 16 != 0)
    return fmt::format("rows of A are K*{} = {} bytes; TMA needs a multiple of 16 (K % {} == 0)", es, row_bytes,
                       16 / es);
  if (p.epilogue.scale == ScaleKind::block128 && p.epilogue.gate == GateKind::split)
    return "block scales with a split SwiGLU gate are not in the native templates (use the interleaved gate)";
  // A's block scales come by TMA, whose coordinates are 32-bit (a box may reach 288 past the end).
  if (p.epilogue.scale == ScaleKind::block128 && p.scale_a_count() > INT32_MAX - 512)
    return fmt::format("A's block scales ({} fp32) exceed TMA's 2^31-element reach", p.scale_a_count());
  if (p.layout == Layout::nn && p.n % 8 != 0)
    return fmt::format("rows of B (K x N) are N*2 = {} bytes; TMA needs a multiple of 16 (N % 8 == 0)", p.n * 2);
  if (p.layout == Layout::nn && p.epilogue.gate != GateKind::none) return "SwiGLU needs layout tn (W row-major N x K)";
  return "";
}

std::string illegal_reason(const NativeConfig& c, const GemmProblem& p, const DeviceInfo& d) {
  if (c.swap_ab) {
    // The transposed store is per element from registers: no gate (its pairs would lie in two
    // threads), no TMA store; block scales' layouts are not transposed.
    if (p.layout != Layout::tn) return "swap-AB takes layout tn (both operands K-major)";
    if (p.epilogue.gate != GateKind::none) return "swap-AB does not take a SwiGLU gate";
    if (p.epilogue.scale == ScaleKind::block128) return "swap-AB does not take block scales";
    if (c.store_tma()) return "swap-AB stores D transposed from registers, not by TMA";
    NativeConfig plain = c;
    plain.swap_ab = false;
    return illegal_reason(plain, kernel_problem(c, p), d);
  }
  if (c.consumers < 1 || c.consumers > 2) return "consumers must be 1 or 2";
  if (c.pingpong && c.consumers != 2) return "ping-pong alternates two consumers";
  if (c.bm % c.consumers != 0 || (c.wg_rows() != 64 && c.wg_rows() != 128)) return "each consumer owns 64 or 128 rows";
  if (c.bn % 16 != 0 || c.bn < 16 || c.bn > 256) return "BN must be a multiple of 16 in [16, 256]";
  if (c.acc_per_thread() > c.max_acc_per_thread())
    return fmt::format("more than {} accumulators per thread{}", c.max_acc_per_thread(),
                       c.promote_ahead ? " (promotion ahead triples them)"
                       : c.promote     ? " (promotion doubles them)"
                                       : "");
  if (c.promote && !is_fp8(p.a)) return "promotion is for fp8 inputs";
  if (c.promote_ahead && !c.promote) return "promotion ahead is a way of promoting";
  // Each half is one wgmma of its own shape (kernels/ptx/wgmma_ops.cuh has N in 16-steps).
  if (c.halves && (!c.promote || c.promote_ahead || c.bn % 32 != 0))
    return "promotion by halves promotes, not ahead, halves of a width that is a multiple of 32";
  if (c.store_tma() && is_fp8(p.out)) return "an fp8 D is stored from registers";
  // The column scales (BN/4 a thread) beside more than 128 accumulators spill (ptxas, CUDA 13.0).
  if (p.epilogue.scale == ScaleKind::rowcol && c.acc_per_thread() > 128)
    return "per-column scales past 128 accumulators spill";
  // Two consumers' 120 or 128 final accumulators a thread beside the column scales spill stored
  // from registers (8-44 bytes at half the rasters and clusters, every swap-AB one; the exhaustive
  // lists of 16, 128 and 4096 x 28672 x 4096, 2026-12-05); staged for TMA they fit.
  if (p.epilogue.scale == ScaleKind::rowcol && c.consumers == 2 && c.out_acc_per_thread() >= 120 && !c.store_tma())
    return "per-column scales beside two consumers' 120+ accumulators spill stored from registers";
  // With split-K's reduction too, from 96 on (some at 96, all at 128 and swap-AB's at 128).
  if (p.epilogue.scale == ScaleKind::rowcol && c.split_k > 1 && c.acc_per_thread() > 64)
    return "per-column scales with split-K past 64 accumulators spill";
  // A bias and GELU beside the final accumulators spill (ptxas, CUDA 13.0). Erf GELU (the form in
  // activation.cuh: ~15 instructions an element), from every config of five families, eleven
  // widths and each staging, bf16 and fp8 rowwise (2026-12-05): past 128 accumulators, staging 2+
  // boxes 208 wide or 2 boxes of 128 rows a consumer, and with rowwise scales 240 wide. Tanh GELU
  // (2026-12-05, the exhaustive lists of 4096^3 fp8 rowwise): with rowwise scales 240 wide stored
  // from two consumers' registers or 4 boxes of a lone one.
  const Epilogue& e = p.epilogue;
  if (e.bias != BiasKind::none && (e.act == Activation::gelu || e.act == Activation::gelu_tanh)) {
    const bool rowcol = e.scale == ScaleKind::rowcol;
    if (e.act == Activation::gelu && (c.out_acc_per_thread() > 128 || (c.bn >= 208 && c.store_boxes >= 2) ||
                                      (c.wg_rows() == 128 && c.store_boxes == 2) || (rowcol && c.bn >= 240)))
      return "a bias and erf GELU spill past 128 accumulators, staging 2 boxes of 128 rows or 208 wide, or "
             "(rowwise) 240 wide";
    if (rowcol && c.bn >= 240 && (c.consumers == 2 ? !c.store_tma() : c.store_boxes >= 4))
      return "rowwise scales, a bias and GELU spill at 240 wide stored from registers or 4 boxes";
  }
  // fp8 rowwise scales and a SwiGLU gate: two consumers of 128 rows each spill stored from
  // registers at 112 wide and more (8-20 bytes; every exhaustive config of 4096x28672x4096).
  if (p.epilogue.scale == ScaleKind::rowcol && p.epilogue.gate != GateKind::none && c.consumers == 2 &&
      c.wg_rows() == 128 && !c.store_tma() && c.bn >= 112)
    return "rowwise scales and a gate spill from two consumers of 128 rows stored from registers";
  if (p.epilogue.scale == ScaleKind::block128 && (!c.promote || (128 % c.bn != 0 && c.bn != 192)))
    return "block scales need promotion and BN dividing 128 or of 192 (one or two blocks of B per tile)";
  // Past 128 accumulators a consumer keeps ~40 of its 232 registers for the rest: the split-K
  // reduction, staging several boxes at once (a column bias per box) and, at 192, a column bias
  // with an activation spill (ptxas, CUDA 13.0).
  if (c.acc_per_thread() > 128 &&
      (c.split_k > 1 || c.store_boxes > 1 ||
       (c.acc_per_thread() > 176 && p.epilogue.bias == BiasKind::col && p.epilogue.act != Activation::none)))
    return "past 128 accumulators, split-K, staging several boxes or (at 192) a bias with an activation spill";
  // Without setmaxnreg a lone consumer has 255 registers; the split-K reduction on top of 128
  // accumulators spills (ptxas, CUDA 13.0).
  if (c.consumers == 1 && c.split_k > 1 && c.acc_per_thread() > 96) return "split-K with 128 accumulators spills";
  if (p.layout == Layout::nn && c.bn % 64 != 0) return "N-major B needs BN % 64 == 0";
  if (p.epilogue.gate == GateKind::split && c.bn % 32 != 0) return "a split gate needs BN % 32 == 0";
  if (c.stages < 2) return "at least two pipeline stages";
  if (c.smem_bytes(p) > d.smem_per_block_optin)
    return fmt::format("needs {} bytes of shared memory, the device allows {}", c.smem_bytes(p),
                       d.smem_per_block_optin);
  int k_blocks = ceil_div(p.k, block_k(p));
  if (c.split_k < 1 || c.split_k > k_blocks) return "split-K needs at least one K-block per slice";
  if (c.group < 1) return "group must be >= 1";
  if (c.cluster != 1 && c.cluster != 2 && c.cluster != 4) return "clusters are 1, 2 or 4 (2x2) CTAs";
  if (c.cluster != 2 && c.cluster_m) return "cluster_m stacks a pair";
  if (c.store_boxes < 0) return "store_boxes must be >= 0";
  if (c.store_tma()) {
    const int out_n = tile_out_cols(c.bn, p);
    if (p.out == DType::f32) return "the TMA-store epilogue takes 16-bit outputs";
    if (out_n < 64 || (p.epilogue.gate != GateKind::none && out_n % 64 != 0))
      return "the TMA-store epilogue stores 64-column boxes (whole ones when gated: BN % 128 == 0)";
    if (tile_out_boxes(c.bn, p) % c.store_boxes != 0)
      return "the TMA-store epilogue stages a divisor of the tile's 64-column boxes at a time";
    if (p.out_cols() % 8 != 0) return "a TMA store needs D rows of a multiple of 16 bytes";
  }
  if (c.pair_m() > 1 && p.layout == Layout::nn && c.bn % 128 != 0) return "sharing N-major B needs BN % 128 == 0";
  return "";
}

std::vector<NativeConfig> ranked_configs(const GemmProblem& p, const DeviceInfo& d, Search level) {
  struct Family {
    int bm, consumers;
    bool pingpong;
  };
  const Family families[] = {{64, 1, false}, {128, 2, false}, {256, 2, false}, {64, 2, true}, {128, 2, true}};
  const std::vector<int> groups = level == Search::exhaustive ? std::vector<int>{4, 8, 16} : std::vector<int>{8};
  const int sms = std::max(d.sm_count, 1);
  // Drops stages (down to 2) until the config fits the device's shared memory.
  auto deepest_pipeline = [&](NativeConfig& c) {
    while (c.stages > 2 && c.smem_bytes(p) > d.smem_per_block_optin) --c.stages;
  };
  // At large M, widths between these let a grid of many tiles fill its last wave: at
  // 8192x6144x4096 128x176 tiles make 16.97 waves where 256x128 make 11.6 (cuBLASLt's pick there is
  // 176 wide). The small-M lists were fitted without them.
  std::vector<int> widths = {64, 96, 128, 192, 256};
  if (p.m > 256) widths.insert(widths.end(), {112, 144, 160, 176, 208, 240});
  // fp8: block scales need promotion (and a tile inside one 128-row block of B, or 192 wide across
  // two); otherwise it is a candidate beside the plain accumulation.
  const bool block_scaled = p.epilogue.scale == ScaleKind::block128;
  if (block_scaled) widths = {32, 64, 128, 192};
  // fp8: none, promoted, promoted ahead (a third set of accumulators: where they fit).
  struct Promotion {
    bool promote, ahead, halves;
  };
  std::vector<Promotion> promotions = {{false, false, false}};
  // Ahead first: where the model ties the two (both bound by operand traffic), the race's winner.
  if (is_fp8(p.a) && block_scaled) promotions = {{true, true, false}, {true, false, false}};
  if (is_fp8(p.a) && !block_scaled) promotions = {{false, false, false}, {true, false, false}, {true, true, false}};
  // By halves: at 192 wide, where promotion ahead does not fit, the block race measured it 3.5% and
  // 5.4% faster than the plain promotion at 128x192 with the TMA store (its best kernels; -4..+2%
  // with other stores and pairs) and 1-6% at 64x192 ping-pong; narrower, where ahead fits, up to 32%
  // slower than the better of the two (2026-12-06). So the short lists of block scales hold it at
  // 192 wide; with rowwise scales, not raced, only the exhaustive list.
  if (is_fp8(p.a) && (block_scaled || level == Search::exhaustive)) promotions.push_back({true, false, true});
  // Swap-AB at small M: the kernel's N is the problem's M, its width the narrowest that covers it.
  const bool swappable = p.m <= kSwapMaxM && p.layout == Layout::tn && p.epilogue.gate == GateKind::none &&
                         p.epilogue.scale != ScaleKind::block128;
  std::vector<std::pair<double, NativeConfig>> scored, swapped;  // swap-AB's ranked apart
  // The ring's depth: 8 stages, as shared memory allows. At small M the weights stream from DRAM
  // through few SMs, each with at most `stages` k-blocks in flight: in races of every depth (8, 12,
  // 16, 24) of llama3-8b's bf16 and fp8 rowwise GEMMs at 16 and 128 tokens, the best 12-stage
  // kernel ran 1.4-7.1% ahead of the best with 8 or fewer in 7 of 8 and within 1.9% of each race's
  // best (13 and 16 stages won three races by under 2%, 22 none; H100, 2026-12-06). So 12 here;
  // the exhaustive list offers each depth.
  std::vector<int> depths = {8};
  if (p.m <= kDeepPipelineMaxM)
    depths = level == Search::exhaustive ? std::vector<int>{8, 12, 16, 24} : std::vector<int>{12};
  for (bool swap : {false, true}) {
    if (swap && !swappable) continue;
    auto& into = swap ? swapped : scored;
    const GemmProblem q = kernel_problem(NativeConfig{.swap_ab = swap}, p);  // what the kernel runs
    std::vector<int> bns = swap ? std::vector<int>{int(ceil_div(p.m, 16) * 16)} : widths;
    // Swap-AB's tokens in two tiles too, as pairs along N that share the weights' tile: cuBLASLt's
    // pick at 77 tokens (qwen2.5-7b and phi3-mini o, 2026-12-06) is 64 weight rows x 40 tokens in
    // clusters 4x2, 1.2x native's best single tile. Raced (H100, 2026-12-06) they ran 6-11% behind
    // native's best single tile at four 77-token shapes: the exhaustive list alone.
    const int half = int(ceil_div(ceil_div(p.m, 2), 16) * 16);
    if (swap && level == Search::exhaustive && half < bns[0]) bns.push_back(half);
    // A config at each depth of the ring: the deepest pipeline that fits (capped at the depth)
    // beside one staging box, then as many staging boxes as still fit; a config whose pipeline a
    // shallower depth already reached (so offered there) is skipped.
    auto offer = [&](const NativeConfig& base, bool store_tma) {
      for (size_t i = 0; i < depths.size(); ++i) {
        auto offered_shallower = [&](const NativeConfig& c) { return i > 0 && c.stages <= depths[i - 1]; };
        NativeConfig c = base;
        c.store_boxes = store_tma ? 1 : 0;
        c.stages = depths[i];
        deepest_pipeline(c);
        if (offered_shallower(c)) continue;
        const int out_boxes = tile_out_boxes(c.bn, q);
        if (store_tma)
          for (int boxes = out_boxes; boxes > 1; --boxes) {
            NativeConfig wider = c;
            wider.store_boxes = boxes;
            if (out_boxes % boxes == 0 && wider.smem_bytes(p) <= d.smem_per_block_optin) {
              c = wider;
              break;
            }
          }
        // With a C input, staging the whole tile (C then lands during the main loop) is offered
        // beside the deepest pipeline. The large-M model charges nothing for the stage it gives
        // up, so there it ranks first; the two measured alike at 4096^3. The small-M model charges
        // for it.
        if (store_tma && p.epilogue.has_c() && c.store_boxes < out_boxes) {
          NativeConfig whole = c;
          whole.store_boxes = out_boxes;
          deepest_pipeline(whole);
          if (!offered_shallower(whole) && illegal_reason(whole, p, d).empty())
            into.emplace_back(estimate_us(whole, p, d), whole);
        }
        if (illegal_reason(c, p, d).empty()) into.emplace_back(estimate_us(c, p, d), c);
      }
    };
    for (const Family& f : families)
      for (const Promotion promotion : promotions)
        for (int bn : bns)
          for (int split : {1, 2, 3, 4, 6, 8})
            // No cluster, a pair along N (shares A), a pair along M (shares B), a 2x2 quad (shares
            // both; exhaustive lists only, at large M, whole-K, where the tile grid is 2x2 at least).
            // Quads halve both operands' L2 traffic, yet only 30 clusters of 4 fit on an H100's
            // GPCs at once (120 of 132 SMs): raced at llama3-8b's fp8 rowwise GEMMs at 4096 tokens,
            // the best tile as a quad ran 10-36% behind each race's best, and 128x128 quads 13% behind
            // the same tile alone (2026-12-06).
            for (int pairing : {0, 1, 2, 3})
              for (bool store_tma : {false, true})
                for (int group : groups)
                  for (bool raster_n : {false, true}) {
                    if (swap && store_tma) continue;                    // stored transposed, from registers
                    if (swap && bn < bns[0] && pairing != 1) continue;  // two token tiles: as pairs along N
                    if (promotion.halves && level != Search::exhaustive && bn != 192) continue;
                    if (pairing == 3 && (level != Search::exhaustive || swap || split > 1 || q.m <= kDeepPipelineMaxM ||
                                         q.m < 2 * f.bm || q.n < 2 * bn))
                      continue;
                    // Split-K only where whole tiles leave SMs idle.
                    if (split > 1 && q.batch * ceil_div(q.m, f.bm) * ceil_div(q.n, bn) >= sms) continue;
                    offer(NativeConfig{.bm = f.bm,
                                       .bn = bn,
                                       .stages = 2,
                                       .consumers = f.consumers,
                                       .pingpong = f.pingpong,
                                       .split_k = split,
                                       .cluster = pairing == 3 ? 4
                                                  : pairing    ? 2
                                                               : 1,
                                       .cluster_m = pairing == 2,
                                       .group = group,
                                       .raster_n = raster_n,
                                       .promote = promotion.promote,
                                       .promote_ahead = promotion.ahead,
                                       .halves = promotion.halves,
                                       .swap_ab = swap},
                          store_tma);
                  }
  }
  if (scored.empty() && swapped.empty()) return {};
  const size_t fast_keep = 8;
  const size_t keep = level == Search::fast ? fast_keep : level == Search::normal ? 30 : scored.size();
  // Four distinct tiles first, then variants (pairs, TMA store) of the best ones, so that each
  // short list starts the next (fast is the head of default):
  // pairs of the best tile were 17% faster than its single CTAs at 1000x4096x1000 and within 1%
  // at 4096^3 in an exhaustive search, which the model does not capture.
  // Swap-AB is ranked apart, its best configs after that list (two more for fast), so that the race
  // measures them beside the plain kernels: the model does not weigh the two kinds against each
  // other (swap-AB won every full race at 16 and 77 tokens, 2026-12-06).
  const std::vector<std::function<std::string(const NativeConfig&)>> tiers = {
      [](const NativeConfig& c) { return fmt::format("{}x{}{}", c.bm, c.bn, c.pingpong); },
      [](const NativeConfig& c) {
        return fmt::format("{}x{}{}/{}{}{}", c.bm, c.bn, c.pingpong, c.pair_m(), c.pair_n(), c.store_boxes);
      }};
  std::vector<NativeConfig> head = diverse_head<NativeConfig>(scored, keep, tiers, 4);
  // Ping-pong runs one consumer's epilogue under the other's multiplies, which the model prices
  // poorly: a transcendental an element costs a cooperative kernel 13-22% (fp8 rowwise erf GELU at
  // 128 and 4096 tokens, 2026-12-04), and ping-pong won all four full bf16 races at 4096 and 8192
  // tokens (2026-12-06), where the model ranked it 5-17% behind. So the best ping-pong kernel is
  // raced too, where an SM has two tiles at least to alternate.
  auto pays = [&](const NativeConfig& c) {
    return c.pingpong && p.batch * ceil_div(p.m, c.bm) * ceil_div(p.n, c.bn) >= 2 * sms;
  };
  // The fast list's ping-pong kernel: one of its 8, else the best one that pays, appended here.
  std::optional<NativeConfig> fast_pingpong;
  const auto fast_head = head.begin() + std::min(fast_keep, head.size());
  if (auto it = std::find_if(head.begin(), fast_head, [](const NativeConfig& c) { return c.pingpong; });
      it != fast_head) {
    fast_pingpong = *it;
  } else if (const NativeConfig* best = best_ranked(scored, pays)) {
    fast_pingpong = *best;
  }
  if (level != Search::exhaustive && fast_pingpong && std::find(head.begin(), head.end(), *fast_pingpong) == head.end())
    head.push_back(*fast_pingpong);
  // A tile of the fast list raced without a cluster too, where the model sees only the L2 traffic
  // pairs save (which does pay at narrow tiles); judged by the fast list's head, so that every
  // level appends the same.
  auto race_unpaired = [&](const NativeConfig& of) {
    auto alone = [&](const NativeConfig& c) {
      return c.bm == of.bm && c.bn == of.bn && c.pingpong == of.pingpong && c.pair_m() * c.pair_n() == 1;
    };
    if (level != Search::exhaustive) add_best_of(head, scored, alone, alone, fast_keep);
  };
  // Block scales: a pair's two CTAs release each stage together, so each waits on the other's
  // promotion; the best tile alone ran 6.5% and 8% ahead of its pairs at 4096^3 and
  // 4096x28672x4096 (H100 race, 2026-12-06).
  if (block_scaled && !head.empty()) race_unpaired(NativeConfig(head.front()));
  // Ping-pong: the fast list's, paired along N, ran 6% behind the same tile unpaired (the M-pair
  // 2%) at 4096x14336x4096 e4m3 rowwise + bias + erf GELU (H100, 2026-12-07).
  if (fast_pingpong && fast_pingpong->pair_m() * fast_pingpong->pair_n() > 1) race_unpaired(*fast_pingpong);
  // Swap-AB's first two are the best whole-K kernel and the best split one: both kinds won races
  // (split 2 at llama3-8b o in bf16 at 16 tokens, 2026-12-06; split 2-3 picked in fp8 that day),
  // and the model ranks the two within a few percent. The fast list takes two more: in the race of
  // ring depths (H100, 2026-12-06) swap-AB's best two missed the race's best by up to 7% (one
  // race's spread), its best four by 1.8% at most.
  const size_t swap_keep = level == Search::fast ? 4 : level == Search::normal ? 6 : swapped.size();
  std::vector<std::function<std::string(const NativeConfig&)>> swap_tiers = {
      [](const NativeConfig& c) { return std::string(c.split_k > 1 ? "split" : "whole"); }};
  swap_tiers.insert(swap_tiers.end(), tiers.begin(), tiers.end());
  for (NativeConfig& c : diverse_head<NativeConfig>(std::move(swapped), swap_keep, swap_tiers)) head.push_back(c);
  return head;
}

}  // namespace gf::native
