#include "lemon/auth/api_keys.h"

#include <fnmatch.h>
#include <openssl/evp.h>

#include <set>

#include "lemon/core/enum_names.h"

namespace lemon::auth {
namespace {

Error auth_error(const std::string& path, const std::string& what) {
  return Error(ErrorCode::kInvalidRequest, path + ": " + what);
}

bool is_hex_digest(const std::string& text) {
  if (text.size() != 64) {
    return false;
  }
  for (char c : text) {
    const bool digit = c >= '0' && c <= '9';
    const bool lower = c >= 'a' && c <= 'f';
    if (!digit && !lower) {
      return false;
    }
  }
  return true;
}

KeyHash hash_from_hex(const std::string& text) {
  KeyHash out{};
  auto nibble = [](char c) { return c <= '9' ? c - '0' : c - 'a' + 10; };
  for (std::size_t i = 0; i < out.size(); ++i) {
    out[i] = static_cast<unsigned char>(nibble(text[2 * i]) * 16 + nibble(text[2 * i + 1]));
  }
  return out;
}

// A key's name is a metric label and a log field: letters, digits, '_',
// '-' and '.'.
bool valid_key_name(const std::string& name) {
  if (name.empty() || name.size() > 64) {
    return false;
  }
  for (char c : name) {
    const bool ok = (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') ||
                    c == '_' || c == '-' || c == '.';
    if (!ok) {
      return false;
    }
  }
  return true;
}

Result<int> optional_limit(const nlohmann::json& entry, const char* field,
                           const std::string& path) {
  auto it = entry.find(field);
  if (it == entry.end() || it->is_null()) {
    return 0;
  }
  if (!it->is_number_integer() || it->get<long long>() < 1 || it->get<long long>() > 1'000'000) {
    return auth_error(path + "." + field, "expected an integer from 1 to 1000000");
  }
  return it->get<int>();
}

Result<ApiKey> parse_key(const nlohmann::json& entry, const std::string& path) {
  if (!entry.is_object()) {
    return auth_error(path, "expected an object {name, key_sha256, scopes, ...}");
  }
  static const std::set<std::string> kFields = {"name",   "key_sha256",     "scopes",
                                                "models", "max_concurrent", "requests_per_minute"};
  for (const auto& [field, value] : entry.items()) {
    if (!kFields.contains(field)) {
      std::string at = path;
      at.append(".").append(field);
      return auth_error(at,
                        "is not a key field (name, key_sha256, scopes, "
                        "models, max_concurrent, requests_per_minute)");
    }
  }
  ApiKey key;
  auto name = entry.find("name");
  if (name == entry.end() || !name->is_string() || !valid_key_name(name->get<std::string>())) {
    return auth_error(path + ".name", "expected a name of letters, digits, '_', '-' and '.'");
  }
  key.name = name->get<std::string>();
  auto hash = entry.find("key_sha256");
  if (hash == entry.end() || !hash->is_string() || !is_hex_digest(hash->get<std::string>())) {
    return auth_error(path + ".key_sha256",
                      "expected the key's SHA-256 as 64 lower-case hex digits "
                      "(`lemonade-server config add-key` writes it)");
  }
  key.sha256 = hash_from_hex(hash->get<std::string>());
  auto scopes = entry.find("scopes");
  if (scopes == entry.end() || !scopes->is_array() || scopes->empty()) {
    return auth_error(path + ".scopes",
                      "expected a non-empty list of \"inference\", \"read\" and \"admin\"");
  }
  for (std::size_t i = 0; i < scopes->size(); ++i) {
    const auto& s = (*scopes)[i];
    auto scope = s.is_string() ? scope_from_name(s.get<std::string>()) : std::nullopt;
    if (!scope || *scope == Scope::kPublic) {
      return auth_error(path + ".scopes[" + std::to_string(i) + "]",
                        "expected \"inference\", \"read\" or \"admin\"");
    }
    key.scopes |= static_cast<ScopeSet>(*scope);
  }
  if (auto models = entry.find("models"); models != entry.end() && !models->is_null()) {
    if (!models->is_array()) {
      return auth_error(path + ".models", "expected a list of model names or globs");
    }
    for (std::size_t i = 0; i < models->size(); ++i) {
      const auto& m = (*models)[i];
      if (!m.is_string() || m.get<std::string>().empty()) {
        return auth_error(path + ".models[" + std::to_string(i) + "]",
                          "expected a model name or a glob");
      }
      key.models.push_back(m.get<std::string>());
    }
  }
  auto concurrent = optional_limit(entry, "max_concurrent", path);
  if (!concurrent.ok()) {
    return std::move(concurrent).error();
  }
  key.max_concurrent = *concurrent;
  auto rate = optional_limit(entry, "requests_per_minute", path);
  if (!rate.ok()) {
    return std::move(rate).error();
  }
  key.requests_per_minute = *rate;
  return key;
}

}  // namespace

namespace {

constexpr auto kScopeNames =
    std::to_array<EnumName<Scope>>({{Scope::kPublic, "public"},
                                    {Scope::kInference, "inference"},
                                    {Scope::kRead, "read"},
                                    {Scope::kInferenceOrRead, "inference or read"},
                                    {Scope::kAdmin, "admin"}});

}  // namespace

const char* scope_name(Scope scope) {
  return name_of(kScopeNames, scope, "public");
}

std::optional<Scope> scope_from_name(std::string_view name) {
  return value_named(kScopeNames, name);
}

KeyHash sha256_of_key(std::string_view key) {
  KeyHash out{};
  unsigned int size = 0;
  EVP_Digest(key.data(), key.size(), out.data(), &size, EVP_sha256(), nullptr);
  return out;
}

std::string hex_of(const KeyHash& hash) {
  static constexpr char kDigits[] = "0123456789abcdef";
  std::string out;
  out.reserve(64);
  for (unsigned char b : hash) {
    out.push_back(kDigits[b >> 4]);
    out.push_back(kDigits[b & 15]);
  }
  return out;
}

bool ApiKey::allows_model(std::string_view model) const {
  if (models.empty()) {
    return true;
  }
  const std::string model_name(model);
  for (const auto& pattern : models) {
    if (::fnmatch(pattern.c_str(), model_name.c_str(), 0) == 0) {
      return true;
    }
  }
  return false;
}

std::string ApiKey::scope_list() const {
  std::string out;
  for (Scope s : {Scope::kInference, Scope::kRead, Scope::kAdmin}) {
    if (has(s)) {
      out += (out.empty() ? "" : ", ") + std::string(scope_name(s));
    }
  }
  return out.empty() ? "none" : out;
}

KeyRing::KeyRing(std::vector<ApiKey> keys) : keys_(std::move(keys)) {}

const ApiKey* KeyRing::find(std::string_view presented) const {
  const KeyHash hash = sha256_of_key(presented);
  const ApiKey* found = nullptr;
  for (const auto& key : keys_) {
    unsigned char diff = 0;
    for (std::size_t i = 0; i < hash.size(); ++i) {
      diff = static_cast<unsigned char>(diff | (hash[i] ^ key.sha256[i]));
    }
    if (diff == 0 && found == nullptr) {
      found = &key;
    }
  }
  return found;
}

Result<KeyRing> build_key_ring(const nlohmann::json& auth, const std::string& api_key,
                               const std::string& admin_api_key) {
  std::vector<ApiKey> keys;
  if (!auth.is_null() && !auth.is_object()) {
    return auth_error("auth", "expected an object {\"keys\": [...], \"audit_log\": PATH}");
  }
  if (auth.is_object()) {
    for (const auto& [field, value] : auth.items()) {
      if (field != "keys" && field != "audit_log") {
        return auth_error("auth." + field, "is not a setting (keys, audit_log)");
      }
    }
    if (auto log = auth.find("audit_log");
        log != auth.end() && !log->is_null() && !log->is_string()) {
      return auth_error("auth.audit_log", "expected a file path");
    }
    if (auto list = auth.find("keys"); list != auth.end() && !list->is_null()) {
      if (!list->is_array()) {
        return auth_error("auth.keys", "expected a list of keys");
      }
      for (std::size_t i = 0; i < list->size(); ++i) {
        auto key = parse_key((*list)[i], "auth.keys[" + std::to_string(i) + "]");
        if (!key.ok()) {
          return std::move(key).error();
        }
        keys.push_back(std::move(*key));
      }
    }
  }
  if (!admin_api_key.empty()) {
    keys.push_back({"admin_api_key", sha256_of_key(admin_api_key), kEveryScope, {}, 0, 0});
  }
  if (!api_key.empty() && api_key != admin_api_key) {
    const ScopeSet scopes = admin_api_key.empty()
                                ? kEveryScope
                                : static_cast<ScopeSet>(static_cast<ScopeSet>(Scope::kInference) |
                                                        static_cast<ScopeSet>(Scope::kRead));
    keys.push_back({"api_key", sha256_of_key(api_key), scopes, {}, 0, 0});
  }
  std::set<std::string> names;
  std::set<std::string> hashes;
  const std::size_t configured = keys.size() - (admin_api_key.empty() ? 0 : 1) -
                                 (api_key.empty() || api_key == admin_api_key ? 0 : 1);
  for (std::size_t i = 0; i < keys.size(); ++i) {
    // The variables' keys come last, named after their variables.
    const std::string at = i < configured ? "auth.keys[" + std::to_string(i) + "]"
                           : keys[i].name == "admin_api_key" ? "LEMONADE_ADMIN_API_KEY"
                                                             : "LEMONADE_API_KEY";
    if (!names.insert(keys[i].name).second) {
      return auth_error(i < configured ? at + ".name" : at,
                        "'" + keys[i].name + "' is the name of another key");
    }
    if (!hashes.insert(hex_of(keys[i].sha256)).second) {
      return auth_error(i < configured ? at + ".key_sha256" : at,
                        "the same key as another one (named '" + keys[i].name + "')");
    }
  }
  return KeyRing(std::move(keys));
}

std::string audit_log_path(const nlohmann::json& auth) {
  if (!auth.is_object()) {
    return {};
  }
  auto it = auth.find("audit_log");
  return it != auth.end() && it->is_string() ? it->get<std::string>() : std::string();
}

}  // namespace lemon::auth
