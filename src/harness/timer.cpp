#include "harness/timer.hpp"

#include <algorithm>
#include <cmath>
#include <numeric>
#include <random>
#include <vector>

#include "core/median.hpp"
#include "harness/fill.hpp"

namespace gf::harness {
namespace {

Timing summary(std::vector<double> us) {
  Timing t;
  t.reps = int(us.size());
  t.min_us = *std::min_element(us.begin(), us.end());
  t.max_us = *std::max_element(us.begin(), us.end());
  t.median_us = median(us);
  return t;
}

// Launches a graph-mode batch holds: enough that every set is read, and at least 16.
int launches_per_batch(int sets) { return sets * ((16 + sets - 1) / sets); }

// Warm-up in timed batches (at least one, at most 64), until both minimums are met. Returns the
// milliseconds of one call of `run` that the last batch measured.
double warm_up(const std::function<void()>& run, cudaStream_t stream, const TimingOptions& o) {
  cuda::Event start, stop;
  double est_ms = 1e-3, warmed_ms = 0;
  for (int batch = std::max(o.warmup, 1), done = 0, batches = 0;
       batches == 0 || ((done < o.warmup || warmed_ms < o.warmup_ms) && batches < 64); ++batches) {
    start.record(stream);
    for (int i = 0; i < batch; ++i) run();
    stop.record(stream);
    GF_CUDA_CHECK(cudaStreamSynchronize(stream));
    const double ms = stop.since(start);
    est_ms = std::max(1e-3, ms / batch);
    warmed_ms += ms;
    done += batch;
    batch = int(std::clamp((o.warmup_ms - warmed_ms) / est_ms + 1, 1.0, 65536.0));
  }
  return est_ms;
}

}  // namespace

Timer::Timer(int64_t l2_bytes) : flush_(size_t(std::max<int64_t>(2 * l2_bytes, 64 << 20))) {
  // Written once, here, outside any timed window; the flushes only read it.
  GF_CUDA_CHECK(cudaMemset(flush_.get(), 0x5a, flush_.bytes()));
  GF_CUDA_CHECK(cudaDeviceSynchronize());
}

Timing Timer::time(const std::function<void(int)>& launch, int sets, cudaStream_t stream, const TimingOptions& o,
                   const std::function<void()>& before_last) {
  const int n_sets = std::max(sets, 1);
  int set = 0;
  const double est_ms = warm_up([&] { launch(set++ % n_sets); }, stream, o);
  const int reps = int(std::clamp(o.budget_ms / est_ms, double(o.min_reps), double(o.max_reps)));

  std::vector<cuda::Event> begins(static_cast<size_t>(reps)), ends(static_cast<size_t>(reps));
  const int first = (n_sets - (reps - 1) % n_sets) % n_sets;  // the last launch on set 0
  for (int i = 0; i < reps; ++i) {
    if (o.flush_l2) read_through(flush_.get(), flush_.bytes(), stream);
    if (i == reps - 1 && before_last) before_last();
    begins[size_t(i)].record(stream);
    launch((first + i) % n_sets);
    ends[size_t(i)].record(stream);
  }
  GF_CUDA_CHECK(cudaStreamSynchronize(stream));
  GF_CUDA_CHECK(cudaGetLastError());
  std::vector<double> us(static_cast<size_t>(reps));
  for (int i = 0; i < reps; ++i) us[size_t(i)] = 1000.0 * ends[size_t(i)].since(begins[size_t(i)]);
  return summary(std::move(us));
}

std::vector<Timing> Timer::race(const std::vector<std::function<void(int)>>& launches, int sets, cudaStream_t stream,
                                const RaceOptions& o, const std::function<void(size_t)>& before) {
  const size_t n = launches.size();
  if (n == 0) return {};
  const int n_sets = std::max(sets, 1);
  size_t next = 0;
  int set = 0;
  warm_up(
      [&] {
        const size_t k = next++ % n;
        if (before) before(k);
        launches[k](set++ % n_sets);
      },
      stream, {.warmup = int(n), .warmup_ms = o.warmup_ms});

  const int rounds = std::max(o.rounds, 1);
  std::vector<cuda::Event> begins(n * size_t(rounds)), ends(n * size_t(rounds));
  std::vector<size_t> order(n);
  std::iota(order.begin(), order.end(), size_t(0));
  std::mt19937_64 shuffle(o.seed);
  for (int r = 0; r < rounds; ++r) {
    std::shuffle(order.begin(), order.end(), shuffle);
    for (size_t i : order) {
      const size_t slot = size_t(r) * n + i;
      if (before) before(i);  // first: the flush evicts what it writes
      if (o.flush_l2) read_through(flush_.get(), flush_.bytes(), stream);
      begins[slot].record(stream);
      launches[i](set++ % n_sets);
      ends[slot].record(stream);
    }
  }
  GF_CUDA_CHECK(cudaStreamSynchronize(stream));
  GF_CUDA_CHECK(cudaGetLastError());
  std::vector<Timing> out;
  for (size_t i = 0; i < n; ++i) {
    std::vector<double> us;
    for (int r = 0; r < rounds; ++r) us.push_back(1000.0 * ends[size_t(r) * n + i].since(begins[size_t(r) * n + i]));
    out.push_back(summary(std::move(us)));
  }
  return out;
}

Timing Timer::time_graph(const std::function<void(int)>& launch, int sets, cudaStream_t stream,
                         const TimingOptions& o) {
  const int n_sets = std::max(sets, 1);
  const int per_graph = launches_per_batch(n_sets);
  cudaGraph_t graph = nullptr;
  cudaGraphExec_t exec = nullptr;
  GF_CUDA_CHECK(cudaStreamBeginCapture(stream, cudaStreamCaptureModeThreadLocal));
  try {
    for (int i = 0; i < per_graph; ++i) launch(i % n_sets);
  } catch (...) {
    cudaStreamEndCapture(stream, &graph);
    if (graph) cudaGraphDestroy(graph);
    throw;
  }
  GF_CUDA_CHECK(cudaStreamEndCapture(stream, &graph));
  struct Owned {
    cudaGraph_t g;
    cudaGraphExec_t e = nullptr;
    ~Owned() {
      if (e) cudaGraphExecDestroy(e);
      cudaGraphDestroy(g);
    }
  } owned{graph};
  GF_CUDA_CHECK(cudaGraphInstantiate(&exec, graph, 0));
  owned.e = exec;
  const double est_ms = warm_up([&] { GF_CUDA_CHECK(cudaGraphLaunch(exec, stream)); }, stream, o);
  const int reps = int(std::clamp(o.budget_ms / est_ms, 5.0, 50.0));
  std::vector<cuda::Event> begins(static_cast<size_t>(reps)), ends(static_cast<size_t>(reps));
  for (int i = 0; i < reps; ++i) {
    begins[size_t(i)].record(stream);
    GF_CUDA_CHECK(cudaGraphLaunch(exec, stream));
    ends[size_t(i)].record(stream);
  }
  GF_CUDA_CHECK(cudaStreamSynchronize(stream));
  std::vector<double> us(static_cast<size_t>(reps));
  for (int i = 0; i < reps; ++i) us[size_t(i)] = 1000.0 * ends[size_t(i)].since(begins[size_t(i)]) / per_graph;
  return summary(std::move(us));
}

Timing Timer::time_queued(const std::function<void(int)>& launch, int sets, cudaStream_t stream, int batches) {
  const int n_sets = std::max(sets, 1);
  const int per_batch = launches_per_batch(n_sets);
  cuda::Event begin, end;
  std::vector<double> us;
  for (int b = 0; b <= batches; ++b) {
    begin.record(stream);
    for (int i = 0; i < per_batch; ++i) launch(i % n_sets);
    end.record(stream);
    GF_CUDA_CHECK(cudaStreamSynchronize(stream));
    if (b > 0) us.push_back(1000.0 * end.since(begin) / per_batch);  // the first warms up
  }
  return summary(std::move(us));
}

}  // namespace gf::harness
