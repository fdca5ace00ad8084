#include "gemmforge/paths.hpp"

#include <cstdlib>

namespace gf {

std::filesystem::path home_dir() {
  std::filesystem::path dir;
  if (const char* h = std::getenv("GEMMFORGE_HOME"); h && *h)
    dir = h;
  else if (const char* x = std::getenv("XDG_CACHE_HOME"); x && *x)
    dir = std::filesystem::path(x) / "gemmforge";
  else if (const char* home = std::getenv("HOME"); home && *home)
    dir = std::filesystem::path(home) / ".cache/gemmforge";
  else
    dir = std::filesystem::temp_directory_path() / "gemmforge";
  std::filesystem::create_directories(dir);
  return dir;
}

}  // namespace gf
