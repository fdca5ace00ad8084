#pragma once
// Splitting a list of problems for a fleet: across hosts (--shard i/n) and across the GPUs of one
// host (--gpus). Pure functions of their inputs, so that every host and every run splits alike.
#include <optional>
#include <string>
#include <vector>

namespace gf::tune {

// --shard i/n: this host is shard i (from 0) of n.
struct Shard {
  int index = 0;
  int count = 1;
  // "i/n" with 0 <= i < n <= kMaxShards. Throws gf::Error, one line.
  static Shard parse(const std::string& spec);
  static constexpr int kMaxShards = 100000;
};

// The shard's part of the keys: the distinct keys in sorted order, every n-th from the i-th. Each
// key falls in exactly one shard of n, whatever order the hosts listed them in.
std::vector<std::string> shard_keys(std::vector<std::string> keys, Shard shard);

// --gpus: "all" (nullopt) or ordinals "0,1,3". An ordinal given twice runs two tuners on that GPU
// (a test of sharing one; their timings disturb each other). Throws gf::Error, one line.
std::optional<std::vector<int>> parse_gpus(const std::string& spec);
// The ordinals --gpus names on a host of `present` GPUs (absent_reason: why it has none). Throws
// gf::Error, one line, for none or an ordinal the host lacks.
std::vector<int> resolve_gpus(const std::optional<std::vector<int>>& wanted, int present,
                              const std::string& absent_reason);

// What each GPU tunes, by its place in `fingerprints` (each GPU's device fingerprint, which names
// its model, not its ordinal): decisions are stored per model, so each key is tuned once per model,
// on one of that model's GPUs, the keys of a model dealt out in turn.
std::vector<std::vector<std::string>> assign_to_gpus(const std::vector<std::string>& keys,
                                                     const std::vector<std::string>& fingerprints);

}  // namespace gf::tune
