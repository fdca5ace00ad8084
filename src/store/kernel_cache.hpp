#pragma once
// Content-addressed cache of compiled kernels: <dir>/<key>.cubin, written atomically (temp file
// and rename), so several processes may compile into one cache at once. An in-memory map sits in
// front. The key is the kernel's name plus a hash of everything that shapes the binary (source,
// headers, options, compiler version, arch); the caller builds it.
#include <filesystem>
#include <mutex>
#include <optional>
#include <string>
#include <unordered_map>

namespace gf {

class KernelCache {
 public:
  struct Entry {
    std::string bytes;
    std::string meta;  // what the compiler reported (JSON), beside the binary
  };
  explicit KernelCache(std::filesystem::path dir);
  std::optional<Entry> get(const std::string& key);
  void put(const std::string& key, const std::string& bytes, const std::string& meta = "");
  const std::filesystem::path& dir() const { return dir_; }

  // The process-wide cache in home_dir()/kernels.
  static KernelCache& shared();

 private:
  std::filesystem::path dir_;
  std::mutex mu_;
  std::unordered_map<std::string, Entry> memory_;
};

}  // namespace gf
