#pragma once
// Content-addressed cache of compiled kernels: <dir>/<key>.bin, and beside it <key>.json holding
// the binary's size and content hash and what the compiler reported. Both are written atomically
// (temp file and rename), the binary first, so several processes may compile into one cache at
// once. A read checks the binary against its size and hash: a truncated, damaged or foreign file
// is a miss (counted), rebuilt by the caller, never served. An in-memory map sits in front, and a
// shared store (Redis) may sit behind. The key is the kernel's name plus a hash of everything that
// shapes the binary; the caller builds it.
#include <atomic>
#include <filesystem>
#include <memory>
#include <mutex>
#include <optional>
#include <string>
#include <unordered_map>

namespace gf {
namespace store {
class RemoteStore;
}

class KernelCache {
 public:
  struct Entry {
    std::string bytes;
    std::string meta;  // what the compiler reported (JSON)
  };
  explicit KernelCache(std::filesystem::path dir);
  ~KernelCache();
  std::optional<Entry> get(const std::string& key);
  // Throws gf::Error when the entry cannot be written (disk full, a read-only folder).
  void put(const std::string& key, const std::string& bytes, const std::string& meta = "");
  const std::filesystem::path& dir() const { return dir_; }
  // Entries found damaged (and not served) since the process started.
  int64_t rejected() const { return rejected_; }

  // Shares entries through a Redis server (the tuning store's): a miss here is looked up there and
  // a new entry sent there (up to kMaxSharedBytes), checked against its size and hash either way,
  // so a host that loads another's decision need not compile its kernel. The first URL stays;
  // throws gf::Error for a bad one.
  void share_through(const std::string& url);
  static constexpr size_t kMaxSharedBytes = 16u << 20;

  // The process-wide cache in home_dir()/kernels.
  static KernelCache& shared();

 private:
  std::optional<Entry> from_remote(const std::string& key);

  std::filesystem::path dir_;
  std::mutex mu_;
  std::unique_ptr<store::RemoteStore> remote_;  // set once, then only read
  std::unordered_map<std::string, Entry> memory_;
  std::atomic<int64_t> rejected_{0};
};

}  // namespace gf
