// Loopback HTTP for integration tests, on cpp-httplib's client: one request
// per call (TCP_NODELAY, generous timeouts), plus helpers for the router's
// /health and for a fake backend's /fake/state.
#pragma once

#include <chrono>
#include <functional>
#include <optional>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "support/test_env.h"

namespace lemon::testing {

struct HttpReply {
  int status = 0;     // 0: no response (see error)
  std::string error;  // httplib's error when status == 0
  std::string body;
  std::vector<std::pair<std::string, std::string>> headers;

  // The body as JSON (a discarded value if it is not JSON).
  nlohmann::json json() const;
  // The first header named `name` (case-insensitive), or "".
  std::string header(const std::string& name) const;
  bool has_header(const std::string& name) const;
};

// Any method; `body` is sent with Content-Type application/json unless empty
// and the method is GET or HEAD.
HttpReply http_request(int port, const std::string& method, const std::string& path,
                       const std::string& body = "");
HttpReply http_get(int port, const std::string& path);
HttpReply http_post(int port, const std::string& path, const std::string& body);
HttpReply http_post(int port, const std::string& path, const nlohmann::json& body);

// Same, to a backend's base URL ("http://127.0.0.1:PORT").
using HeaderList = std::vector<std::pair<std::string, std::string>>;
HttpReply url_get(const std::string& base_url, const std::string& path);
HttpReply url_request(const std::string& base_url, const std::string& method,
                      const std::string& path, const std::string& body,
                      const HeaderList& headers = {});

// A chat request body for `model` ("hi", non-streaming) merged with `extra`.
nlohmann::json chat_body(const std::string& model,
                         const nlohmann::json& extra = nlohmann::json::object());
// A streaming chat body for `model` whose fake backend sends `tokens` tokens,
// `chunk_delay_ms` apart.
nlohmann::json stream_body(const std::string& model, int tokens, int chunk_delay_ms);
HttpReply chat(int port, const std::string& model,
               const nlohmann::json& extra = nlohmann::json::object(),
               const std::string& path = "/api/v1/chat/completions");
HttpReply load(int port, const std::string& model,
               const nlohmann::json& extra = nlohmann::json::object());

// GET /api/v1/health, parsed; a failed request fails the test and returns null.
nlohmann::json health(int port);
// The all_models_loaded entry of `model`, if loaded.
std::optional<nlohmann::json> loaded_entry(const nlohmann::json& health, const std::string& model);
// Field `key` of that entry, or null if `model` is not loaded.
nlohmann::json loaded_field(const nlohmann::json& health, const std::string& model,
                            const std::string& key);
// A list of model names (for comparing with loaded_names()).
using Names = std::vector<std::string>;
// The loaded models' names, sorted.
Names loaded_names(const nlohmann::json& health);
// The pid /health reports for `model`, or -1 if it is not loaded.
int loaded_pid(int port, const std::string& model);

// The fake backend's GET /fake/state.
nlohmann::json fake_state(const std::string& backend_url);
// Opens every gate the fake's answers wait at (lemon_fake "gate",
// tests/fakes/README.md); fake_holds() waits until `count` of them wait.
void release_fake_gates(const std::string& backend_url);
bool fake_holds(const std::string& backend_url, int count);
// Waits until the fake's answers have come to `count` gates in all.
bool fake_reached_gate(const std::string& backend_url, long count);

// Re-evaluates `condition` (which makes HTTP requests) until it holds or the
// deadline passes; for state that becomes true just after a response ends.
bool eventually(const std::function<bool()>& condition, std::chrono::milliseconds timeout = kWait);

// True if `error` is the router's error envelope
// {"error":{"message":str,"type":str,"param":...,"code":str}}.
bool is_error_envelope(const nlohmann::json& body);

}  // namespace lemon::testing
