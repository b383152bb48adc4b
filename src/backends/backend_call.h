// call_backend: one short call to a backend's own routes (llama-server's
// /slots, /tokenize, /apply-template), bounded by `timeout` in all, the
// connect by at most half a second. Internal to src/backends.
#pragma once

#include <chrono>
#include <string>

#include "lemon/core/error.h"
#include "lemon/net/upstream_client.h"

namespace lemon {

// The backend's answer, whatever its status; an error when the call itself
// failed (refused, timed out, a reply over 64 MiB).
Result<net::UpstreamResponse> call_backend(net::UpstreamClient& client, const std::string& method,
                                           const std::string& path, const std::string& body,
                                           std::chrono::milliseconds timeout);

}  // namespace lemon
