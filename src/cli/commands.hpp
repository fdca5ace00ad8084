#pragma once
// Each subcommand registers itself on the app; its callback does the work.
#include <CLI/CLI.hpp>

namespace gf::cli {
void add_tune(CLI::App& app);
void add_bench(CLI::App& app);
void add_bench_ops(CLI::App& app);
void add_candidates(CLI::App& app);
void add_compile(CLI::App& app);
void add_db(CLI::App& app);
void add_doctor(CLI::App& app);
void add_bench_runtime(CLI::App& app);
void add_bench_launch(CLI::App& app);
void add_bench_chain(CLI::App& app);
void add_prepare(CLI::App& app);
}  // namespace gf::cli
