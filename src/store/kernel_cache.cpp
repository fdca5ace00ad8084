#include "store/kernel_cache.hpp"

#include <unistd.h>

#include <atomic>
#include <fstream>

#include "gemmforge/error.hpp"
#include "gemmforge/paths.hpp"

namespace gf {

KernelCache::KernelCache(std::filesystem::path dir) : dir_(std::move(dir)) {
  std::filesystem::create_directories(dir_);
}

std::optional<std::string> KernelCache::get(const std::string& key) {
  {
    std::lock_guard lock(mu_);
    if (auto it = memory_.find(key); it != memory_.end()) return it->second;
  }
  std::ifstream in(dir_ / (key + ".cubin"), std::ios::binary);
  if (!in) return std::nullopt;
  std::string bytes((std::istreambuf_iterator<char>(in)), {});
  if (bytes.empty()) return std::nullopt;
  std::lock_guard lock(mu_);
  return memory_.emplace(key, std::move(bytes)).first->second;
}

void KernelCache::put(const std::string& key, const std::string& bytes) {
  static std::atomic<int> counter{0};
  auto final_path = dir_ / (key + ".cubin");
  auto tmp = dir_ / fmt::format(".{}.{}.{}.tmp", key, getpid(), counter++);
  {
    std::ofstream out(tmp, std::ios::binary);
    out.write(bytes.data(), std::streamsize(bytes.size()));
    GF_CHECK(out.good(), "cannot write kernel cache file {}", tmp.string());
  }
  std::filesystem::rename(tmp, final_path);  // atomic within one file system
  std::lock_guard lock(mu_);
  memory_[key] = bytes;
}

KernelCache& KernelCache::shared() {
  static KernelCache cache(home_dir() / "kernels");
  return cache;
}

}  // namespace gf
