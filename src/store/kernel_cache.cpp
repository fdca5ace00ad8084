#include "store/kernel_cache.hpp"

#include <fstream>
#include <nlohmann/json.hpp>

#include "core/files.hpp"
#include "core/hash.hpp"
#include "core/log.hpp"
#include "gemmforge/error.hpp"
#include "gemmforge/paths.hpp"
#include "store/remote_store.hpp"

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

nlohmann::json envelope_of(const std::string& bytes, const std::string& meta) {
  return {{"bytes", bytes.size()}, {"hash", content_hash(bytes)}, {"meta", meta}};
}

bool matches(const nlohmann::json& envelope, const std::string& bytes) {
  return envelope.is_object() && envelope.value("bytes", int64_t(-1)) == int64_t(bytes.size()) &&
         envelope.value("hash", std::string()) == content_hash(bytes);
}

}  // namespace

KernelCache::KernelCache(std::filesystem::path dir) : dir_(std::move(dir)) {
  std::filesystem::create_directories(dir_);
}
KernelCache::~KernelCache() = default;

void KernelCache::share_through(const std::string& url) {
  auto remote = std::make_unique<store::RemoteStore>(url);
  std::lock_guard lock(mu_);
  if (!remote_) remote_ = std::move(remote);
}

// A shared entry travels as its envelope (one JSON line) and its bytes.
std::optional<KernelCache::Entry> KernelCache::from_remote(const std::string& key) {
  store::RemoteStore* remote = nullptr;
  {
    std::lock_guard lock(mu_);
    remote = remote_.get();
  }
  if (!remote) return std::nullopt;
  auto blob = remote->get_blob(key);
  if (!blob) return std::nullopt;
  const size_t newline = blob->find('\n');
  const auto envelope = nlohmann::json::parse(blob->substr(0, newline), nullptr, /*allow_exceptions=*/false);
  std::string bytes = newline == std::string::npos ? std::string() : blob->substr(newline + 1);
  if (!matches(envelope, bytes)) {
    ++rejected_;
    log().warn("kernel cache: the shared entry {} does not match its size and hash; compiling it again", key);
    return std::nullopt;
  }
  Entry e{std::move(bytes), envelope.value("meta", std::string())};
  write_file_atomically(dir_ / (key + ".bin"), e.bytes);
  write_file_atomically(dir_ / (key + ".json"), envelope.dump());
  std::lock_guard lock(mu_);
  return memory_.emplace(key, std::move(e)).first->second;
}

std::optional<KernelCache::Entry> KernelCache::get(const std::string& key) {
  {
    std::lock_guard lock(mu_);
    if (auto it = memory_.find(key); it != memory_.end()) return it->second;
  }
  const auto envelope_text = read_file(dir_ / (key + ".json"));
  // No entry (or one being written: the envelope comes last): perhaps another host compiled it.
  if (!envelope_text) return from_remote(key);
  auto bytes = read_file(dir_ / (key + ".bin"));
  const auto envelope = nlohmann::json::parse(*envelope_text, nullptr, /*allow_exceptions=*/false);
  if (!bytes || !matches(envelope, *bytes)) {
    ++rejected_;
    log().warn("kernel cache: {} does not match its size and hash; compiling it again", (dir_ / key).string());
    return from_remote(key);
  }
  Entry e{std::move(*bytes), envelope.value("meta", std::string())};
  std::lock_guard lock(mu_);
  return memory_.emplace(key, std::move(e)).first->second;
}

void KernelCache::put(const std::string& key, const std::string& bytes, const std::string& meta) {
  write_file_atomically(dir_ / (key + ".bin"), bytes);
  const nlohmann::json envelope = envelope_of(bytes, meta);
  write_file_atomically(dir_ / (key + ".json"), envelope.dump());
  store::RemoteStore* remote = nullptr;
  {
    std::lock_guard lock(mu_);
    memory_[key] = {bytes, meta};
    remote = remote_.get();
  }
  if (remote && bytes.size() <= kMaxSharedBytes) remote->put_blob(key, envelope.dump() + "\n" + bytes);
}

KernelCache& KernelCache::shared() {
  static KernelCache cache(home_dir() / "kernels");
  return cache;
}

}  // namespace gf
