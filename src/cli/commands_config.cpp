#include <openssl/rand.h>

#include <array>
#include <functional>
#include <iostream>

#include "lemon/auth/api_keys.h"
#include "lemon/cli/commands.h"
#include "lemon/cli/server_client.h"
#include "lemon/core/atomic_file.h"
#include "lemon/options/config_file.h"
#include "lemon/options/settings_reader.h"

namespace lemon::cli {
namespace {

std::string config_file_path() {
  return locate_config_file().file.string();
}

// `KEY VALUE` as config.json's shape: "a.b" is the section a's key b; the
// value is JSON when it reads as JSON (300, true, [2, 1]), else a string.
nlohmann::json change_of(const std::string& key, const std::string& text) {
  nlohmann::json value = nlohmann::json::parse(text, nullptr, false);
  if (value.is_discarded()) {
    value = text;
  }
  const auto dot = key.find('.');
  if (dot == std::string::npos) {
    return {{key, value}};
  }
  return {{key.substr(0, dot), {{key.substr(dot + 1), value}}}};
}

// Reads config.json at `path`, applies `edit`, checks the result as the
// router reads its settings and writes it atomically. 0, or fail()'s status
// (nothing written).
int edit_config_file(const std::string& path,
                     const std::function<void(nlohmann::ordered_json&)>& edit) {
  auto current = read_json_object_for_update(path);
  if (!current.ok()) {
    return fail(current.error().message());
  }
  nlohmann::ordered_json merged = *current;
  edit(merged);
  const SettingsRead checked =
      read_router_settings({"lemonade-router"}, nlohmann::json::parse(merged.dump()));
  if (checked.exit_now) {
    return fail(checked.message);
  }
  if (Status written = write_file_atomically(path, merged.dump(2) + "\n"); !written.ok()) {
    return fail(written.error().message());
  }
  return 0;
}

// Without a server: the file is checked as the router reads its settings,
// then written atomically.
int set_in_file(const nlohmann::json& change) {
  const std::string path = config_file_path();
  if (int failed = edit_config_file(
          path, [&](nlohmann::ordered_json& merged) { merge_config_changes(merged, change); })) {
    return failed;
  }
  std::cout << "Saved in " << path << "; the server reads it when it starts" << std::endl;
  return 0;
}

// `config add-key`: a random key, its SHA-256 added to config.json's
// auth.keys (checked as the router reads it, written atomically; a running
// router watches the file and takes the key at once), the key printed once.
int add_key(const CommandLine& cl) {
  std::array<unsigned char, 24> random{};
  if (RAND_bytes(random.data(), static_cast<int>(random.size())) != 1) {
    return fail("no random bytes for a key (OpenSSL RAND_bytes failed)");
  }
  std::string key = "lem-";
  static constexpr char kDigits[] = "0123456789abcdef";
  for (unsigned char b : random) {
    key.push_back(kDigits[b >> 4]);
    key.push_back(kDigits[b & 15]);
  }
  nlohmann::json entry = {{"name", cl.model},
                          {"key_sha256", auth::hex_of(auth::sha256_of_key(key))},
                          {"scopes", cl.key_scopes}};
  if (!cl.key_models.empty()) {
    entry["models"] = cl.key_models;
  }
  if (cl.key_max_concurrent > 0) {
    entry["max_concurrent"] = cl.key_max_concurrent;
  }
  if (cl.key_requests_per_minute > 0) {
    entry["requests_per_minute"] = cl.key_requests_per_minute;
  }
  const std::string path = config_file_path();
  if (int failed = edit_config_file(path, [&](nlohmann::ordered_json& merged) {
        if (!merged.contains("auth") || !merged["auth"].is_object()) {
          merged["auth"] = nlohmann::ordered_json::object();
        }
        if (!merged["auth"].contains("keys") || !merged["auth"]["keys"].is_array()) {
          merged["auth"]["keys"] = nlohmann::ordered_json::array();
        }
        merged["auth"]["keys"].push_back(nlohmann::ordered_json::parse(entry.dump()));
      })) {
    return failed;
  }
  std::cerr << "Added key '" << cl.model << "' to " << path
            << ". It is shown once; only its SHA-256 is kept:" << std::endl;
  std::cout << key << std::endl;
  return 0;
}

int show(const CommandLine& cl, const nlohmann::json& view) {
  const nlohmann::json& settings = view["settings"];
  if (!cl.model.empty()) {  // config get KEY
    if (!settings.contains(cl.model)) {
      return fail("no setting '" + cl.model + "' (see docs/configuration.md)");
    }
    std::cout << settings[cl.model].value("value", "") << std::endl;
    return 0;
  }
  if (cl.json) {
    std::cout << view.dump(2) << std::endl;
    return 0;
  }
  for (const auto& [key, s] : settings.items()) {
    std::cout << key << " = " << s.value("value", "") << "  (" << s.value("source", "") << ")\n";
  }
  for (const auto& [key, value] : view["pending_restart"].items()) {
    std::cout << key << " = " << value.get<std::string>() << "  (pending a restart)\n";
  }
  std::cout.flush();
  return 0;
}

}  // namespace

int cmd_config(const CommandLine& cl, CliContext& ctx) {
  if (cl.config_action == "path") {
    std::cout << config_file_path() << std::endl;
    return 0;
  }
  if (cl.config_action == "add-key") {
    return add_key(cl);
  }
  auto running = find_running_server(ctx);
  if (cl.config_action == "set") {
    const nlohmann::json change = change_of(cl.model, cl.config_value);
    if (!running) {
      return set_in_file(change);
    }
    ServerClient client(ctx.host, running->port, ctx.api_key);
    auto reply = client.post("/internal/set", change);
    if (!reply.ok()) {
      return fail(reply.error_text());
    }
    const nlohmann::json answer = reply.json();
    std::cout << "Saved " << cl.model;
    if (!answer.value("applied", nlohmann::json::array()).empty()) {
      std::cout << "; in force now";
    } else if (!answer.value("pending", nlohmann::json::array()).empty()) {
      std::cout << "; in force after a restart";
    }
    if (!answer.value("overridden", nlohmann::json::array()).empty()) {
      std::cout << "; a variable or a flag still overrides it";
    }
    std::cout << std::endl;
    return 0;
  }
  if (!running) {
    return fail("Server is not running; start it with: lemonade-server serve (its file: " +
                config_file_path() + ")");
  }
  ServerClient client(ctx.host, running->port, ctx.api_key);
  auto reply = client.get("/internal/config?sources=1");
  if (!reply.ok()) {
    return fail(reply.error_text());
  }
  return show(cl, reply.json());
}

}  // namespace lemon::cli
