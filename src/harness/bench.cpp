#include "harness/bench.hpp"

#include <algorithm>
#include <cmath>

#include "harness/gemm_bench.hpp"
#include "harness/rowop_bench.hpp"

namespace gf::harness {
namespace {

// One launch on set 0 after the poison (and the workspace's reset, unless told), verified.
Verdict run_once(const Trial& t, cudaStream_t stream, bool reset = true) {
  t.poison();
  if (reset && t.reset) t.reset();
  t.launch(0);
  GF_CUDA_CHECK(cudaGetLastError());
  GF_CUDA_CHECK(cudaStreamSynchronize(stream));
  return t.verify();
}

// Two launches on set 0, the second on the workspace as the first left it (a runtime zeroes a
// kernel's workspace once, and split-K counters must be back at zero), the outputs poisoned
// between them: a kernel that leaves state behind or stops writing fails.
Verdict run_twice(const Trial& t, cudaStream_t stream) {
  if (t.reset) t.reset();
  t.launch(0);
  return run_once(t, stream, /*reset=*/false);
}

}  // namespace

int rotating_sets(double set_bytes, const DeviceInfo& device, int most) {
  const int count = int(std::clamp(std::ceil(3.0 * double(device.l2_bytes) / set_bytes), 1.0, double(most)));
  return std::max(1, std::min(count, int(0.25 * double(device.global_mem_bytes) / set_bytes)));
}

std::unique_ptr<Bench> make_bench(std::string_view family, const std::string& key, const DeviceInfo& device,
                                  uint64_t seed) {
  if (family == GemmProblem::kFamily) return std::make_unique<GemmBench>(GemmProblem::parse(key), device, seed);
  if (family == RowOpSpec::kFamily) return std::make_unique<RowOpBench>(RowOpSpec::parse(key), device, seed);
  GF_FAIL("unknown kernel family '{}' (gemm, rowop)", family);
}

Trial& Bench::built(const Candidate& candidate) {
  auto it = built_.find(candidate.id());
  if (it == built_.end()) it = built_.emplace(candidate.id(), trial(candidate)).first;
  return it->second;
}

MeasureResult Bench::measure(const Candidate& candidate, bool time, const TimingOptions& timing) {
  MeasureResult r = measure_trial(built(candidate), time, timing);
  if (!r.verified) built_.erase(candidate.id());  // never raced: no need to keep it loaded
  return r;
}

MeasureResult Bench::measure_trial(const Trial& t, bool time, const TimingOptions& timing) {
  MeasureResult r;
  Verdict first = run_once(t, stream());
  r.rel_err = first.rel_err;
  r.error = first.error;
  r.verified = r.error.empty();
  if (!r.verified || !time) return r;
  Timing timed = timer_.time(t.launch, sets(), stream(), timing, t.poison);
  if (Verdict after = t.verify(); !after.error.empty()) {
    r.verified = false;
    r.error = "after timing: " + after.error;
    return r;
  }
  r.us = timed.median_us;
  r.reps = timed.reps;
  if (timing.graph) {
    r.graph_us = timer_.time_graph(t.launch, sets(), stream(), timing).median_us;
    if (Verdict again = run_once(t, stream()); !again.error.empty()) {
      r.verified = false;
      r.error = "after the graph's launches: " + again.error;
    }
  }
  return r;
}

std::vector<MeasureResult> Bench::race(const std::vector<Candidate>& candidates, const RaceOptions& o) {
  std::vector<const Trial*> trials;
  std::vector<std::function<void(int)>> launches;
  for (const auto& c : candidates) {
    trials.push_back(&built(c));
    launches.push_back(trials.back()->launch);
  }
  std::vector<Timing> times = timer_.race(launches, sets(), stream(), o, [&](size_t i) {
    if (trials[i]->reset) trials[i]->reset();
  });
  std::vector<MeasureResult> out(candidates.size());
  for (size_t i = 0; i < candidates.size(); ++i) {
    // Verified again after the race: a kernel whose later launches go wrong fails here.
    Verdict after = run_twice(*trials[i], stream());
    MeasureResult& r = out[i];
    r.rel_err = after.rel_err;
    r.verified = after.error.empty();
    r.error = r.verified ? "" : "after the race: " + after.error;
    r.us = r.verified ? times[i].median_us : 0.0;
    r.reps = times[i].reps;
  }
  return out;
}

}  // namespace gf::harness
