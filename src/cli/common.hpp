#pragma once
// What the subcommands share: choosing problems, printing tables, a progress bar, JSON output.
#include <CLI/CLI.hpp>
#include <nlohmann/json.hpp>
#include <mutex>
#include <string>
#include <vector>

#include "gemmforge/backend.hpp"
#include "gemmforge/rowop.hpp"
#include "gemmforge/tuner.hpp"
#include "gemmforge/workloads.hpp"

namespace gf::cli {

// A problem with the label it is shown under ("llama3-8b gate_up M=4096", or the spec).
struct LabeledProblem {
  std::string label;
  GemmProblem problem;
};

struct ProblemArgs {
  std::vector<std::string> specs;  // --problem
  std::vector<std::string> ops;    // --op
  std::string model;               // --model
  std::string hf_config;           // --hf-config
  std::string tokens = "16,128,4096";
  std::string dtype = "bf16";
  std::string epilogue;  // applied to every model GEMM
  std::string fuse = "none";
  std::string from;  // --from: problem keys, one a line (GEMMFORGE_RECORD's file)

  // with_ops: the command takes row ops too (-o).
  void add_to(CLI::App& app, bool with_ops = false);
  // The model's GEMMs (llama3-8b when neither --model, --hf-config, --problem nor --op is
  // given), then the --problem specs. Throws gf::Error.
  std::vector<LabeledProblem> resolve() const;
  // The --op specs. Throws gf::Error.
  std::vector<RowOpSpec> resolve_ops() const;

 private:
  std::vector<LabeledProblem> model_problems() const;
  // The --from file's GEMMs and row ops, duplicates merged, in the file's order.
  std::pair<std::vector<GemmProblem>, std::vector<RowOpSpec>> from_file() const;
};

// A plain text table with aligned columns.
class Table {
 public:
  explicit Table(std::vector<std::string> headers) : rows_{std::move(headers)} {}
  void add(std::vector<std::string> row) { rows_.push_back(std::move(row)); }
  void print() const;

 private:
  std::vector<std::vector<std::string>> rows_;
};

// One line on stderr, redrawn in place on a terminal; elsewhere a line per finished stage.
class Progress {
 public:
  // Thread-safe: compile threads report as they finish.
  void update(const std::string& what, int done, int total);
  void finish();

 private:
  std::mutex mu_;
  bool tty_ = false;
  bool started_ = false;
  bool open_line_ = false;
};

// The options of the commands that tune (tune, bench, bench-ops) and the tuner they make.
struct TuneArgs {
  ProblemArgs problems;
  std::string backends;
  std::string search = "default";
  int top_k = 0;
  bool force = false;
  bool no_cache = false;
  std::string only;
  double timeout_s = 60;
  int rounds = 5;
  std::string db;
  std::string json;
  std::string gpus;   // --gpus: "" (this process, GPU 0), "all" or "0,1,..."
  std::string shard;  // --shard i/n
  // Adds the options every tuning command takes (problems as ProblemArgs::add_to with with_ops).
  void add_to(CLI::App* cmd, bool with_ops);
  // --gpus, --shard.
  void add_fleet(CLI::App* cmd);
  // --force, --no-cache, --only.
  void add_selection(CLI::App* cmd);
  // --rounds.
  void add_rounds(CLI::App* cmd);
};
// Throws gf::Error (naming what still works) without a GPU.
std::unique_ptr<Tuner> make_tuner(const TuneArgs& a, Progress& progress);
// `tune --gpus`: the problems (keys) spread over the host's GPUs, one `gemmforge tune` process
// each, their tables printed in GPU order. Throws gf::Error when --gpus names no GPU of this host
// or a process fails.
void tune_on_gpus(const TuneArgs& a, const std::vector<std::string>& keys);

void write_json(const std::string& path, const nlohmann::json& j);
// This machine's GPU, or an assumed H100/H200 where there is none (what needs no GPU: listing and
// compiling candidates, pinning one).
DeviceInfo device_or_assumed();
std::string fixed(double v, int digits);

// The q-quantile (0..1) of the values, nearest rank; for the benches' spreads.
double quantile(std::vector<double> v, double q);

}  // namespace gf::cli
