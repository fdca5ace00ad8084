#include "tune/timing.hpp"

#include <algorithm>
#include <cmath>
#include <vector>

namespace gf::tune {

Timer::Timer(int64_t l2_bytes) : flush_(size_t(std::max<int64_t>(2 * l2_bytes, 64 << 20))) {}

Timing Timer::time(const std::function<void(int)>& launch, int sets, cudaStream_t stream, const TimingOptions& o) {
  cuda::Event start, stop;
  int set = 0;
  auto next_set = [&] { return set++ % std::max(sets, 1); };
  auto flush = [&] {
    if (o.flush_l2) GF_CUDA_CHECK(cudaMemsetAsync(flush_.get(), set & 0xff, flush_.bytes(), stream));
  };

  // Warm-up, timed as a whole to size the number of repetitions.
  start.record(stream);
  for (int i = 0; i < o.warmup; ++i) launch(next_set());
  stop.record(stream);
  GF_CUDA_CHECK(cudaStreamSynchronize(stream));
  double est_ms = std::max(1e-3, double(stop.since(start)) / std::max(o.warmup, 1));
  int reps = std::clamp(int(o.budget_ms / est_ms), o.min_reps, o.max_reps);

  std::vector<cuda::Event> begins(static_cast<size_t>(reps)), ends(static_cast<size_t>(reps));
  for (int i = 0; i < reps; ++i) {
    flush();
    begins[size_t(i)].record(stream);
    launch(next_set());
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

}  // namespace gf::tune
