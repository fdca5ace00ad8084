#pragma once
// Where a remote tuning store is: redis://[[USER]:PASSWORD@]HOST[:PORT][/DB]. The password never
// reaches a message: everything that prints a URL prints redacted().
#include <string>
#include <string_view>

namespace gf::store {

struct RedisUrl {
  std::string host;
  int port = 6379;
  int db = 0;
  std::string user;      // "" with a password alone: the default user
  std::string password;  // percent-decoded; "" for none
  bool tls = false;      // rediss://

  // Throws gf::Error, one line, quoting the URL with its password redacted.
  static RedisUrl parse(std::string_view url);
  // The URL with "***" for its credentials.
  std::string redacted() const;
};

// Whether text names a remote store (redis:// or rediss://) rather than a file.
bool is_remote_url(std::string_view text);
// text with the credentials of a URL in it (what lies between "://" and the last '@' before the
// host) replaced by "***": for quoting a URL that did not parse.
std::string redact_url(std::string_view text);

}  // namespace gf::store
