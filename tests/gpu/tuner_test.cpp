// Tuning end to end in worker processes: planted faults do not stop it, the DB remembers, the
// Runtime dispatches to the stored winner or falls back to cuBLASLt's default.
#include "gemmforge/tuner.hpp"

#include <gtest/gtest.h>

#include <algorithm>
#include <filesystem>
#include <fstream>
#include <set>
#include <vector>

#include "gemmforge/runtime.hpp"
#include "gpu_test_util.hpp"
#include "harness/gemm_bench.hpp"

using namespace gf;
using test::fresh_db;

TEST(Tuner, PlantedFaultsDoNotStopTuning) {
  ASSERT_TRUE(find_backend<GemmProblem>("faulty")) << "tests run with GEMMFORGE_PLANT_FAULTS=1";
  TuneOptions o;
  o.backends = {"faulty", "cublaslt"};
  o.search = {.level = Search::fast};
  o.db_path = fresh_db("faults");
  o.candidate_timeout_s = 15;
  Tuner tuner(o);
  GemmProblem p = GemmProblem::parse("300x512x256:bf16");
  TuneResult r = tuner.tune(p);
  EXPECT_FALSE(r.from_db);
  EXPECT_EQ(r.decision.backend, "cublaslt");
  std::map<std::string, std::string> errors;
  int cublaslt_ok = 0;
  for (const auto& m : r.measurements) {
    if (m.backend == "faulty") {
      EXPECT_FALSE(m.verified) << m.candidate;
      errors[m.candidate] = m.error;
    } else {
      cublaslt_ok += m.verified;
    }
  }
  EXPECT_GT(cublaslt_ok, 0);
  EXPECT_NE(errors["illegal_address"].find("illegal"), std::string::npos) << errors["illegal_address"];
  EXPECT_NE(errors["hang"].find("timed out"), std::string::npos) << errors["hang"];
  EXPECT_NE(errors["wrong"].find("error"), std::string::npos) << errors["wrong"];
  EXPECT_NE(errors["abort"].find("signal"), std::string::npos) << errors["abort"];
  EXPECT_NE(errors["past_end"].find("past the end"), std::string::npos) << errors["past_end"];
  EXPECT_NE(errors["stale"].find("after the race"), std::string::npos) << errors["stale"];

  TuneResult again = tuner.tune(p);
  EXPECT_TRUE(again.from_db);
  EXPECT_EQ(again.decision.candidate, r.decision.candidate);

  // bench names a backend none of whose candidates ran, untimed, with why.
  const BenchResult bench = tuner.bench(p);
  auto faulty =
      std::find_if(bench.rows.begin(), bench.rows.end(), [](const BenchRow& row) { return row.backend == "faulty"; });
  ASSERT_NE(faulty, bench.rows.end());
  EXPECT_FALSE(faulty->measurement.verified);
  EXPECT_TRUE(faulty->round_us.empty());
  EXPECT_NE(faulty->measurement.error.find("failed, first:"), std::string::npos) << faulty->measurement.error;
}

// Problems prefetched (listed and compiled on a background thread) tune as ones tuned on the
// spot, one after another in the tuner's one worker, a row op between two GEMMs.
TEST(Tuner, PrefetchedProblemsTuneInOneWorker) {
  TuneOptions o;
  o.backends = {"cublaslt", "native"};
  o.search = {.level = Search::fast};
  o.db_path = fresh_db("prefetch");
  Tuner tuner(o);
  const GemmProblem a = GemmProblem::parse("77x1000x1008:bf16"), b = GemmProblem::parse("256x512x128:bf16:bias");
  const RowOpSpec norm = RowOpSpec::parse("rmsnorm:300x1000:bf16");
  tuner.prefetch(a);
  tuner.prefetch(norm);
  tuner.prefetch(b);
  tuner.prefetch(a);  // already under way: prepared once
  auto check = [](const TuneResult& r) {
    EXPECT_FALSE(r.from_db) << r.problem;
    std::set<std::string> verified;
    for (const auto& m : r.measurements)
      if (m.verified) verified.insert(m.backend);
    EXPECT_TRUE(verified.count("native")) << r.problem << ": no native candidate verified";
    EXPECT_FALSE(r.decision.candidate.empty()) << r.problem;
  };
  check(tuner.tune(a));
  check(tuner.tune(norm));
  check(tuner.tune(b));
  tuner.prefetch(a);  // stored now: nothing to prepare
  EXPECT_TRUE(tuner.tune(a).from_db);
}

// Row ops go through the same tuner: a faulting, hanging, wrong or crashing row-op config is
// recorded as failed and tuning goes on; the decision is stored under the rowop family, and the
// ops runtime dispatches to it.
TEST(Tuner, RowOpsSurvivePlantedFaultsAndDecide) {
  ASSERT_TRUE(find_backend<RowOpSpec>("faulty")) << "tests run with GEMMFORGE_PLANT_FAULTS=1";
  TuneOptions o;
  o.backends = {"faulty", "native"};
  o.search = {.level = Search::fast, .top_k = 3};
  o.db_path = fresh_db("rowop_faults");
  o.candidate_timeout_s = 15;
  Tuner tuner(o);
  const RowOpSpec s = RowOpSpec::parse("softmax:1000x4096:bf16");
  TuneResult r = tuner.tune(s);
  EXPECT_FALSE(r.from_db);
  EXPECT_EQ(r.decision.family, "rowop");
  EXPECT_EQ(r.decision.backend, "native");
  std::map<std::string, std::string> errors;
  for (const auto& m : r.measurements)
    if (m.backend == "faulty") errors[m.candidate] = m.error;
  EXPECT_NE(errors["illegal_address"].find("illegal"), std::string::npos) << errors["illegal_address"];
  EXPECT_NE(errors["hang"].find("timed out"), std::string::npos) << errors["hang"];
  EXPECT_NE(errors["wrong"].find("error"), std::string::npos) << errors["wrong"];
  EXPECT_NE(errors["abort"].find("signal"), std::string::npos) << errors["abort"];
  EXPECT_NE(errors["past_end"].find("past the end"), std::string::npos) << errors["past_end"];
  EXPECT_NE(errors["stale"].find("after the race"), std::string::npos) << errors["stale"];
  EXPECT_GT(r.decision.rate, 0.5) << "TB/s";
  EXPECT_TRUE(tuner.tune(s).from_db);
  const BenchResult b = tuner.bench(s);
  ASSERT_FALSE(b.rows.empty());
  EXPECT_TRUE(b.rows.front().measurement.verified);
  EXPECT_GT(tuner.copy_bandwidth_tbps(), 1.0);
}

// The tuner's race: every kernel timed, verified again after it, and one kernel entered twice
// timed alike (its place in the queue does not move it).
TEST(Race, TimesEveryKernelAlike) {
  const GemmProblem p = GemmProblem::parse("1536x2048x1000:bf16:bias");
  harness::GemmBench bench(p, DeviceInfo::query(), 5);
  auto lt = find_backend<GemmProblem>("cublaslt");
  auto cands = lt->candidates(p, DeviceInfo::query(), {.level = Search::fast, .top_k = 4});
  ASSERT_GE(cands.size(), 2u);
  for (const auto& c : cands) ASSERT_TRUE(bench.measure(c, false, {}).verified) << c.name;
  cands.push_back(cands.front());
  const auto raced = bench.race(cands, {.rounds = 15, .warmup_ms = 50});
  ASSERT_EQ(raced.size(), cands.size());
  for (size_t i = 0; i < raced.size(); ++i) {
    EXPECT_TRUE(raced[i].verified) << cands[i].name << ": " << raced[i].error;
    EXPECT_EQ(raced[i].reps, 15);
    EXPECT_GT(raced[i].us, 0.0);
  }
  EXPECT_NEAR(raced.back().us / raced.front().us, 1.0, 0.05);
}

TEST(Tuner, ChoosesNoSlowerThanDefaultAndBenchReportsAll) {
  TuneOptions o;
  o.backends = {"cublaslt"};
  o.db_path = fresh_db("bench");
  o.bench_rounds = 5;
  Tuner tuner(o);
  auto rows = tuner.bench(GemmProblem::parse("2048x2048x2048:bf16")).rows;
  const BenchRow *chosen = nullptr, *deflt = nullptr;
  for (const auto& r : rows) {
    EXPECT_TRUE(r.measurement.verified) << r.backend << ": " << r.measurement.error;
    ASSERT_EQ(r.round_us.size(), 5u) << r.backend;
    std::vector<double> sorted = r.round_us;
    std::sort(sorted.begin(), sorted.end());
    EXPECT_EQ(r.measurement.us, sorted[2]) << r.backend << ": the median round";
    if (r.chosen) chosen = &r;
    if (r.backend == "cublaslt-default") deflt = &r;
  }
  ASSERT_TRUE(chosen && deflt);
  EXPECT_EQ(deflt->candidate.config["rank"], 0);
  EXPECT_LT(chosen->measurement.us, deflt->measurement.us * 1.10);  // within noise, or faster
}

// A fused GEMM and its plain one benched as a group: every row of both timed in each of the
// same rounds (the worker holds both problems), each problem's rows its own, verified against
// its own reference; a problem of an awkward size with a residual and a bias.
TEST(Tuner, GroupBenchTimesFusedAndPlainInTheSameRounds) {
  TuneOptions o;
  o.backends = {"cublaslt", "native"};
  o.search = {.level = Search::fast};
  o.db_path = fresh_db("group-bench");
  o.bench_rounds = 3;
  Tuner tuner(o);
  const std::vector<GemmProblem> group = {GemmProblem::parse("1000x1040x4104:bf16"),
                                          GemmProblem::parse("1000x1040x4104:bf16:bias+residual")};
  const std::vector<BenchResult> benches = tuner.bench(group);
  ASSERT_EQ(benches.size(), 2u);
  for (size_t i = 0; i < 2; ++i) {
    EXPECT_EQ(benches[i].tuned.problem, group[i].key());
    std::set<std::string> backends;
    for (const auto& r : benches[i].rows) {
      backends.insert(r.backend);
      EXPECT_TRUE(r.measurement.verified) << group[i].key() << " " << r.backend << ": " << r.measurement.error;
      EXPECT_EQ(r.round_us.size(), 3u) << group[i].key() << " " << r.backend;
    }
    EXPECT_TRUE(backends.count("native") && backends.count("cublaslt")) << group[i].key();
  }
}

// A close call of long kernels (a backend's best within 10%, 100 us and more: two rasters of
// one tile) is timed alone as well; the decision is the fastest alone, at its alone time.
TEST(Tuner, CloseCallOfLongKernelsDecidesBetweenTheTwo) {
  TuneOptions o;
  o.backends = {"native"};
  o.db_path = fresh_db("close-call");
  o.search.level = Search::exhaustive;
  const std::string a = "sm90_bf16_bf16_tn_128x256x64_co_s4_c2_k1_x1_g8m_plain_tma2",
                    b = "sm90_bf16_bf16_tn_128x256x64_co_s4_c2_k1_x1_g4m_plain_tma2";
  o.only = a + "," + b;
  Tuner tuner(o);
  const TuneResult r = tuner.tune(GemmProblem::parse("4096x4096x8192:bf16"));
  ASSERT_EQ(r.measurements.size(), 2u);
  for (const auto& m : r.measurements) EXPECT_TRUE(m.verified) << m.candidate << ": " << m.error;
  EXPECT_TRUE(r.decision.candidate == a || r.decision.candidate == b) << r.decision.candidate;
  EXPECT_GE(r.decision.us, 100.0);
  const auto picked = std::find_if(r.measurements.begin(), r.measurements.end(),
                                   [&](const Measurement& m) { return m.candidate == r.decision.candidate; });
  ASSERT_NE(picked, r.measurements.end());
  EXPECT_EQ(r.decision.us, picked->us);
  if (!r.alone_us.empty()) {
    EXPECT_EQ(r.decision.us, r.alone_us.at("native:" + r.decision.candidate));
    const auto fastest = std::min_element(r.alone_us.begin(), r.alone_us.end(),
                                          [](const auto& x, const auto& y) { return x.second < y.second; });
    EXPECT_EQ(fastest->first, "native:" + r.decision.candidate);
  }
}

TEST(Runtime, DispatchesToWinnerAndFallsBack) {
  auto db = fresh_db("runtime");
  GemmProblem tuned = GemmProblem::parse("200x384x256:bf16:bias+relu");
  GemmProblem untuned = GemmProblem::parse("100x256x128:bf16");
  {
    TuneOptions o;
    o.backends = {"cublaslt"};
    o.db_path = db;
    o.search = {.level = Search::fast};
    Tuner(o).tune(tuned);
  }
  Runtime rt({.db_path = db});
  EXPECT_EQ(rt.choice(tuned).rfind("cublaslt:", 0), 0u);
  EXPECT_NE(rt.choice(untuned).find("r00"), std::string::npos) << "fallback is cuBLASLt's rank-0 algorithm";
  for (const GemmProblem& p : {tuned, untuned}) {
    harness::GemmBench bench(p, DeviceInfo::query(), 7);
    GemmArgs args = bench.args(0);
    args.workspace = nullptr;  // the Runtime brings its own
    args.workspace_bytes = 0;
    rt.gemm(p, args, bench.stream());
    GF_CUDA_CHECK(cudaStreamSynchronize(bench.stream()));
    auto got = test::to_host(args.d, p.out, p.m * p.n);
    auto ref = test::to_host(bench.reference(), DType::f32, p.m * p.n);
    EXPECT_LT(test::rel_err(got, ref), 1e-2) << p.key();
  }
  GemmArgs empty;
  EXPECT_THROW(rt.gemm(untuned, empty), Error);
}

// The runtime never stops for its DB: a damaged file, or a decision whose backend is missing or at
// another version, falls back to cuBLASLt's default (one warning) and computes the right result.
TEST(Runtime, FallsBackWhenTheDbCannotBeUsed) {
  const GemmProblem p = GemmProblem::parse("200x384x256:bf16");
  auto check = [&](Runtime& rt, const char* what) {
    EXPECT_EQ(rt.choice(p).rfind("cublaslt:", 0), 0u) << what;
    harness::GemmBench bench(p, DeviceInfo::query(), 11);
    GemmArgs args = bench.args(0);
    args.workspace = nullptr;
    args.workspace_bytes = 0;
    rt.gemm(p, args, bench.stream());
    GF_CUDA_CHECK(cudaStreamSynchronize(bench.stream()));
    EXPECT_LT(
        test::rel_err(test::to_host(args.d, p.out, p.m * p.n), test::to_host(bench.reference(), DType::f32, p.m * p.n)),
        1e-2)
        << what;
  };
  const auto damaged = fresh_db("damaged");
  std::ofstream(damaged) << std::string(4096, 'x');
  Runtime on_damaged({.db_path = damaged});
  check(on_damaged, "a damaged DB file");

  // A decision by a backend at another version (another build's DB), and one by a backend this
  // build lacks.
  const auto foreign = fresh_db("foreign");
  {
    TuningDb db(foreign, DeviceInfo::query().fingerprint());
    db.store({.problem = p.key(),
              .family = "gemm",
              .backend = "native",
              .backend_version = "0.0.0+other",
              .candidate = "x",
              .config = {{"bm", 128}}},
             {});
  }
  Runtime on_foreign({.db_path = foreign});
  check(on_foreign, "a decision of another native version");
  {
    TuningDb db(foreign, DeviceInfo::query().fingerprint());
    db.store({.problem = p.key(), .family = "gemm", .backend = "cutlass", .backend_version = "4.2", .candidate = "x"},
             {});
  }
  Runtime on_missing({.db_path = foreign});
  check(on_missing, "a decision of a backend this build lacks");
}

// A problem no backend can run says why each one declined, in one line.
TEST(Tuner, NoCandidateSaysWhyEachBackendDeclined) {
  TuneOptions o;
  o.backends = {"cublaslt", "native"};
  o.db_path = fresh_db("declined");
  Tuner tuner(o);
  try {
    tuner.tune(GemmProblem::parse("64x64x60:e4m3"));
    FAIL() << "an fp8 K of 60 (60-byte rows) has no candidate";
  } catch (const Error& e) {
    const std::string what = e.what();
    EXPECT_NE(what.find("no backend offers a candidate"), std::string::npos) << what;
    EXPECT_NE(what.find("cublaslt: "), std::string::npos) << what;
    EXPECT_NE(what.find("native: "), std::string::npos) << what;
    EXPECT_NE(what.find("K % 16"), std::string::npos) << what;
    EXPECT_EQ(what.find('\n'), std::string::npos) << what;
  }
}
