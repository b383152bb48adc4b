#include "backend_call.h"

#include <algorithm>

namespace lemon {

Result<net::UpstreamResponse> call_backend(net::UpstreamClient& client, const std::string& method,
                                           const std::string& path, const std::string& body,
                                           std::chrono::milliseconds timeout) {
  net::UpstreamRequest req;
  req.method = method;
  req.path = path;
  if (!body.empty()) {
    req.content_type = "application/json";
    req.body = body;
  }
  net::CallOptions options;
  options.connect_timeout = std::min(timeout, std::chrono::milliseconds(500));
  options.total_timeout = timeout;
  options.max_response_bytes = 64u << 20;
  return client.send(req, options);
}

}  // namespace lemon
