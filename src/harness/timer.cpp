#include "harness/timer.hpp"

#include <algorithm>
#include <cmath>
#include <vector>

namespace gf::harness {

Timer::Timer(int64_t l2_bytes) : flush_(size_t(std::max<int64_t>(2 * l2_bytes, 64 << 20))) {}

Timing Timer::time(const std::function<void(int)>& launch, int sets, cudaStream_t stream, const TimingOptions& o) {
  cuda::Event start, stop;
  int set = 0;
  auto next_set = [&] { return set++ % std::max(sets, 1); };
  auto flush = [&] {
    if (o.flush_l2) GF_CUDA_CHECK(cudaMemsetAsync(flush_.get(), set & 0xff, flush_.bytes(), stream));
  };

  // Warm-up in timed batches (at least one, at most 64), until both minimums are met; the last
  // batch sizes the repetitions.
  double est_ms = 1e-3, warmed_ms = 0;
  for (int batch = std::max(o.warmup, 1), done = 0, batches = 0;
       batches == 0 || ((done < o.warmup || warmed_ms < o.warmup_ms) && batches < 64); ++batches) {
    start.record(stream);
    for (int i = 0; i < batch; ++i) launch(next_set());
    stop.record(stream);
    GF_CUDA_CHECK(cudaStreamSynchronize(stream));
    const double ms = stop.since(start);
    est_ms = std::max(1e-3, ms / batch);
    warmed_ms += ms;
    done += batch;
    batch = int(std::clamp((o.warmup_ms - warmed_ms) / est_ms + 1, 1.0, 65536.0));
  }
  const int reps = int(std::clamp(o.budget_ms / est_ms, double(o.min_reps), double(o.max_reps)));

  std::vector<cuda::Event> begins(static_cast<size_t>(reps)), ends(static_cast<size_t>(reps));
  const int n_sets = std::max(sets, 1), first = (n_sets - (reps - 1) % n_sets) % n_sets;  // the last on set 0
  for (int i = 0; i < reps; ++i) {
    flush();
    begins[size_t(i)].record(stream);
    launch((first + i) % n_sets);
    ends[size_t(i)].record(stream);
  }
  GF_CUDA_CHECK(cudaStreamSynchronize(stream));
  GF_CUDA_CHECK(cudaGetLastError());
  std::vector<double> us(static_cast<size_t>(reps));
  for (int i = 0; i < reps; ++i) us[size_t(i)] = 1000.0 * ends[size_t(i)].since(begins[size_t(i)]);
  std::sort(us.begin(), us.end());
  Timing t;
  t.reps = reps;
  t.min_us = us.front();
  t.max_us = us.back();
  t.median_us = reps % 2 ? us[size_t(reps / 2)] : 0.5 * (us[size_t(reps / 2 - 1)] + us[size_t(reps / 2)]);
  return t;
}

}  // namespace gf::harness
