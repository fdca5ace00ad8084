#include "core/files.hpp"

#include <fmt/format.h>
#include <unistd.h>

#include <atomic>
#include <fstream>

#include "gemmforge/error.hpp"

namespace gf {

void write_file_atomically(const std::filesystem::path& path, const std::string& bytes) {
  namespace fs = std::filesystem;
  static std::atomic<int> counter{0};
  std::error_code ec;
  const fs::file_status st = fs::symlink_status(path, ec);
  const bool direct = fs::exists(st) && !fs::is_regular_file(st);
  const fs::path tmp =
      direct ? path : path.parent_path() / fmt::format(".{}.{}.{}.tmp", path.filename().string(), getpid(), counter++);
  auto fail = [&](const std::string& why) {
    if (!direct) fs::remove(tmp, ec);
    GF_FAIL("cannot write {}{}", path.string(), why);
  };
  {
    std::ofstream out(tmp, std::ios::binary);
    if (!out) fail("");
    out.write(bytes.data(), std::streamsize(bytes.size()));
    out.close();  // the last bytes reach the file here
    if (out.fail()) fail("");
  }
  if (direct) return;
  fs::rename(tmp, path, ec);
  if (ec) fail(": " + ec.message());
}

}  // namespace gf
