// Kernels loaded from memory stay distinct: each SharedObject runs its own code, however many are
// loaded at once and however often they come and go (the CuTe DSL kernels all export the same
// symbol names, so a loader that hands back an earlier object runs the wrong kernel unnoticed:
// every GEMM still computes the right product).
#include "jit/shared_object.hpp"

#include <fmt/format.h>
#include <gtest/gtest.h>
#include <unistd.h>

#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <memory>
#include <sstream>
#include <vector>

namespace gf {
namespace {

// A shared object whose `which()` returns `value`, built with the system's C compiler; empty
// where there is none.
std::string library_returning(int value, const std::filesystem::path& dir) {
  const auto src = dir / fmt::format("which{}.c", value), so = dir / fmt::format("which{}.so", value);
  std::ofstream(src) << fmt::format("int which(void) {{ return {}; }}\n", value);
  const std::string cmd = fmt::format("cc -shared -fPIC -o '{}' '{}' 2>/dev/null", so.string(), src.string());
  if (std::system(cmd.c_str()) != 0) return {};
  std::stringstream bytes;
  bytes << std::ifstream(so, std::ios::binary).rdbuf();
  return bytes.str();
}

TEST(SharedObject, EachLoadRunsItsOwnCode) {
  const auto dir = std::filesystem::temp_directory_path() / fmt::format("gf-so-test-{}", getpid());
  std::filesystem::create_directories(dir);
  std::vector<std::string> libs;
  for (int v = 0; v < 3; ++v) libs.push_back(library_returning(v, dir));
  std::filesystem::remove_all(dir);
  if (libs[0].empty()) GTEST_SKIP() << "no C compiler (cc) to build the test's shared objects";
  using Which = int (*)();

  // Loaded side by side, as a race holds its candidates.
  std::vector<std::unique_ptr<jit::SharedObject>> held;
  for (const auto& bytes : libs) held.push_back(std::make_unique<jit::SharedObject>(bytes));
  for (int v = 0; v < 3; ++v) EXPECT_EQ(held[size_t(v)]->function<Which>("which")(), v);

  // Loaded and dropped in turn, with others still held.
  held.pop_back();
  for (int round = 0; round < 6; ++round) {
    const int v = round % 3;
    jit::SharedObject so(libs[size_t(v)]);
    EXPECT_EQ(so.function<Which>("which")(), v) << "round " << round;
  }
  EXPECT_EQ(held[0]->function<Which>("which")(), 0);
  EXPECT_EQ(held[1]->function<Which>("which")(), 1);
}

}  // namespace
}  // namespace gf
