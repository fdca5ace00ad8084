#include "store/remote_store.hpp"

#include <sys/time.h>

#include "core/log.hpp"
#include "core/no_sigpipe.hpp"
#include "core/strings.hpp"
#include "gemmforge/error.hpp"
#include "store/decision_json.hpp"

#if GF_HAVE_HIREDIS
#include <hiredis/hiredis.h>
#endif

namespace gf::store {
namespace {

// Atomically: keep the stored entry when it is a readable entry of this schema, at least as fast,
// and not made by the writer's backend at another version; else write ours. Comparing on the
// server makes two hosts storing one key at once keep the faster, whatever the order.
//   KEYS[1] the key; ARGV: the value, its us, its backend, its backend version, the schema.
constexpr const char* kFasterWins = R"lua(
local old = redis.call('GET', KEYS[1])
if old then
  local ok, o = pcall(cjson.decode, old)
  if ok and type(o) == 'table' and o.gemmforge_decision == tonumber(ARGV[5]) and type(o.us) == 'number'
     and o.us > 0 and o.us <= tonumber(ARGV[2])
     and not (o.backend == ARGV[3] and o.backend_version ~= ARGV[4]) then
    return 0
  end
end
redis.call('SET', KEYS[1], ARGV[1])
return 1
)lua";

}  // namespace

std::string RemoteStore::key(const std::string& device, const std::string& problem) {
  return fmt::format("gemmforge:decision:{}:{}:{}", kSchemaVersion, device, problem);
}

std::string RemoteStore::blob_key(const std::string& key) { return fmt::format("gemmforge:kernel:1:{}", key); }

std::string RemoteStore::value(const std::string& device, const Decision& d, const std::vector<Measurement>& ms) {
  nlohmann::json j = decision_json(d, device);
  j["gemmforge_decision"] = kSchemaVersion;
  j["measurements"] = measurements_json(ms);
  return j.dump(-1, ' ', false, nlohmann::json::error_handler_t::replace);
}

std::optional<RemoteEntry> RemoteStore::parse_value(const std::string& value, const std::string& device,
                                                    const std::string& problem, std::string* why) {
  auto refuse = [&](std::string reason) -> std::optional<RemoteEntry> {
    if (why) *why = std::move(reason);
    return std::nullopt;
  };
  const auto j = nlohmann::json::parse(value, nullptr, /*allow_exceptions=*/false);
  if (j.is_discarded()) return refuse("not JSON");
  if (!j.is_object() || !j.contains("gemmforge_decision") || j["gemmforge_decision"] != kSchemaVersion)
    return refuse(fmt::format("not a gemmforge decision of schema {}", kSchemaVersion));
  try {
    auto [stored_device, d] = decision_from_json(j);
    if (stored_device != device) return refuse(fmt::format("made on another device, {}", quote(stored_device)));
    if (d.problem != problem) return refuse(fmt::format("it holds another problem, {}", quote(d.problem)));
    if (!j.contains("measurements")) return refuse("measurements is missing");
    return RemoteEntry{std::move(d), measurements_from_json(j["measurements"], problem)};
  } catch (const Error& e) {
    return refuse(e.what());
  }
}

#if GF_HAVE_HIREDIS

struct RemoteStore::Connection {
  redisContext* c = nullptr;
  ~Connection() { redisFree(c); }
};

struct RemoteStore::Reply {
  redisReply* r = nullptr;
  ~Reply() { freeReplyObject(r); }
};
#else
struct RemoteStore::Connection {};
struct RemoteStore::Reply {};
#endif

RemoteStore::RemoteStore(const std::string& url, RemoteTimeouts timeouts)
    : url_(RedisUrl::parse(url)), where_(url_.redacted()), timeouts_(timeouts) {
  GF_CHECK(!url_.tls,
           "tuning store {}: TLS (rediss://) needs hiredis built with SSL, which this gemmforge lacks; use redis:// on "
           "a trusted network or through a TLS tunnel",
           where_);
#if !GF_HAVE_HIREDIS
  GF_FAIL("tuning store {}: this gemmforge was built without hiredis (libhiredis-dev), so it has no remote store",
          where_);
#endif
}

RemoteStore::~RemoteStore() = default;

#if GF_HAVE_HIREDIS

namespace {
timeval after_ms(int ms) { return {ms / 1000, (ms % 1000) * 1000}; }
}  // namespace

void RemoteStore::failed(const std::string& why) {
  conn_.reset();
  retry_at_ = std::chrono::steady_clock::now() + std::chrono::seconds(kRetrySeconds);
  down_ = true;
  // The server's words may in principle echo what we sent: never let the password through.
  std::string said = why;
  if (!url_.password.empty())
    for (size_t at; (at = said.find(url_.password)) != std::string::npos;) said.replace(at, url_.password.size(), "***");
  if (warned_) {
    log().debug("tuning store {}: {}", where_, said);
    return;
  }
  warned_ = true;
  log().warn("tuning store {}: {}; going on with the local DB alone (trying the store again every {} s)", where_,
             quote(said, 160), kRetrySeconds);
}

bool RemoteStore::connect() {
  if (conn_) return true;
  if (down_ && std::chrono::steady_clock::now() < retry_at_) return false;
  auto conn = std::make_unique<Connection>();
  conn->c = redisConnectWithTimeout(url_.host.c_str(), url_.port, after_ms(timeouts_.connect_ms));
  if (!conn->c || conn->c->err) {
    failed(conn->c ? fmt::format("cannot connect: {}", conn->c->errstr) : "cannot connect: out of memory");
    return false;
  }
  if (redisSetTimeout(conn->c, after_ms(timeouts_.command_ms)) != REDIS_OK) {
    failed("cannot set the command timeout");
    return false;
  }
  conn_ = std::move(conn);
  auto setup = [&](std::vector<std::string> args, const char* what) {
    auto reply = call(args);
    if (reply && reply->r->type == REDIS_REPLY_ERROR) failed(fmt::format("{} refused: {}", what, reply->r->str));
    return conn_ != nullptr;
  };
  if (!url_.password.empty() && !setup(url_.user.empty() ? std::vector<std::string>{"AUTH", url_.password}
                                                         : std::vector<std::string>{"AUTH", url_.user, url_.password},
                                       "AUTH"))
    return false;
  if (url_.db != 0 && !setup({"SELECT", std::to_string(url_.db)}, "SELECT")) return false;
  if (down_) log().info("tuning store {} is reachable again", where_);
  down_ = false;
  return true;
}

std::unique_ptr<RemoteStore::Reply> RemoteStore::call(const std::vector<std::string>& args) {
  if (!conn_) return nullptr;
  std::vector<const char*> argv;
  std::vector<size_t> lengths;
  for (const auto& a : args) {
    argv.push_back(a.data());
    lengths.push_back(a.size());
  }
  auto reply = std::make_unique<Reply>();
  {
    SigpipeBlocked no_sigpipe;  // a server that went away is an error here, not the end of the process
    reply->r = static_cast<redisReply*>(redisCommandArgv(conn_->c, int(argv.size()), argv.data(), lengths.data()));
  }
  if (!reply->r) {
    failed(conn_->c->err ? conn_->c->errstr : "no reply");
    return nullptr;
  }
  return reply;
}

std::optional<RemoteEntry> RemoteStore::get(const std::string& device, const std::string& problem) {
  std::lock_guard lock(mu_);
  if (!connect()) return std::nullopt;
  const std::string k = key(device, problem);
  auto reply = call({"GET", k});
  if (!reply || reply->r->type == REDIS_REPLY_NIL) return std::nullopt;
  if (reply->r->type != REDIS_REPLY_STRING) {
    failed(fmt::format("GET answered {}", reply->r->type == REDIS_REPLY_ERROR ? reply->r->str : "no string"));
    return std::nullopt;
  }
  std::string why;
  auto entry = parse_value(std::string(reply->r->str, reply->r->len), device, problem, &why);
  if (!entry) log().warn("tuning store {}: refusing the entry {} ({}); it is not used", where_, quote(k, 200), why);
  return entry;
}

bool RemoteStore::put(const std::string& device, const Decision& d, const std::vector<Measurement>& measurements) {
  std::lock_guard lock(mu_);
  if (!connect()) return false;
  auto reply = call({"EVAL", kFasterWins, "1", key(device, d.problem), value(device, d, measurements),
                     fmt::format("{:.17g}", d.us), d.backend, d.backend_version, std::to_string(kSchemaVersion)});
  if (!reply) return false;
  if (reply->r->type != REDIS_REPLY_INTEGER) {
    failed(fmt::format("storing {} failed: {}", quote(d.problem),
                       reply->r->type == REDIS_REPLY_ERROR ? reply->r->str : "an unexpected reply"));
    return false;
  }
  return reply->r->integer == 1;
}

std::optional<std::string> RemoteStore::get_blob(const std::string& key) {
  std::lock_guard lock(mu_);
  if (!connect()) return std::nullopt;
  auto reply = call({"GET", blob_key(key)});
  if (!reply || reply->r->type != REDIS_REPLY_STRING) return std::nullopt;
  return std::string(reply->r->str, reply->r->len);
}

bool RemoteStore::put_blob(const std::string& key, const std::string& bytes) {
  std::lock_guard lock(mu_);
  if (!connect()) return false;
  auto reply = call({"SET", blob_key(key), bytes, "NX"});
  return reply && reply->r->type == REDIS_REPLY_STATUS;
}

#else  // without hiredis: the URL is still checked, then refused in one line

std::optional<RemoteEntry> RemoteStore::get(const std::string&, const std::string&) { return std::nullopt; }
bool RemoteStore::put(const std::string&, const Decision&, const std::vector<Measurement>&) { return false; }
std::optional<std::string> RemoteStore::get_blob(const std::string&) { return std::nullopt; }
bool RemoteStore::put_blob(const std::string&, const std::string&) { return false; }

#endif

}  // namespace gf::store
