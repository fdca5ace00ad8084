#pragma once
// What a lone launch costs before any work: an empty kernel's device time, alone after the L2
// flush as bench's single launches are timed, and back to back as its graph mode, for the launch
// shapes decode GEMMs use (issue 26: native at 16 tokens takes 2.4-3.0 us longer alone than back to
// back, where a copy of the same bytes takes 1.2-1.5 us less; H100, 2026-12-06).
#include <string>
#include <vector>

#include "gemmforge/device.hpp"

namespace gf::harness {

struct LaunchShape {
  std::string name;
  int ctas = 0, threads = 0, smem_bytes = 0, cluster = 1;
};

struct LaunchCost {
  LaunchShape shape;
  double single_us = 0;  // alone, after the L2 flush (median)
  double graph_us = 0;   // back to back in a CUDA graph, per launch (median replay)
};

// The shapes timed: SM-filling and half-filling grids, without shared memory and with as much as a
// decode kernel's ring takes, without and with a 2-CTA cluster.
std::vector<LaunchShape> decode_launch_shapes(const DeviceInfo& device);

// Each shape's empty kernel timed both ways.
std::vector<LaunchCost> time_launches(const std::vector<LaunchShape>& shapes, const DeviceInfo& device);

}  // namespace gf::harness
