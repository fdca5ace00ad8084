// The child side of the worker protocol (see worker.hpp).
#include <cuda_runtime_api.h>

#include <algorithm>
#include <cstring>

#include "gemmforge/error.hpp"
#include "harness/bench.hpp"
#include "harness/copy_bench.hpp"
#include "harness/rowop_bench.hpp"
#include "process/worker_process.hpp"
#include "tune/worker.hpp"

namespace gf::tune {
namespace {

harness::TimingOptions timing_from(const nlohmann::json& j) {
  harness::TimingOptions o;
  o.warmup = j.value("warmup", o.warmup);
  o.warmup_ms = j.value("warmup_ms", o.warmup_ms);
  o.min_reps = j.value("min_reps", o.min_reps);
  o.max_reps = j.value("max_reps", o.max_reps);
  o.budget_ms = j.value("budget_ms", o.budget_ms);
  o.flush_l2 = j.value("flush_l2", o.flush_l2);
  o.graph = j.value("graph", o.graph);
  return o;
}

// A measurement's fields, as the measure and race replies carry them.
nlohmann::json result_json(const harness::MeasureResult& r) {
  return {{"verified", r.verified}, {"rel_err", r.rel_err}, {"us", r.us},
          {"graph_us", r.graph_us}, {"reps", r.reps},       {"error", r.error}};
}

// After a CUDA error: is the context still usable? Faults (illegal address, launch failure)
// are sticky and poison every later call of this process.
bool context_lost() {
  cudaError_t err = cudaDeviceSynchronize();
  cudaGetLastError();
  return err != cudaSuccess;
}

}  // namespace

int worker_main() {
  adopt_worker_duties();  // first: before any thread (CUDA's too) is started
  WorkerChannel channel;
  DeviceInfo device = DeviceInfo::query();
  // The problems set up, the current one last; each under its family, key and seed.
  std::vector<std::pair<std::string, std::unique_ptr<harness::Bench>>> held;
  harness::Bench* bench = nullptr;
  std::string line;
  while (channel.read(line)) {
    nlohmann::json reply;
    bool fatal = false;
    nlohmann::json id;
    try {
      auto req = nlohmann::json::parse(line);
      id = req.value("id", nlohmann::json());
      std::string op = req.at("op");
      if (op == "quit") break;
      GF_CHECK(device.present, "{}", device.absent_reason);
      if (op == "problem") {
        const std::string family = req.at("family"), problem = req.at("problem");
        const uint64_t seed = req.value("seed", uint64_t(1));
        const std::string id = fmt::format("{} {} {}", family, problem, seed);
        auto it = std::find_if(held.begin(), held.end(), [&](const auto& h) { return h.first == id; });
        // Freed before the next is set up: a held problem's buffers count against the GPU's memory.
        const size_t hold = std::max(req.value("hold", size_t(1)), size_t(1));
        bench = nullptr;
        if (it != held.end()) {
          std::rotate(it, it + 1, held.end());
          while (held.size() > hold) held.erase(held.begin());
        } else {
          while (held.size() >= hold) held.erase(held.begin());
          held.emplace_back(id, harness::make_bench(family, problem, device, seed));
        }
        bench = held.back().second.get();
        reply = {{"ok", true}, {"sets", bench->sets()}};
      } else if (op == "measure") {
        GF_CHECK(bench, "measure before problem");
        harness::MeasureResult r = bench->measure(req.at("candidate").get<Candidate>(), req.value("time", true),
                                                  timing_from(req.value("timing", nlohmann::json::object())));
        reply = result_json(r);
        reply["ok"] = true;
      } else if (op == "race") {
        GF_CHECK(bench, "race before problem");
        harness::RaceOptions o;
        o.rounds = req.value("rounds", o.rounds);
        o.warmup_ms = req.value("warmup_ms", o.warmup_ms);
        o.seed = req.value("seed", o.seed);
        auto results = bench->race(req.at("candidates").get<std::vector<Candidate>>(), o);
        nlohmann::json rs = nlohmann::json::array();
        for (const auto& r : results) rs.push_back(result_json(r));
        reply = {{"ok", true}, {"results", rs}};
      } else if (op == "copy_bandwidth") {
        reply = {{"ok", true}, {"tbps", harness::copy_bandwidth_tbps(device)}};
      } else if (op == "copy") {
        const harness::CopyTiming t = harness::copy_timing(device, req.at("bytes").get<size_t>());
        reply = {{"ok", true}, {"us", t.us}, {"graph_us", t.graph_us}};
      } else {
        GF_FAIL("unknown op '{}'", op);
      }
    } catch (const std::exception& e) {
      fatal = context_lost();
      reply = {{"ok", false}, {"error", e.what()}, {"fatal", fatal}};
    }
    reply["id"] = id;
    channel.write(reply);
    if (fatal) return 3;
  }
  return 0;
}

void maybe_run_worker(int argc, char** argv) {
  if (argc >= 2 && std::strcmp(argv[1], "__worker") == 0) std::exit(worker_main());
}

}  // namespace gf::tune
