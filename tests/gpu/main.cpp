// GPU tests. Without a GPU they print why and exit 77, which ctest reports as skipped.
#include <gtest/gtest.h>

#include <cstdio>
#include <cstdlib>

#include "gemmforge/device.hpp"
#include "tune/worker.hpp"

int main(int argc, char** argv) {
  // Plant the faulting test backend (in this process and in the workers it starts).
  setenv("GEMMFORGE_PLANT_FAULTS", "1", 1);
  gf::tune::maybe_run_worker(argc, argv);  // the tuner's worker is this binary too
  gf::DeviceInfo device = gf::DeviceInfo::query();
  if (!device.present) {
    std::printf("SKIPPED: GPU tests need a GPU: %s\n", device.absent_reason.c_str());
    return 77;
  }
  std::printf("GPU: %s\n", device.describe().c_str());
  ::testing::InitGoogleTest(&argc, argv);
  return RUN_ALL_TESTS();
}
