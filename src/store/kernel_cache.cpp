#include "store/kernel_cache.hpp"

#include <fstream>

#include "core/files.hpp"
#include "gemmforge/error.hpp"
#include "gemmforge/paths.hpp"

namespace gf {
namespace {

std::optional<std::string> read_file(const std::filesystem::path& path) {
  std::ifstream in(path, std::ios::binary);
  if (!in) return std::nullopt;
  return std::string((std::istreambuf_iterator<char>(in)), {});
}

}  // namespace

KernelCache::KernelCache(std::filesystem::path dir) : dir_(std::move(dir)) {
  std::filesystem::create_directories(dir_);
}

std::optional<KernelCache::Entry> KernelCache::get(const std::string& key) {
  {
    std::lock_guard lock(mu_);
    if (auto it = memory_.find(key); it != memory_.end()) return it->second;
  }
  auto bytes = read_file(dir_ / (key + ".cubin"));
  if (!bytes || bytes->empty()) return std::nullopt;
  Entry e{std::move(*bytes), read_file(dir_ / (key + ".json")).value_or("")};
  std::lock_guard lock(mu_);
  return memory_.emplace(key, std::move(e)).first->second;
}

void KernelCache::put(const std::string& key, const std::string& bytes, const std::string& meta) {
  // The metadata first: a binary that is present always has its report beside it.
  write_file_atomically(dir_ / (key + ".json"), meta);
  write_file_atomically(dir_ / (key + ".cubin"), bytes);
  std::lock_guard lock(mu_);
  memory_[key] = {bytes, meta};
}

KernelCache& KernelCache::shared() {
  static KernelCache cache(home_dir() / "kernels");
  return cache;
}

}  // namespace gf
