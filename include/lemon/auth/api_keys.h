// API keys with scopes (docs/auth.md): what config.json's
// `auth` section and the key variables make. http checks every request
// against them; lemonade-server's `config add-key` writes them; the
// settings' reading checks the section (options/). Every route needs one
// scope, given when it is added (http's ApiRoutes), so no route exists
// without one:
// - inference: the model routes of every API (OpenAI, Anthropic, Ollama),
//   and sessions;
// - read: health, models, stats, metrics, events, logs, system info (health
//   and the model lists also take an inference key: clients read them
//   before they send a request);
// - admin: everything else (load, unload, pin, pull, delete, install,
//   presets, config, log level, shutdown).
// Public routes (/live, /ready, the dashboard's files) need no key.
//
// A key is stored as its SHA-256 only; a presented key is hashed and
// compared with every stored hash in constant time. A key may hold an
// allow-list of model names or globs, and limits (requests at once,
// requests a minute: http/key_limits.h).
//
// Thread-safety: a KeyRing is immutable once built; share it freely.
#pragma once

#include <array>
#include <cstdint>
#include <memory>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include <nlohmann/json.hpp>

#include "lemon/core/error.h"

namespace lemon::auth {

// What a route needs (a key needs one of the bits), and what a key holds.
enum class Scope : std::uint8_t {
  kPublic = 0,  // no key needed
  kInference = 1,
  kRead = 2,
  kInferenceOrRead = 3,  // health and the model lists, which clients read before inference
  kAdmin = 4,
};
using ScopeSet = std::uint8_t;
inline constexpr ScopeSet kEveryScope = 1 | 2 | 4;

// "public", "inference", "read", "inference or read", "admin".
const char* scope_name(Scope scope);
std::optional<Scope> scope_from_name(std::string_view name);

using KeyHash = std::array<unsigned char, 32>;
KeyHash sha256_of_key(std::string_view key);
std::string hex_of(const KeyHash& hash);

struct ApiKey {
  std::string name;  // in metrics, audit lines and refusals; never the key
  KeyHash sha256{};
  ScopeSet scopes = 0;
  std::vector<std::string> models;  // names or globs (fnmatch); empty: every model
  int max_concurrent = 0;           // requests at once; 0: no limit
  int requests_per_minute = 0;      // 0: no limit

  bool has(Scope scope) const {
    return scope == Scope::kPublic || (scopes & static_cast<ScopeSet>(scope)) != 0;
  }
  bool allows_model(std::string_view model) const;
  // "inference, read" for messages.
  std::string scope_list() const;
};

class KeyRing {
 public:
  KeyRing() = default;
  explicit KeyRing(std::vector<ApiKey> keys);

  // No key configured: the router asks for none.
  bool empty() const { return keys_.empty(); }
  const std::vector<ApiKey>& keys() const { return keys_; }
  // The key whose hash `presented`'s hash is, or nullptr. Every stored hash
  // is compared, each in constant time.
  const ApiKey* find(std::string_view presented) const;

 private:
  std::vector<ApiKey> keys_;
};

// The keys of a configuration:
// - `auth.keys` (the config file's `auth` section, `{}` when absent);
// - `api_key` (LEMONADE_API_KEY), named "api_key", with every scope, or
//   inference and read only when an admin key is set too (Lemonade's
//   separation of the two);
// - `admin_api_key` (LEMONADE_ADMIN_API_KEY), named "admin_api_key", with
//   every scope.
// kInvalidRequest naming the JSON path of what is wrong
// ("auth.keys[1].scopes[0]: ...").
Result<KeyRing> build_key_ring(const nlohmann::json& auth, const std::string& api_key,
                               const std::string& admin_api_key);

// The `auth` section's audit log path ("" when not set).
std::string audit_log_path(const nlohmann::json& auth);

}  // namespace lemon::auth
