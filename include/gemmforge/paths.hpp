#pragma once
#include <filesystem>

namespace gf {
// Where gemmforge keeps its tuning DB and kernel cache: $GEMMFORGE_HOME, else
// $XDG_CACHE_HOME/gemmforge, else ~/.cache/gemmforge. Created on first use.
std::filesystem::path home_dir();
}  // namespace gf
