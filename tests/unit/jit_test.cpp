// What compile --json keeps of a successful compile's ptxas log: its performance notes alone.
#include "jit/compile.hpp"

#include <gtest/gtest.h>

namespace gf {
namespace {

TEST(Jit, PerformanceNotesKeepTheC75Lines) {
  const std::string log =
      "ptxas info    : Compiling entry function 'gemm' for 'sm_90a'\n"
      "ptxas info    : (C7517) Warpgroup.wait injected in 'gemm' for wgmma.mma_async\n"
      "ptxas info    : Used 168 registers, used 16 barriers\n"
      "ptxas         .     0 bytes stack frame, 0 bytes spill stores, 0 bytes spill loads\n"
      "ptxas info    : (C7514) Potential Performance Loss: wgmma.mma_async instructions are serialized";
  EXPECT_EQ(jit::performance_notes(log),
            "ptxas info    : (C7517) Warpgroup.wait injected in 'gemm' for wgmma.mma_async\n"
            "ptxas info    : (C7514) Potential Performance Loss: wgmma.mma_async instructions are serialized\n");
  EXPECT_EQ(jit::performance_notes("ptxas info    : Used 40 registers\n"), "");
  EXPECT_EQ(jit::performance_notes(""), "");
}

}  // namespace
}  // namespace gf
