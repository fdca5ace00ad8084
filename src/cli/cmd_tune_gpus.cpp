// gemmforge tune --gpus: one `gemmforge tune --from FILE` per GPU, each seeing only its GPU
// (CUDA_VISIBLE_DEVICES), all storing into the same DB under the GPU model's fingerprint.
#include <fcntl.h>
#include <sys/prctl.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cerrno>
#include <csignal>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <sstream>

#include "cli/common.hpp"
#include "core/files.hpp"
#include "gemmforge/error.hpp"
#include "tune/fleet.hpp"

extern char** environ;

namespace gf::cli {
namespace {

// The arguments of a GPU's tuner: this run's options, its share of the problems. The DB goes by
// the environment, never the command line, where a Redis password would show in `ps`.
std::vector<std::string> tuner_args(const TuneArgs& a, const std::string& from, const std::string& json) {
  std::vector<std::string> args = {"gemmforge", "tune", "--from", from, "-s", a.search, "--timeout",
                                   fmt::format("{}", a.timeout_s)};
  if (!a.backends.empty()) args.insert(args.end(), {"-b", a.backends});
  if (a.top_k > 0) args.insert(args.end(), {"--top-k", std::to_string(a.top_k)});
  if (a.force) args.push_back("--force");
  if (a.no_cache) args.push_back("--no-cache");
  if (!a.only.empty()) args.insert(args.end(), {"--only", a.only});
  if (!json.empty()) args.insert(args.end(), {"--json", json});
  return args;
}

struct Child {
  int gpu = 0;
  size_t problems = 0;
  std::filesystem::path out, err, json;
  pid_t pid = -1;
  int status = 0;
};

// Starts `args` with `env`, stdout and stderr to files. Everything the child needs is made before
// fork: the parent has threads, so the child calls only async-signal-safe functions.
pid_t spawn(const std::vector<std::string>& args, const std::vector<std::string>& env, const Child& c) {
  std::vector<char*> argv, envp;
  for (const auto& s : args) argv.push_back(const_cast<char*>(s.c_str()));
  for (const auto& s : env) envp.push_back(const_cast<char*>(s.c_str()));
  argv.push_back(nullptr);
  envp.push_back(nullptr);
  const int out = ::open(c.out.c_str(), O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0600);
  const int err = ::open(c.err.c_str(), O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0600);
  GF_CHECK(out >= 0 && err >= 0, "--gpus: cannot write {}", c.out.parent_path().string());
  const pid_t parent = getpid();
  const pid_t pid = fork();
  if (pid == 0) {
    prctl(PR_SET_PDEATHSIG, SIGTERM);  // a tuner dies with this command (its own workers with it)
    if (getppid() != parent) _exit(127);
    dup2(out, STDOUT_FILENO);
    dup2(err, STDERR_FILENO);
    execve("/proc/self/exe", argv.data(), envp.data());
    _exit(127);
  }
  ::close(out);
  ::close(err);
  GF_CHECK(pid > 0, "--gpus: cannot start a tuner: {}", std::strerror(errno));
  return pid;
}

std::string read_text(const std::filesystem::path& p) {
  std::ifstream in(p);
  std::stringstream ss;
  ss << in.rdbuf();
  return ss.str();
}

}  // namespace

void tune_on_gpus(const TuneArgs& a, const std::vector<std::string>& keys) {
  const auto wanted = tune::parse_gpus(a.gpus);  // the spelling first: checked on any machine
  const DeviceInfo first = DeviceInfo::query(0);
  int present = 0;
  while (present < 4096 && DeviceInfo::query(present).present) ++present;
  const std::vector<int> gpus = tune::resolve_gpus(wanted, present, first.absent_reason);
  std::vector<std::string> models;
  for (int g : gpus) models.push_back(DeviceInfo::query(g).fingerprint());
  const auto shares = tune::assign_to_gpus(keys, models);

  const auto dir = std::filesystem::temp_directory_path() / fmt::format("gemmforge-gpus-{}", getpid());
  std::filesystem::create_directories(dir);
  std::vector<std::string> env;
  for (char** e = environ; *e; ++e)
    if (!std::string_view(*e).starts_with("CUDA_VISIBLE_DEVICES=") && !std::string_view(*e).starts_with("GEMMFORGE_DB="))
      env.push_back(*e);
  if (!a.db.empty()) env.push_back("GEMMFORGE_DB=" + a.db);
  else if (const char* db = std::getenv("GEMMFORGE_DB")) env.push_back(std::string("GEMMFORGE_DB=") + db);

  std::vector<Child> children;
  for (size_t i = 0; i < gpus.size(); ++i) {
    if (shares[i].empty()) continue;
    Child c{.gpu = gpus[i], .problems = shares[i].size()};
    const auto base = dir / fmt::format("tuner{}-gpu{}", i, c.gpu);  // a GPU named twice runs two
    std::string list;
    for (const auto& k : shares[i]) list += k + "\n";
    write_file_atomically(base.string() + ".txt", list);
    c.out = base.string() + ".out";
    c.err = base.string() + ".err";
    if (!a.json.empty()) c.json = base.string() + ".json";
    std::vector<std::string> child_env = env;
    child_env.push_back(fmt::format("CUDA_VISIBLE_DEVICES={}", c.gpu));
    c.pid = spawn(tuner_args(a, base.string() + ".txt", c.json.string()), child_env, c);
    fmt::print(stderr, "GPU {} ({}): tuning {} problems\n", c.gpu, DeviceInfo::query(c.gpu).name, c.problems);
    children.push_back(std::move(c));
  }
  nlohmann::json merged = nlohmann::json::array();
  std::string failed;
  for (Child& c : children) {
    while (waitpid(c.pid, &c.status, 0) < 0 && errno == EINTR) {
    }
    fmt::print("\nGPU {}: {} problems\n{}", c.gpu, c.problems, read_text(c.out));
    if (!WIFEXITED(c.status) || WEXITSTATUS(c.status) != 0) {
      const std::string err = read_text(c.err);
      fmt::print(stderr, "GPU {}'s tuner failed; the end of its log:\n{}", c.gpu,
                 err.substr(err.size() > 4000 ? err.size() - 4000 : 0));
      failed += fmt::format("{}{}", failed.empty() ? "" : ", ", c.gpu);
    }
    if (!c.json.empty() && std::filesystem::exists(c.json)) {
      auto rows = nlohmann::json::parse(read_text(c.json), nullptr, /*allow_exceptions=*/false);
      if (rows.is_array())
        for (auto& r : rows) merged.push_back(std::move(r));
    }
  }
  if (!a.json.empty()) write_json(a.json, merged);
  std::filesystem::remove_all(dir);
  GF_CHECK(failed.empty(), "--gpus: the tuner of GPU {} failed (its errors are above)", failed);
}

}  // namespace gf::cli
