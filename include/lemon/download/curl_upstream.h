// CurlUpstreamClient: net::UpstreamCalls over libcurl, for remote backends
// reached over https:// (issue #30 §3; all outbound TLS goes through
// libcurl). It keeps the contract of net/upstream_client.h: the same error
// codes for the same failures, the same timeouts, the watched client.
//
// The URL is base_url + request.path. TLS peers and host names are always
// verified, against the system CA store plus `ca_file` when set. Only http
// and https are spoken, redirects are never followed, HTTP/1.1 only, and
// no Accept-Encoding is negotiated (bodies pass through as sent).
//
// Errors: cannot resolve, connect or complete the TLS handshake (an
// untrusted certificate included), a connect timeout, or the connection
// closed or reset before any byte of a response -> kBackendUnavailable
// (nothing was answered); lost within the head, a chunked body or a body
// read until close -> kBackendCrashed; garbage, a body cut short of its
// Content-Length, or a send() reply over max_response_bytes ->
// kUpstreamProtocol; idle or total timeout -> kGatewayTimeout; watched
// client gone, on_tick or a callback returning false -> kCancelled. When
// libcurl cannot be loaded, every call fails with kBackendUnavailable
// saying why.
//
// Thread-safety: all methods may be called concurrently; each call uses its
// own connection (no pooling).
#pragma once

#include <functional>
#include <string>
#include <string_view>

#include "lemon/core/error.h"
#include "lemon/net/upstream_client.h"

namespace lemon::download {

struct CurlUpstreamSettings {
  std::string base_url;      // "https://gpu-box:8443": scheme://host[:port], no path
  std::string bearer_token;  // sent as "Authorization: Bearer <token>" when set; never logged
  std::string ca_file;       // PEM bundle to trust as well as the system store ("" = none)
};

class CurlUpstreamClient final : public net::UpstreamCalls {
 public:
  explicit CurlUpstreamClient(CurlUpstreamSettings settings);

  const std::string& base_url() const { return settings_.base_url; }

  Status stream(const net::UpstreamRequest& request, const net::CallOptions& options,
                const std::function<bool(const net::UpstreamHead&)>& on_head,
                const std::function<bool(std::string_view)>& on_data) override;

 private:
  CurlUpstreamSettings settings_;
  std::string authorization_;  // "Bearer <token>" or ""
};

}  // namespace lemon::download
