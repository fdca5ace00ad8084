// GPU tests. Without a GPU they print why and exit 77, which ctest reports as skipped.
#include <gtest/gtest.h>
#include <unistd.h>

#include <csignal>
#include <cstdio>
#include <cstdlib>

#include "gemmforge/device.hpp"
#include "tune/worker.hpp"

namespace {

// A kernel that hangs in process would stall the whole run: each test gets a time limit, after
// which the binary names the test and exits.
char g_current_test[512] = "";

void on_alarm(int) {
  char msg[600];
  int n = std::snprintf(msg, sizeof msg, "\nTIMEOUT: %s ran past its time limit\n", g_current_test);
  [[maybe_unused]] auto w = write(2, msg, size_t(n));
  _exit(124);
}

class Watchdog : public ::testing::EmptyTestEventListener {
  void OnTestStart(const ::testing::TestInfo& t) override {
    std::snprintf(g_current_test, sizeof g_current_test, "%s.%s", t.test_suite_name(), t.name());
    alarm(unsigned(std::atoi(std::getenv("GF_TEST_TIMEOUT") ? std::getenv("GF_TEST_TIMEOUT") : "180")));
  }
  void OnTestEnd(const ::testing::TestInfo&) override { alarm(0); }
};

}  // namespace

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
  signal(SIGALRM, on_alarm);
  ::testing::UnitTest::GetInstance()->listeners().Append(new Watchdog);
  return RUN_ALL_TESTS();
}
