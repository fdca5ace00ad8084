#include "store/redis_url.hpp"

#include <fmt/format.h>

#include "core/strings.hpp"
#include "gemmforge/error.hpp"

namespace gf::store {
namespace {

constexpr std::string_view kPlain = "redis://", kTls = "rediss://";

int hex(char c) {
  if (c >= '0' && c <= '9') return c - '0';
  if (c >= 'a' && c <= 'f') return c - 'a' + 10;
  if (c >= 'A' && c <= 'F') return c - 'A' + 10;
  return -1;
}

// %XX escapes decoded (a password may hold '@', ':' or '/' written so); nullopt for a bad escape.
std::optional<std::string> percent_decoded(std::string_view s) {
  std::string out;
  for (size_t i = 0; i < s.size(); ++i) {
    if (s[i] != '%') {
      out += s[i];
      continue;
    }
    if (i + 2 >= s.size() || hex(s[i + 1]) < 0 || hex(s[i + 2]) < 0) return std::nullopt;
    out += char(hex(s[i + 1]) * 16 + hex(s[i + 2]));
    i += 2;
  }
  return out;
}

}  // namespace

bool is_remote_url(std::string_view text) { return text.starts_with(kPlain) || text.starts_with(kTls); }

std::string redact_url(std::string_view text) {
  const size_t scheme = text.find("://");
  if (scheme == std::string_view::npos) return std::string(text);
  const size_t start = scheme + 3, at = text.rfind('@');
  if (at == std::string_view::npos || at < start) return std::string(text);
  return fmt::format("{}***{}", text.substr(0, start), text.substr(at));
}

RedisUrl RedisUrl::parse(std::string_view url) {
  auto bad = [&](std::string_view why) {
    GF_FAIL("bad tuning store URL {}: {} (the form is redis://[[USER]:PASSWORD@]HOST[:PORT][/DB])",
            quote(redact_url(url)), why);
  };
  RedisUrl u;
  std::string_view rest;
  if (url.starts_with(kTls)) {
    u.tls = true;
    rest = url.substr(kTls.size());
  } else if (url.starts_with(kPlain)) {
    rest = url.substr(kPlain.size());
  } else {
    bad("it does not start with redis:// or rediss://");
  }
  if (const size_t at = rest.rfind('@'); at != std::string_view::npos) {
    const std::string_view userinfo = rest.substr(0, at);
    rest = rest.substr(at + 1);
    const size_t colon = userinfo.find(':');
    if (colon == std::string_view::npos) bad("the credentials need a ':' before the password (redis://:PASSWORD@HOST)");
    auto user = percent_decoded(userinfo.substr(0, colon)), password = percent_decoded(userinfo.substr(colon + 1));
    if (!user || !password) bad("a bad %-escape in the credentials");
    if (password->empty()) bad("an empty password");
    u.user = *user;
    u.password = *password;
  }
  if (rest.find_first_of("?#") != std::string_view::npos) bad("options after '?' or '#' are not supported");
  std::string_view hostport = rest;
  if (const size_t slash = rest.find('/'); slash != std::string_view::npos) {
    hostport = rest.substr(0, slash);
    const std::string_view db = rest.substr(slash + 1);
    if (!db.empty()) {
      auto n = parse_int(db);
      if (!n || *n > 1'000'000) bad(fmt::format("the database {} is not a number from 0", quote(db)));
      u.db = int(*n);
    }
  }
  if (const size_t colon = hostport.rfind(':'); colon != std::string_view::npos) {
    auto port = parse_int(hostport.substr(colon + 1));
    if (!port || *port < 1 || *port > 65535) bad(fmt::format("the port {} is not 1 to 65535", quote(hostport.substr(colon + 1))));
    u.port = int(*port);
    hostport = hostport.substr(0, colon);
  }
  if (hostport.empty()) bad("no host");
  if (hostport.find_first_of(" \t[]") != std::string_view::npos) bad("the host holds spaces or brackets");
  u.host = std::string(hostport);
  return u;
}

std::string RedisUrl::redacted() const {
  return fmt::format("{}{}{}:{}/{}", tls ? kTls : kPlain, password.empty() ? "" : "***@", host, port, db);
}

}  // namespace gf::store
