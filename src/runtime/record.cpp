#include "runtime/record.hpp"

#include <fcntl.h>
#include <unistd.h>

#include <cstdlib>
#include <mutex>
#include <set>

#include "core/log.hpp"
#include "core/strings.hpp"

namespace gf::runtime {

void record_untuned(const std::string& key) {
  static const char* path = std::getenv("GEMMFORGE_RECORD");
  if (!path || !*path) return;
  static std::mutex mu;
  static std::set<std::string> recorded;
  std::lock_guard lock(mu);
  if (!recorded.insert(key).second) return;
  // One write(2) of a short line with O_APPEND lands whole, whoever else appends.
  const std::string line = key + "\n";
  const int fd = ::open(path, O_WRONLY | O_CREAT | O_APPEND | O_CLOEXEC, 0644);
  if (fd < 0 || ::write(fd, line.data(), line.size()) != ssize_t(line.size()))
    log().warn("GEMMFORGE_RECORD: cannot append to {}", quote(path));
  if (fd >= 0) ::close(fd);
}

}  // namespace gf::runtime
