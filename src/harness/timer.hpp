#pragma once
// The one timing harness every backend is measured with, in two modes.
//
// Flushed (the tuner's, and bench's first column): CUDA events around each launch, a warm-up
// first, the L2 emptied of the kernel's data before every timed launch by reading a buffer twice
// its size (reading, not writing: the lines it leaves are clean, so no write-back of the flush
// lands in the timed window), input sets rotated, the median kept.
//
// Race (the tuner's): several kernels launched round-robin in one stream, see Timer::race.
//
// Graph (bench's second column, the number a serving stack sees): launches back to back over the
// rotating input sets, captured in a CUDA graph and replayed; the time per launch of the median
// replay. Inputs larger than the L2 rotate, so weights still stream from DRAM.
#include <cuda_runtime_api.h>

#include <functional>
#include <vector>

#include "cuda/memory.hpp"

namespace gf::harness {

struct TimingOptions {
  int warmup = 3;  // launches at least, and ...
  // ... this much kernel time at least. An H200 that idled for a moment (while the host verified
  // the last candidate) runs the first ~100 ms of load at boosted clocks before its power limit
  // pulls them down: timed in that window, one kernel measured anywhere from 531 to 610 us
  // depending on its place in the queue (8192x6144x4096).
  double warmup_ms = 100;
  int min_reps = 10;
  int max_reps = 100;
  double budget_ms = 150;  // timed launches stop after about this much kernel time
  bool flush_l2 = true;
  bool graph = false;  // also time back-to-back launches in a CUDA graph
};

struct RaceOptions {
  int rounds = 7;          // launches of each kernel timed, one a round; each keeps its median
  double warmup_ms = 100;  // kernel time, round-robin, before the first round (see warmup_ms above)
  bool flush_l2 = true;
  uint64_t seed = 1;  // each round's order
};

struct Timing {
  double median_us = 0;
  double min_us = 0;
  double max_us = 0;
  int reps = 0;
};

class Timer {
 public:
  // l2_bytes: the device's L2 size; the flush reads twice that.
  explicit Timer(int64_t l2_bytes);
  // Flushed mode. launch(set) launches one run reading input set `set`; sets rotate, and the last
  // timed launch reads set 0, so that its output can be checked against set 0's reference;
  // before_last runs just before it, outside the timed window (the bench poisons the outputs).
  Timing time(const std::function<void(int)>& launch, int sets, cudaStream_t stream, const TimingOptions& o,
              const std::function<void()>& before_last = {});
  // Race mode: launches[i](set) launches kernel i. Each round launches every kernel once, in a
  // fresh order, each launch in flushed mode and timed by its own events (before(i) runs just
  // ahead of kernel i's launch, outside its timed window), all queued with no host wait between
  // them: the GPU never idles, so it never boosts again, and clock drift over the race and a
  // kernel's place in the queue hit every kernel alike. Much cheaper than one warm-up each.
  std::vector<Timing> race(const std::vector<std::function<void(int)>>& launches, int sets, cudaStream_t stream,
                           const RaceOptions& o, const std::function<void(size_t)>& before = {});
  // Graph mode: microseconds per launch. Throws gf::Error when the launches cannot be captured.
  Timing time_graph(const std::function<void(int)>& launch, int sets, cudaStream_t stream, const TimingOptions& o);
  // Graph mode's launches queued without the graph, for work a graph would change (a captured
  // copy becomes a memcpy node, which the driver may run on a copy engine): a batch to warm up,
  // then `batches` timed; microseconds per launch. Each launch must outlast its enqueue.
  Timing time_queued(const std::function<void(int)>& launch, int sets, cudaStream_t stream, int batches);

 private:
  cuda::DeviceBuffer flush_;
};

}  // namespace gf::harness
