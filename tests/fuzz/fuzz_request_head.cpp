// Fuzz target: the request head parser and the body framing fields
// (RFC 9112), on any bytes. Checks what the parser promises of an accepted
// head: a token method, a target and header text free of CTLs, at most
// kMaxHeaderFields fields sent, one Host in HTTP/1.1.
#include <cstdint>
#include <cstdlib>
#include <string>
#include <string_view>

#include "wire_parser.h"

using namespace lemon::net;

namespace {

void check(bool ok) {
  if (!ok) {
    std::abort();
  }
}

// Control characters; a field value may hold HTAB.
bool has_ctl(std::string_view s, bool tab_ok = false) {
  for (unsigned char c : s) {
    if ((c < 0x20 && !(tab_ok && c == '\t')) || c == 0x7f) {
      return true;
    }
  }
  return false;
}

bool trimmed(std::string_view v) {
  return v.empty() ||
         (v.front() != ' ' && v.front() != '\t' && v.back() != ' ' && v.back() != '\t');
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  std::string_view in(reinterpret_cast<const char*>(data), size);
  std::size_t end = wire::find_head_end(in);
  std::string_view head = end == std::string_view::npos ? in : in.substr(0, end);
  check(end == std::string_view::npos || end <= in.size());

  wire::RequestHead req;
  std::string why;
  if (wire::parse_request_head(head, req, why) == wire::HeadError::kNone) {
    check(!req.method.empty() && !has_ctl(req.method));
    // (UTF-8 of the decoded target and of field values is checked by the
    // request reader; fuzz_request_stream covers it.)
    check(!req.target.empty() && !has_ctl(req.target));
    check(req.minor_version == 0 || req.minor_version == 1);
    // An absolute-form target's authority is the request's Host; an HTTP/1.0
    // head without a Host field gains it beyond the limit of sent fields.
    const bool absolute = req.target.starts_with("http://") || req.target.starts_with("https://");
    check(req.headers.fields().size() <= wire::kMaxHeaderFields + (absolute ? 1 : 0));
    int hosts = 0;
    for (const auto& [name, value] : req.headers.fields()) {
      check(!name.empty() && !has_ctl(name) && name.find(':') == std::string::npos);
      check(!has_ctl(value, true) && trimmed(value));
      hosts += iequals(name, "host") ? 1 : 0;
    }
    check(req.minor_version == 0 ? hosts <= 1 : hosts == 1);
    std::uint64_t length = 0;
    (void)wire::content_length(req.headers, length);
    (void)wire::transfer_coding(req.headers);
    (void)wire::has_token(req.headers, "Connection", "close");
  }
  wire::ResponseHead resp;
  if (wire::parse_response_head(head, resp, why)) {
    check(resp.status >= 100 && resp.status <= 999);
    std::uint64_t length = 0;
    (void)wire::content_length(resp.headers, length, wire::Duplicates::kAllowIdentical);
  }
  return 0;
}
