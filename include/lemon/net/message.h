// HTTP/1.1 message pieces shared by the server (client-facing) and the
// upstream client (backend-facing): a header list with case-insensitive
// lookup, and a parsed request.
//
// Thread-safety: value types.
#pragma once

#include <memory>
#include <optional>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

namespace lemon::net {

bool iequals(std::string_view a, std::string_view b);

class Headers {
 public:
  Headers() = default;
  Headers(std::initializer_list<std::pair<std::string, std::string>> init) : fields_(init) {}

  // First value of `name` (case-insensitive), or nullopt.
  std::optional<std::string_view> get(std::string_view name) const;
  bool has(std::string_view name) const { return get(name).has_value(); }
  // Media type of Content-Type without parameters, lower-cased ("" if none).
  std::string media_type() const;
  void add(std::string name, std::string value);
  // Room for `n` fields without growing (a parsed head reserves once).
  void reserve(std::size_t n) { fields_.reserve(n); }
  // Replaces every field called `name` with one field.
  void set(std::string name, std::string value);
  void remove(std::string_view name);

  const std::vector<std::pair<std::string, std::string>>& fields() const { return fields_; }
  bool empty() const { return fields_.empty(); }

 private:
  std::vector<std::pair<std::string, std::string>> fields_;
};

// What a HeadCheck learned about a request, kept for as long as the request
// is handled (the http layer keeps the caller's API key and its lease).
struct RequestContext {
  virtual ~RequestContext() = default;
};

struct Request {
  std::string method;  // upper case as received: "GET", "POST", ...
  std::string target;  // raw request-target, e.g. "/api/v1/models?show_all=true"
  std::string path;    // percent-decoded path part of target
  std::string query;   // raw query string without '?', may be empty
  Headers headers;
  std::string body;                         // de-chunked request body
  std::string remote_addr;                  // peer IP address
  bool http10 = false;                      // HTTP/1.0 (no upgrade, no chunked coding)
  std::shared_ptr<RequestContext> context;  // set by the HeadCheck; empty otherwise
  // The route the HeadCheck matched, so that the handler need not match the
  // path again: opaque to net (the HTTP layer's handler), null when none.
  struct MatchedRoute {
    const void* handler = nullptr;
    std::size_t param_at = std::string::npos;  // where the route's {id} starts in `path`
    std::size_t param_size = 0;
  } matched;

  // Value of a query parameter (percent-decoded, '+' as space), or nullopt.
  std::optional<std::string> query_param(std::string_view key) const;
  std::string media_type() const { return headers.media_type(); }
};

// Percent-decoding; '+' becomes ' ' only when plus_as_space.
std::string url_decode(std::string_view in, bool plus_as_space);

// True if `text` is well-formed UTF-8 (no overlong forms, surrogates or
// code points past U+10FFFF).
bool valid_utf8(std::string_view text);

// Reason phrase for a status code ("OK", "Not Found", ...).
const char* status_reason(int status);

}  // namespace lemon::net
