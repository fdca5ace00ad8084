#include "cli/common.hpp"

#include <fmt/format.h>
#include <fmt/ranges.h>
#include <unistd.h>

#include <algorithm>
#include <cctype>
#include <fstream>
#include <iostream>
#include <set>

#include "core/files.hpp"
#include "core/strings.hpp"
#include "gemmforge/error.hpp"
#include "gemmforge/workloads.hpp"

namespace gf::cli {

void ProblemArgs::add_to(CLI::App& app, bool with_ops) {
  if (with_ops)
    app.add_option("-o,--op", ops,
                   "row op OP[+residual|+valid]:ROWSxCOLS[:dtype[->out]] (softmax, rmsnorm, layernorm), repeatable");
  app.add_option("-p,--problem", specs,
                 "GEMM spec MxNxK[xBATCH][:dtype[->out]][:tn|nn][:epilogue], repeatable; with --model or "
                 "--hf-config, after the model's GEMMs");
  app.add_option("--from", from,
                 "a file of problem keys, one a line, GEMMs and row ops (what GEMMFORGE_RECORD=FILE writes: the "
                 "problems a runtime served untuned)")
      ->check(CLI::ExistingFile);
  app.add_option(
      "-m,--model", model,
      fmt::format("a shipped model ({}; default llama3-8b) or a config.json", fmt::join(builtin_models(), ", ")));
  app.add_option("--hf-config", hf_config, "a Hugging Face config.json of any decoder model");
  app.add_option("-t,--tokens", tokens, "token counts M, comma separated")->capture_default_str();
  app.add_option("--dtype", dtype, "input dtype of the model GEMMs")->capture_default_str();
  app.add_option("--epilogue", epilogue,
                 "epilogue for every model GEMM (a --problem spec carries its own), e.g. bias+gelu_tanh, residual, "
                 "swiglu");
  app.add_option("--fuse", fuse, "none, or natural: qkv+bias, o/down+residual, gate_up+swiglu")->capture_default_str();
}

std::vector<LabeledProblem> ProblemArgs::resolve() const {
  // A model's GEMMs (the default model when no --problem is given), then the --problem specs.
  // The model options are checked even where no model is used: a typo is never ignored.
  GF_CHECK(parse_dtype(dtype), "unknown --dtype {} (bf16, f16, e4m3, e5m2)", quote(dtype));
  GF_CHECK(fuse == "none" || fuse == "natural", "--fuse takes none or natural, not {}", quote(fuse));
  if (!epilogue.empty()) parse_epilogue(epilogue);
  std::vector<LabeledProblem> out;
  GF_CHECK(model.empty() || hf_config.empty(), "give either --model or --hf-config, not both");
  if ((specs.empty() && ops.empty() && from.empty()) || !model.empty() || !hf_config.empty()) out = model_problems();
  for (const auto& p : from_file().first) out.push_back({p.key(), p});
  for (const auto& s : specs) {
    GemmProblem p = GemmProblem::parse(s);
    out.push_back({p.key(), p});
  }
  return out;
}

std::vector<RowOpSpec> ProblemArgs::resolve_ops() const {
  std::vector<RowOpSpec> out = from_file().second;
  for (const auto& s : ops) out.push_back(RowOpSpec::parse(s));
  return out;
}

std::pair<std::vector<GemmProblem>, std::vector<RowOpSpec>> ProblemArgs::from_file() const {
  std::pair<std::vector<GemmProblem>, std::vector<RowOpSpec>> out;
  if (from.empty()) return out;
  std::ifstream in(from);
  GF_CHECK(in.good(), "cannot read --from {}", quote(from));
  std::set<std::string> seen;
  std::string line;
  for (int n = 1; std::getline(in, line); ++n) {
    const size_t first = line.find_first_not_of(" \t\r"), last = line.find_last_not_of(" \t\r");
    const std::string key = first == std::string::npos ? "" : line.substr(first, last - first + 1);
    if (key.empty() || key[0] == '#' || !seen.insert(key).second) continue;
    try {
      // A row op's key starts with its name, a GEMM's with its sizes.
      if (std::isalpha(static_cast<unsigned char>(key[0])))
        out.second.push_back(RowOpSpec::parse(key));
      else
        out.first.push_back(GemmProblem::parse(key));
    } catch (const Error& e) {
      GF_FAIL("--from {} line {}: {}", quote(from), n, e.what());
    }
  }
  return out;
}

std::vector<LabeledProblem> ProblemArgs::model_problems() const {
  ModelShape shape = load_model(hf_config.empty() ? (model.empty() ? "llama3-8b" : model) : hf_config);
  std::vector<int64_t> ms;
  for (const auto& t : split_list(tokens, "--tokens", true)) {
    auto v = parse_int(t);
    GF_CHECK(v && *v > 0, "bad token count {} in --tokens {}", quote(t), quote(tokens));
    ms.push_back(*v);
  }
  GF_CHECK(!ms.empty(), "--tokens is empty");
  auto dt = parse_dtype(dtype);
  GF_CHECK(dt, "unknown dtype '{}'", dtype);
  GF_CHECK(fuse == "none" || fuse == "natural", "--fuse takes none or natural, not '{}'", fuse);
  GF_CHECK(epilogue.empty() || fuse == "none", "give either --epilogue or --fuse natural, not both");
  auto gemms = model_gemms(shape, ms, *dt, fuse == "natural" ? Fuse::natural : Fuse::none);
  Epilogue e = parse_epilogue(epilogue);
  std::vector<LabeledProblem> out;
  for (auto& g : gemms) {
    if (!epilogue.empty()) {
      g.problem.epilogue = e;
      std::string why = g.problem.invalid_reason();
      GF_CHECK(why.empty(), "--epilogue {} on {} {}: {}", epilogue, g.model, g.name, why);
    }
    out.push_back({fmt::format("{} {} M={}", g.model, g.name, g.problem.m), g.problem});
  }
  return out;
}

void Table::print() const {
  std::vector<size_t> width;
  for (const auto& row : rows_)
    for (size_t i = 0; i < row.size(); ++i) {
      if (width.size() <= i) width.push_back(0);
      width[i] = std::max(width[i], row[i].size());
    }
  for (size_t r = 0; r < rows_.size(); ++r) {
    std::string line;
    for (size_t i = 0; i < rows_[r].size(); ++i)
      line += fmt::format("{:<{}}", rows_[r][i], i + 1 < rows_[r].size() ? width[i] + 2 : 0);
    std::cout << line << "\n";
    if (r == 0) {
      size_t total = 0;
      for (size_t w : width) total += w + 2;
      std::cout << std::string(total - 2, '-') << "\n";
    }
  }
  std::cout.flush();
}

void Progress::update(const std::string& what, int done, int total) {
  std::lock_guard lock(mu_);
  if (!started_) {
    tty_ = isatty(STDERR_FILENO);
    started_ = true;
  }
  if (tty_) {
    constexpr int kWidth = 24;
    int filled = total > 0 ? done * kWidth / total : kWidth;
    std::string bar = std::string(size_t(filled), '#') + std::string(size_t(kWidth - filled), '.');
    fmt::print(stderr, "\r\033[K[{}] {}/{} {}", bar, done, total, what);
    open_line_ = true;
  } else if (done == total) {
    fmt::print(stderr, "  {} ({}/{})\n", what, done, total);
  }
  std::fflush(stderr);
}

void Progress::finish() {
  std::lock_guard lock(mu_);
  if (open_line_) fmt::print(stderr, "\r\033[K");
  open_line_ = false;
  std::fflush(stderr);
}

void TuneArgs::add_to(CLI::App* cmd, bool with_ops) {
  problems.add_to(*cmd, with_ops);
  cmd->add_option("-b,--backends", backends, "comma-separated backends (default: all available)");
  cmd->add_option("-s,--search", search, "search effort: fast, default, exhaustive")
      ->capture_default_str()
      ->check(CLI::IsMember({"fast", "default", "exhaustive"}));
  cmd->add_option("--top-k", top_k, "at most this many candidates a backend (cuBLASLt: heuristic results)")
      ->check(CLI::NonNegativeNumber);
  cmd->add_option("--timeout", timeout_s, "seconds one candidate may take in the worker (1 to 86400)")
      ->capture_default_str()
      ->check([](const std::string& v) {
        auto t = parse_float(v);  // plain decimals: no nan, inf or hex
        return t && *t >= 1.0f && *t <= 86400.0f ? "" : "--timeout takes seconds from 1 to 86400";
      });
  cmd->add_option("--db", db,
                  "tuning DB path, or redis://[[USER]:PASSWORD@]HOST[:PORT][/DB]: a store shared by a fleet, with "
                  "the default local DB in front of it (default: GEMMFORGE_DB, else ~/.cache/gemmforge/tuning.db)");
  cmd->add_option("--json", json, "also write the results as JSON to FILE");
}

void TuneArgs::add_fleet(CLI::App* cmd) {
  cmd->add_option("--gpus", gpus,
                  "all, or GPU ordinals 0,1,...: spread the problems over these GPUs, one tuning process each "
                  "(each problem tuned once per GPU model)");
  cmd->add_option("--shard", shard,
                  "i/n: tune only shard i (from 0) of n of the problems, for splitting one list across n hosts");
}

void TuneArgs::add_selection(CLI::App* cmd) {
  cmd->add_flag("-f,--force", force, "tune again even when the DB has a decision");
  cmd->add_flag("--no-cache", no_cache, "compile every candidate afresh, over what the kernel cache holds");
  cmd->add_option(
      "--only", only,
      "only the candidates (of the --search level) whose names contain one of the comma-separated TEXTs (a TEXT "
      "ending in $ must end the name), to study a few variants; the DB is left alone");
}

void TuneArgs::add_rounds(CLI::App* cmd) {
  cmd->add_option("--rounds", rounds, "interleaved timing rounds; each row reports its median (odd, 1-15)")
      ->check(CLI::Range(1, 15))
      ->check([](const std::string& v) { return std::stoi(v) % 2 ? "" : "--rounds must be odd"; })
      ->capture_default_str();
}

std::unique_ptr<Tuner> make_tuner(const TuneArgs& a, Progress& progress) {
  TuneOptions o;
  o.backends = split_list(a.backends, "--backends", true);
  o.search = {parse_search(a.search), a.top_k};
  o.force = a.force;
  o.use_cache = !a.no_cache;
  o.only = a.only;
  o.candidate_timeout_s = a.timeout_s;
  o.bench_rounds = a.rounds;
  o.db_path = a.db;
  o.progress = [&progress](const std::string& what, int done, int total) { progress.update(what, done, total); };
  DeviceInfo device = DeviceInfo::query();
  GF_CHECK(device.present,
           "no GPU found: {}. Without a GPU these still work: gemmforge candidates (list a problem's candidates), "
           "gemmforge compile (compile them), gemmforge doctor",
           device.absent_reason);
  return std::make_unique<Tuner>(std::move(o));
}

DeviceInfo device_or_assumed() {
  DeviceInfo d = DeviceInfo::query();
  return d.present ? d : DeviceInfo::assumed_hopper();
}

void write_json(const std::string& path, const nlohmann::json& j) {
  // Compiler logs cut to a length may end inside a UTF-8 sequence: replace, never throw.
  write_file_atomically(path, j.dump(2, ' ', false, nlohmann::json::error_handler_t::replace) + "\n");
}

std::string fixed(double v, int digits) { return fmt::format("{:.{}f}", v, digits); }

double quantile(std::vector<double> v, double q) {
  GF_CHECK(!v.empty(), "quantile of no values");
  std::sort(v.begin(), v.end());
  return v[size_t(q * double(v.size() - 1) + 0.5)];
}

}  // namespace gf::cli
