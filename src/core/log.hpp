#pragma once
// The library's logger writes to stderr (stdout carries tables, JSON and the worker protocol).
// GEMMFORGE_LOG=debug|info|warn|error sets its level; GEMMFORGE_LOG=debug also prints the
// config chosen for each problem.
#include <spdlog/spdlog.h>

namespace gf {
spdlog::logger& log();
}
