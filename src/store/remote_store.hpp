#pragma once
// The remote tuning store: decisions on a Redis server shared by a fleet, behind each host's
// local DB (TuningDb reads local first, then here, and writes both). One key per problem and
// device fingerprint; the value is the decision with its measurements (JSON), written atomically
// by a server-side script that keeps the faster of two decisions.
//
// The store never stops tuning or dispatch: every call has a timeout, and when the server is down,
// slow or refuses us, the first failure is one warning and calls skip the server for a while
// (kRetrySeconds) before trying again. An entry that does not parse, or that is of another schema,
// device or problem, is refused with a warning naming its key, never used.
#include <chrono>
#include <memory>
#include <mutex>
#include <optional>
#include <string>
#include <vector>

#include "gemmforge/tuning_db.hpp"
#include "store/redis_url.hpp"

namespace gf::store {

struct RemoteEntry {
  Decision decision;
  std::vector<Measurement> measurements;
};

// Every call to the server is bounded: a store that hangs costs at most these, once.
struct RemoteTimeouts {
  int connect_ms = 200;
  int command_ms = 1000;
};

class RemoteStore {
 public:
  static constexpr int kSchemaVersion = 1;  // the value's "gemmforge_decision" field
  static constexpr int kRetrySeconds = 30;

  // Parses the URL (throws gf::Error, one line, for a bad one or one this build cannot reach:
  // rediss:// without TLS, any URL without hiredis). Connects at the first call.
  explicit RemoteStore(const std::string& url, RemoteTimeouts timeouts = {});
  ~RemoteStore();
  RemoteStore(const RemoteStore&) = delete;
  RemoteStore& operator=(const RemoteStore&) = delete;

  // The problem's entry on this device; nullopt when absent, refused, or the server unreachable.
  std::optional<RemoteEntry> get(const std::string& device, const std::string& problem);
  // Stores the entry unless the server holds a faster one of this schema (a decision of the same
  // backend at another version is replaced: the writer's version is the current one). Returns
  // whether it was stored; false also when the server is unreachable.
  bool put(const std::string& device, const Decision& d, const std::vector<Measurement>& measurements);

  // Shared blobs (compiled kernels, content-addressed by their kernel-cache key): the blob, or
  // nullopt when absent or the server unreachable; put_blob stores it unless the key is taken
  // (any holder of a key holds the same bytes). The caller checks what it gets.
  std::optional<std::string> get_blob(const std::string& key);
  bool put_blob(const std::string& key, const std::string& bytes);
  static std::string blob_key(const std::string& key);

  // The URL without its credentials, for messages.
  const std::string& where() const { return where_; }
  static std::string key(const std::string& device, const std::string& problem);
  // The value put() writes.
  static std::string value(const std::string& device, const Decision& d, const std::vector<Measurement>& ms);
  // The entry a value holds, or why it is refused.
  static std::optional<RemoteEntry> parse_value(const std::string& value, const std::string& device,
                                                const std::string& problem, std::string* why);

 private:
  struct Connection;
  // The reply to a command, or null (after failed()) when the server cannot be reached.
  struct Reply;
  std::unique_ptr<Reply> call(const std::vector<std::string>& args);
  bool connect();
  void failed(const std::string& why);

  RedisUrl url_;
  std::string where_;
  RemoteTimeouts timeouts_;
  std::mutex mu_;  // one command at a time on the connection
  std::unique_ptr<Connection> conn_;
  std::chrono::steady_clock::time_point retry_at_{};
  bool warned_ = false, down_ = false;
};

}  // namespace gf::store
