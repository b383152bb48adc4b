// ServerClient: lemonade-server's HTTP client of the router, on libcurl.
// It sends LEMONADE_API_KEY as a Bearer token, connects to loopback when the
// server listens on a wildcard address, and can stream a response body to a
// callback that may stop it (Ctrl-C).
//
// Thread-safety: one client per thread; every call is blocking.
#pragma once

#include <chrono>
#include <functional>
#include <string>
#include <string_view>

#include <nlohmann/json.hpp>

namespace lemon::cli {

struct HttpResult {
  long status = 0;              // 0: no HTTP response (see transport_error)
  std::string transport_error;  // libcurl's reason when status == 0
  bool aborted = false;         // the caller stopped the transfer
  std::string body;             // the whole body (not kept by stream())

  bool ok() const { return status >= 200 && status < 300; }
  // One line for stderr: the error envelope's message, else the status or
  // the transport error.
  std::string error_text() const;
  nlohmann::json json() const;  // discarded value if not JSON
};

// `text` percent-encoded for one segment of a URL path (libcurl's escaping).
std::string path_segment(std::string_view text);

class ServerClient {
 public:
  // `https`: TLS to the server (Lemonade 11's LEMONADE_HOST=https://...).
  ServerClient(std::string host, int port, std::string api_key, bool https = false);

  int port() const { return port_; }
  const std::string& api_key() const { return api_key_; }
  // "http://HOST:PORT" (https), with a wildcard host replaced by loopback.
  const std::string& base_url() const { return base_url_; }

  HttpResult get(std::string_view path,
                 std::chrono::milliseconds timeout = std::chrono::seconds(30)) const;
  HttpResult post(std::string_view path, const nlohmann::json& body,
                  std::chrono::milliseconds timeout = std::chrono::hours(24)) const;
  HttpResult del(std::string_view path,
                 std::chrono::milliseconds timeout = std::chrono::seconds(30)) const;
  // POSTs and hands each piece of the body to `on_data`; the transfer stops
  // (aborted = true) when `on_data` returns false or `stop()` turns true.
  // The body is kept only when the status is not 2xx.
  HttpResult stream(std::string_view path, const nlohmann::json& body,
                    const std::function<bool(std::string_view)>& on_data,
                    const std::function<bool()>& stop) const;

 private:
  std::string host_;
  int port_;
  std::string api_key_;
  std::string base_url_;
};

}  // namespace lemon::cli
