// CurlUpstreamClient: net::UpstreamCalls over libcurl, for remote backends
// reached over https:// (all outbound TLS goes through
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
// Connections are kept alive between calls: the calls of one client share a
// cache of idle connections, TLS sessions and resolved names (a libcurl
// share), so a second call to the same server pays no TCP or TLS handshake.
// A kept connection the server closed meanwhile is found dead and replaced
// by libcurl before anything of the next request is answered, and a request
// that a reused connection lost before any answer is sent once more on a new
// one (libcurl's own retry); a cancelled or failed transfer's connection is
// closed, never kept. Without a share (libcurl could not make one), each call
// opens a connection of its own, as before.
//
// Thread-safety: all methods may be called concurrently; each call uses one
// connection at a time, taken from the shared cache or opened for it.
#pragma once

#include <functional>
#include <memory>
#include <mutex>
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
  // Closes the kept connections. No call may be running.
  ~CurlUpstreamClient() override;
  CurlUpstreamClient(const CurlUpstreamClient&) = delete;
  CurlUpstreamClient& operator=(const CurlUpstreamClient&) = delete;

  const std::string& base_url() const { return settings_.base_url; }

  Status stream(const net::UpstreamRequest& request, const net::CallOptions& options,
                const std::function<bool(const net::UpstreamHead&)>& on_head,
                const std::function<bool(std::string_view)>& on_data) override;

 private:
  class ConnectionShare;  // curl_upstream.cpp
  // The share, made on the first call (libcurl loads on first use); null
  // when libcurl cannot make one.
  ConnectionShare* share();

  CurlUpstreamSettings settings_;
  std::string authorization_;  // "Bearer <token>" or ""
  std::once_flag share_once_;
  std::unique_ptr<ConnectionShare> share_;
};

}  // namespace lemon::download
