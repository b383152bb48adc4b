#include "lemon/cli/target_url.h"

#include <algorithm>
#include <cctype>

namespace lemon::cli {
namespace {

bool starts_with_nocase(const std::string& text, const std::string& prefix) {
  return text.size() >= prefix.size() &&
         std::equal(prefix.begin(), prefix.end(), text.begin(), [](char lower, char c) {
           return std::tolower(static_cast<unsigned char>(c)) == lower;
         });
}

// A port's digits as a number in 1..65535, else -1.
int port_number(const std::string& digits) {
  if (digits.empty() || digits.size() > 5 ||
      !std::all_of(digits.begin(), digits.end(),
                   [](unsigned char c) { return std::isdigit(c) != 0; })) {
    return -1;
  }
  const int n = std::stoi(digits);
  return n >= 1 && n <= 65535 ? n : -1;
}

}  // namespace

Result<Target> parse_target(const std::string& host_text, int port, bool port_given) {
  Target t;
  t.port = port;
  std::string rest = host_text;
  bool scheme = false;
  if (starts_with_nocase(rest, "https://")) {
    t.https = true;
    scheme = true;
    rest = rest.substr(8);
  } else if (starts_with_nocase(rest, "http://")) {
    scheme = true;
    rest = rest.substr(7);
  }
  rest = rest.substr(0, rest.find_first_of("/?#"));
  std::string port_text;
  bool has_port = false;
  if (rest.starts_with("[")) {
    const auto close = rest.find(']');
    if (close == std::string::npos) {
      return Error(ErrorCode::kInvalidRequest, "invalid host '" + host_text + "': no ']'");
    }
    if (close + 1 < rest.size() && rest[close + 1] == ':') {
      has_port = true;
      port_text = rest.substr(close + 2);
    }
    rest = rest.substr(1, close - 1);
  } else if (std::count(rest.begin(), rest.end(), ':') == 1) {
    const auto colon = rest.find(':');
    has_port = true;
    port_text = rest.substr(colon + 1);
    rest = rest.substr(0, colon);
  }
  t.host = rest;
  if (has_port) {
    t.port = port_number(port_text);
    if (t.port < 0) {
      return Error(ErrorCode::kInvalidRequest,
                   "invalid port '" + port_text + "' in host '" + host_text + "'");
    }
  } else if (scheme && !port_given) {
    t.port = t.https ? 443 : 80;
  }
  return t;
}

}  // namespace lemon::cli
