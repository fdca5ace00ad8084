// gemmforge: tune, benchmark and inspect GEMM kernels for NVIDIA Hopper GPUs.
#include <pthread.h>
#include <signal.h>

#include <iostream>
#include <thread>

#include "cli/commands.hpp"
#include "core/log.hpp"
#include "gemmforge/error.hpp"
#include "process/worker_process.hpp"
#include "tune/worker.hpp"

namespace {

// SIGINT (Ctrl-C), SIGTERM and SIGHUP end the command, but first the workers and everything they
// started: a thread takes the signals (blocked everywhere else), kills them, and re-raises.
void end_workers_with_the_command() {
  sigset_t ending;
  sigemptyset(&ending);
  for (int sig : {SIGINT, SIGTERM, SIGHUP}) sigaddset(&ending, sig);
  pthread_sigmask(SIG_BLOCK, &ending, nullptr);
  std::thread([ending] {
    int sig = 0;
    sigwait(&ending, &sig);
    gf::WorkerProcess::kill_all();
    signal(sig, SIG_DFL);
    pthread_sigmask(SIG_UNBLOCK, &ending, nullptr);
    raise(sig);
  }).detach();
}

}  // namespace

int main(int argc, char** argv) {
  gf::tune::maybe_run_worker(argc, argv);
  end_workers_with_the_command();
  CLI::App app{
      "gemmforge: picks, builds and runs the fastest GEMM for each matrix product of a transformer "
      "on NVIDIA Hopper GPUs"};
  app.set_version_flag("--version", std::string("gemmforge ") + GF_VERSION);
  app.require_subcommand(1);
  gf::cli::add_tune(app);
  gf::cli::add_bench(app);
  gf::cli::add_bench_ops(app);
  gf::cli::add_bench_runtime(app);
  gf::cli::add_bench_launch(app);
  gf::cli::add_bench_chain(app);
  gf::cli::add_candidates(app);
  gf::cli::add_compile(app);
  gf::cli::add_db(app);
  gf::cli::add_doctor(app);
  gf::cli::add_prepare(app);
  try {
    app.parse(argc, argv);
  } catch (const CLI::ParseError& e) {
    return app.exit(e);
  } catch (const gf::Error& e) {
    // GEMMFORGE_LOG=debug also says where the error was raised.
    const bool debug = gf::log().enabled(gf::LogLevel::debug);
    std::cerr << "gemmforge: error: " << (debug ? e.where() : std::string(e.what())) << "\n";
    return 1;
  } catch (const std::exception& e) {
    std::cerr << "gemmforge: error: " << e.what() << "\n";
    return 1;
  }
  return 0;
}
