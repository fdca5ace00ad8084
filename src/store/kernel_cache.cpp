#include "store/kernel_cache.hpp"

#include <fstream>
#include <nlohmann/json.hpp>

#include "core/files.hpp"
#include "core/hash.hpp"
#include "core/log.hpp"
#include "gemmforge/error.hpp"
#include "gemmforge/paths.hpp"

namespace gf {
namespace {

// A cache file larger than this is no kernel of ours.
constexpr std::uintmax_t kMaxEntryBytes = 256u << 20;

std::optional<std::string> read_file(const std::filesystem::path& path) {
  std::error_code ec;
  const auto size = std::filesystem::file_size(path, ec);
  if (ec || size > kMaxEntryBytes) return std::nullopt;
  std::ifstream in(path, std::ios::binary);
  if (!in) return std::nullopt;
  return std::string((std::istreambuf_iterator<char>(in)), {});
}

std::string content_hash(const std::string& bytes) { return hex64(fnv1a(bytes)); }

}  // namespace

KernelCache::KernelCache(std::filesystem::path dir) : dir_(std::move(dir)) {
  std::filesystem::create_directories(dir_);
}

std::optional<KernelCache::Entry> KernelCache::get(const std::string& key) {
  {
    std::lock_guard lock(mu_);
    if (auto it = memory_.find(key); it != memory_.end()) return it->second;
  }
  const auto envelope_text = read_file(dir_ / (key + ".json"));
  if (!envelope_text) return std::nullopt;  // no entry (or one being written: the envelope comes last)
  auto bytes = read_file(dir_ / (key + ".bin"));
  const auto envelope = nlohmann::json::parse(*envelope_text, nullptr, /*allow_exceptions=*/false);
  const bool intact = bytes && envelope.is_object() && envelope.value("bytes", int64_t(-1)) == int64_t(bytes->size()) &&
                      envelope.value("hash", std::string()) == content_hash(*bytes);
  if (!intact) {
    ++rejected_;
    log().warn("kernel cache: {} does not match its size and hash; compiling it again", (dir_ / key).string());
    return std::nullopt;
  }
  Entry e{std::move(*bytes), envelope.value("meta", std::string())};
  std::lock_guard lock(mu_);
  return memory_.emplace(key, std::move(e)).first->second;
}

void KernelCache::put(const std::string& key, const std::string& bytes, const std::string& meta) {
  write_file_atomically(dir_ / (key + ".bin"), bytes);
  const nlohmann::json envelope = {{"bytes", bytes.size()}, {"hash", content_hash(bytes)}, {"meta", meta}};
  write_file_atomically(dir_ / (key + ".json"), envelope.dump());
  std::lock_guard lock(mu_);
  memory_[key] = {bytes, meta};
}

KernelCache& KernelCache::shared() {
  static KernelCache cache(home_dir() / "kernels");
  return cache;
}

}  // namespace gf
