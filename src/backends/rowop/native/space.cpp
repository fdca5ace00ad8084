#include "backends/rowop/native/space.hpp"

#include <fmt/format.h>

#include <algorithm>
#include <cmath>

#include "gemmforge/error.hpp"
#include "rowops/params.h"

namespace gf::rowops {
namespace {

// Dynamic shared memory one CTA may use on sm_90 (227 KiB), less the row op's static scratch.
constexpr int64_t kMaxSmemPerCta = 227 * 1024 - 1024;

// The ranking's rules of thumb, one a line with its reason; the tuner measures what they rank.
// Scores are penalties (lower first), mostly |log2| distances from what measured best on an H200.
struct Rule {
  // Per halving of the vector below the widest that fits: narrower accesses waste the memory system.
  static constexpr double kNarrowVector = 4.0;
  // 1024-thread CTAs, and 128-thread streaming ones, measured behind their neighbours.
  static constexpr double kOddThreads = 0.5;
  // Per CTA of a cluster: each row waits for the cluster's slowest CTA.
  static constexpr double kPerClusterCta = 1.0 / 32.0;
  // Registers fed by bulk copies (the fastest for 64k-256k columns): best at this many values a
  // thread (the norms' weights take registers too), past 3 stages each costs this much.
  static constexpr double kFedValuesSoftmax = 64.0, kFedValuesNorms = 32.0, kFedStagePast3 = 0.25;
  // Two passes over bulk-copied stages: ~128 KiB of copies in flight an SM, 256 threads (each
  // doubling away half a point), two or more CTAs an SM (one alone stalls the SM at each row's
  // exchange), and behind the register rows fed by the same copies, which measured faster.
  static constexpr double kBulkInFlightBytes = 131072.0, kBulkThreads = 256.0, kBulkLoneCta = 1.0, kBehindFedRows = 0.5;
  // Two passes from L2: a part of ~32 KiB a CTA (enough to stream, small enough that the second
  // read still finds it in L2), behind bulk copies, which measured faster wherever both apply.
  static constexpr double kStreamPartBytes = 32768.0, kBehindBulk = 1.0;
  // Rows in registers: two values a vector lane, no cluster (1 plus 1/8 a CTA), and two or more
  // CTAs an SM (one alone idles the memory system while it reduces), counting ~32 registers a
  // thread beside the values out of 64K.
  static constexpr double kClusterBase = 1.0, kPerClusterCtaResident = 1.0 / 8.0, kLoneCta = 2.0, kRegisters = 65536.0,
                          kOtherRegisters = 32.0;
};

}  // namespace

int RowConfig::values_per_thread(int64_t cols) const {
  if (stream) return vec;
  int64_t part_vecs = cols / cluster / vec;
  int64_t iters = (part_vecs + group() - 1) / group();
  return int(iters * vec);
}

int64_t RowConfig::part_bytes(const RowOpSpec& s) const { return s.cols / cluster * dtype_bytes(s.in); }

int64_t RowConfig::stage_bytes(const RowOpSpec& s) const { return part_bytes(s) * (s.residual ? 2 : 1); }

int64_t RowConfig::affine_bytes(const RowOpSpec& s) const {
  return s.kind == RowOpKind::softmax ? 0 : part_bytes(s) * (s.kind == RowOpKind::layernorm ? 2 : 1);
}

// The kernel's own layout (kernels/rowops/params.h).
int RowConfig::smem_bytes(const RowOpSpec& s) const {
  return bulk ? int(rowop_smem_bytes(stages, stage_bytes(s), affine_bytes(s))) : 0;
}

std::string RowConfig::name(const RowOpSpec& s) const {
  std::string key = s.key();
  for (char& ch : key)
    if (ch == ':' || ch == '+' || ch == '>' || ch == '-') ch = '_';
  // Bulk copies: _b (two passes over the stages), _p (registers); _h2: the max over bf16 pairs.
  return fmt::format("rowop_{}_t{}_r{}_v{}_x{}{}{}", key, threads, rows_per_cta, vec, cluster,
                     bulk     ? fmt::format("_{}{}", stream ? "b" : "p", stages)
                     : stream ? "_s"
                              : "",
                     pair_max ? "_h2" : "");
}

nlohmann::json RowConfig::to_json() const {
  return {{"threads", threads}, {"rows_per_cta", rows_per_cta},
          {"vec", vec},         {"cluster", cluster},
          {"stream", stream},   {"bulk", bulk},
          {"stages", stages},   {"pair_max", pair_max}};
}

RowConfig RowConfig::from_json(const nlohmann::json& j) {
  return {.threads = j.at("threads"),
          .rows_per_cta = j.at("rows_per_cta"),
          .vec = j.at("vec"),
          .cluster = j.at("cluster"),
          .stream = j.value("stream", false),
          .bulk = j.value("bulk", false),
          .stages = j.value("stages", 0),
          .pair_max = j.value("pair_max", false)};
}

int widest_vec(const RowOpSpec& s) {
  int v = 16 / dtype_bytes(s.in);
  while (v > 1 && s.cols % v != 0) v /= 2;
  return v;
}

std::string illegal_reason(const RowConfig& c, const RowOpSpec& s) {
  if (c.threads < 32 || c.threads > 1024 || c.threads % 32 != 0) return "threads must be 32..1024, whole warps";
  if (c.rows_per_cta < 1 || c.threads % c.rows_per_cta != 0) return "rows per CTA must divide the threads";
  int g = c.group();
  if ((g & (g - 1)) != 0) return "threads per row must be a power of two";
  if (c.vec < 1 || s.cols % c.vec != 0) return "the vector width must divide the row";
  if (c.vec * dtype_bytes(s.in) > 16) return "vectors are at most 16 bytes";
  if (c.cluster != 1 && c.cluster != 2 && c.cluster != 4 && c.cluster != 8 && c.cluster != 16)
    return "clusters of 1, 2, 4, 8 or 16 CTAs";
  // 16 is beyond the portable 8; Hopper allows it on request (RowKernel asks).
  if (c.cluster > 1 && (c.rows_per_cta != 1 || s.cols % (int64_t(c.cluster) * c.vec) != 0))
    return "a cluster splits one row into whole vectors";
  // The cluster exchange reuses its slots only behind the CTA barrier of a multi-warp reduction.
  if (c.cluster > 1 && c.threads < 64) return "a cluster's CTAs need two warps or more";
  int64_t part_vecs = s.cols / c.cluster / c.vec;
  if (g > part_vecs * 2 && g > 32) return "more than half the threads of a row would idle";
  // Streaming reads each thread's vectors twice; from shared memory (bulk) fewer of them suffice.
  if (c.stream && part_vecs < int64_t(g) * (c.bulk ? 4 : 16))
    return "streaming is for rows far longer than the threads holding them";
  if (c.stream && c.rows_per_cta != 1) return "streaming takes one row (part) per CTA";
  if (c.bulk) {
    if (c.rows_per_cta != 1) return "bulk copies bring one row (part) per CTA";
    if (s.cols * dtype_bytes(s.in) % 16 != 0 || c.part_bytes(s) % 16 != 0)
      return "bulk copies move whole 16-byte units: rows and parts must be multiples of 16 bytes";
    if (c.stages < 1) return "bulk copies need at least one stage";
    if (c.smem_bytes(s) > kMaxSmemPerCta) return "the stages exceed an SM's shared memory";
  } else if (c.stages != 0) {
    return "stages are for bulk copies";
  }
  if (c.pair_max && (s.kind != RowOpKind::softmax || s.in != DType::bf16 || c.stream || c.vec % 8 != 0))
    return "the max over bf16 pairs is for bf16 softmax rows held in registers, 16-byte vectors";
  int values = c.values_per_thread(s.cols);
  if (values > 64) return fmt::format("{} values per thread exceed the register budget", values);
  // A CTA's registers: the values (two sets with a residual) plus ~40 of addressing, within 64K
  // (ptxas spilled 32 values a thread at 1024 threads, 64 registers each).
  int regs = values * (s.residual ? 2 : 1) + 40;
  if (int64_t(regs) * c.threads > 65536)
    return fmt::format("~{} registers a thread x {} threads exceed 64K", regs, c.threads);
  return "";
}

std::vector<RowConfig> row_configs(const RowOpSpec& s, bool every_width) {
  // Two families, each ranked by a rule of thumb, then interleaved so that any cut of the list
  // tries both: register-resident rows (one read) and streaming (a second read, from L2 or, with
  // bulk copies, from shared memory).
  std::vector<std::pair<double, RowConfig>> resident, streaming;
  for (int vec = widest_vec(s); vec >= 1; vec /= 2) {
    // registers, streaming (second read from L2), streaming from bulk copies, registers from bulk copies
    for (int mode : {0, 1, 2, 3})
      for (int cluster : {1, 2, 4, 8, 16})
        for (int threads : {128, 256, 512, 1024})
          for (int rows : {1, 2, 4, 8, 16, 32})
            for (int stages = mode >= 2 ? 1 : 0; stages <= (mode >= 2 ? 4 : 0); ++stages) {
              const bool stream = mode == 1 || mode == 2, bulk = mode >= 2;
              const RowConfig c{.threads = threads,
                                .rows_per_cta = rows,
                                .vec = vec,
                                .cluster = cluster,
                                .stream = stream,
                                .bulk = bulk,
                                .stages = stages};
              if (!illegal_reason(c, s).empty()) continue;
              const double narrow = double(widest_vec(s) / vec) * Rule::kNarrowVector;
              const double odd_threads = threads == 1024 || (stream && threads == 128) ? Rule::kOddThreads : 0.0;
              if (c.bulk && !stream) {
                const double target = s.kind == RowOpKind::softmax ? Rule::kFedValuesSoftmax : Rule::kFedValuesNorms;
                streaming.emplace_back(narrow + std::abs(std::log2(c.values_per_thread(s.cols) / target)) +
                                           std::max(stages - 3, 0) * Rule::kFedStagePast3 +
                                           cluster * Rule::kPerClusterCta,
                                       c);
              } else if (c.bulk) {
                // The copies in flight: the parts queued behind the ones being worked on, over the
                // CTAs that fit an SM.
                const double ctas_per_sm =
                    std::floor(std::min(double(kMaxSmemPerCta) / c.smem_bytes(s), 2048.0 / threads));
                const double in_flight = ctas_per_sm * std::max(stages - 1.0, 0.5) * double(c.stage_bytes(s));
                streaming.emplace_back(narrow + std::abs(std::log2(in_flight / Rule::kBulkInFlightBytes)) +
                                           std::abs(std::log2(threads / Rule::kBulkThreads)) / 2 +
                                           (ctas_per_sm < 2 ? Rule::kBulkLoneCta : 0.0) +
                                           cluster * Rule::kPerClusterCta + Rule::kBehindFedRows,
                                       c);
              } else if (stream) {
                streaming.emplace_back(narrow + std::abs(std::log2(double(c.part_bytes(s)) / Rule::kStreamPartBytes)) +
                                           odd_threads + Rule::kBehindBulk,
                                       c);
              } else {
                const int values = c.values_per_thread(s.cols);
                const double ctas_per_sm =
                    Rule::kRegisters / (threads * (values * (s.residual ? 2 : 1) + Rule::kOtherRegisters));
                resident.emplace_back(
                    narrow + std::abs(std::log2(double(values) / (2.0 * vec))) +
                        (cluster > 1 ? Rule::kClusterBase + cluster * Rule::kPerClusterCtaResident : 0.0) +
                        odd_threads + (ctas_per_sm < 2 ? Rule::kLoneCta : 0.0),
                    c);
              }
            }
    if (!every_width && (!resident.empty() || !streaming.empty())) break;  // narrower only when needed
  }
  auto by_score = [](const auto& a, const auto& b) { return a.first < b.first; };
  std::stable_sort(resident.begin(), resident.end(), by_score);
  std::stable_sort(streaming.begin(), streaming.end(), by_score);
  // The untuned default is the head: a row held by one CTA where it fits (the fastest kernels up
  // to 16k columns; register rows fed by bulk copies then go last, as they measured slower), else
  // the best streaming kernel (register rows fed by bulk copies beat register rows over a cluster
  // by 10-35% at 64k-256k columns).
  const bool resident_first = streaming.empty() || (!resident.empty() && resident.front().second.cluster == 1);
  std::vector<std::pair<double, RowConfig>> last;
  if (resident_first) {
    auto fed = std::stable_partition(streaming.begin(), streaming.end(),
                                     [](const auto& sc) { return !(sc.second.bulk && !sc.second.stream); });
    last.assign(fed, streaming.end());
    streaming.erase(fed, streaming.end());
  }
  const auto& first = resident_first ? resident : streaming;
  const auto& second = resident_first ? streaming : resident;
  // Where streaming leads, register rows over a cluster measured 25-50% slower than the best bulk
  // kernels at every long shape: they keep one slot in four.
  const size_t run = resident_first ? 1 : 3;
  std::vector<RowConfig> out;
  for (size_t i = 0, j = 0; i < first.size() || j < second.size();) {
    for (size_t k = 0; k < run && i < first.size(); ++k) out.push_back(first[i++].second);
    if (j < second.size()) out.push_back(second[j++].second);
  }
  for (const auto& sc : last) out.push_back(sc.second);
  // bf16 softmax rows in registers: each config also with the max over bf16 pairs, just ahead.
  std::vector<RowConfig> both;
  for (const RowConfig& c : out) {
    RowConfig pairs = c;
    pairs.pair_max = true;
    if (illegal_reason(pairs, s).empty()) both.push_back(pairs);
    both.push_back(c);
  }
  return both;
}

std::vector<RowConfig> first_configs(std::vector<RowConfig> configs, int n) {
  if (n <= 0) return configs;
  auto base = [](RowConfig c) {
    c.pair_max = false;
    return c;
  };
  int bases = 0;
  size_t keep = 0;
  for (; keep < configs.size(); ++keep) {
    const bool twin_of_previous = keep > 0 && base(configs[keep]) == base(configs[keep - 1]);
    if (!twin_of_previous && ++bases > n) break;
  }
  configs.resize(keep);
  return configs;
}

RowConfig default_config(const RowOpSpec& s) {
  auto configs = row_configs(s);
  GF_CHECK(!configs.empty(), "no row-op configuration fits {}", s.key());
  return configs.front();
}

}  // namespace gf::rowops
