// Where Lemonade 11's `lemonade` client sends its requests: --host (or
// LEMONADE_HOST) may be a name, an address or a URL, read as 11 reads it
// (lemonade-sdk/lemonade v11.7.0, src/cpp/utils/url_utils.cpp
// parse_target_url):
//   - a case-insensitive `http://` or `https://` is stripped (https: TLS),
//     then the text is cut at the first `/`, `?` or `#`;
//   - a port is `[v6]:PORT`, or `host:PORT` when there is at most one colon
//     (an unbracketed IPv6 literal has none); a port in the URL always wins;
//   - a scheme without a port means 80 or 443, unless a port was given
//     (--port or LEMONADE_PORT).
//
// Thread-safety: pure function.
#pragma once

#include <string>

#include "lemon/core/error.h"

namespace lemon::cli {

struct Target {
  std::string host;  // without brackets
  int port = 0;
  bool https = false;
};

// `port` is the port in effect (--port, LEMONADE_PORT or the default);
// `port_given` says whether the user gave it. An invalid port in the text
// is kInvalidRequest.
Result<Target> parse_target(const std::string& host_text, int port, bool port_given);

}  // namespace lemon::cli
