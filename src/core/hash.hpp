#pragma once
// A stable 64-bit content hash (FNV-1a) for cache keys and candidate identities. Stable across
// processes, builds and machines, unlike std::hash.
#include <fmt/format.h>

#include <cstdint>
#include <string>
#include <string_view>

namespace gf {

constexpr uint64_t fnv1a(std::string_view data, uint64_t h = 0xcbf29ce484222325ull) {
  for (unsigned char c : data) {
    h ^= c;
    h *= 0x100000001b3ull;
  }
  return h;
}

inline std::string hex64(uint64_t h) { return fmt::format("{:016x}", h); }

}  // namespace gf
