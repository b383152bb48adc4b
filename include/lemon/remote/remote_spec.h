// Remote models: what an entry with "recipe": "remote" says,
// checked. Such a model is served by another machine's OpenAI-compatible
// server (another lemonade-router, llama-server, vLLM, a cloud provider):
//
//   "far": {"recipe": "remote", "checkpoint": "<its name over there>",
//           "policy": "failover" | "least_busy",
//           "endpoints": [{"base_url": "http://gpu-box:8000/api/v1",
//                          "api_key_env": "GPU_BOX_KEY" | "api_key_file": PATH,
//                          "connect_timeout": 2, "request_timeout": 0,
//                          "allow_insecure_http": false, "ca_file": PATH}, ...]}
//
// in user_models.json (served as user.far) or in config.json's
// remote.models. A key is named by a variable or a file, never stored.
// Plain http:// is refused for any host but loopback unless
// allow_insecure_http says otherwise.
//
// Thread-safety: value types and pure functions (parse_endpoint_url uses
// libcurl's URL parser, loaded on first use).
#pragma once

#include <chrono>
#include <string>
#include <string_view>
#include <vector>

#include <nlohmann/json.hpp>

#include "lemon/core/error.h"
#include "lemon/core/model_types.h"

namespace lemon::remote {

enum class RemotePolicy { kFailover, kLeastBusy };
const char* remote_policy_name(RemotePolicy policy);

// A base URL split: scheme "http" or "https", host as written ("gpu-box",
// "[::1]"), the port (the scheme's default when absent) and the path prefix
// without a trailing slash ("/api/v1", or "").
struct EndpointUrl {
  std::string scheme;
  std::string host;
  int port = 0;
  std::string path;
  bool tls() const { return scheme == "https"; }
  // "scheme://host:port", what a client connects to.
  std::string origin() const;
  bool operator==(const EndpointUrl&) const = default;
};

// kInvalidOption naming `where` when `text` is not an http(s) URL without
// query, fragment or credentials.
Result<EndpointUrl> parse_endpoint_url(std::string_view text, const std::string& where);

// 127.0.0.0/8, ::1, localhost.
bool is_loopback(std::string_view host);

struct RemoteEndpointSpec {
  std::string base_url;  // as written, without a trailing slash
  EndpointUrl url;
  std::string api_key_env;   // "" for none
  std::string api_key_file;  // "" for none
  std::chrono::milliseconds connect_timeout{2000};
  std::chrono::milliseconds request_timeout{0};  // 0: the router's --request-timeout
  bool allow_insecure_http = false;
  std::string ca_file;  // PEM bundle trusted besides the system's (https only)
  bool operator==(const RemoteEndpointSpec&) const = default;
};

struct RemoteModelSpec {
  std::string name;        // "user.far", "gpu-box/Qwen3-8B-GGUF"
  std::string checkpoint;  // the model's name on the remote
  RemotePolicy policy = RemotePolicy::kFailover;
  std::vector<RemoteEndpointSpec> endpoints;
  bool operator==(const RemoteModelSpec&) const = default;
};

// The remote part of an entry (`policy`, `endpoints`; the entry's other keys
// are the catalogue's). Errors are kInvalidOption naming the JSON path from
// `where` ("user_models.json: 'far'.endpoints[1].base_url: ...").
Result<RemoteModelSpec> parse_remote_model(std::string name, std::string checkpoint,
                                           const nlohmann::json& entry, const std::string& where);
Result<RemoteEndpointSpec> parse_remote_endpoint(const nlohmann::json& entry,
                                                 const std::string& where);

// config.json's `remote_discovery`: another router whose models are listed
// here as "<prefix>/<its name>" and refreshed.
struct DiscoverySpec {
  RemoteEndpointSpec endpoint;  // base_url, api_key_env (key_env), ...
  std::string prefix;
  bool operator==(const DiscoverySpec&) const = default;
};

// config.json's `remote` section: {"models": {key: entry}, "health_interval",
// "discovery_interval", "retry_after": seconds} (models are served as
// "user.<key>"), and `remote_discovery`.
struct RemoteSettings {
  std::vector<nlohmann::json> model_entries;  // each with "name" set to user.<key>
  std::vector<RemoteModelSpec> models;
  std::vector<DiscoverySpec> discovery;
  std::chrono::milliseconds health_interval{10000};
  std::chrono::milliseconds discovery_interval{30000};
  // How long a down endpoint is skipped after its first failure (doubling,
  // up to 60 s).
  std::chrono::milliseconds retry_after{1000};
  bool operator==(const RemoteSettings&) const = default;
};
Result<RemoteSettings> parse_remote_settings(const nlohmann::json& remote,
                                             const nlohmann::json& discovery);

}  // namespace lemon::remote
