#include "gemmforge/tuner.hpp"

#include <algorithm>
#include <atomic>
#include <chrono>
#include <future>
#include <iterator>
#include <numeric>
#include <optional>
#include <random>

#include "core/log.hpp"
#include "core/median.hpp"
#include "core/parallel.hpp"
#include "core/ranking.hpp"
#include "core/task_queue.hpp"
#include "gemmforge/error.hpp"
#include "tune/measure_session.hpp"

namespace gf {
namespace {

// Every verified candidate is timed in one race of kScreenRounds; the close contenders, within
// kContenderBand of their backend's best (at most kContenders a backend), in a second race of
// kFinalRounds whose medians decide.
constexpr int kScreenRounds = 7;
constexpr int kFinalRounds = 21;
constexpr double kContenderBand = 1.10;
constexpr size_t kContenders = 3;
// A race times its kernels side by side, at the clock their mix of power allows; alone, each runs
// at the clock its own power allows, as a layer's large GEMMs do under the power cap and as
// `bench` times them. On an H100 the race put 128x192 ping-pong 1.6% ahead of 256x192 cooperative
// at 8192x6144x4096, which ran 3.5% faster alone, and a cuBLASLt kernel ahead of cuBLASLt's default
// at 4096x4096x14336, which ran 12-20% faster alone (2026-12-06). So where the final race's best runs
// kConfirmMinUs or longer (where the power a kernel draws sets the clock), each backend's
// kConfirmEach fastest within kConfirmBand of its best, and its default pick there, are timed
// alone, kConfirmPasses times (in order, then in reverse, against drift; each timing costs a 100 ms
// warm-up), each keeping its median. Three a backend and four passes, since at 4096x28672x4096 the
// CuTe DSL's 256x192 tile raced third, 1.6% behind, and ran fastest in bench's rounds, while one
// kernel's alone times, two passes averaged, read 1403 and 1526 us in two tunes (H100, 2026-12-08).
constexpr double kConfirmBand = 1.10;
constexpr size_t kConfirmEach = 3;
constexpr int kConfirmPasses = 4;
constexpr double kConfirmMinUs = 100.0;

double seconds_since(std::chrono::steady_clock::time_point t) {
  return std::chrono::duration<double>(std::chrono::steady_clock::now() - t).count();
}

const Measurement* best_of(const std::vector<Measurement>& ms, const std::string& backend = "") {
  const Measurement* best = nullptr;
  for (const auto& m : ms)
    if (m.verified && m.us > 0 && (backend.empty() || m.backend == backend) && (!best || m.us < best->us)) best = &m;
  return best;
}

const Measurement* fastest(const std::vector<Measurement*>& ms) {
  const Measurement* best = nullptr;
  for (const Measurement* m : ms)
    if (m->verified && m->us > 0 && (!best || m->us < best->us)) best = m;
  return best;
}

Candidate candidate_of(const Measurement& m) { return {m.backend, m.candidate, m.config}; }

// A bench row for a backend none of whose measurements in `ms` verified: its first failure, with
// how many failed. Empty (no backend) when it had none.
BenchRow failure_row(const std::vector<Measurement>& ms, const std::string& backend) {
  BenchRow row;
  int failures = 0;
  for (const auto& m : ms)
    if (m.backend == backend && ++failures == 1) row = {backend, candidate_of(m), m, false};
  if (failures > 1) row.measurement.error = fmt::format("{} failed, first: {}", failures, row.measurement.error);
  return row;
}

// A backend's own default (rank 0 of cuBLASLt's heuristic list, with its default exact fp8
// accumulation), from its candidate's config.
bool is_default_pick(const nlohmann::json& config) {
  return config.is_object() && config.value("rank", -1) == 0 && !config.value("fast_accum", false);
}

// Each backend's `each` fastest of `ms` within `band` of its best, and its default pick there
// (core/ranking.hpp close_fields; unverified ones count as failed).
std::vector<Measurement*> close_per_backend(const std::vector<Measurement*>& ms, double band, size_t each) {
  std::vector<std::string> backends;
  std::vector<double> times;
  std::vector<bool> defaults;
  for (const Measurement* m : ms) {
    backends.push_back(m->backend);
    times.push_back(m->verified ? m->us : 0.0);
    defaults.push_back(is_default_pick(m->config));
  }
  std::vector<Measurement*> out;
  for (size_t i : close_fields(backends, times, defaults, band, each)) out.push_back(ms[i]);
  return out;
}

// The baselines a bench times beside each backend's best. GEMMs: cuBLASLt's own pick (with its
// fused epilogue where it has one), and eager: cuBLASLt's pick for the plain GEMM followed by the
// epilogue as a separate kernel. Row ops are set against the copy bandwidth instead.
std::vector<BenchRow> baselines(const GemmProblem&, const std::vector<Measurement>& stored) {
  std::vector<BenchRow> rows;
  for (const auto& m : stored) {
    if (m.backend == "cublaslt" && is_default_pick(m.config))
      rows.push_back({"cublaslt-default", candidate_of(m), {}, false});
    if (m.backend == "unfused" && m.config["gemm"].value("backend", "") == "cublaslt" &&
        is_default_pick(m.config["gemm"]["config"]))
      rows.push_back({"eager", candidate_of(m), {}, false});
  }
  return rows;
}
std::vector<BenchRow> baselines(const RowOpSpec&, const std::vector<Measurement>&) { return {}; }

// What a candidate's compile gives once the tuner is going away: nothing, at once.
CompileReport not_compiled() { return {.ok = false, .log = "not compiled: the tuner stopped"}; }

}  // namespace

// A problem's candidates, listed, their compiles queued, and (once finished) what each gave.
template <class Problem>
struct PreparedProblem {
  std::vector<std::pair<std::shared_ptr<BackendOf<Problem>>, Candidate>> cands;
  std::vector<std::future<CompileReport>> compiling;
  std::vector<CompileReport> compiled;
  std::map<std::string, std::string> skipped;  // backend -> why it offered nothing
  std::chrono::steady_clock::time_point listed;
  double seconds = 0;  // from listing to the last compile's end
};

struct Tuner::Impl {
  TuneOptions opt;
  DeviceInfo device = DeviceInfo::query();
  std::unique_ptr<TuningDb> db;
  // The enabled, available backends of each family.
  std::vector<std::shared_ptr<Backend>> gemm;
  std::vector<std::shared_ptr<RowOpBackend>> rowop;

  const std::vector<std::shared_ptr<Backend>>& enabled(const GemmProblem&) const { return gemm; }
  const std::vector<std::shared_ptr<RowOpBackend>>& enabled(const RowOpSpec&) const { return rowop; }

  void progress(const std::string& what, int done, int total) const {
    if (opt.progress) opt.progress(what, done, total);
  }
  uint64_t seed() const { return opt.seed ? opt.seed : std::random_device{}(); }
  std::string worker_exe() const { return opt.worker_exe.empty() ? "/proc/self/exe" : opt.worker_exe; }

  // The family's backends this run may use: those named (all when none is), present in this build.
  template <class Problem>
  std::vector<std::shared_ptr<BackendOf<Problem>>> select() const {
    std::vector<std::shared_ptr<BackendOf<Problem>>> out;
    for (const auto& b : backends<Problem>()) {
      const bool wanted =
          opt.backends.empty() || std::find(opt.backends.begin(), opt.backends.end(), b->name()) != opt.backends.end();
      if (!wanted) continue;
      if (std::string why = b->unavailable(); !why.empty()) {
        log().warn("backend {} is unavailable: {}", b->name(), why);
        continue;
      }
      out.push_back(b);
    }
    return out;
  }

  // Whether the stored decision stands for this run (see Tuner::tune).
  template <class Problem>
  bool still_valid(const Decision& d, const std::vector<std::string>& wanted) const {
    if (d.family != Problem::kFamily) return false;
    for (const auto& name : wanted)
      if (std::find(d.backends_considered.begin(), d.backends_considered.end(), name) == d.backends_considered.end())
        return false;
    auto chosen = find_backend<Problem>(d.backend);
    if (!chosen || chosen->version() != d.backend_version) {
      log().info("{}: the stored choice was made by {} {}, now {}: tuning again", d.problem, d.backend,
                 d.backend_version, chosen ? chosen->version() : "absent");
      return false;
    }
    return int(parse_search(d.search)) >= int(opt.search.level);
  }

  // The stored decision that stands for this run, if any (see Tuner::tune).
  template <class Problem>
  std::optional<Decision> stored(const Problem& problem) const {
    if (opt.force || !opt.only.empty()) return std::nullopt;
    std::vector<std::string> wanted;
    for (const auto& b : enabled(problem)) wanted.push_back(b->name());
    std::optional<Decision> d = db->decision(problem.key());
    return d && still_valid<Problem>(*d, wanted) ? d : std::nullopt;
  }

  // The compiles of every problem, in the order the problems were listed: problems prefetched
  // ahead fill the cores that one problem's few candidates leave idle. Listing (backends' own
  // queries, such as cuBLASLt's heuristics) runs on one thread of its own, in prefetch order.
  // list_queue is destroyed first: its running task may still queue compiles. Once `stopping`,
  // compiles return at once.
  std::atomic<bool> stopping{false};
  std::unique_ptr<TaskQueue> compile_queue;
  std::unique_ptr<TaskQueue> list_queue;
  ~Impl() { stopping = true; }

  // Problems whose candidates are being listed and compiled ahead (Tuner::prefetch), by key.
  std::map<std::string, std::future<PreparedProblem<GemmProblem>>> gemm_prefetched;
  std::map<std::string, std::future<PreparedProblem<RowOpSpec>>> rowop_prefetched;
  template <class Problem>
  auto& prefetched() {
    if constexpr (std::is_same_v<Problem, GemmProblem>)
      return gemm_prefetched;
    else
      return rowop_prefetched;
  }
  // One worker for all the problems: each session sets its problem up in it.
  std::unique_ptr<WorkerProcess> worker;

  template <class Problem>
  PreparedProblem<Problem> list(const Problem& problem, bool report);
  template <class Problem>
  PreparedProblem<Problem> take_prefetched(const Problem& problem);
  template <class Problem>
  void prefetch(const Problem& problem);
  template <class Problem>
  TuneResult tune(const Problem& problem);
  template <class Problem>
  std::vector<BenchRow> bench_rows(const Problem& problem, const TuneResult& tuned, std::vector<BenchRow>& failed);
  template <class Problem>
  std::vector<BenchResult> bench(const std::vector<Problem>& problems);
};

// Times from two races differ by their conditions (a longer race of fewer kernels runs hotter:
// on H200 a few percent slower), so the final race decides alone. The screening race's times of those
// that did not race again are put on the final race's scale, by the contenders' median ratio of
// the two, so that the stored list (and a bench's best of each backend) reads on one scale.
template <class Problem>
void rescale_others(std::vector<Measurement>& all, const std::vector<Measurement*>& contenders,
                    const std::vector<double>& screened_us, const Problem& problem) {
  std::vector<double> ratios;
  for (size_t i = 0; i < contenders.size(); ++i)
    if (contenders[i]->verified && contenders[i]->us > 0 && screened_us[i] > 0)
      ratios.push_back(contenders[i]->us / screened_us[i]);
  if (ratios.empty()) return;
  const double ratio = median(ratios);
  for (Measurement& m : all)
    if (m.verified && m.us > 0 && std::find(contenders.begin(), contenders.end(), &m) == contenders.end()) {
      m.us *= ratio;
      m.rate = problem.rate(m.us);
    }
}

// The close contenders of long kernels timed alone (see kConfirmBand): their alone times replace
// their race times, and the others of `all` are put on the alone scale as rescale_others does, so
// that the pick and each backend's best (which bench reports) are what each runs at alone.
// `alone_us` records the alone times by candidate id. Where one fails alone, nothing changes.
template <class Problem>
void time_alone(tune::MeasureSession& session, std::vector<Measurement>& all,
                const std::vector<Measurement*>& contenders, const Problem& problem,
                std::map<std::string, double>& alone_us) {
  const Measurement* best = fastest(contenders);
  if (!best || best->us < kConfirmMinUs) return;
  const std::vector<Measurement*> field = close_per_backend(contenders, kConfirmBand, kConfirmEach);
  if (field.size() < 2) return;
  std::vector<std::vector<double>> passes(field.size());
  for (int pass = 0; pass < kConfirmPasses; ++pass)
    for (size_t k = 0; k < field.size(); ++k) {
      const size_t i = pass % 2 == 0 ? k : field.size() - 1 - k;
      const Measurement t = session.measure(candidate_of(*field[i]), /*time=*/true);
      if (!t.verified || t.us <= 0) return;
      passes[i].push_back(t.us);
    }
  std::vector<double> alone;
  for (const auto& p : passes) alone.push_back(median(p));
  std::vector<double> raced;
  for (size_t i = 0; i < field.size(); ++i) {
    Measurement& m = *field[i];
    raced.push_back(m.us);
    log().debug("{}: {} race {:.2f} us, alone {:.2f} us", m.problem, m.candidate, m.us, alone[i]);
    alone_us[candidate_of(m).id()] = alone[i];
    m.us = alone[i];
    m.rate = problem.rate(m.us);
  }
  rescale_others(all, field, raced, problem);
}

// Times the measurements at `which` against each other in one race, or, when the race fails (a
// kernel faulted or hung the worker in it), one by one.
template <class Problem>
void time_together(tune::MeasureSession& session, const std::vector<Measurement*>& which, int rounds,
                   const Problem& problem) {
  if (which.empty()) return;
  std::vector<Candidate> cands;
  for (const Measurement* m : which) cands.push_back(candidate_of(*m));
  std::vector<Measurement> timed = session.race(cands, rounds);
  if (timed.empty()) {
    log().warn("{}: a race of {} kernels failed; timing them one by one", problem.key(), cands.size());
    for (const Candidate& c : cands) timed.push_back(session.measure(c));
  }
  for (size_t i = 0; i < which.size(); ++i) {
    Measurement& m = *which[i];
    m.verified = timed[i].verified;
    m.error = timed[i].error;
    m.rel_err = timed[i].rel_err;
    m.us = timed[i].us;
    m.rate = problem.rate(m.us);
    log().debug("{}: {} race of {} {:.2f} us", m.problem, m.candidate, which.size(), m.us);
  }
}

// Lists the candidates of every backend that can run the problem and queues their compiles.
// report: progress as the compiles go (not for a prefetch, whose callbacks would reach a caller
// that may be busy, such as Python holding its GIL).
template <class Problem>
PreparedProblem<Problem> Tuner::Impl::list(const Problem& problem, bool report) {
  const std::string key = problem.key();
  PreparedProblem<Problem> prep;
  prep.listed = std::chrono::steady_clock::now();
  for (const auto& b : enabled(problem)) {
    if (std::string why = b->supports(problem); !why.empty()) {
      prep.skipped[b->name()] = why;
      continue;
    }
    try {
      for (auto& c : b->candidates(problem, device, opt.search))
        if (name_matches(c.name, opt.only)) prep.cands.emplace_back(b, std::move(c));
    } catch (const Error& e) {
      prep.skipped[b->name()] = e.what();
    }
  }
  if (prep.cands.empty()) {
    std::vector<std::string> why;
    for (const auto& [name, reason] : prep.skipped) why.push_back(fmt::format("{}: {}", name, reason));
    GF_FAIL("no backend offers a candidate for {}{}{}", key,
            opt.only.empty() ? "" : fmt::format(" whose name contains one of '{}'", opt.only),
            why.empty() ? "" : fmt::format(" ({})", fmt::join(why, "; ")));
  }
  auto done = std::make_shared<std::atomic<int>>(0);
  const int total = int(prep.cands.size());
  for (const auto& [backend, cand] : prep.cands)
    prep.compiling.push_back(compile_queue->push([this, backend, cand, problem, report, key, done, total] {
      if (stopping) return not_compiled();
      CompileReport r;
      try {
        r = backend->compile(problem, cand, opt.use_cache);
      } catch (const std::exception& e) {
        r = {.ok = false, .log = e.what()};
      }
      if (report) progress(key + " compile", ++*done, total);
      return r;
    }));
  return prep;
}

// The problem's candidates compiled: its prefetch's, or (none) listed now, waited for.
template <class Problem>
PreparedProblem<Problem> Tuner::Impl::take_prefetched(const Problem& problem) {
  auto& pending = prefetched<Problem>();
  PreparedProblem<Problem> prep;
  if (auto it = pending.find(problem.key()); it != pending.end()) {
    std::future<PreparedProblem<Problem>> f = std::move(it->second);
    pending.erase(it);
    prep = f.get();  // rethrows what listing threw
  } else {
    prep = list(problem, true);
  }
  for (auto& f : prep.compiling) {
    try {
      prep.compiled.push_back(f.get());
    } catch (const std::future_error&) {  // dropped: the tuner is going away
      prep.compiled.push_back(not_compiled());
    }
  }
  prep.compiling.clear();
  prep.seconds = seconds_since(prep.listed);
  return prep;
}

template <class Problem>
void Tuner::Impl::prefetch(const Problem& problem) {
  const std::string key = problem.key();
  auto& pending = prefetched<Problem>();
  if (!problem.invalid_reason().empty() || enabled(problem).empty() || pending.count(key) || stored(problem)) return;
  pending.emplace(key, list_queue->push([this, problem] { return list(problem, false); }));
}

template <class Problem>
TuneResult Tuner::Impl::tune(const Problem& problem) {
  auto start = std::chrono::steady_clock::now();
  const std::string key = problem.key();
  const std::string invalid = problem.invalid_reason();
  GF_CHECK(invalid.empty(), "invalid problem {}: {}", key, invalid);
  const auto& family = enabled(problem);
  GF_CHECK(!family.empty(), "no enabled backend tunes {} problems ({}); known backends: {}", Problem::kFamily, key,
           backend_names());
  TuneResult result;
  result.problem = key;
  std::vector<std::string> wanted;
  for (const auto& b : family) wanted.push_back(b->name());

  if (std::optional<Decision> d = stored(problem)) {
    result.decision = *d;
    result.from_db = true;
    result.seconds = seconds_since(start);
    return result;
  }

  worker->warm();  // the worker's CUDA context comes up while the candidates compile
  PreparedProblem<Problem> prep = take_prefetched(problem);
  result.skipped = prep.skipped;
  result.compile_seconds = prep.seconds;
  const auto& cands = prep.cands;
  const auto& compiled = prep.compiled;

  // Each candidate verified on its own (one that crashes or hangs the worker costs a restart, and
  // only its own result), then the verified ones timed against each other.
  const auto verify_start = std::chrono::steady_clock::now();
  tune::MeasureSession session(*worker, Problem::kFamily, key, seed(), opt.candidate_timeout_s);
  std::vector<Measurement*> verified;
  result.measurements.reserve(cands.size());
  for (size_t i = 0; i < cands.size(); ++i) {
    const Candidate& cand = cands[i].second;
    Measurement m;
    if (!compiled[i].ok) {
      m = {key, cand.backend, cand.name, cand.config};
      m.error = "compile failed: " + compiled[i].log.substr(0, 2000);
    } else {
      m = session.measure(cand, /*time=*/false);
    }
    m.compile_seconds = compiled[i].seconds;
    if (!m.error.empty()) log().debug("{} {}: {}", key, cand.id(), m.error);
    result.measurements.push_back(std::move(m));
    if (result.measurements.back().verified) verified.push_back(&result.measurements.back());
    progress(key + " verify", int(i + 1), int(cands.size()));
  }
  result.verify_seconds = seconds_since(verify_start);
  const auto race_start = std::chrono::steady_clock::now();
  time_together(session, verified, kScreenRounds, problem);

  // Each backend's fastest within the band of its best, timed again in a longer race: the pick of
  // the problem and each backend's own best (which bench reports) come from that race (and, for
  // long kernels, from the close ones timed alone after it: time_alone). A
  // backend's default pick (rank 0: cuBLASLt's heuristic) within the band races too: benches
  // found it faster than the tuned pick in 9 of 20 large GEMMs.
  const std::vector<Measurement*> contenders = close_per_backend(verified, kContenderBand, kContenders);
  if (contenders.size() > 1) {
    std::vector<double> screened;
    for (const Measurement* m : contenders) screened.push_back(m->us);
    time_together(session, contenders, kFinalRounds, problem);
    rescale_others(result.measurements, contenders, screened, problem);
    time_alone(session, result.measurements, contenders, problem, result.alone_us);
  }
  const Measurement* best = contenders.size() > 1 ? fastest(contenders) : nullptr;
  result.race_seconds = seconds_since(race_start);
  if (!best) best = best_of(result.measurements);
  GF_CHECK(best, "no candidate passed verification for {} ({} tried; first error: {})", key, cands.size(),
           result.measurements.front().error);
  Decision& d = result.decision;
  d.problem = key;
  d.family = Problem::kFamily;
  d.backend = best->backend;
  d.backend_version = find_backend<Problem>(best->backend)->version();
  d.candidate = best->candidate;
  d.config = best->config;
  d.us = best->us;
  d.rate = best->rate;
  d.search = to_string(opt.search.level);
  d.candidates = int(result.measurements.size());
  d.backends_considered = wanted;
  if (opt.only.empty()) db->store(d, result.measurements);
  log().debug("{} -> {}:{} {:.1f} us", key, d.backend, d.candidate, d.us);
  result.seconds = seconds_since(start);
  return result;
}

// The rows a bench times for a problem: each backend's best of what tuning measured (the
// decision's own kernel for its backend), then the family's baselines. Backends none of whose
// candidates ran go to `failed`: untimed rows that say why.
template <class Problem>
std::vector<BenchRow> Tuner::Impl::bench_rows(const Problem& problem, const TuneResult& tuned,
                                              std::vector<BenchRow>& failed) {
  // What this run measured, or (a decision from the DB) what the run that made it measured.
  const std::vector<Measurement> measured = tuned.from_db ? db->measurements(tuned.problem) : tuned.measurements;
  if (tuned.from_db && tuned.decision.search != to_string(opt.search.level))
    log().warn("{}: the stored decision was tuned at --search {}, not {} (--force tunes again)", tuned.problem,
               tuned.decision.search, to_string(opt.search.level));
  std::vector<BenchRow> rows;
  // The decision's backend by the decision (one rescaled time may tie it).
  for (const auto& b : enabled(problem)) {
    const Measurement* m = best_of(measured, b->name());
    if (b->name() == tuned.decision.backend)
      for (const auto& x : measured)
        if (x.backend == tuned.decision.backend && x.candidate == tuned.decision.candidate) m = &x;
    if (m)
      rows.push_back({b->name(),
                      candidate_of(*m),
                      {},
                      m->backend == tuned.decision.backend && m->candidate == tuned.decision.candidate});
    else if (BenchRow r = failure_row(measured, b->name()); !r.backend.empty())
      failed.push_back(std::move(r));
  }
  for (BenchRow& r : baselines(problem, measured)) rows.push_back(std::move(r));
  return rows;
}

template <class Problem>
std::vector<BenchResult> Tuner::Impl::bench(const std::vector<Problem>& problems) {
  std::vector<BenchResult> results;
  std::vector<std::vector<BenchRow>> failed(problems.size());
  for (size_t p = 0; p < problems.size(); ++p) {
    results.push_back({tune(problems[p]), {}});
    results[p].rows = bench_rows(problems[p], results[p].tuned, failed[p]);
  }

  // Interleaved rounds, in a fresh order each round, each row keeping its median: clock drift
  // over the run, and a row's place in it, hit every row alike, the rows of every problem of the
  // group alike (the worker holds them all set up).
  std::vector<tune::MeasureSession> sessions;
  for (const BenchResult& r : results)
    sessions.emplace_back(*worker, Problem::kFamily, r.tuned.problem, seed(), opt.candidate_timeout_s,
                          int(problems.size()));
  struct Slot {
    size_t problem, row;
    std::vector<Measurement> rounds;
  };
  std::vector<Slot> slots;
  for (size_t p = 0; p < results.size(); ++p)
    for (size_t i = 0; i < results[p].rows.size(); ++i) slots.push_back({p, i, {}});
  const int n = std::max(1, opt.bench_rounds);
  std::vector<size_t> order(slots.size());
  std::iota(order.begin(), order.end(), size_t(0));
  std::mt19937 shuffle{uint32_t(seed())};
  for (int round = 0; round < n; ++round) {
    std::shuffle(order.begin(), order.end(), shuffle);
    for (size_t s : order) {
      Slot& slot = slots[s];
      BenchRow& row = results[slot.problem].rows[slot.row];
      Measurement m = sessions[slot.problem].measure(row.candidate, true, opt.bench_graph);
      m.rate = problems[slot.problem].rate(m.us);
      row.round_us.push_back(m.verified ? m.us : 0.0);
      row.round_graph_us.push_back(m.verified ? m.graph_us : 0.0);
      slot.rounds.push_back(std::move(m));
    }
  }
  for (Slot& slot : slots) {
    auto& r = slot.rounds;
    BenchRow& row = results[slot.problem].rows[slot.row];
    std::sort(r.begin(), r.end(), [](const Measurement& a, const Measurement& b) {
      return a.verified != b.verified ? a.verified : a.us < b.us;
    });
    // The median timing, or (sorted verified first) a failure where any round failed; the graph
    // mode's median round alike.
    row.measurement = r.back().verified ? r[size_t(n / 2)] : r.back();
    std::vector<double> graph = row.round_graph_us;
    std::sort(graph.begin(), graph.end());
    row.measurement.graph_us = r.back().verified ? graph[size_t(n / 2)] : 0.0;
  }
  for (size_t p = 0; p < problems.size(); ++p)
    for (BenchRow& r : failed[p]) results[p].rows.push_back(std::move(r));
  return results;
}

Tuner::Tuner(TuneOptions options) : impl_(std::make_unique<Impl>()) {
  Impl& I = *impl_;
  I.opt = std::move(options);
  GF_CHECK(I.device.present,
           "no GPU: {}. Listing and compiling candidates still work (gemmforge candidates, gemmforge compile).",
           I.device.absent_reason);
  I.db = TuningDb::open(I.opt.db_path.string(), I.device.fingerprint());
  I.worker = std::make_unique<WorkerProcess>(std::vector<std::string>{I.worker_exe(), "__worker"});
  if (I.opt.compile_jobs <= 0) I.opt.compile_jobs = default_jobs();
  I.compile_queue = std::make_unique<TaskQueue>(I.opt.compile_jobs);
  I.list_queue = std::make_unique<TaskQueue>(1);
  for (const auto& name : I.opt.backends)
    GF_CHECK(find_backend<GemmProblem>(name) || find_backend<RowOpSpec>(name), "unknown backend '{}' (known: {})", name,
             backend_names());
  I.gemm = I.select<GemmProblem>();
  I.rowop = I.select<RowOpSpec>();
  GF_CHECK(!I.gemm.empty() || !I.rowop.empty(), "no backend is available");
}

Tuner::~Tuner() = default;

TuneResult Tuner::tune(const GemmProblem& problem) { return impl_->tune(problem); }
TuneResult Tuner::tune(const RowOpSpec& problem) { return impl_->tune(problem); }
void Tuner::prefetch(const GemmProblem& problem) { impl_->prefetch(problem); }
void Tuner::prefetch(const RowOpSpec& problem) { impl_->prefetch(problem); }
BenchResult Tuner::bench(const GemmProblem& problem) { return impl_->bench(std::vector{problem}).front(); }
BenchResult Tuner::bench(const RowOpSpec& problem) { return impl_->bench(std::vector{problem}).front(); }
std::vector<BenchResult> Tuner::bench(const std::vector<GemmProblem>& problems) { return impl_->bench(problems); }

double Tuner::copy_bandwidth_tbps() {
  auto reply = impl_->worker->call({{"op", "copy_bandwidth"}}, impl_->opt.candidate_timeout_s);
  GF_CHECK(reply.value("ok", false), "the copy bandwidth could not be measured: {}", reply.value("error", ""));
  return reply.at("tbps").get<double>();
}

std::pair<double, double> Tuner::copy_us(size_t bytes) {
  auto reply = impl_->worker->call({{"op", "copy"}, {"bytes", bytes}}, impl_->opt.candidate_timeout_s);
  GF_CHECK(reply.value("ok", false), "the copy could not be timed: {}", reply.value("error", ""));
  return {reply.at("us").get<double>(), reply.at("graph_us").get<double>()};
}

const DeviceInfo& Tuner::device() const { return impl_->device; }
TuningDb& Tuner::db() { return *impl_->db; }

}  // namespace gf
