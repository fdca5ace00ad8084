// The Runtime as a framework embeds it: dispatch to a native split-K kernel (its counters left
// zero for the next launch), four threads on four streams at once, capture in a CUDA graph after
// prepare() (and a clear error without it), and views too misaligned for the chosen kernel.
#include "gemmforge/runtime.hpp"

#include <gtest/gtest.h>

#include <filesystem>
#include <functional>
#include <thread>
#include <vector>

#include "cuda/memory.hpp"
#include "gemmforge/tuning_db.hpp"
#include "gpu_test_util.hpp"
#include "harness/fill.hpp"
#include "harness/gemm_bench.hpp"

using namespace gf;
using test::fresh_db;

namespace {

// Stores as the problem's decision the first candidate of `backend` that `pick` accepts.
Candidate store_decision(const std::filesystem::path& db_path, const GemmProblem& p, const std::string& backend,
                         const std::function<bool(const Candidate&)>& pick) {
  auto b = find_backend<GemmProblem>(backend);
  for (const Candidate& c : b->candidates(p, DeviceInfo::query(), {.level = Search::exhaustive})) {
    if (!pick(c)) continue;
    TuningDb db(db_path, DeviceInfo::query().fingerprint());
    db.store({.problem = p.key(), .family = "gemm", .backend = backend, .backend_version = b->version(),
              .candidate = c.name, .config = c.config},
             {});
    return c;
  }
  ADD_FAILURE() << "no " << backend << " candidate of " << p.key() << " fits";
  return {};
}

bool split_k(const Candidate& c) { return c.config.value("split_k", 1) > 1; }

// The bench's D against its float reference.
double error_of(const harness::GemmBench& bench, const GemmProblem& p, const void* d) {
  return test::rel_err(test::to_host(d, p.out, p.batch * p.m * p.out_cols()),
                       test::to_host(bench.reference(), DType::f32, p.batch * p.m * p.out_cols()));
}

GemmArgs without_workspace(GemmArgs a) {
  a.workspace = nullptr;
  a.workspace_bytes = 0;
  return a;
}

}  // namespace

TEST(Runtime, DispatchesToANativeSplitKKernelAgainAndAgain) {
  const auto db = fresh_db("native");
  const GemmProblem p = GemmProblem::parse("48x1024x4096:bf16:bias");
  const Candidate c = store_decision(db, p, "native", split_k);
  Runtime rt({.db_path = db});
  ASSERT_EQ(rt.choice(p), c.id());
  harness::GemmBench bench(p, DeviceInfo::query(), 3);
  const GemmArgs args = without_workspace(bench.args(0));
  for (int i = 0; i < 3; ++i) {  // a launch that left its tile counters dirty would fail the next
    harness::fill_nan(args.d, p.out, p.m * p.n, bench.stream());
    rt.gemm(p, args, bench.stream());
    GF_CUDA_CHECK(cudaStreamSynchronize(bench.stream()));
    EXPECT_LT(error_of(bench, p, args.d), 1e-2) << "launch " << i;
  }
}

TEST(Runtime, FourThreadsOnFourStreamsAtOnce) {
  // A native split-K kernel (workspace per stream), cuBLASLt with a bias (its descriptor holds the
  // pointer) and an unfused SwiGLU (its G in the workspace), each thread with its own operands.
  const auto db = fresh_db("threads");
  const std::vector<GemmProblem> problems = {GemmProblem::parse("40x768x2048:bf16"),
                                             GemmProblem::parse("72x512x1024:bf16:bias+gelu"),
                                             GemmProblem::parse("56x1024x512:bf16:swiglu")};
  store_decision(db, problems[0], "native", split_k);
  Runtime rt({.db_path = db});
  constexpr int kThreads = 4, kRounds = 25;
  std::vector<std::vector<std::unique_ptr<harness::GemmBench>>> benches(kThreads);
  for (int t = 0; t < kThreads; ++t)
    for (size_t i = 0; i < problems.size(); ++i)
      benches[size_t(t)].push_back(
          std::make_unique<harness::GemmBench>(problems[i], DeviceInfo::query(), uint64_t(100 * t + i)));
  std::vector<std::thread> threads;
  std::vector<std::string> failures(kThreads);
  for (int t = 0; t < kThreads; ++t)
    threads.emplace_back([&, t] {
      try {
        for (int r = 0; r < kRounds; ++r)
          for (size_t i = 0; i < problems.size(); ++i) {
            auto& bench = *benches[size_t(t)][i];
            rt.gemm(problems[i], without_workspace(bench.args(0)), bench.stream());
          }
      } catch (const std::exception& e) {
        failures[size_t(t)] = e.what();
      }
    });
  for (auto& th : threads) th.join();
  for (int t = 0; t < kThreads; ++t) {
    EXPECT_EQ(failures[size_t(t)], "") << "thread " << t;
    for (size_t i = 0; i < problems.size(); ++i) {
      auto& bench = *benches[size_t(t)][i];
      GF_CUDA_CHECK(cudaStreamSynchronize(bench.stream()));
      EXPECT_LT(error_of(bench, problems[i], bench.args(0).d), 1e-2) << problems[i].key() << " thread " << t;
    }
  }
}

TEST(Runtime, CapturedInAGraphAfterPrepare) {
  const auto db = fresh_db("graph");
  const std::vector<GemmProblem> problems = {GemmProblem::parse("64x1024x4096:bf16"),
                                             GemmProblem::parse("96x384x256:bf16:bias+silu")};
  store_decision(db, problems[0], "native", split_k);
  Runtime rt({.db_path = db});
  std::vector<std::unique_ptr<harness::GemmBench>> benches;
  for (size_t i = 0; i < problems.size(); ++i)
    benches.push_back(std::make_unique<harness::GemmBench>(problems[i], DeviceInfo::query(), 40 + i));
  cuda::Stream stream;

  // Unprepared, a first call during capture is refused with an error that says what to do.
  GF_CUDA_CHECK(cudaStreamBeginCapture(stream.get(), cudaStreamCaptureModeThreadLocal));
  try {
    rt.gemm(problems[0], without_workspace(benches[0]->args(0)), stream.get());
    ADD_FAILURE() << "an unprepared first call during capture ran";
  } catch (const Error& e) {
    EXPECT_NE(std::string(e.what()).find("prepare"), std::string::npos) << e.what();
  }
  cudaGraph_t aborted = nullptr;
  cudaStreamEndCapture(stream.get(), &aborted);
  if (aborted) cudaGraphDestroy(aborted);
  cudaGetLastError();

  rt.prepare(problems, {stream.get()});
  cudaGraph_t graph = nullptr;
  GF_CUDA_CHECK(cudaStreamBeginCapture(stream.get(), cudaStreamCaptureModeGlobal));
  for (size_t i = 0; i < problems.size(); ++i)
    rt.gemm(problems[i], without_workspace(benches[i]->args(0)), stream.get());
  GF_CUDA_CHECK(cudaStreamEndCapture(stream.get(), &graph));
  cudaGraphExec_t exec = nullptr;
  GF_CUDA_CHECK(cudaGraphInstantiate(&exec, graph, 0));
  for (int replay = 0; replay < 3; ++replay) {
    for (size_t i = 0; i < problems.size(); ++i)
      harness::fill_nan(benches[i]->args(0).d, problems[i].out, problems[i].m * problems[i].n, stream.get());
    GF_CUDA_CHECK(cudaGraphLaunch(exec, stream.get()));
    stream.sync();
    for (size_t i = 0; i < problems.size(); ++i)
      EXPECT_LT(error_of(*benches[i], problems[i], benches[i]->args(0).d), 1e-2)
          << problems[i].key() << " replay " << replay;
  }
  cudaGraphExecDestroy(exec);
  cudaGraphDestroy(graph);
}

TEST(Runtime, ViewsTooMisalignedForTheChoiceGetAKernelThatTakesThem) {
  const auto db = fresh_db("views");
  const GemmProblem p = GemmProblem::parse("120x256x512:bf16");
  store_decision(db, p, "native", [](const Candidate&) { return true; });
  Runtime rt({.db_path = db});
  ASSERT_EQ(rt.choice(p).rfind("native:", 0), 0u);
  harness::GemmBench bench(p, DeviceInfo::query(), 9);
  const GemmArgs whole = bench.args(0);
  const size_t a_bytes = size_t(p.m * p.k) * 2, b_bytes = size_t(p.n * p.k) * 2, d_bytes = size_t(p.m * p.n) * 2;
  for (size_t offset : {2, 8, 16}) {  // bytes past a 256-byte boundary: a view starting one or more elements in
    cuda::DeviceBuffer a(a_bytes + 256), b(b_bytes + 256), d(d_bytes + 256);
    GemmArgs view;
    view.a = static_cast<char*>(a.get()) + offset;
    view.b = static_cast<char*>(b.get()) + offset;
    view.d = static_cast<char*>(d.get()) + offset;
    GF_CUDA_CHECK(cudaMemcpy(const_cast<void*>(view.a), whole.a, a_bytes, cudaMemcpyDeviceToDevice));
    GF_CUDA_CHECK(cudaMemcpy(const_cast<void*>(view.b), whole.b, b_bytes, cudaMemcpyDeviceToDevice));
    harness::fill_nan(view.d, p.out, p.m * p.n, nullptr);
    rt.gemm(p, view, nullptr);
    GF_CUDA_CHECK(cudaDeviceSynchronize());
    EXPECT_LT(error_of(bench, p, view.d), 1e-2) << "operands " << offset << " bytes past alignment";
  }
}
