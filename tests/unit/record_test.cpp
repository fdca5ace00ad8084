// Record-then-tune: GEMMFORGE_RECORD collects the keys a runtime served untuned, once each.
#include <gtest/gtest.h>
#include <unistd.h>

#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <string>

#include "runtime/record.hpp"

TEST(Record, AppendsEachUntunedKeyOnce) {
  const auto path = std::filesystem::temp_directory_path() / ("gf_record_" + std::to_string(getpid()) + ".txt");
  std::filesystem::remove(path);
  ::setenv("GEMMFORGE_RECORD", path.c_str(), 1);  // read at the first call, as a process starts
  gf::runtime::record_untuned("16x4096x4096:bf16");
  gf::runtime::record_untuned("rmsnorm:16x4096:bf16");
  gf::runtime::record_untuned("16x4096x4096:bf16");
  std::ifstream in(path);
  std::string all((std::istreambuf_iterator<char>(in)), {});
  EXPECT_EQ(all, "16x4096x4096:bf16\nrmsnorm:16x4096:bf16\n");
  std::filesystem::remove(path);
}
