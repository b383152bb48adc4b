#include <iostream>

#include "lemon/app/config.h"
#include "lemon/app/config_file.h"
#include "lemon/cli/commands.h"
#include "lemon/cli/server_client.h"
#include "lemon/core/atomic_file.h"

namespace lemon::cli {
namespace {

std::string config_file_path() {
  return (config_dir() / "config.json").string();
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

// Without a server: the file is checked as the router would read it, then
// written atomically.
int set_in_file(const nlohmann::json& change) {
  const std::string path = config_file_path();
  auto current = read_json_object_for_update(path);
  if (!current.ok()) {
    return fail(current.error().message());
  }
  nlohmann::ordered_json merged = *current;
  merge_config_changes(merged, change);
  ParsedConfig checked = parse_config({"lemonade-router"}, nlohmann::json::parse(merged.dump()));
  if (checked.exit_now) {
    return fail(checked.message);
  }
  if (Status written = write_file_atomically(path, merged.dump(2) + "\n"); !written.ok()) {
    return fail(written.error().message());
  }
  std::cout << "Saved in " << path << "; the server reads it when it starts" << std::endl;
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
  auto reply = client.get("/internal/config");
  if (!reply.ok()) {
    return fail(reply.error_text());
  }
  return show(cl, reply.json());
}

}  // namespace lemon::cli
